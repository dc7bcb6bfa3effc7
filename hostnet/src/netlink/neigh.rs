//! Neighbour (ARP / NDP) entries.

use std::net::IpAddr;

use netlink_packet_core::{NLM_F_CREATE, NLM_F_REPLACE};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::{NetlinkError, RouteSocket};
use spinel_wire::MacAddr;

/// One neighbour entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// Interface index.
    pub index: u32,
    /// Protocol address.
    pub ip: IpAddr,
    /// Link-layer address, when resolved.
    pub mac: Option<MacAddr>,
    /// NUD state name as `ip neigh` prints it (`REACHABLE`, `STALE`, `PERMANENT`, ...).
    pub state: String,
}

fn state_name(state: NeighbourState) -> String {
    match state {
        NeighbourState::Other(n) => format!("0x{n:x}"),
        s => format!("{s:?}").to_uppercase(),
    }
}

impl RouteSocket {
    /// Every neighbour entry of both families (`ip neigh show`).
    pub fn neighbours(&mut self) -> Result<Vec<Neighbour>, NetlinkError> {
        let replies = self.socket().dump(
            RouteNetlinkMessage::GetNeighbour(NeighbourMessage::default()),
            "ip neigh show",
        )?;
        let mut out = Vec::new();
        for reply in replies {
            let RouteNetlinkMessage::NewNeighbour(m) = reply else {
                continue;
            };
            let mut ip = None;
            let mut mac = None;
            for attr in &m.attributes {
                match attr {
                    NeighbourAttribute::Destination(NeighbourAddress::Inet(v4)) => {
                        ip = Some(IpAddr::V4(*v4))
                    }
                    NeighbourAttribute::Destination(NeighbourAddress::Inet6(v6)) => {
                        ip = Some(IpAddr::V6(*v6))
                    }
                    NeighbourAttribute::LinkLayerAddress(b) => mac = MacAddr::from_slice(b),
                    _ => {}
                }
            }
            if let Some(ip) = ip {
                out.push(Neighbour {
                    index: m.header.ifindex,
                    ip,
                    mac,
                    state: state_name(m.header.state),
                });
            }
        }
        Ok(out)
    }

    /// Adds or replaces a neighbour entry (`ip neigh replace IP lladdr MAC dev X nud STATE`).
    pub fn replace_neighbour(
        &mut self,
        index: u32,
        ip: IpAddr,
        mac: MacAddr,
        state: NeighbourState,
    ) -> Result<(), NetlinkError> {
        let mut msg = NeighbourMessage::default();
        msg.header.family = match ip {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };
        msg.header.ifindex = index;
        msg.header.state = state;
        let dst = match ip {
            IpAddr::V4(v4) => NeighbourAddress::Inet(v4),
            IpAddr::V6(v6) => NeighbourAddress::Inet6(v6),
        };
        msg.attributes.push(NeighbourAttribute::Destination(dst));
        msg.attributes
            .push(NeighbourAttribute::LinkLayerAddress(mac.octets().to_vec()));
        self.socket().request(
            RouteNetlinkMessage::NewNeighbour(msg),
            NLM_F_CREATE | NLM_F_REPLACE,
            format!("ip neigh replace {ip} lladdr {mac} dev index {index}"),
        )
    }
}
