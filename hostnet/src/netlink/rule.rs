//! Policy routing rules (`ip rule`).

use std::fmt;

use ipnet::IpNet;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::{NetlinkError, RouteSocket};

/// A `from SRC lookup TABLE` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Source prefix the rule matches.
    pub source: IpNet,
    /// Table to look up.
    pub table: u32,
    /// Rule preference (lower is consulted first).
    pub priority: u32,
}

impl Rule {
    fn message(&self) -> RuleMessage {
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
        msg
    }
}

/// Renders the rule as `ip rule` arguments.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "from {} lookup {} pref {}",
            self.source, self.table, self.priority
        )
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
        let mut out = Vec::new();
        for reply in replies {
            let RouteNetlinkMessage::NewRule(m) = reply else {
                continue;
            };
            let mut source = None;
            let mut table = u32::from(m.header.table);
            let mut priority = 0;
            for attr in &m.attributes {
                match attr {
                    RuleAttribute::Source(ip) => source = IpNet::new(*ip, m.header.src_len).ok(),
                    RuleAttribute::Table(t) => table = *t,
                    RuleAttribute::Priority(p) => priority = *p,
                    _ => {}
                }
            }
            if let Some(source) = source {
                out.push(Rule {
                    source,
                    table,
                    priority,
                });
            }
        }
        Ok(out)
    }
}
