//! What the cluster should hold, derived from the fabric model: each node's `NodeFabric`
//! status, the HyperNodes, the Kueue Topology, the Events and the `Fabric` summary. Pure: the
//! same inputs give the same objects, byte for byte. [`Model`] keeps topo-discovery's live
//! model fed with only the changed reports and brings only what a change touched up to date,
//! saying which nodes and HyperNodes those are so the writes are planned from them.

pub mod events;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use spinel_api::crd::{CablingFinding, FabricStatus, NodeFabricStatus};
use spinel_api::kueue::Topology;
use spinel_api::labels::LabelOptions;
use spinel_api::volcano::HyperNode;
use topo_discovery::fabric::labels::LabelKeys;
use topo_discovery::fabric::live::{Delta, LiveFabric};
use topo_discovery::fabric::{DomainIdx, Fabric, Finding, kueue, volcano};

use crate::inputs::Inputs;
use events::EventSpec;

/// The label marking objects this controller owns (HyperNodes, the Topology).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Its value.
pub const MANAGED_BY: &str = "spinel-fabric-controller";

/// Most findings listed in the `Fabric` status; each node's own are in its status.
pub const MAX_FABRIC_FINDINGS: usize = 200;

/// How outputs are named.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Label keys (prefix, Spinel or Topograph tiers).
    pub labels: LabelOptions,
    /// Name of the Kueue Topology.
    pub topology_name: String,
}

/// Everything the controller publishes.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    /// Each node's status, for every node with a report.
    pub statuses: BTreeMap<String, NodeFabricStatus>,
    /// The HyperNodes by name; `None` to leave them as they are (no host placed).
    pub hypernodes: Option<BTreeMap<String, HyperNode>>,
    /// The Kueue Topology; `None` to leave it as it is (no host placed).
    pub topology: Option<Topology>,
    /// The `Fabric/default` status.
    pub fabric: FabricStatus,
    /// One Event per finding and per unusable report.
    pub events: Vec<EventSpec>,
}

/// What a model update may have changed: the nodes whose status and the HyperNodes that
/// may differ (the summary, the Topology and the Events are always compared).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dirty {
    /// Nodes by name.
    pub nodes: BTreeSet<String>,
    /// HyperNodes by name.
    pub hypernodes: BTreeSet<String>,
}

/// The live model and the desired state derived from it.
pub struct Model {
    live: LiveFabric,
    desired: Option<Desired>,
}

impl Model {
    /// An empty model; NICs map to rails by `inputs`' rail key.
    pub fn new(inputs: &Inputs) -> Self {
        Self {
            live: LiveFabric::new(inputs.rail_key()),
            desired: None,
        }
    }

    /// Takes in what changed in `inputs` since the last update and brings the desired state
    /// up to date; returns what may differ, `None` for everything.
    pub fn update(&mut self, inputs: &mut Inputs, settings: &Settings) -> Option<Dirty> {
        let changes = inputs.take_changes();
        let mut nodes: BTreeSet<String> = BTreeSet::new();
        for c in &changes {
            if let topo_discovery::fabric::live::Change::Host(name, _) = c {
                nodes.insert(name.clone());
            }
        }
        let delta = self.live.apply(changes);
        let Some(desired) = self.desired.as_mut() else {
            self.desired = Some(from_live(&self.live, inputs, settings));
            return None;
        };
        match delta {
            Delta::Everything => {
                *desired = from_live(&self.live, inputs, settings);
                None
            }
            Delta::Hosts { hosts, groups } => {
                nodes.extend(hosts);
                let fabric = self.live.fabric();
                patch_statuses(desired, fabric, inputs, &settings.labels, &nodes);
                let hypernodes = patch_hypernodes(desired, fabric, &settings.labels, &groups);
                let placed = fabric.placed_hosts() > 0;
                desired.topology = placed.then(|| topology(fabric, settings));
                desired.fabric = summary_of(fabric, inputs, self.live.refused());
                desired.events = events_of(fabric, inputs);
                Some(Dirty { nodes, hypernodes })
            }
        }
    }

