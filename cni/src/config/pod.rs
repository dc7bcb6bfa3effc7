//! Settings applied inside the pod: per-interface sysctls, per-NIC policy routing and the
//! announcements of the pod's addresses.

use serde::Deserialize;

use super::invalid;
use crate::spec::CniError;

/// Per-interface sysctls set inside the pod before the interface comes up. The defaults are
/// what multi-NIC RoCE hosts need (research: IBM, Red Hat, libfabric): answer ARP only for
/// the interface's own address, announce with it, loose reverse-path filtering, and announce
/// the interface on link-up.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Sysctls {
    /// `net.ipv4.conf.<if>.arp_ignore` (0-3 or 8).
    pub arp_ignore: u8,
    /// `net.ipv4.conf.<if>.arp_announce` (0-2).
    pub arp_announce: u8,
    /// `net.ipv4.conf.<if>.rp_filter` (0-2).
    pub rp_filter: u8,
    /// `net.ipv4.conf.<if>.arp_notify` (0-1).
    pub arp_notify: u8,
    /// `net.ipv6.conf.<if>.ndisc_notify` (0-1).
    pub ndisc_notify: u8,
}

impl Default for Sysctls {
    fn default() -> Self {
        Self {
            arp_ignore: 1,
            arp_announce: 2,
            rp_filter: 2,
            arp_notify: 1,
            ndisc_notify: 1,
        }
    }
}

impl Sysctls {
    pub(super) fn validate(&self) -> Result<(), CniError> {
        for (field, value, ok) in [
            (
                "sysctls.arpIgnore",
                self.arp_ignore,
                self.arp_ignore <= 3 || self.arp_ignore == 8,
            ),
            (
                "sysctls.arpAnnounce",
                self.arp_announce,
                self.arp_announce <= 2,
            ),
            ("sysctls.rpFilter", self.rp_filter, self.rp_filter <= 2),
            ("sysctls.arpNotify", self.arp_notify, self.arp_notify <= 1),
            (
                "sysctls.ndiscNotify",
                self.ndisc_notify,
                self.ndisc_notify <= 1,
            ),
        ] {
            if !ok {
                return Err(invalid(format!(
                    "{field}: {value} is not a value the kernel accepts"
                )));
            }
        }
        Ok(())
    }
}

/// Per-NIC policy routing: a table per RoCE interface holding its connected route, its
/// gateway route and the IPAM routes, and a rule sending traffic from its addresses there, so
/// each rail's traffic leaves through its own NIC.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Routing {
    /// Turn it off for single-NIC pods that do not need it.
    pub enabled: bool,
    /// Table id; derived from the interface name when unset (see [`table_for`]).
    pub table: Option<u32>,
    /// Preference of the `from <address>` rules.
    pub rule_priority: u32,
    /// Add a default route through the IPAM gateway to the table.
    pub default_route: bool,
}

impl Default for Routing {
    fn default() -> Self {
        Self {
            enabled: true,
            table: None,
            rule_priority: 1000,
            default_route: true,
        }
    }
}

/// The table of interface `ifname`: 100 + N for names ending in a number N (`net1` → 101,
/// `rail7` → 107, like Spiderpool's 101, 102, ... for net1, net2), otherwise 1000 plus the
/// FNV-1a hash of the name modulo 1000. Deterministic, so DEL and CHECK find it again.
pub fn table_for(ifname: &str) -> u32 {
    let digits: String = ifname
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    if let Some(n) = digits
        .chars()
        .rev()
        .collect::<String>()
        .parse::<u32>()
        .ok()
        .filter(|n| *n < 900)
    {
        return 100 + n;
    }
    let mut hash: u32 = 0x811c_9dc5;
    for b in ifname.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    1000 + hash % 1000
}

/// Announcing the pod's addresses so neighbours holding a reused IP's old MAC update at once.
/// ADD sends a round (every address, ARP request and reply forms, NA for IPv6) when the link
/// has carrier and another once routes and rules are in place; `count - 1` more rounds follow
/// every `intervalMs` from a detached helper, spaced past the receivers' ARP locktime (1 s on
/// Linux), so ADD itself waits at most `carrierTimeoutMs` for carrier.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Garp {
    /// Rounds at `intervalMs` spacing (0 turns announcing off).
    pub count: u32,
    /// Spacing of the rounds after ADD.
    pub interval_ms: u64,
    /// How long ADD waits for carrier before its first round.
    pub carrier_timeout_ms: u64,
}

impl Default for Garp {
    fn default() -> Self {
        Self {
            count: 3,
            interval_ms: 1100,
            carrier_timeout_ms: 500,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::spec::ErrorCode;

    fn parse(s: &str) -> Result<Config, CniError> {
        Config::parse(s.as_bytes())
    }

    #[test]
    fn routing_tables_are_deterministic() {
        assert_eq!(table_for("net1"), 101);
        assert_eq!(table_for("rail12"), 112);
        let t = table_for("roce");
        assert!((1000..2000).contains(&t));
        assert_eq!(t, table_for("roce"));
        assert_ne!(table_for("roce"), table_for("rocf"));
        let base = r#""cniVersion":"1.0.0","name":"n","type":"spinel""#;
        for bad in [
            r#""routing":{"table":254}"#,
            r#""sysctls":{"arpIgnore":5}"#,
            r#""sysctls":{"bogus":1}"#,
        ] {
            assert_eq!(
                parse(&format!("{{{base},{bad}}}")).unwrap_err().code,
                ErrorCode::InvalidConfig,
                "{bad}"
            );
        }
    }
}
