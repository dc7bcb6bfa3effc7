//! Kubernetes node labels derived from the fabric: one tier key per enclosing domain (closest
//! first), plus rail data.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use spinel_api::labels::LabelOptions;

use super::model::{Fabric, HostIdx};

/// The labels of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLabels {
    /// Node name.
    pub node: String,
    /// Label key to value, sorted by key.
    pub labels: BTreeMap<String, String>,
}

/// Label keys built once per fabric rather than once per node.
#[derive(Debug, Clone)]
pub struct LabelKeys {
    tiers: Vec<String>,
    rails: Vec<String>,
    count: String,
}

impl LabelKeys {
    /// The keys of `fabric`'s tiers and rails under `options`.
    pub fn new(fabric: &Fabric, options: &LabelOptions) -> Self {
        Self {
            tiers: (1..=fabric.depth.max(1))
                .map(|t| options.tier_key(t))
                .collect(),
            rails: (0..fabric.rails.len())
                .map(|r| options.rail_key(r as u16))
                .collect(),
            count: options.rails_key(),
        }
    }

    /// The labels of one host (see [`host_labels`]).
    pub fn host_labels(&self, fabric: &Fabric, host: HostIdx) -> NodeLabels {
        labels_with(fabric, host, self)
    }
}

fn labels_with(fabric: &Fabric, host: HostIdx, keys: &LabelKeys) -> NodeLabels {
    let h = fabric.host(host);
    let mut labels = BTreeMap::new();
    for d in fabric.host_path(host) {
        if let Some(k) = keys.tiers.get(usize::from(d.tier) - 1) {
            labels.insert(k.clone(), d.id.clone());
        }
    }
    let mut connected = 0usize;
    for nic in &h.nics {
        if let Some(link) = &nic.link {
            connected += 1;
            if let Some(k) = keys.rails.get(usize::from(nic.rail)) {
                labels
                    .entry(k.clone())
                    .or_insert_with(|| fabric.switch(link.switch).id.clone());
            }
        }
    }
    labels.insert(keys.count.clone(), connected.to_string());
    NodeLabels {
        node: h.name.clone(),
        labels,
    }
}

/// Labels for one host: the id of each enclosing domain under its tier key, the leaf id for
/// each connected rail, and the number of connected rails.
pub fn host_labels(fabric: &Fabric, host: HostIdx, options: &LabelOptions) -> NodeLabels {
    labels_with(fabric, host, &LabelKeys::new(fabric, options))
}

/// Labels for every host, in host order.
pub fn node_labels(fabric: &Fabric, options: &LabelOptions) -> Vec<NodeLabels> {
    let keys = LabelKeys::new(fabric, options);
    (0..fabric.hosts.len())
        .map(|i| labels_with(fabric, HostIdx(i as u32), &keys))
        .collect()
}

/// A partial `v1/Node` carrying only the labels: apply it with
/// `kubectl apply --server-side --field-manager=spinel` so no other field is touched.
pub fn node_object(labels: NodeLabels) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(labels.node),
            labels: Some(labels.labels),
            ..ObjectMeta::default()
        },
        spec: None,
        status: None,
    }
}

/// Partial `v1/Node` objects for every host, in host order (see [`node_object`]).
pub fn node_objects(fabric: &Fabric, options: &LabelOptions) -> Vec<Node> {
    node_labels(fabric, options)
        .into_iter()
        .map(node_object)
        .collect()
}
