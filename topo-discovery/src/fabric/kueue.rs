//! Kueue `Topology` (`kueue.x-k8s.io/v1beta2`): the node-label keys of our tiers, coarsest
//! first, with `kubernetes.io/hostname` as the lowest level. The object type is
//! `spinel_api::kueue`'s, shared with the fabric controller.

use super::model::Fabric;
pub use spinel_api::kueue::{API_VERSION, HOSTNAME_LABEL, Topology, TopologyLevel, TopologySpec};
use spinel_api::labels::LabelOptions;

/// The Topology for this fabric's depth, using the same keys as the node labels.
pub fn topology(fabric: &Fabric, name: &str, options: &LabelOptions) -> Topology {
    let mut levels: Vec<TopologyLevel> = (1..=fabric.depth.max(1))
        .rev()
        .map(|tier| TopologyLevel {
            node_label: options.tier_key(tier),
        })
        .collect();
    levels.push(TopologyLevel {
        node_label: HOSTNAME_LABEL.to_owned(),
    });
    Topology::new(name, TopologySpec { levels })
}
