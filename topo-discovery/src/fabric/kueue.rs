//! Kueue `Topology` (`kueue.x-k8s.io/v1beta2`): the node-label keys of our tiers, coarsest
//! first, with `kubernetes.io/hostname` as the lowest level.

use serde::Serialize;

use super::model::Fabric;
use spinel_api::labels::LabelOptions;

/// API version of the Topology CRD.
pub const API_VERSION: &str = "kueue.x-k8s.io/v1beta2";

/// Kubernetes' well-known hostname label, Kueue's node level.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// A Kueue Topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    /// Always [`API_VERSION`].
    pub api_version: &'static str,
    /// Always `Topology`.
    pub kind: &'static str,
    /// Its name (referenced by a ResourceFlavor's `topologyName`).
    pub metadata: Metadata,
    /// The levels.
    pub spec: Spec,
}

/// Topology metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metadata {
    /// Object name.
    pub name: String,
}

/// Topology spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Spec {
    /// Coarsest first.
    pub levels: Vec<Level>,
}

/// One level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Level {
    /// The node label whose value names the domain at this level.
    pub node_label: String,
}

/// The Topology for this fabric's depth, using the same keys as the node labels.
pub fn topology(fabric: &Fabric, name: &str, options: &LabelOptions) -> Topology {
    let mut levels: Vec<Level> = (1..=fabric.depth.max(1))
        .rev()
        .map(|tier| Level {
            node_label: options.tier_key(tier),
        })
        .collect();
    levels.push(Level {
        node_label: HOSTNAME_LABEL.to_owned(),
    });
    Topology {
        api_version: API_VERSION,
        kind: "Topology",
        metadata: Metadata {
            name: name.to_owned(),
        },
        spec: Spec { levels },
    }
}
