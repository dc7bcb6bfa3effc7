//! Policy routing rules (`ip rule`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::route::RouteProtocol;
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::{NetlinkError, RouteSocket};

/// A `from SRC lookup TABLE` rule, with the protocol that installed it (`protocol N`, 0 when
/// unset): the one type of rule in hostnet, sent and read by the sync socket and the async one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rule {
    /// Source prefix the rule matches.
    pub source: IpNet,
    /// Table to look up.
    pub table: u32,
    /// Rule preference (lower is consulted first).
    pub priority: u32,
    /// `FRA_PROTOCOL`; 0 sends none.
    pub protocol: u8,
}

impl Rule {
    /// The `RTM_NEWRULE`/`RTM_DELRULE` body of this rule.
    pub(crate) fn message(&self) -> RuleMessage {
        let mut msg = RuleMessage::default();
        msg.header.family = match self.source {
            IpNet::V4(_) => AddressFamily::Inet,
            IpNet::V6(_) => AddressFamily::Inet6,
        };
        msg.header.src_len = self.source.prefix_len();
        msg.header.action = RuleAction::ToTable;
        msg.header.table = u8::try_from(self.table).unwrap_or(0);
        msg.attributes.push(RuleAttribute::Table(self.table));
        msg.attributes.push(RuleAttribute::Priority(self.priority));
        msg.attributes
            .push(RuleAttribute::Source(self.source.network()));
        if self.protocol != 0 {
            msg.attributes
                .push(RuleAttribute::Protocol(RouteProtocol::from(self.protocol)));
        }
        msg
    }

    /// The source rule a dump or a notification describes; `None` for any other shape (a rule
    /// that also matches a destination, an interface or a mark is someone else's).
    pub(crate) fn from_message(m: &RuleMessage) -> Option<Self> {
        if m.header.action != RuleAction::ToTable {
            return None;
        }
        let mut rule = Rule {
            source: IpNet::new(
                match m.header.family {
                    AddressFamily::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                    _ => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                },
                0,
            )
            .ok()?,
            table: u32::from(m.header.table),
            priority: 0,
            protocol: 0,
        };
        let mut has_source = false;
        for attr in &m.attributes {
            match attr {
                RuleAttribute::Source(ip) => {
                    rule.source = IpNet::new(*ip, m.header.src_len).ok()?;
                    has_source = true;
                }
                RuleAttribute::Table(t) => rule.table = *t,
                RuleAttribute::Priority(p) => rule.priority = *p,
                RuleAttribute::Protocol(p) => rule.protocol = u8::from(*p),
                RuleAttribute::Destination(_)
                | RuleAttribute::Iifname(_)
                | RuleAttribute::Oifname(_)
                | RuleAttribute::FwMark(_) => return None,
                _ => {}
            }
        }
        has_source.then_some(rule)
    }
}

/// Renders the rule as `ip rule` arguments.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "from {} lookup {} pref {}",
            self.source, self.table, self.priority
        )?;
        if self.protocol != 0 {
            write!(f, " protocol {}", self.protocol)?;
        }
        Ok(())
    }
}

impl RouteSocket {
    /// Adds `rule` (`ip rule add`); fails with EEXIST if an identical rule exists.
    pub fn add_rule(&mut self, rule: &Rule) -> Result<(), NetlinkError> {
        self.socket().request(
            RouteNetlinkMessage::NewRule(rule.message()),
            NLM_F_CREATE | NLM_F_EXCL,
            format!("ip rule add {rule}"),
        )
    }

    /// Deletes `rule` (`ip rule del`).
    pub fn delete_rule(&mut self, rule: &Rule) -> Result<(), NetlinkError> {
        self.socket().request(
            RouteNetlinkMessage::DelRule(rule.message()),
            0,
            format!("ip rule del {rule}"),
        )
    }

    /// Source-prefix rules of one family (`ip [-6] rule show`); other rules are skipped.
    pub fn rules(&mut self, ipv6: bool) -> Result<Vec<Rule>, NetlinkError> {
        let mut msg = RuleMessage::default();
        msg.header.family = if ipv6 {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        let replies = self
            .socket()
            .dump(RouteNetlinkMessage::GetRule(msg), "ip rule show")?;
        Ok(replies
            .iter()
            .filter_map(|reply| match reply {
                RouteNetlinkMessage::NewRule(m) => Rule::from_message(m),
                _ => None,
            })
            .collect())
    }
}