    /// The desired state, once computed.
    pub fn desired(&self) -> Option<&Desired> {
        self.desired.as_ref()
    }

    /// The fabric model.
    pub fn fabric(&self) -> &Fabric {
        self.live.fabric()
    }

    /// How the model took changes in so far: (host-local, whole model).
    pub fn stats(&self) -> (u64, u64) {
        let s = self.live.stats();
        (s.fast, s.full)
    }
}

/// Runs inference over `inputs` from nothing and derives every output (what [`Model`] keeps
/// current).
pub fn compute(inputs: &Inputs, settings: &Settings) -> Desired {
    let mut live = LiveFabric::new(inputs.rail_key());
    live.apply(inputs.all_changes());
    from_live(&live, inputs, settings)
}

fn from_live(live: &LiveFabric, inputs: &Inputs, settings: &Settings) -> Desired {
    let mut desired = from_fabric(live.fabric(), inputs, settings);
    desired
        .fabric
        .unusable_reports
        .extend(live.refused().clone());
    desired
}

/// Derives every output from an inferred `fabric`.
pub fn from_fabric(fabric: &Fabric, inputs: &Inputs, settings: &Settings) -> Desired {
    let placed = fabric.placed_hosts() > 0;
    let unusable = inputs.unusable();
    Desired {
        statuses: statuses(fabric, inputs, &settings.labels),
        hypernodes: placed.then(|| hypernodes(fabric, &settings.labels)),
        topology: placed.then(|| topology(fabric, settings)),
        fabric: summary(fabric, unusable),
        events: events_of(fabric, inputs),
    }
}

fn events_of(fabric: &Fabric, inputs: &Inputs) -> Vec<EventSpec> {
    let mut events: Vec<EventSpec> = fabric.findings.iter().map(events::for_finding).collect();
    for (node, report) in inputs.reports() {
        if let Err(why) = &report.table {
            events.push(events::for_unusable(node, &why.to_string()));
        }
    }
    events
}

fn summary_of(
    fabric: &Fabric,
    inputs: &Inputs,
    refused: &BTreeMap<String, String>,
) -> FabricStatus {
    let mut unusable = inputs.unusable();
    unusable.extend(refused.clone());
    summary(fabric, unusable)
}

/// The statuses of `nodes` (those without a report any more are dropped).
fn patch_statuses(
    desired: &mut Desired,
    fabric: &Fabric,
    inputs: &Inputs,
    labels: &LabelOptions,
    nodes: &BTreeSet<String>,
) {
    let keys = LabelKeys::new(fabric, labels);
    let mut findings = findings_by_host(fabric);
    for name in nodes {
        match inputs.reports().get(name) {
            Some(report) => {
                let status = status_of(fabric, &keys, &mut findings, name, report);
                desired.statuses.insert(name.clone(), status);
            }
            None => {
                desired.statuses.remove(name);
            }
        }
    }
}

/// The HyperNodes of `groups` (leaf groups by id) and of the domains above them; returns
/// their names.
fn patch_hypernodes(
    desired: &mut Desired,
    fabric: &Fabric,
    labels: &LabelOptions,
    groups: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let Some(wanted) = desired.hypernodes.as_mut() else {
        return names;
    };
    let mut at: Vec<DomainIdx> = Vec::new();
    for (i, d) in fabric.domains.iter().enumerate() {
        if groups.contains(&d.id) {
            let mut next = Some(DomainIdx(i as u32));
            while let Some(x) = next {
                at.push(x);
                next = fabric.domain(x).parent;
            }
        }
    }
    at.sort_unstable();
    at.dedup();
    for (d, h) in volcano::hypernodes_of(fabric, &at, labels) {
        let name = fabric.domain(d).id.clone();
        match h {
            Some(mut h) => {
                managed(&mut h.metadata);
                wanted.insert(name.clone(), h);
            }
            None => {
                wanted.remove(&name);
            }
        }
        names.insert(name);
    }
    names
}

