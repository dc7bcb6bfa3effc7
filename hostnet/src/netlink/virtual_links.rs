//! Virtual links a simulated fabric is built from (veth pairs, bridges) and the per-link packet
//! counters that show which way traffic went.

use std::os::fd::{AsRawFd, BorrowedFd};

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkInfo, LinkMessage,
};

use super::{NetlinkError, RouteSocket};

/// One end of a veth pair: its name and the namespace it is created in.
#[derive(Clone, Copy, Debug)]
pub struct VethEnd<'a, 'fd> {
    /// Interface name in that namespace.
    pub name: &'a str,
    /// The namespace, open.
    pub netns: BorrowedFd<'fd>,
}

/// A link's packet and byte counters (`ip -s link`), 64-bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Octets received.
    pub rx_bytes: u64,
    /// Octets sent.
    pub tx_bytes: u64,
}

impl RouteSocket {
    /// Creates a veth pair with each end directly in its namespace
    /// (`ip link add A netns NS_A mtu M type veth peer name B netns NS_B mtu M`). Created in
    /// place, neither end ever moves (a move costs the kernel an RCU barrier).
    pub fn create_veth(
        &mut self,
        end: VethEnd<'_, '_>,
        peer: VethEnd<'_, '_>,
        mtu: Option<u32>,
    ) -> Result<(), NetlinkError> {
        let mut peer_msg = LinkMessage::default();
        peer_msg
            .attributes
            .push(LinkAttribute::IfName(peer.name.to_owned()));
        peer_msg
            .attributes
            .push(LinkAttribute::NetNsFd(peer.netns.as_raw_fd()));
        let mut msg = LinkMessage::default();
        msg.attributes
            .push(LinkAttribute::IfName(end.name.to_owned()));
        msg.attributes
            .push(LinkAttribute::NetNsFd(end.netns.as_raw_fd()));
        if let Some(mtu) = mtu {
            msg.attributes.push(LinkAttribute::Mtu(mtu));
            peer_msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer_msg))),
        ]));
        let what = format!(
            "ip link add {} netns fd:{} type veth peer name {} netns fd:{}",
            end.name,
            end.netns.as_raw_fd(),
            peer.name,
            peer.netns.as_raw_fd()
        );
        self.socket().request(
            RouteNetlinkMessage::NewLink(msg),
            NLM_F_CREATE | NLM_F_EXCL,
            what,
        )
    }

    /// Creates a bridge in this socket's namespace (`ip link add NAME mtu M type bridge`).
    pub fn create_bridge(&mut self, name: &str, mtu: Option<u32>) -> Result<(), NetlinkError> {
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        if let Some(mtu) = mtu {
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        msg.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                InfoKind::Bridge,
            )]));
        self.socket().request(
            RouteNetlinkMessage::NewLink(msg),
            NLM_F_CREATE | NLM_F_EXCL,
            format!("ip link add {name} type bridge"),
        )
    }

    /// The counters of link `name`; `None` when there is no such link.
    pub fn link_counters(&mut self, name: &str) -> Result<Option<LinkCounters>, NetlinkError> {
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        let replies = match self.socket().get(
            RouteNetlinkMessage::GetLink(msg),
            format!("ip -s link show dev {name}"),
        ) {
            Ok(replies) => replies,
            Err(e) if e.is(libc::ENODEV) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(replies.into_iter().find_map(|m| match m {
            RouteNetlinkMessage::NewLink(link) => Some(counters_of(&link)),
            _ => None,
        }))
    }
}

fn counters_of(link: &LinkMessage) -> LinkCounters {
    link.attributes
        .iter()
        .find_map(|a| match a {
            LinkAttribute::Stats64(s) => Some(LinkCounters {
                rx_packets: s.rx_packets,
                tx_packets: s.tx_packets,
                rx_bytes: s.rx_bytes,
                tx_bytes: s.tx_bytes,
            }),
            _ => None,
        })
        .unwrap_or_default()
}
