//! The node duties' settings (host routing, announcements, RoCE health, metrics): their
//! sections of the configuration file, their defaults, and their validation. `config.rs`
//! owns the file as a whole and the flags.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::config_error::{ConfigError, invalid};
use serde::Deserialize;

/// Routing protocol number on the agent's routes and rules (`proto 197`), so it tells its own
/// entries from everybody else's. Unassigned in iproute2's `rt_protos`.
pub const DEFAULT_PROTOCOL: u8 = 197;

/// `routing:` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct RoutingFile {
    enabled: Option<bool>,
    dry_run: Option<bool>,
    table_base: Option<u32>,
    tables: BTreeMap<String, u32>,
    rule_priority: Option<u32>,
    gateways: BTreeMap<String, IpAddr>,
    protocol: Option<u8>,
    arp_ignore: Option<u8>,
    arp_announce: Option<u8>,
    rp_filter: Option<u8>,
    resync_seconds: Option<u64>,
}

/// `garp:` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct GarpFile {
    enabled: Option<bool>,
    count: Option<u32>,
    interval_ms: Option<u64>,
    on_start: Option<bool>,
    records_dir: Option<PathBuf>,
}

/// `health:` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct HealthFile {
    min_speed_mbps: Option<u32>,
    min_mtu: Option<u32>,
    require_neighbor: Option<bool>,
    taint: Option<bool>,
    unhealthy_after_seconds: Option<u64>,
    healthy_after_seconds: Option<u64>,
    period_seconds: Option<u64>,
    neighbor_grace_seconds: Option<u64>,
    dcb_replay_dir: Option<PathBuf>,
}

/// `metrics:` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct MetricsFile {
    address: Option<String>,
}

/// Host policy routing.
#[derive(Debug, Clone, PartialEq)]
pub struct Routing {
    /// Whether the agent keeps the per-NIC tables, rules and sysctls.
    pub enabled: bool,
    /// Print the iproute2 equivalent of each change instead of making it.
    pub dry_run: bool,
    /// Table of the first RoCE NIC (by name); the next NICs follow.
    pub table_base: u32,
    /// Tables chosen by the operator, per NIC.
    pub tables: BTreeMap<String, u32>,
    /// Preference of the `from ADDRESS lookup TABLE` rules.
    pub rule_priority: u32,
    /// A default route in the NIC's table via this gateway (L3 rails).
    pub gateways: BTreeMap<String, IpAddr>,
    /// Routing protocol marking the agent's routes and rules.
    pub protocol: u8,
    /// `arp_ignore`; `None`: 1, or 2 when two RoCE NICs share a subnet.
    pub arp_ignore: Option<u8>,
    /// `arp_announce`.
    pub arp_announce: u8,
    /// `rp_filter` (2: loose).
    pub rp_filter: u8,
    /// Full reconcile at least this often, with or without events (sysctls have none).
    pub resync: Duration,
}

/// Announcements after carrier up.
#[derive(Debug, Clone, PartialEq)]
pub struct Garp {
    /// Whether the agent announces at all.
    pub enabled: bool,
    /// Rounds per carrier up.
    pub count: u32,
    /// Spacing of the rounds: over the receivers' 1 s `locktime`, or later rounds are ignored.
    pub interval: Duration,
    /// Also one burst per NIC with carrier when the agent starts.
    pub on_start: bool,
    /// The CNI's per-attachment records; `None`: where the CNI's own node settings file puts
    /// them (`roceInfoDir`), so the two never disagree unless told to.
    pub records_dir: Option<PathBuf>,
}

impl Garp {
    /// Where the CNI's records are read: as configured, else the CNI's default.
    pub fn records_dir(&self) -> PathBuf {
        self.records_dir
            .clone()
            .unwrap_or_else(|| spinel_node::cni_settings::Settings::default().roce_info_dir)
    }
}

/// RoCE health and node shielding.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// A NIC slower than this is unhealthy.
    pub min_speed_mbps: Option<u32>,
    /// A NIC with a smaller MTU is unhealthy.
    pub min_mtu: Option<u32>,
    /// A NIC without an LLDP neighbour is unhealthy (a lost rail).
    pub require_neighbor: bool,
    /// Taint the node `fabric.spinel.dev/degraded:NoSchedule` while unhealthy.
    pub taint: bool,
    /// A problem must last this long before the node is marked unhealthy.
    pub unhealthy_after: Duration,
    /// The node must stay healthy this long before it is marked healthy again.
    pub healthy_after: Duration,
    /// How often the checks run.
    pub period: Duration,
    /// After the agent starts, how long a NIC may hear no LLDP neighbour before that counts
    /// (a switch sends every 30 s by default).
    pub neighbor_grace: Duration,
    /// Test seam: read each NIC's DCB state from recorded dcbnl replies in this directory
    /// instead of asking the kernel (veth has no DCB operations). Never set in production.
    pub dcb_replay_dir: Option<PathBuf>,
}

/// Metrics and probes.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// Where `/metrics`, `/healthz` and `/readyz` are served; `None`: not at all.
    pub address: Option<SocketAddr>,
}

/// The duties' settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Duties {
    /// Host routing.
    pub routing: Routing,
    /// Announcements.
    pub garp: Garp,
    /// Health.
    pub health: Health,
    /// Metrics.
    pub metrics: Metrics,
}

/// The file's duty sections.
#[derive(Debug, Default)]
pub struct DutiesFile {
    /// `routing:`.
    pub routing: RoutingFile,
    /// `garp:`.
    pub garp: GarpFile,
    /// `health:`.
    pub health: HealthFile,
    /// `metrics:`.
    pub metrics: MetricsFile,
}

