//! The agent's Prometheus metrics: its own (NICs, LLDP, health, announcements, route
//! reconciliation) and the RoCE counters read from sysfs on each scrape, named as the
//! exporters operators already run name them: `rdma_<counter>_total{device,port}` and
//! `rdma_port_info` after rdma_exporter; NIC facts after node_exporter's `node_network_*`.
//! What the `spinel` CNI keeps in its journal on this node (VFs claimed per NIC, IPAM releases
//! deferred) is read at each scrape too, beside `sriov_numvfs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use hostnet::ethtool::{EthtoolSocket, pause_stat};
use hostnet::ifname::IfName;
use hostnet::rdma::counters::PortCounters as RdmaPort;
use hostnet::rdma::gid::RdmaSysfs;
use hostnet::sriov::Sysfs;
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
    cni: CniJournal,
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

/// What the CNI's journal and sysfs show about VFs and IPAM releases, read at each scrape:
/// `spinel_sriov_vfs{nic}` (`sriov_numvfs`), `spinel_sriov_vfs_claimed{nic}` (VFs the journal
/// holds for a pod, `vfs/<pci>.json`), `spinel_cni_ipam_releases_pending` (`releases/`) and the
/// totals of `counters.json`. Nothing about the journal is shown until its directory is known
/// ([`Metrics::watch_cni_journal`]), and a family that cannot be read is left out, never zero.
#[derive(Clone, Debug)]
struct CniJournal {
    sysfs: Sysfs,
    nics: Arc<Mutex<Vec<IfName>>>,
    state_dir: Arc<OnceLock<PathBuf>>,
}

/// The totals of `counters.json`: (metric name, help, key).
const CNI_COUNTERS: [(&str, &str, &str); 3] = [
    (
        "spinel_cni_ipam_releases_deferred",
        "IPAM releases the CNI could not make at DEL and keeps retrying",
        "ipamReleasesDeferred",
    ),
    (
        "spinel_cni_ipam_release_retries_failed",
        "Retries of deferred IPAM releases that failed again",
        "ipamReleaseRetriesFailed",
    ),
    (
        "spinel_cni_ipam_releases_recovered",
        "Deferred IPAM releases that later succeeded",
        "ipamReleasesRecovered",
    ),
];

impl CniJournal {
    /// Entries of `dir` named `*.json`; a missing directory has none (the CNI has not run).
    fn json_files(dir: &Path) -> Option<Vec<String>> {
        match std::fs::read_dir(dir) {
            Ok(entries) => Some(
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
                    .collect(),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Vec::new()),
            Err(_) => None,
        }
    }

    /// (NIC, VFs enabled, VFs claimed) for every NIC that is an SR-IOV PF.
    fn vfs(&self, claimed: Option<&[String]>) -> Vec<(String, u32, Option<usize>)> {
        let nics = self
            .nics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut out = Vec::new();
        for nic in nics {
            let Ok(pf) = self.sysfs.pf(nic.as_str()) else {
                continue;
            };
            let held = claimed.and_then(|claimed| {
                let vfs = self.sysfs.vfs_of(&pf).ok()?;
                Some(
                    vfs.iter()
                        .filter(|(_, pci)| claimed.iter().any(|c| c == pci.as_str()))
                        .count(),
                )
            });
            out.push((nic.to_string(), pf.num_vfs, held));
        }
        out
    }

