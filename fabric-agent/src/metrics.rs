//! The agent's Prometheus metrics: its own (NICs, LLDP, health, announcements, route
//! reconciliation) and the RoCE counters read from sysfs on each scrape, named as the
//! exporters operators already run name them: `rdma_<counter>_total{device,port}` and
//! `rdma_port_info` after rdma_exporter; NIC facts after node_exporter's `node_network_*`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use hostnet::ethtool::{EthtoolSocket, pause_stat};
use hostnet::rdma::counters::PortCounters as RdmaPort;
use hostnet::rdma::gid::RdmaSysfs;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use spinel_node::nics::RoceNic;
use spinel_wire::neighbor::PortCounters as LldpCounters;

/// A NIC.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NicLabel {
    /// The netdev.
    pub nic: String,
}

/// An announcement burst's target.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GarpLabel {
    /// The host NIC whose carrier came up.
    pub nic: String,
    /// `host` or `pod`.
    pub target: String,
}

/// A health finding.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FindingLabel {
    /// The NIC, or empty for the node.
    pub nic: String,
    /// The finding's reason.
    pub reason: String,
}

/// A host routing change.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RepairLabel {
    /// `rule`, `route` or `sysctl`.
    pub kind: String,
    /// `add` or `delete`.
    pub op: String,
}

/// Every metric the agent keeps; cheap to clone (the values are shared).
#[derive(Clone)]
pub struct Metrics {
    /// `spinel_nic_carrier`.
    pub carrier: Family<NicLabel, Gauge>,
    /// `spinel_nic_speed_bytes`.
    pub speed: Family<NicLabel, Gauge>,
    /// `spinel_nic_mtu_bytes`.
    pub mtu: Family<NicLabel, Gauge>,
    /// `spinel_lldp_frames_ignored_total`.
    pub lldp_ignored: Counter,
    /// `spinel_health_finding`.
    pub findings: Family<FindingLabel, Gauge>,
    /// `spinel_roce_fabric_ready`.
    pub ready: Gauge,
    /// `spinel_node_degraded_taint`.
    pub tainted: Gauge,
    /// `spinel_garp_frames_sent_total`.
    pub garp_frames: Family<GarpLabel, Counter>,
    /// `spinel_garp_bursts_total`.
    pub garp_bursts: Family<NicLabel, Counter>,
    /// `spinel_routing_reconcile_duration_seconds`.
    pub reconcile: Histogram,
    /// `spinel_routing_changes_total`.
    pub repairs: Family<RepairLabel, Counter>,
    /// `spinel_routing_errors_total`.
    pub routing_errors: Counter,
    lldp: LldpStats,
    registry: Arc<Registry>,
}

/// A metric name, its help, and how to read its value from `T`.
type CounterField<T, V> = (&'static str, &'static str, fn(&T) -> V);

/// The LLDP receive counters (as of the last LLDP event) and neighbour counts (as of the last
/// published table) per port.
#[derive(Clone, Debug, Default)]
pub struct LldpStats(Arc<Mutex<BTreeMap<String, (LldpCounters, usize)>>>);

impl LldpStats {
    fn update(&self, port: &str, edit: impl FnOnce(&mut (LldpCounters, usize))) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match map.get_mut(port) {
            Some(entry) => edit(entry),
            None => edit(map.entry(port.to_owned()).or_default()),
        }
    }

    /// Records port `port`'s receive counters.
    pub fn set_counters(&self, port: &str, counters: LldpCounters) {
        self.update(port, |e| e.0 = counters);
    }

    /// Records how many neighbours port `port` hears.
    pub fn set_neighbors(&self, port: &str, neighbors: usize) {
        self.update(port, |e| e.1 = neighbors);
    }
}