/// Flags that override the file.
#[derive(Debug, Default, Clone)]
pub struct DutyFlags {
    /// `--dry-run-routes`.
    pub dry_run_routes: bool,
    /// `--metrics-address`.
    pub metrics_address: Option<String>,
    /// `--taint-degraded`.
    pub taint: bool,
}

fn sysctl_value(name: &str, v: Option<u8>, default: u8, max: u8) -> Result<u8, ConfigError> {
    let v = v.unwrap_or(default);
    if v > max {
        invalid!("routing.{name}: {v} is not a valid value (0 to {max})");
    }
    Ok(v)
}

impl DutiesFile {
    /// The resolved settings, flags winning.
    pub fn resolve(self, flags: &DutyFlags) -> Result<Duties, ConfigError> {
        let r = self.routing;
        let arp_ignore = match r.arp_ignore {
            Some(v) if v > 8 || (4..8).contains(&v) => {
                invalid!("routing.arpIgnore: {v} is not a valid arp_ignore (0-3 or 8)")
            }
            v => v,
        };
        for (nic, table) in &r.tables {
            if !hostnet::sriov::is_valid_ifname(nic) || matches!(table, 0 | 253..=255) {
                invalid!(
                    "routing.tables: {nic:?} -> {table}: not an interface, or a reserved table (0, 253-255)"
                );
            }
        }
        let table_base = r.table_base.unwrap_or(100);
        if matches!(table_base, 0 | 253..=255) || table_base > u32::MAX - 4096 {
            invalid!("routing.tableBase: {table_base} is reserved or too large");
        }
        let routing = Routing {
            enabled: r.enabled.unwrap_or(true),
            dry_run: flags.dry_run_routes || r.dry_run == Some(true),
            table_base,
            tables: r.tables,
            rule_priority: r.rule_priority.unwrap_or(1000).clamp(1, 32765),
            gateways: r.gateways,
            protocol: r.protocol.unwrap_or(DEFAULT_PROTOCOL),
            arp_ignore,
            arp_announce: sysctl_value("arpAnnounce", r.arp_announce, 2, 2)?,
            rp_filter: sysctl_value("rpFilter", r.rp_filter, 2, 2)?,
            resync: Duration::from_secs(r.resync_seconds.unwrap_or(30).clamp(1, 3600)),
        };
        if matches!(routing.protocol, 0..=4) {
            invalid!("routing.protocol: 0-4 belong to the kernel and iproute2 (use e.g. 197)");
        }
        let g = self.garp;
        let garp = Garp {
            enabled: g.enabled.unwrap_or(true),
            count: g.count.unwrap_or(3).min(10),
            interval: Duration::from_millis(g.interval_ms.unwrap_or(1100).clamp(100, 60_000)),
            on_start: g.on_start.unwrap_or(true),
            records_dir: g.records_dir,
        };
        let h = self.health;
        let health = Health {
            min_speed_mbps: h.min_speed_mbps,
            min_mtu: h.min_mtu,
            require_neighbor: h.require_neighbor.unwrap_or(true),
            taint: flags.taint || h.taint == Some(true),
            unhealthy_after: Duration::from_secs(h.unhealthy_after_seconds.unwrap_or(10).min(3600)),
            healthy_after: Duration::from_secs(h.healthy_after_seconds.unwrap_or(60).min(86_400)),
            period: Duration::from_secs(h.period_seconds.unwrap_or(2).clamp(1, 300)),
            neighbor_grace: Duration::from_secs(h.neighbor_grace_seconds.unwrap_or(40).min(600)),
            dcb_replay_dir: h.dcb_replay_dir,
        };
        let address = match flags
            .metrics_address
            .as_deref()
            .or(self.metrics.address.as_deref())
        {
            None => Some(SocketAddr::from(([0, 0, 0, 0], 9478))),
            Some("" | "off") => None,
            Some(text) => match text.parse() {
                Ok(a) => Some(a),
                Err(_) => invalid!("metrics.address: {text:?} is not HOST:PORT"),
            },
        };
        Ok(Duties {
            routing,
            garp,
            health,
            metrics: Metrics { address },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_research_recipe_and_bad_values_are_refused() {
        let d = DutiesFile::default()
            .resolve(&DutyFlags::default())
            .unwrap();
        assert!(d.routing.enabled && !d.routing.dry_run);
        assert_eq!(
            (
                d.routing.arp_announce,
                d.routing.rp_filter,
                d.routing.arp_ignore
            ),
            (2, 2, None)
        );
        assert_eq!((d.routing.table_base, d.routing.rule_priority), (100, 1000));
        assert_eq!(d.garp.count, 3);
        assert!(d.garp.interval > Duration::from_secs(1), "beats locktime");
        assert!(!d.health.taint);
        assert_eq!(d.metrics.address.unwrap().port(), 9478);

        let flags = DutyFlags {
            dry_run_routes: true,
            metrics_address: Some("off".into()),
            taint: true,
        };
        let d = DutiesFile::default().resolve(&flags).unwrap();
        assert!(d.routing.dry_run && d.health.taint && d.metrics.address.is_none());

        let mut f = DutiesFile::default();
        f.routing.arp_ignore = Some(5);
        assert!(f.resolve(&DutyFlags::default()).is_err());
        let mut f = DutiesFile::default();
        f.routing.tables.insert("pf0".into(), 254);
        assert!(
            f.resolve(&DutyFlags::default()).is_err(),
            "main is not ours"
        );
        let mut f = DutiesFile::default();
        f.routing.protocol = Some(4);
        assert!(f.resolve(&DutyFlags::default()).is_err());
        let mut f = DutiesFile::default();
        f.metrics.address = Some("nowhere".into());
        assert!(f.resolve(&DutyFlags::default()).is_err());
    }
}
