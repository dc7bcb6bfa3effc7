//! Interface addresses.

use std::net::IpAddr;

use ipnet::IpNet;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::{NetlinkError, RouteSocket};

/// An address assigned to an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    /// Interface index.
    pub index: u32,
    /// Address and prefix length.
    pub net: IpNet,
}

fn family(ip: &IpAddr) -> AddressFamily {
    match ip {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

fn message(index: u32, net: &IpNet) -> AddressMessage {
    let mut msg = AddressMessage::default();
    msg.header.family = family(&net.addr());
    msg.header.prefix_len = net.prefix_len();
    msg.header.index = index;
    // Like iproute2: IFA_LOCAL is the address itself; IFA_ADDRESS equals it (no peer).
    msg.attributes.push(AddressAttribute::Local(net.addr()));
    msg.attributes.push(AddressAttribute::Address(net.addr()));
    msg
}

impl RouteSocket {
    /// Adds `net` to link `index` (`ip addr add NET dev X`); fails with EEXIST if present.
    pub fn add_address(&mut self, index: u32, net: &IpNet) -> Result<(), NetlinkError> {
        self.socket().request(
            RouteNetlinkMessage::NewAddress(message(index, net)),
            NLM_F_CREATE | NLM_F_EXCL,
            format!("ip addr add {net} dev index {index}"),
        )
    }

    /// Adds `net` without duplicate address detection (`ip addr add NET dev X nodad`), so an
    /// IPv6 address is usable at once instead of tentative for a second or more. For addresses
    /// an allocator already guarantees unique.
    pub fn add_address_nodad(&mut self, index: u32, net: &IpNet) -> Result<(), NetlinkError> {
        let mut msg = message(index, net);
        msg.attributes
            .push(AddressAttribute::Flags(AddressFlags::Nodad));
        self.socket().request(
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_CREATE | NLM_F_EXCL,
            format!("ip addr add {net} dev index {index} nodad"),
        )
    }

    /// Removes `net` from link `index` (`ip addr del`).
    pub fn delete_address(&mut self, index: u32, net: &IpNet) -> Result<(), NetlinkError> {
        self.socket().request(
            RouteNetlinkMessage::DelAddress(message(index, net)),
            0,
            format!("ip addr del {net} dev index {index}"),
        )
    }

    /// Addresses of link `index`, or of every link when `None` (`ip addr show`).
    pub fn addresses(&mut self, index: Option<u32>) -> Result<Vec<Address>, NetlinkError> {
        let replies = self.socket().dump(
            RouteNetlinkMessage::GetAddress(AddressMessage::default()),
            "ip addr show",
        )?;
        let mut out = Vec::new();
        for reply in replies {
            let RouteNetlinkMessage::NewAddress(msg) = reply else {
                continue;
            };
            if index.is_some_and(|i| i != msg.header.index) {
                continue;
            }
            // IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer on p2p links.
            let local = msg.attributes.iter().find_map(|a| match a {
                AddressAttribute::Local(ip) => Some(*ip),
                _ => None,
            });
            let addr = local.or_else(|| {
                msg.attributes.iter().find_map(|a| match a {
                    AddressAttribute::Address(ip) => Some(*ip),
                    _ => None,
                })
            });
            if let Some(ip) = addr
                && let Ok(net) = IpNet::new(ip, msg.header.prefix_len)
            {
                out.push(Address {
                    index: msg.header.index,
                    net,
                });
            }
        }
        Ok(out)
    }
}