impl Collector for LldpStats {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let counters: [CounterField<LldpCounters, u64>; 6] = [
            (
                "spinel_lldp_frames_received",
                "LLDP frames received, valid or not",
                |c| c.frames_in,
            ),
            (
                "spinel_lldp_frames_discarded",
                "LLDP frames discarded by validation",
                |c| c.frames_discarded,
            ),
            (
                "spinel_lldp_frames_with_errors",
                "LLDP frames with a TLV error",
                |c| c.frames_in_errors,
            ),
            ("spinel_lldp_tlvs_discarded", "LLDP TLVs discarded", |c| {
                c.tlvs_discarded
            }),
            (
                "spinel_lldp_tlvs_unrecognized",
                "LLDP TLVs not recognised",
                |c| c.tlvs_unrecognized,
            ),
            (
                "spinel_lldp_ageouts",
                "LLDP neighbours whose TTL expired",
                |c| c.ageouts,
            ),
        ];
        for (name, help, get) in counters {
            let mut family = encoder.encode_descriptor(
                name,
                help,
                None,
                prometheus_client::metrics::MetricType::Counter,
            )?;
            for (port, (c, _)) in map.iter() {
                let label = NicLabel { nic: port.clone() };
                ConstCounter::new(get(c)).encode(family.encode_family(&label)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "spinel_lldp_neighbors",
            "LLDP neighbours heard on the NIC",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (port, (_, n)) in map.iter() {
            let label = NicLabel { nic: port.clone() };
            ConstGauge::new(i64::try_from(*n).unwrap_or(i64::MAX))
                .encode(family.encode_family(&label)?)?;
        }
        Ok(())
    }
}

/// The RoCE counters of every RDMA port, read from sysfs at scrape time, and the per-priority
/// PFC pause counters of the port's netdev from its driver's statistics, where it has them.
#[derive(Debug)]
struct RdmaCollector {
    sysfs: RdmaSysfs,
    ethtool: Option<EthtoolSocket>,
}

/// A port's per-priority pause counter, labelled as rdma_exporter labels it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PauseLabel {
    device: String,
    port: String,
    netdev: String,
    direction: String,
    priority: String,
}

/// The pause counters among each port's netdev's driver statistics (`stats_of`), by metric
/// name (`rdma_roce_pfc_pause_{frames,duration,transitions}`).
fn pause_series(
    ports: &[RdmaPort],
    stats_of: impl Fn(&str) -> Vec<(String, u64)>,
) -> BTreeMap<String, Vec<(PauseLabel, u64)>> {
    let mut out: BTreeMap<String, Vec<(PauseLabel, u64)>> = BTreeMap::new();
    for p in ports {
        let Some(netdev) = &p.netdev else { continue };
        for (name, value) in stats_of(netdev) {
            let Some(stat) = pause_stat(&name) else {
                continue;
            };
            let label = PauseLabel {
                device: p.device.clone(),
                port: p.port.to_string(),
                netdev: netdev.clone(),
                direction: stat.direction.to_owned(),
                priority: stat.priority.to_string(),
            };
            out.entry(format!("rdma_roce_pfc_pause_{}", stat.kind))
                .or_default()
                .push((label, value));
        }
    }
    out
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PortLabel {
    device: String,
    port: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PortInfoLabel {
    device: String,
    port: String,
    netdev: String,
    link_layer: String,
}

/// A metric name from a counter file's name: already lower-case words and underscores.
fn counter_metric(name: &str) -> String {
    let base = name.strip_suffix("_total").unwrap_or(name);
    format!("rdma_{}", base.to_ascii_lowercase())
}

impl RdmaCollector {
    fn ports(&self) -> Vec<RdmaPort> {
        self.sysfs.port_counters().unwrap_or_default()
    }
}

impl Collector for RdmaCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use prometheus_client::metrics::MetricType;
        let ports = self.ports();
        let mut info = encoder.encode_descriptor(
            "rdma_port_info",
            "RDMA port: its netdev and link layer",
            None,
            MetricType::Gauge,
        )?;
        for p in &ports {
            let label = PortInfoLabel {
                device: p.device.clone(),
                port: p.port.to_string(),
                netdev: p.netdev.clone().unwrap_or_default(),
                link_layer: p.link_layer.clone().unwrap_or_default(),
            };
            ConstGauge::new(1).encode(info.encode_family(&label)?)?;
        }
        let states: [CounterField<RdmaPort, Option<u32>>; 2] = [
            ("rdma_port_state", "RDMA port state (4: ACTIVE)", |p| {
                p.state
            }),
            (
                "rdma_port_phys_state",
                "RDMA port physical state (5: LinkUp)",
                |p| p.phys_state,
            ),
        ];
        for (name, help, get) in states {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for p in &ports {
                if let Some(v) = get(p) {
                    let label = PortLabel {
                        device: p.device.clone(),
                        port: p.port.to_string(),
                    };
                    ConstGauge::new(i64::from(v)).encode(family.encode_family(&label)?)?;
                }
            }
        }
        // One family per counter name, whatever the driver offers.
        let mut by_name: BTreeMap<String, Vec<(PortLabel, u64)>> = BTreeMap::new();
        for p in &ports {
            for (name, value) in p.counters.iter().chain(&p.hw_counters) {
                let label = PortLabel {
                    device: p.device.clone(),
                    port: p.port.to_string(),
                };
                by_name
                    .entry(counter_metric(name))
                    .or_default()
                    .push((label, *value));
            }
        }
        for (name, values) in &by_name {
            let mut family = encoder.encode_descriptor(
                name,
                "RDMA port counter from sysfs (counters/ or hw_counters/)",
                None,
                MetricType::Counter,
            )?;
            for (label, value) in values {
                ConstCounter::new(*value).encode(family.encode_family(label)?)?;
            }
        }
        let Some(ethtool) = &self.ethtool else {
            return Ok(());
        };
        // A netdev that went away between the two reads has no statistics: nothing to show.
        let pauses = pause_series(&ports, |netdev| ethtool.stats(netdev).unwrap_or_default());
        for (name, values) in &pauses {
            let mut family = encoder.encode_descriptor(
                name,
                "PFC pause counter per priority from the netdev's driver statistics (ethtool -S)",
                None,
                MetricType::Counter,
            )?;
            for (label, value) in values {
                ConstCounter::new(*value).encode(family.encode_family(label)?)?;
            }
        }
        Ok(())
    }
}

impl Metrics {
    /// Registers everything; RDMA ports are read from the sysfs at `sysfs_root` at each scrape,
    /// their netdevs' pause counters through `ethtool` (a socket in the NICs' namespace).
    pub fn new(sysfs_root: PathBuf, ethtool: Option<EthtoolSocket>) -> Self {
        let mut registry = Registry::default();
        let m = Self {
            carrier: Family::default(),
            speed: Family::default(),
            mtu: Family::default(),
            lldp_ignored: Counter::default(),
            findings: Family::default(),
            ready: Gauge::default(),
            tainted: Gauge::default(),
            garp_frames: Family::default(),
            garp_bursts: Family::default(),
            reconcile: Histogram::new([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5]),
            repairs: Family::default(),
            routing_errors: Counter::default(),
            lldp: LldpStats::default(),
            registry: Arc::new(Registry::default()),
        };
        let r = &mut registry;
        r.register(
            "spinel_nic_carrier",
            "Whether the RoCE NIC has carrier",
            m.carrier.clone(),
        );
        r.register(
            "spinel_nic_speed_bytes",
            "RoCE NIC link speed, bytes per second",
            m.speed.clone(),
        );
        r.register("spinel_nic_mtu_bytes", "RoCE NIC MTU", m.mtu.clone());
        r.register(
            "spinel_lldp_frames_ignored",
            "LLDP frames ignored because they came from one of the node's own MACs",
            m.lldp_ignored.clone(),
        );
        r.register(
            "spinel_health_finding",
            "RoCE health problems present now (1), by NIC and reason",
            m.findings.clone(),
        );
        r.register(
            "spinel_roce_fabric_ready",
            "The node's RoCEFabricReady condition (1 True, 0 False)",
            m.ready.clone(),
        );
        r.register(
            "spinel_node_degraded_taint",
            "Whether the agent holds the degraded taint on its node",
            m.tainted.clone(),
        );
        r.register(
            "spinel_garp_frames_sent",
            "Gratuitous ARP and unsolicited NA frames sent after carrier up",
            m.garp_frames.clone(),
        );
        r.register(
            "spinel_garp_bursts",
            "Announcement bursts started (carrier up, agent start)",
            m.garp_bursts.clone(),
        );
        r.register(
            "spinel_routing_reconcile_duration_seconds",
            "Time to compare and repair the host's RoCE routes, rules and sysctls",
            m.reconcile.clone(),
        );
        r.register(
            "spinel_routing_changes",
            "Host routing changes made (or printed, in dry-run mode)",
            m.repairs.clone(),
        );
        r.register(
            "spinel_routing_errors",
            "Host routing changes or reads that failed",
            m.routing_errors.clone(),
        );
        r.register_collector(Box::new(m.lldp.clone()));
        r.register_collector(Box::new(RdmaCollector {
            sysfs: RdmaSysfs::new(sysfs_root),
            ethtool,
        }));
        Self {
            registry: Arc::new(registry),
            ..m
        }
    }

