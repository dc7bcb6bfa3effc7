//! rtnetlink on tokio, for daemons that keep routing state right: requests through the
//! `rtnetlink` crate's connection and a second socket subscribed to the link, address, route
//! and rule multicast groups (what `ip monitor` listens to), so a change anyone makes is seen
//! at once instead of at the next poll.
//!
//! Both sockets are opened inside the namespace they serve, from a plain thread (never a
//! tokio worker), and then live on the runtime. Routes and rules are hostnet's one
//! [`Route`] and [`Rule`] (the sync socket's types, with the same message codec); their
//! routing protocol number tells a reconciler its own entries from everybody else's.

use std::io;

use futures::StreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use ipnet::IpNet;
use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::rule::RuleMessage;
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::SocketAddr;
use rtnetlink::MulticastGroup;

use crate::netlink::{Address, NetlinkError, Route, Rule};
use crate::netns::{NetNs, NetNsError};

/// The groups the event socket joins.
const GROUPS: [MulticastGroup; 7] = [
    MulticastGroup::Link,
    MulticastGroup::Ipv4Ifaddr,
    MulticastGroup::Ipv6Ifaddr,
    MulticastGroup::Ipv4Route,
    MulticastGroup::Ipv6Route,
    MulticastGroup::Ipv4Rule,
    MulticastGroup::Ipv6Rule,
];

/// Opening the sockets failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Entering the namespace failed.
    #[error("open rtnetlink sockets: {0}")]
    NetNs(#[from] NetNsError),
    /// The kernel refused a socket or a group.
    #[error("open rtnetlink sockets (requests and link/address/route/rule events): {0}")]
    Socket(#[source] io::Error),
    /// The opening thread died.
    #[error("open rtnetlink sockets: the opening thread panicked")]
    Thread,
}

/// What changed, as the kernel announced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A link appeared or changed (carrier, flags, name, MTU).
    Link {
        /// Its index.
        index: u32,
        /// Its name.
        name: String,
        /// Carrier (`IFF_LOWER_UP`).
        carrier: bool,
    },
    /// A link is gone.
    LinkGone {
        /// Its index.
        index: u32,
    },
    /// An address was added or removed on link `index`.
    Address {
        /// The link.
        index: u32,
    },
    /// A route was added or removed.
    Route,
    /// A rule was added or removed.
    Rule,
}

/// Receives the events of the namespace the sockets were opened in.
pub struct Events {
    rx: UnboundedReceiver<(NetlinkMessage<RouteNetlinkMessage>, SocketAddr)>,
}

impl Events {
    /// The next event; `None` when the socket is gone. Messages that are not events (or
    /// that the kernel sent for other families) are skipped.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            let (msg, _) = self.rx.next().await?;
            if let NetlinkPayload::InnerMessage(inner) = msg.payload
                && let Some(event) = event_of(inner)
            {
                return Some(event);
            }
        }
    }
}

fn event_of(msg: RouteNetlinkMessage) -> Option<Event> {
    Some(match msg {
        RouteNetlinkMessage::NewLink(link) => link_event(&link),
        RouteNetlinkMessage::DelLink(link) => Event::LinkGone {
            index: link.header.index,
        },
        RouteNetlinkMessage::NewAddress(a) | RouteNetlinkMessage::DelAddress(a) => Event::Address {
            index: a.header.index,
        },
        RouteNetlinkMessage::NewRoute(_) | RouteNetlinkMessage::DelRoute(_) => Event::Route,
        RouteNetlinkMessage::NewRule(_) | RouteNetlinkMessage::DelRule(_) => Event::Rule,
        _ => return None,
    })
}

fn link_event(link: &LinkMessage) -> Event {
    let name = link
        .attributes
        .iter()
        .find_map(|a| match a {
            LinkAttribute::IfName(n) => Some(n.clone()),
            _ => None,
        })
        .unwrap_or_default();
    Event::Link {
        index: link.header.index,
        name,
        carrier: link.header.flags.contains(LinkFlags::LowerUp),
    }
}

