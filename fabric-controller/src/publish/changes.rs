//! The writes that bring the cluster to the desired state: only where what the API server
//! holds differs from it. Pure, so "an unchanged fabric writes nothing" is a unit test.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use spinel_api::crd::{CablingFinding, FabricStatus, NodeFabricStatus};
use spinel_api::kueue::Topology;
use spinel_api::volcano::HyperNode;

use crate::desired::events::EventSpec;
use crate::desired::{Desired, Dirty, MANAGED_BY, MANAGED_BY_LABEL};
use crate::observed::Store;

/// What the API server holds of the objects the controller writes.
#[derive(Debug, Default)]
pub struct Observed {
    /// `NodeFabric` statuses by node (`None`: the object exists without a status).
    pub statuses: Store<Option<NodeFabricStatus>>,
    /// Every HyperNode (ours carry [`MANAGED_BY_LABEL`]).
    pub hypernodes: Store<HyperNode>,
    /// The Kueue Topology (by name).
    pub topologies: Store<Topology>,
    /// `Fabric` objects by name, with their status.
    pub fabrics: Store<Option<FabricStatus>>,
}

impl Observed {
    /// Whether every watch has listed once (before that, absence means nothing).
    pub fn listed(&self) -> bool {
        self.statuses.listed()
            && self.hypernodes.listed()
            && self.topologies.listed()
            && self.fabrics.listed()
    }
}

/// One write.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Apply a node's status.
    NodeStatus(String, NodeFabricStatus),
    /// Apply a HyperNode.
    HyperNode(Box<HyperNode>),
    /// Delete one of our HyperNodes that the model no longer has.
    DeleteHyperNode(String),
    /// Apply the Topology.
    Topology(Box<Topology>),
    /// Create the `Fabric` object (its status needs it).
    FabricObject(String),
    /// Apply the `Fabric` status.
    FabricStatus(String, Box<FabricStatus>),
    /// Create an Event (AlreadyExists is success).
    Event(EventSpec),
}

/// Whether `h` is ours.
pub fn is_ours(h: &HyperNode) -> bool {
    h.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(MANAGED_BY_LABEL))
        .is_some_and(|v| v == MANAGED_BY)
}

fn labels_hold(
    observed: Option<&BTreeMap<String, String>>,
    wanted: Option<&BTreeMap<String, String>>,
) -> bool {
    wanted
        .into_iter()
        .flatten()
        .all(|(k, v)| observed.and_then(|o| o.get(k)) == Some(v))
}

/// The writes for `desired` over `observed`; `fabric_name` is the summary object, `emitted`
/// the Events this replica already created.
pub fn plan(
    desired: &Desired,
    observed: &Observed,
    fabric_name: &str,
    emitted: &HashSet<String>,
) -> Vec<Write> {
    plan_changes(desired, observed, fabric_name, emitted, None)
}

/// The writes for `desired` over `observed`, looking only at the node statuses and
/// HyperNodes in `dirty` (what a change may have touched, or what the server changed); the
/// summary, the Topology and the Events are always compared. `None` compares everything.
pub fn plan_changes(
    desired: &Desired,
    observed: &Observed,
    fabric_name: &str,
    emitted: &HashSet<String>,
    dirty: Option<&Dirty>,
) -> Vec<Write> {
    let mut out = Vec::new();
    let mut status_write = |node: &String, status: &NodeFabricStatus| {
        let Some(current) = observed.statuses.get(node) else {
            // The object is gone (or not seen yet): a status needs it.
            return;
        };
        if current.as_ref() != Some(status) {
            out.push(Write::NodeStatus(node.clone(), status.clone()));
        }
    };
    match dirty {
        Some(d) => {
            for node in &d.nodes {
                if let Some(status) = desired.statuses.get(node) {
                    status_write(node, status);
                }
            }
        }
        None => {
            for (node, status) in &desired.statuses {
                status_write(node, status);
            }
        }
    }
    let mut fabric = desired.fabric.clone();
    if let Some(wanted) = &desired.hypernodes {
        let only = dirty.map(|d| &d.hypernodes);
        hypernode_writes(wanted, observed, only, &mut fabric, &mut out);
    }
    if let Some(t) = &desired.topology {
        let name = t.metadata.name.as_deref().unwrap_or_default();
        let current = observed.topologies.get(name);
        let same = current.is_some_and(|c| {
            c.spec == t.spec && labels_hold(c.metadata.labels.as_ref(), t.metadata.labels.as_ref())
        });
        if !same {
            out.push(Write::Topology(Box::new(t.clone())));
        }
    }
    match observed.fabrics.get(fabric_name) {
        None => {
            out.push(Write::FabricObject(fabric_name.to_owned()));
            out.push(Write::FabricStatus(
                fabric_name.to_owned(),
                Box::new(fabric),
            ));
        }
        Some(current) if current.as_ref() != Some(&fabric) => {
            out.push(Write::FabricStatus(
                fabric_name.to_owned(),
                Box::new(fabric),
            ));
        }
        Some(_) => {}
    }
    out.extend(
        desired
            .events
            .iter()
            .filter(|e| !emitted.contains(&e.name))
            .cloned()
            .map(Write::Event),
    );
    out
}

fn hypernode_writes(
    wanted: &BTreeMap<String, HyperNode>,
    observed: &Observed,
    only: Option<&BTreeSet<String>>,
    fabric: &mut FabricStatus,
    out: &mut Vec<Write>,
) {
    // Every wanted HyperNode is looked at for another source's (the summary counts them all,
    // so it does not depend on what changed); only the considered ones may be written.
    let considered = |name: &String| only.is_none_or(|o| o.contains(name));
    for (name, h) in wanted {
        match observed.hypernodes.get(name) {
            Some(current) if !is_ours(current) => {
                // Never take over another source's HyperNode (Volcano's own discovery).
                fabric.warnings += 1;
                fabric.findings.push(CablingFinding {
                    severity: "warning".into(),
                    kind: "hypernode_conflict".into(),
                    nic: None,
                    message: format!(
                        "HyperNode {name} exists and is not managed by {MANAGED_BY}: left as it \
                         is; delete it or turn off the other source to let Spinel publish it"
                    ),
                });
            }
            _ if !considered(name) => {}
            Some(current)
                if current.spec == h.spec
                    && labels_hold(
                        current.metadata.labels.as_ref(),
                        h.metadata.labels.as_ref(),
                    ) => {}
            _ => out.push(Write::HyperNode(Box::new(h.clone()))),
        }
    }
    let mut stale: Vec<&String> = match only {
        Some(o) => o
            .iter()
            .filter(|name| {
                !wanted.contains_key(*name) && observed.hypernodes.get(name).is_some_and(is_ours)
            })
            .collect(),
        None => observed
            .hypernodes
            .iter()
            .filter(|(name, h)| is_ours(h) && !wanted.contains_key(*name))
            .map(|(name, _)| name)
            .collect(),
    };
    stale.sort();
    out.extend(stale.into_iter().cloned().map(Write::DeleteHyperNode));
}