    /// The LLDP statistics the LLDP loop keeps current.
    pub fn lldp(&self) -> &LldpStats {
        &self.lldp
    }

    /// Sets the NIC gauges from a discovery.
    pub fn set_nics(&self, nics: &[RoceNic]) {
        for nic in nics {
            let label = NicLabel {
                nic: nic.name.to_string(),
            };
            self.carrier
                .get_or_create(&label)
                .set(i64::from(nic.carrier));
            self.mtu.get_or_create(&label).set(i64::from(nic.mtu));
            if let Some(mbps) = nic.speed_mbps {
                self.speed
                    .get_or_create(&label)
                    .set(i64::from(mbps) * 1_000_000 / 8);
            }
        }
    }

    /// The OpenMetrics text of every metric (reads sysfs: call it off the async workers).
    pub fn encode(&self) -> String {
        let mut text = String::with_capacity(16 * 1024);
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn exposition_names_follow_the_exporters_conventions() {
        let root = tempfile::tempdir().unwrap();
        let port = root.path().join("class/infiniband/mlx5_0/ports/1");
        fs::create_dir_all(port.join("hw_counters")).unwrap();
        fs::write(port.join("state"), "4: ACTIVE\n").unwrap();
        fs::write(port.join("link_layer"), "Ethernet\n").unwrap();
        fs::write(port.join("hw_counters/np_cnp_sent"), "5\n").unwrap();
        fs::write(port.join("hw_counters/out_of_sequence"), "2\n").unwrap();
        let m = Metrics::new(root.path().to_owned(), None);
        m.lldp().set_counters("ens1f0np0", LldpCounters::default());
        m.lldp().set_neighbors("ens1f0np0", 1);
        m.garp_frames
            .get_or_create(&GarpLabel {
                nic: "ens1f0np0".into(),
                target: "pod".into(),
            })
            .inc_by(4);
        let text = m.encode();
        for want in [
            "rdma_np_cnp_sent_total{device=\"mlx5_0\",port=\"1\"} 5",
            "rdma_out_of_sequence_total{device=\"mlx5_0\",port=\"1\"} 2",
            "rdma_port_state{device=\"mlx5_0\",port=\"1\"} 4",
            "rdma_port_info{device=\"mlx5_0\",port=\"1\",netdev=\"\",link_layer=\"Ethernet\"} 1",
            "spinel_lldp_neighbors{nic=\"ens1f0np0\"} 1",
            "spinel_lldp_frames_received_total{nic=\"ens1f0np0\"} 0",
            "spinel_garp_frames_sent_total{nic=\"ens1f0np0\",target=\"pod\"} 4",
        ] {
            assert!(text.contains(want), "{want} missing from\n{text}");
        }
        // A counter that moves is seen at the next scrape.
        fs::write(port.join("hw_counters/np_cnp_sent"), "6\n").unwrap();
        assert!(
            m.encode()
                .contains("rdma_np_cnp_sent_total{device=\"mlx5_0\",port=\"1\"} 6")
        );
    }

    #[test]
    fn pause_counters_are_picked_from_the_driver_statistics_per_port_netdev() {
        let port = |device: &str, netdev: Option<&str>| RdmaPort {
            device: device.into(),
            port: 1,
            state: Some(4),
            phys_state: None,
            link_layer: Some("Ethernet".into()),
            netdev: netdev.map(str::to_owned),
            counters: Vec::new(),
            hw_counters: Vec::new(),
        };
        let ports = [port("mlx5_0", Some("ens1f0np0")), port("rxe0", None)];
        let series = pause_series(&ports, |netdev| {
            assert_eq!(netdev, "ens1f0np0", "only ports with a netdev are read");
            vec![
                ("rx_prio3_pause".into(), 10),
                ("tx_prio3_pause_duration".into(), 250),
                ("rx_prio3_pause_transition".into(), 4),
                ("rx_bytes".into(), 999),
            ]
        });
        let label = |direction: &str| PauseLabel {
            device: "mlx5_0".into(),
            port: "1".into(),
            netdev: "ens1f0np0".into(),
            direction: direction.into(),
            priority: "3".into(),
        };
        assert_eq!(
            series,
            BTreeMap::from([
                (
                    "rdma_roce_pfc_pause_duration".to_owned(),
                    vec![(label("tx"), 250)]
                ),
                (
                    "rdma_roce_pfc_pause_frames".to_owned(),
                    vec![(label("rx"), 10)]
                ),
                (
                    "rdma_roce_pfc_pause_transitions".to_owned(),
                    vec![(label("rx"), 4)]
                ),
            ])
        );
    }
}