/// Requests over rtnetlink (the `rtnetlink` crate's connection).
#[derive(Clone)]
pub struct Rtnl {
    handle: rtnetlink::Handle,
}

/// Opens the request and event sockets inside `ns` (from a new plain thread) and runs their
/// connections on `runtime`.
pub fn open_in(ns: &NetNs, runtime: &tokio::runtime::Handle) -> Result<(Rtnl, Events), OpenError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                ns.run(|| {
                    // The sockets register with the runtime's reactor when created.
                    let _entered = runtime.enter();
                    let (conn, handle, _) =
                        rtnetlink::new_connection().map_err(OpenError::Socket)?;
                    let (events, _, rx) =
                        rtnetlink::new_multicast_connection(&GROUPS).map_err(OpenError::Socket)?;
                    runtime.spawn(conn);
                    runtime.spawn(events);
                    Ok((Rtnl { handle }, Events { rx }))
                })?
            })
            .join()
            .map_err(|_| OpenError::Thread)?
    })
}

fn family(ipv6: bool) -> AddressFamily {
    if ipv6 {
        AddressFamily::Inet6
    } else {
        AddressFamily::Inet
    }
}

impl Rtnl {
    /// Sends `message` and collects the replies, mapping a kernel error to its errno.
    async fn exchange(
        &self,
        message: RouteNetlinkMessage,
        flags: u16,
        what: String,
    ) -> Result<Vec<RouteNetlinkMessage>, NetlinkError> {
        let mut request = NetlinkMessage::from(message);
        request.header.flags = NLM_F_REQUEST | flags;
        let mut handle = self.handle.clone();
        let mut replies = handle
            .request(request)
            .map_err(|e| NetlinkError::io(what.clone(), io::Error::other(e.to_string())))?;
        let mut out = Vec::new();
        while let Some(reply) = replies.next().await {
            match reply.payload {
                NetlinkPayload::InnerMessage(m) => out.push(m),
                NetlinkPayload::Error(e) => {
                    if let Some(code) = e.code {
                        return Err(NetlinkError::io(
                            what,
                            io::Error::from_raw_os_error(-code.get()),
                        ));
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Every address (`ip addr show`).
    pub async fn addresses(&self) -> Result<Vec<Address>, NetlinkError> {
        let replies = self
            .exchange(
                RouteNetlinkMessage::GetAddress(AddressMessage::default()),
                NLM_F_DUMP,
                "ip addr show".into(),
            )
            .await?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewAddress(a) => address_of(&a),
                _ => None,
            })
            .collect())
    }

    /// Source rules of one family (`ip [-6] rule show`); rules of other shapes are skipped.
    pub async fn rules(&self, ipv6: bool) -> Result<Vec<Rule>, NetlinkError> {
        let mut msg = RuleMessage::default();
        msg.header.family = family(ipv6);
        let replies = self
            .exchange(
                RouteNetlinkMessage::GetRule(msg),
                NLM_F_DUMP,
                "ip rule show".into(),
            )
            .await?;
        Ok(replies
            .iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewRule(r) => Rule::from_message(r),
                _ => None,
            })
            .collect())
    }

    /// Adds `rule`; EEXIST when an identical one exists.
    pub async fn add_rule(&self, rule: &Rule) -> Result<(), NetlinkError> {
        self.exchange(
            RouteNetlinkMessage::NewRule(rule.message()),
            NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
            format!("ip rule add {rule}"),
        )
        .await
        .map(drop)
    }

    /// Deletes `rule`.
    pub async fn delete_rule(&self, rule: &Rule) -> Result<(), NetlinkError> {
        self.exchange(
            RouteNetlinkMessage::DelRule(rule.message()),
            NLM_F_ACK,
            format!("ip rule del {rule}"),
        )
        .await
        .map(drop)
    }