    /// `counters.json`'s totals; all zero when there is none yet.
    fn counters(dir: &Path) -> Option<serde_json::Value> {
        match std::fs::read(dir.join("counters.json")) {
            Ok(bytes) => serde_json::from_slice(&bytes).ok(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(serde_json::json!({})),
            Err(_) => None,
        }
    }
}

impl Collector for CniJournal {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use prometheus_client::metrics::MetricType;
        let dir = self.state_dir.get();
        let claimed = dir.and_then(|d| Self::json_files(&d.join("vfs")));
        let vfs = self.vfs(claimed.as_deref());
        let mut family = encoder.encode_descriptor(
            "spinel_sriov_vfs",
            "VFs enabled on the RoCE NIC (sriov_numvfs)",
            None,
            MetricType::Gauge,
        )?;
        for (nic, enabled, _) in &vfs {
            ConstGauge::new(i64::from(*enabled))
                .encode(family.encode_family(&NicLabel { nic: nic.clone() })?)?;
        }
        if claimed.is_some() {
            let mut family = encoder.encode_descriptor(
                "spinel_sriov_vfs_claimed",
                "VFs of the RoCE NIC the spinel CNI holds for pods (its journal's claims)",
                None,
                MetricType::Gauge,
            )?;
            for (nic, _, held) in &vfs {
                if let Some(held) = held {
                    ConstGauge::new(i64::try_from(*held).unwrap_or(i64::MAX))
                        .encode(family.encode_family(&NicLabel { nic: nic.clone() })?)?;
                }
            }
        }
        let Some(dir) = dir else { return Ok(()) };
        if let Some(pending) = Self::json_files(&dir.join("releases")) {
            let family = encoder.encode_descriptor(
                "spinel_cni_ipam_releases_pending",
                "IPAM releases the CNI's journal still has to retry",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(i64::try_from(pending.len()).unwrap_or(i64::MAX)).encode(family)?;
        }
        if let Some(counters) = Self::counters(dir) {
            for (name, help, key) in CNI_COUNTERS {
                let value = counters[key].as_u64().unwrap_or(0);
                let family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
                ConstCounter::new(value).encode(family)?;
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
            cni: CniJournal {
                sysfs: Sysfs::new(&sysfs_root),
                nics: Arc::default(),
                state_dir: Arc::default(),
            },
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
        r.register_collector(Box::new(m.cni.clone()));
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

    /// Reads the `spinel` CNI's journal in `state_dir` (its `stateDir`) at each scrape, for
    /// the VF claims and IPAM release metrics. The first call wins.
    pub fn watch_cni_journal(&self, state_dir: PathBuf) {
        let _ = self.cni.state_dir.set(state_dir);
    }

    /// Sets the NIC gauges from a discovery.
    pub fn set_nics(&self, nics: &[RoceNic]) {
        *self.cni.nics.lock().unwrap_or_else(PoisonError::into_inner) =
            nics.iter().map(|n| n.name.clone()).collect();
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

    /// A PF with `vfs` VFs (PCI 0000:01:00.N+1) in a fake sysfs under `root`.
    fn sriov_pf(root: &Path, name: &str, vfs: u32) {
        let pf = root.join("bus/pci/devices/0000:01:00.0");
        fs::create_dir_all(pf.join("net").join(name)).unwrap();
        fs::write(pf.join("sriov_numvfs"), format!("{vfs}\n")).unwrap();
        fs::write(pf.join("sriov_totalvfs"), "8\n").unwrap();
        for i in 0..vfs {
            let vf = root.join(format!("bus/pci/devices/0000:01:00.{}", i + 1));
            fs::create_dir_all(&vf).unwrap();
            std::os::unix::fs::symlink(&vf, pf.join(format!("virtfn{i}"))).unwrap();
        }
        fs::create_dir_all(root.join("class/net").join(name)).unwrap();
        std::os::unix::fs::symlink(&pf, root.join("class/net").join(name).join("device")).unwrap();
    }

    #[test]
    fn vf_claims_and_deferred_releases_come_from_the_cni_journal() {
        let root = tempfile::tempdir().unwrap();
        sriov_pf(root.path(), "ens1f0np0", 4);
        let m = Metrics::new(root.path().to_owned(), None);
        m.set_nics(&[RoceNic {
            name: "ens1f0np0".parse().unwrap(),
            index: 2,
            pci: "0000:01:00.0".parse().unwrap(),
            rdma_device: None,
            mac: None,
            mtu: 9000,
            carrier: true,
            speed_mbps: None,
            addresses: Vec::new(),
        }]);
        let text = m.encode();
        assert!(
            text.contains("spinel_sriov_vfs{nic=\"ens1f0np0\"} 4"),
            "{text}"
        );
        // Before the journal is known, nothing is said about it (not zero).
        assert!(!text.contains("spinel_sriov_vfs_claimed"), "{text}");
        assert!(!text.contains("spinel_cni_"), "{text}");

        let state = root.path().join("cni-state");
        fs::create_dir_all(state.join("vfs")).unwrap();
        fs::create_dir_all(state.join("releases")).unwrap();
        for vf in ["0000:01:00.1", "0000:01:00.3", "0000:02:00.1"] {
            fs::write(state.join("vfs").join(format!("{vf}.json")), "{}").unwrap();
        }
        fs::write(state.join("releases/0123.json"), "{}").unwrap();
        fs::write(
            state.join("counters.json"),
            r#"{"schema":2,"ipamReleasesDeferred":3,"ipamReleaseRetriesFailed":5,"ipamReleasesRecovered":2}"#,
        )
        .unwrap();
        m.watch_cni_journal(state.clone());
        let text = m.encode();
        for want in [
            // 0000:02:00.1 is another PF's VF.
            "spinel_sriov_vfs_claimed{nic=\"ens1f0np0\"} 2",
            "spinel_cni_ipam_releases_pending 1",
            "spinel_cni_ipam_releases_deferred_total 3",
            "spinel_cni_ipam_release_retries_failed_total 5",
            "spinel_cni_ipam_releases_recovered_total 2",
        ] {
            assert!(text.contains(want), "{want} missing from\n{text}");
        }
        // A journal without counters yet: zero deferred, as the CNI would count.
        fs::remove_file(state.join("counters.json")).unwrap();
        assert!(
            m.encode()
                .contains("spinel_cni_ipam_releases_deferred_total 0")
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
