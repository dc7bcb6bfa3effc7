//! Routes, in any table.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::{NetlinkError, RouteSocket};

/// `RT_TABLE_MAIN`.
pub const MAIN_TABLE: u32 = 254;

/// `RTPROT_STATIC`: what `ip route add` marks routes with, and hostnet's default.
pub const STATIC_PROTOCOL: u8 = 4;

/// A unicast route, with the routing protocol that installed it (`proto N`): the one type of
/// route in hostnet, sent and read by the sync socket and the async one alike.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Route {
    /// Destination prefix (`0.0.0.0/0` for a default route).
    pub destination: IpNet,
    /// Next hop, for routes through a gateway.
    pub gateway: Option<IpAddr>,
    /// Output interface index.
    pub oif: Option<u32>,
    /// Routing table (254 is main).
    pub table: u32,
    /// Metric (`metric N` / `priority N`).
    pub metric: Option<u32>,
    /// Preferred source address (`src A`).
    pub source: Option<IpAddr>,
    /// Scope: link for connected routes, universe for routes via a gateway.
    pub link_scope: bool,
    /// `rtm_protocol` (`proto N`); [`STATIC_PROTOCOL`] unless set.
    pub protocol: u8,
}

impl Route {
    /// A route to `destination` in the main table with nothing else set.
    pub fn new(destination: IpNet) -> Self {
        Self {
            destination,
            gateway: None,
            oif: None,
            table: MAIN_TABLE,
            metric: None,
            source: None,
            link_scope: false,
            protocol: STATIC_PROTOCOL,
        }
    }

    /// The `RTM_NEWROUTE`/`RTM_DELROUTE` body of this route.
    pub(crate) fn message(&self) -> RouteMessage {
        let protocol = RouteProtocol::from(self.protocol);
        let mut msg = RouteMessage::default();
        let family = match self.destination {
            IpNet::V4(_) => AddressFamily::Inet,
            IpNet::V6(_) => AddressFamily::Inet6,
        };
        msg.header.address_family = family;
        msg.header.destination_prefix_length = self.destination.prefix_len();
        msg.header.protocol = protocol;
        msg.header.kind = RouteType::Unicast;
        msg.header.scope = if self.link_scope {
            RouteScope::Link
        } else {
            RouteScope::Universe
        };
        // Tables above 255 only fit in RTA_TABLE; iproute2 always sends both.
        msg.header.table = u8::try_from(self.table).unwrap_or(RouteHeader::RT_TABLE_UNSPEC);
        msg.attributes.push(RouteAttribute::Table(self.table));
        if self.destination.prefix_len() > 0 {
            msg.attributes
                .push(RouteAttribute::Destination(RouteAddress::from(
                    self.destination.network(),
                )));
        }
        if let Some(gw) = self.gateway {
            msg.attributes
                .push(RouteAttribute::Gateway(RouteAddress::from(gw)));
        }
        if let Some(oif) = self.oif {
            msg.attributes.push(RouteAttribute::Oif(oif));
        }
        if let Some(metric) = self.metric {
            msg.attributes.push(RouteAttribute::Priority(metric));
        }
        if let Some(src) = self.source {
            msg.attributes
                .push(RouteAttribute::PrefSource(RouteAddress::from(src)));
        }
        msg
    }

    /// The unicast route a dump or a notification describes.
    pub(crate) fn from_message(msg: &RouteMessage) -> Option<Self> {
        if msg.header.kind != RouteType::Unicast {
            return None;
        }
        let ip = |a: &RouteAddress| match a {
            RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
            RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
            _ => None,
        };
        let mut destination = None;
        let mut route = Route::new(match msg.header.address_family {
            AddressFamily::Inet6 => "::/0".parse().ok()?,
            _ => "0.0.0.0/0".parse().ok()?,
        });
        route.table = u32::from(msg.header.table);
        route.link_scope = msg.header.scope == RouteScope::Link;
        route.protocol = u8::from(msg.header.protocol);
        for attr in &msg.attributes {
            match attr {
                RouteAttribute::Destination(a) => destination = ip(a),
                RouteAttribute::Gateway(a) => route.gateway = ip(a),
                RouteAttribute::PrefSource(a) => route.source = ip(a),
                RouteAttribute::Oif(i) => route.oif = Some(*i),
                RouteAttribute::Priority(p) => route.metric = Some(*p),
                RouteAttribute::Table(t) => route.table = *t,
                _ => {}
            }
        }
        if let Some(dst) = destination {
            route.destination = IpNet::new(dst, msg.header.destination_prefix_length).ok()?;
        }
        Some(route)
    }
}

/// Renders the route as `ip route` arguments.
impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.destination)?;
        if let Some(gw) = self.gateway {
            write!(f, " via {gw}")?;
        }
        if let Some(oif) = self.oif {
            write!(f, " dev index {oif}")?;
        }
        if let Some(src) = self.source {
            write!(f, " src {src}")?;
        }
        if let Some(metric) = self.metric {
            write!(f, " metric {metric}")?;
        }
        if self.table != MAIN_TABLE {
            write!(f, " table {}", self.table)?;
        }
        if self.protocol != STATIC_PROTOCOL {
            write!(f, " proto {}", self.protocol)?;
        }
        Ok(())
    }
}

impl RouteSocket {
    /// Adds `route` (`ip route add`); fails with EEXIST if an equal route exists.
    pub fn add_route(&mut self, route: &Route) -> Result<(), NetlinkError> {
        self.socket().request(
            RouteNetlinkMessage::NewRoute(route.message()),
            NLM_F_CREATE | NLM_F_EXCL,
            format!("ip route add {route}"),
        )
    }

    /// Adds or replaces `route` (`ip route replace`).
    pub fn replace_route(&mut self, route: &Route) -> Result<(), NetlinkError> {
        self.socket().request(
            RouteNetlinkMessage::NewRoute(route.message()),
            NLM_F_CREATE | NLM_F_REPLACE,
            format!("ip route replace {route}"),
        )
    }

    /// Deletes `route` (`ip route del`).
    pub fn delete_route(&mut self, route: &Route) -> Result<(), NetlinkError> {
        self.socket().request(
            RouteNetlinkMessage::DelRoute(route.message()),
            0,
            format!("ip route del {route}"),
        )
    }

    /// Unicast routes of one address family in `table` (`ip [-6] route show table T`).
    pub fn routes(&mut self, ipv6: bool, table: u32) -> Result<Vec<Route>, NetlinkError> {
        Ok(self
            .all_routes(ipv6)?
            .into_iter()
            .filter(|r| r.table == table)
            .collect())
    }

    /// Unicast routes of one address family in every table (`ip [-6] route show table all`).
    pub fn all_routes(&mut self, ipv6: bool) -> Result<Vec<Route>, NetlinkError> {
        let mut msg = RouteMessage::default();
        msg.header.address_family = if ipv6 {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        let replies = self.socket().dump(
            RouteNetlinkMessage::GetRoute(msg),
            "ip route show table all",
        )?;
        Ok(replies
            .iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewRoute(r) => Route::from_message(r),
                _ => None,
            })
            .collect())
    }
}