    /// Unicast routes of one family in every table (`ip [-6] route show table all`).
    pub async fn routes(&self, ipv6: bool) -> Result<Vec<Route>, NetlinkError> {
        let mut msg = RouteMessage::default();
        msg.header.address_family = family(ipv6);
        let replies = self
            .exchange(
                RouteNetlinkMessage::GetRoute(msg),
                NLM_F_DUMP,
                "ip route show table all".into(),
            )
            .await?;
        Ok(replies
            .iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewRoute(r) => Route::from_message(r),
                _ => None,
            })
            .collect())
    }

    /// Adds `route`; EEXIST when an equal one exists.
    pub async fn add_route(&self, route: &Route) -> Result<(), NetlinkError> {
        self.exchange(
            RouteNetlinkMessage::NewRoute(route.message()),
            NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
            format!("ip route add {route}"),
        )
        .await
        .map(drop)
    }

    /// Deletes `route`.
    pub async fn delete_route(&self, route: &Route) -> Result<(), NetlinkError> {
        self.exchange(
            RouteNetlinkMessage::DelRoute(route.message()),
            NLM_F_ACK,
            format!("ip route del {route}"),
        )
        .await
        .map(drop)
    }
}

fn address_of(msg: &AddressMessage) -> Option<Address> {
    // IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer on p2p links.
    let local = msg.attributes.iter().find_map(|a| match a {
        AddressAttribute::Local(ip) => Some(*ip),
        _ => None,
    });
    let ip = local.or_else(|| {
        msg.attributes.iter().find_map(|a| match a {
            AddressAttribute::Address(ip) => Some(*ip),
            _ => None,
        })
    })?;
    Some(Address {
        index: msg.header.index,
        net: IpNet::new(ip, msg.header.prefix_len).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_and_routes_survive_their_messages() {
        let rule = Rule {
            source: "10.56.0.7/32".parse().unwrap(),
            table: 1100,
            priority: 1000,
            protocol: 197,
        };
        assert_eq!(Rule::from_message(&rule.message()), Some(rule.clone()));
        assert_eq!(
            rule.to_string(),
            "from 10.56.0.7/32 lookup 1100 pref 1000 protocol 197"
        );
        let route = Route {
            table: 101,
            destination: "10.56.0.0/24".parse().unwrap(),
            gateway: None,
            oif: Some(4),
            metric: None,
            source: Some("10.56.0.7".parse().unwrap()),
            link_scope: true,
            protocol: 197,
        };
        assert_eq!(Route::from_message(&route.message()), Some(route));
        let default = Route {
            table: 101,
            destination: "0.0.0.0/0".parse().unwrap(),
            gateway: Some("10.56.0.1".parse().unwrap()),
            oif: Some(4),
            metric: None,
            source: None,
            link_scope: false,
            protocol: 197,
        };
        assert_eq!(
            Route::from_message(&default.message()),
            Some(default.clone())
        );
        // A rule with an interface match is not a source rule, whoever made it.
        let mut other = rule.message();
        other
            .attributes
            .push(netlink_packet_route::rule::RuleAttribute::Iifname(
                "eth0".into(),
            ));
        assert_eq!(Rule::from_message(&other), None);
    }

    #[test]
    fn kernel_notifications_become_events() {
        let mut link = LinkMessage::default();
        link.header.index = 7;
        link.header.flags = LinkFlags::Up | LinkFlags::LowerUp;
        link.attributes.push(LinkAttribute::IfName("pf0".into()));
        assert_eq!(
            event_of(RouteNetlinkMessage::NewLink(link.clone())),
            Some(Event::Link {
                index: 7,
                name: "pf0".into(),
                carrier: true
            })
        );
        assert_eq!(
            event_of(RouteNetlinkMessage::DelLink(link)),
            Some(Event::LinkGone { index: 7 })
        );
        assert_eq!(
            event_of(RouteNetlinkMessage::DelRule(RuleMessage::default())),
            Some(Event::Rule)
        );
    }
}