fn cabling(f: &Finding) -> CablingFinding {
    CablingFinding {
        severity: f.severity.as_str().to_owned(),
        kind: f.kind.as_str().to_owned(),
        // The agent's health check turns a finding about one of its NICs into that NIC's.
        nic: f.nic.clone(),
        message: f.message.clone(),
    }
}

fn findings_by_host(fabric: &Fabric) -> HashMap<&str, Vec<CablingFinding>> {
    let mut findings: HashMap<&str, Vec<CablingFinding>> = HashMap::new();
    for f in &fabric.findings {
        if let Some(h) = &f.host {
            findings.entry(h.as_str()).or_default().push(cabling(f));
        }
    }
    findings
}

fn statuses(
    fabric: &Fabric,
    inputs: &Inputs,
    labels: &LabelOptions,
) -> BTreeMap<String, NodeFabricStatus> {
    let keys = LabelKeys::new(fabric, labels);
    let mut findings = findings_by_host(fabric);
    inputs
        .reports()
        .iter()
        .map(|(name, report)| {
            let status = status_of(fabric, &keys, &mut findings, name, report);
            (name.clone(), status)
        })
        .collect()
}

/// One node's status: its labels when placed, its findings, its report's generation.
fn status_of(
    fabric: &Fabric,
    keys: &LabelKeys,
    findings: &mut HashMap<&str, Vec<CablingFinding>>,
    name: &str,
    report: &crate::inputs::NodeReport,
) -> NodeFabricStatus {
    let mut status = NodeFabricStatus {
        observed_generation: report.generation,
        findings: findings.remove(name).unwrap_or_default(),
        ..NodeFabricStatus::default()
    };
    if let Err(why) = &report.table {
        status.findings.insert(
            0,
            CablingFinding {
                severity: "error".into(),
                kind: "unusable_report".into(),
                nic: None,
                message: why.to_string(),
            },
        );
    }
    if let Some(host) = fabric.host_by_name(name)
        && fabric.host(host).domain.is_some()
    {
        status.labels = keys.host_labels(fabric, host).labels;
        status.tier1 = fabric.host_path(host).first().map(|d| d.id.clone());
    }
    status
}

fn managed(meta: &mut ObjectMeta) {
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned());
}

fn hypernodes(fabric: &Fabric, labels: &LabelOptions) -> BTreeMap<String, HyperNode> {
    volcano::hypernodes(fabric, labels)
        .into_iter()
        .filter_map(|mut h| {
            managed(&mut h.metadata);
            Some((h.metadata.name.clone()?, h))
        })
        .collect()
}

fn topology(fabric: &Fabric, settings: &Settings) -> Topology {
    let mut t = kueue::topology(fabric, &settings.topology_name, &settings.labels);
    managed(&mut t.metadata);
    t
}

fn summary(fabric: &Fabric, unusable: BTreeMap<String, String>) -> FabricStatus {
    let shown = fabric.findings.len().min(MAX_FABRIC_FINDINGS);
    FabricStatus {
        hosts: u32::try_from(fabric.placed_hosts()).unwrap_or(u32::MAX),
        switches: u32::try_from(fabric.switches.iter().filter(|s| !s.management).count())
            .unwrap_or(u32::MAX),
        tiers: u32::from(fabric.depth),
        rail_optimized: fabric.rail_optimized,
        errors: u32::try_from(fabric.error_count()).unwrap_or(u32::MAX),
        warnings: u32::try_from(fabric.warning_count()).unwrap_or(u32::MAX),
        findings: fabric.findings[..shown].iter().map(cabling).collect(),
        findings_omitted: u32::try_from(fabric.findings.len() - shown).unwrap_or(u32::MAX),
        unusable_reports: unusable,
        // The same for every replica: a failover alone changes nothing.
        computed_by: format!("spinel-fabric-controller {}", env!("CARGO_PKG_VERSION")),
    }
}
