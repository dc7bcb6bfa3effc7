//! Uniform spine/leaf clusters described by a few numbers, labelled the way the fabric agent
//! labels nodes: for tests, benchmarks and simulations without neighbour tables.

use std::collections::BTreeMap;

use spinel_api::labels::LabelOptions;

use crate::cluster::NodeSpec;

/// A uniform cluster: `spines` tier-2 domains of `leaves_per_spine` leaves of
/// `nodes_per_leaf` nodes with `gpus_per_node` units each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniformFabric {
    /// Tier-2 domains.
    pub spines: u32,
    /// Leaves (tier-1 domains) per spine.
    pub leaves_per_spine: u32,
    /// Nodes per leaf.
    pub nodes_per_leaf: u32,
    /// Units of the resource per node.
    pub gpus_per_node: u32,
}

impl UniformFabric {
    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        self.spines * self.leaves_per_spine * self.nodes_per_leaf
    }

    /// Node specs with tier labels under `labels`, in name order.
    pub fn node_specs(&self, labels: &LabelOptions) -> Vec<NodeSpec> {
        let mut out = Vec::with_capacity(self.nodes() as usize);
        for s in 0..self.spines {
            for l in 0..self.leaves_per_spine {
                for n in 0..self.nodes_per_leaf {
                    let mut map = BTreeMap::new();
                    map.insert(labels.tier_key(1), format!("s{s:02}-l{l:02}"));
                    map.insert(labels.tier_key(2), format!("s{s:02}"));
                    out.push(NodeSpec {
                        name: format!("n-s{s:02}-l{l:02}-{n:03}"),
                        labels: map,
                        allocatable: self.gpus_per_node,
                        used: 0,
                        degraded: false,
                        unschedulable: false,
                    });
                }
            }
        }
        out
    }
}
