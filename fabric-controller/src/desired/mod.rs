//! What the cluster should hold, derived from the inputs by one inference: each node's
//! `NodeFabric` status, the HyperNodes, the Kueue Topology, the Events and the `Fabric`
//! summary. Pure: the same inputs give the same objects, byte for byte.

pub mod events;

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use spinel_api::crd::{CablingFinding, FabricStatus, NodeFabricStatus};
use spinel_api::kueue::Topology;
use spinel_api::labels::LabelOptions;
use spinel_api::volcano::HyperNode;
use topo_discovery::fabric::labels::LabelKeys;
use topo_discovery::fabric::{Fabric, Finding, kueue, volcano};

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

/// Runs inference over `inputs` and derives every output.
pub fn compute(inputs: &Inputs, settings: &Settings) -> Desired {
    let (builder, refused) = inputs.builder();
    let fabric = builder.infer(inputs.options());
    let mut desired = from_fabric(&fabric, inputs, settings);
    desired.fabric.unusable_reports.extend(refused);
    desired
}

/// Derives every output from an inferred `fabric`.
pub fn from_fabric(fabric: &Fabric, inputs: &Inputs, settings: &Settings) -> Desired {
    let placed = fabric.placed_hosts() > 0;
    let unusable = inputs.unusable();
    let mut events: Vec<EventSpec> = fabric.findings.iter().map(events::for_finding).collect();
    for (node, report) in inputs.reports() {
        if let Err(why) = &report.table {
            events.push(events::for_unusable(node, why));
        }
    }
    Desired {
        statuses: statuses(fabric, inputs, &settings.labels),
        hypernodes: placed.then(|| hypernodes(fabric, &settings.labels)),
        topology: placed.then(|| topology(fabric, settings)),
        fabric: summary(fabric, unusable),
        events,
    }
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

fn statuses(
    fabric: &Fabric,
    inputs: &Inputs,
    labels: &LabelOptions,
) -> BTreeMap<String, NodeFabricStatus> {
    let keys = LabelKeys::new(fabric, labels);
    let mut findings: HashMap<&str, Vec<CablingFinding>> = HashMap::new();
    for f in &fabric.findings {
        if let Some(h) = &f.host {
            findings.entry(h.as_str()).or_default().push(cabling(f));
        }
    }
    inputs
        .reports()
        .iter()
        .map(|(name, report)| {
            let mut status = NodeFabricStatus {
                observed_generation: report.generation,
                findings: findings.remove(name.as_str()).unwrap_or_default(),
                ..NodeFabricStatus::default()
            };
            if let Err(why) = &report.table {
                status.findings.insert(
                    0,
                    CablingFinding {
                        severity: "error".into(),
                        kind: "unusable_report".into(),
                        nic: None,
                        message: why.clone(),
                    },
                );
            }
            if let Some(host) = fabric.host_by_name(name)
                && fabric.host(host).domain.is_some()
            {
                status.labels = keys.host_labels(fabric, host).labels;
                status.tier1 = fabric.host_path(host).first().map(|d| d.id.clone());
            }
            (name.clone(), status)
        })
        .collect()
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
