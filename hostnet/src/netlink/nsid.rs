//! Namespace ids (`RTM_NEWNSID`, `RTM_GETNSID`): the number a namespace knows another one by.
//!
//! The host's id for a pod namespace is unique among the namespaces alive, and the kernel drops
//! it when that namespace dies. So an id recorded at ADD answers at DEL what no path can: if
//! the kernel no longer knows the id, the namespace is dead, wherever it was held. (A live id
//! may have been handed to a newer namespace: see [`RouteSocket::namespace_with_nsid`].)

use std::os::fd::{AsFd, AsRawFd};

use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::nsid::{NsidAttribute, NsidMessage};

use super::{NetlinkError, NetlinkErrorKind, RouteSocket};
use crate::netns::NetNs;

/// `NETNSA_NSID_NOT_ASSIGNED`.
const NOT_ASSIGNED: i32 = -1;

impl RouteSocket {
    /// This namespace's id for `ns`, assigning one when it has none (`ip netns set NAME auto`).
    pub fn nsid_of(&mut self, ns: &NetNs) -> Result<i32, NetlinkError> {
        let fd = ns.as_fd().as_raw_fd() as u32;
        let mut assign = NsidMessage::default();
        assign.attributes.push(NsidAttribute::Fd(fd));
        assign.attributes.push(NsidAttribute::Id(NOT_ASSIGNED));
        match self.socket().request(
            RouteNetlinkMessage::NewNsId(assign),
            0,
            format!("ip netns set {} auto", ns.path().display()),
        ) {
            Ok(()) => {}
            // It has one already (a device moved between the two namespaces assigns one).
            Err(e) if e.kind() == NetlinkErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let mut get = NsidMessage::default();
        get.attributes.push(NsidAttribute::Fd(fd));
        let what = format!("ip netns list-id (fd of {})", ns.path().display());
        match self.get_nsid(get, &what)? {
            Some(id) => Ok(id),
            None => Err(NetlinkError::io(
                what,
                std::io::Error::other("the kernel assigned no namespace id"),
            )),
        }
    }

    /// Whether this namespace still knows a namespace by `nsid`: `false` once the namespace
    /// that had it is dead (or dying: the kernel no longer takes references to it).
    pub fn nsid_in_use(&mut self, nsid: i32) -> Result<bool, NetlinkError> {
        let mut get = NsidMessage::default();
        get.attributes.push(NsidAttribute::Id(nsid));
        match self.get_nsid(get, &format!("ip netns list-id nsid {nsid}")) {
            Ok(id) => Ok(id.is_some()),
            Err(e) if e.kind() == NetlinkErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The namespace this one knows by `nsid`, among the namespaces reachable from here (see
    /// [`NetNs::find`]); `None` when none of them has it. A namespace id is reused after its
    /// namespace dies, so this is how a recorded id is told apart from a newer namespace's.
    pub fn namespace_with_nsid(&mut self, nsid: i32) -> Option<NetNs> {
        let mut seen = std::collections::HashSet::new();
        for path in crate::netns::held_namespace_paths() {
            let Ok(ns) = NetNs::open(&path) else {
                continue;
            };
            if !seen.insert(ns.id()) {
                continue;
            }
            let mut get = NsidMessage::default();
            get.attributes
                .push(NsidAttribute::Fd(ns.as_fd().as_raw_fd() as u32));
            if self
                .get_nsid(get, "ip netns list-id")
                .is_ok_and(|id| id == Some(nsid))
            {
                return Some(ns);
            }
        }
        None
    }

    fn get_nsid(&mut self, message: NsidMessage, what: &str) -> Result<Option<i32>, NetlinkError> {
        let replies = self
            .socket()
            .get(RouteNetlinkMessage::GetNsId(message), what)?;
        Ok(replies.into_iter().find_map(|r| match r {
            RouteNetlinkMessage::NewNsId(m) => m.attributes.into_iter().find_map(|a| match a {
                NsidAttribute::Id(id) if id != NOT_ASSIGNED => Some(id),
                _ => None,
            }),
            _ => None,
        }))
    }
}
