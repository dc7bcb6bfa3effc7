//! Synchronous netlink: one socket per namespace, and the route-family operations on it.
//!
//! The CNI plugin is short-lived and single-threaded, so it needs no async runtime: a plain
//! socket, a sequence counter and a loop that reads until the kernel's ACK or `NLMSG_DONE`.
//! A socket is bound to the namespace it was opened in for its whole life; open one per
//! namespace ([`RouteSocket::open_in`]) and the calling thread never has to switch.

mod addr;
mod link;
mod neigh;
mod nsid;
mod route;
mod rule;
mod socket;
mod vf;
mod virtual_links;

pub use addr::Address;
pub use link::{Link, LinkChange};
pub use neigh::Neighbour;
pub use route::{Route, STATIC_PROTOCOL};
pub use rule::Rule;
pub use socket::{NetlinkError, NetlinkErrorKind, Socket};
pub use vf::{ParseVfValueError, VfAttributes, VfLinkMode, VfSettings, VlanProto};
pub use virtual_links::{LinkCounters, VethEnd};

use netlink_packet_route::RouteNetlinkMessage;

use crate::netns::{NetNs, NetNsError};

/// An rtnetlink (`NETLINK_ROUTE`) socket bound to one network namespace.
pub struct RouteSocket {
    socket: Socket<RouteNetlinkMessage>,
}

impl RouteSocket {
    /// Opens a socket in the calling thread's namespace.
    pub fn open() -> Result<Self, NetlinkError> {
        Ok(Self {
            socket: Socket::open(netlink_sys::protocols::NETLINK_ROUTE)?,
        })
    }

    /// Opens a socket inside `ns`; the calling thread is back in its own namespace on return.
    pub fn open_in(ns: &NetNs) -> Result<Self, OpenInError> {
        Ok(ns.run(Self::open)??)
    }

    /// The underlying request/response socket.
    pub fn socket(&mut self) -> &mut Socket<RouteNetlinkMessage> {
        &mut self.socket
    }
}

/// Failure to open a socket inside another namespace.
#[derive(Debug, thiserror::Error)]
pub enum OpenInError {
    /// Entering the namespace failed.
    #[error(transparent)]
    NetNs(#[from] NetNsError),
    /// Opening the socket failed.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
}

#[cfg(test)]
mod tests;
