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
        let (pairs, count) = self.pairs(fabric, host);
        let mut labels: BTreeMap<String, String> = pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        labels.insert(self.count.clone(), count);
        NodeLabels {
            node: fabric.host(host).name.clone(),
            labels,
        }
    }

    /// Makes `node` the partial Node object of `host` (see [`node_object`]), reusing its
    /// strings: writing 100k nodes then allocates almost nothing.
    pub fn fill_node(&self, fabric: &Fabric, host: HostIdx, node: &mut Node) {
        let (mut pairs, count) = self.pairs(fabric, host);
        pairs.push((self.count.as_str(), count.as_str()));
        pairs.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let meta = &mut node.metadata;
        let name = meta.name.get_or_insert_with(String::new);
        name.clear();
        name.push_str(&fabric.host(host).name);
        let labels = meta.labels.get_or_insert_with(BTreeMap::new);
        let same_keys =
            labels.len() == pairs.len() && labels.keys().zip(&pairs).all(|(k, p)| k == p.0);
        if same_keys {
            for (value, (_, v)) in labels.values_mut().zip(&pairs) {
                value.clear();
                value.push_str(v);
            }
        } else {
            labels.clear();
            labels.extend(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
            );
        }
    }

    /// The tier and rail labels of a host, borrowed (first link per rail wins), and the
    /// number of its connected NICs.
    fn pairs<'a>(&'a self, fabric: &'a Fabric, host: HostIdx) -> (Vec<(&'a str, &'a str)>, String) {
        let mut pairs: Vec<(&str, &str)> =
            Vec::with_capacity(self.tiers.len() + self.rails.len() + 1);
        for d in fabric.host_path(host) {
            if let Some(k) = self.tiers.get(usize::from(d.tier) - 1) {
                pairs.push((k, &d.id));
            }
        }
        let mut connected = 0usize;
        let mut rail_seen = vec![false; self.rails.len()];
        for nic in &fabric.host(host).nics {
            if let Some(link) = &nic.link {
                connected += 1;
                let r = usize::from(nic.rail);
                if let Some(k) = self.rails.get(r)
                    && !rail_seen[r]
                {
                    rail_seen[r] = true;
                    pairs.push((k, &fabric.switch(link.switch).id));
                }
            }
        }
        (pairs, connected.to_string())
    }
}

/// Labels for one host: the id of each enclosing domain under its tier key, the leaf id for
/// each connected rail, and the number of connected rails.
pub fn host_labels(fabric: &Fabric, host: HostIdx, options: &LabelOptions) -> NodeLabels {
    LabelKeys::new(fabric, options).host_labels(fabric, host)
}

/// Labels for every host, in host order.
pub fn node_labels(fabric: &Fabric, options: &LabelOptions) -> Vec<NodeLabels> {
    let keys = LabelKeys::new(fabric, options);
    (0..fabric.hosts.len())
        .map(|i| keys.host_labels(fabric, HostIdx(i as u32)))
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
