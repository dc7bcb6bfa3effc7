//! Kueue's `Topology` (`kueue.x-k8s.io/v1beta2`, cluster-scoped): the node-label keys of the
//! topology levels, coarsest first. A ResourceFlavor names it in `topologyName`. Field names and
//! limits follow Kueue's CRD (`config/components/crd/bases/kueue.x-k8s.io_topologies.yaml`); the
//! tests check generated objects against that schema.
//!
//! [`Topology`] implements [`kube::Resource`], so a controller can use `Api<Topology>`.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// API group.
pub const GROUP: &str = "kueue.x-k8s.io";
/// API version within the group (the storage version since Kueue 0.15).
pub const VERSION: &str = "v1beta2";
/// `apiVersion` of a Topology.
pub const API_VERSION: &str = "kueue.x-k8s.io/v1beta2";
/// `kind` of a Topology.
pub const KIND: &str = "Topology";

/// Kubernetes' well-known hostname label, Kueue's node level (only ever the lowest level).
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Most levels a Topology may have.
pub const MAX_LEVELS: usize = 16;

/// Topology spec. The derive makes [`Topology`] (`metadata`, `spec`); Kueue owns the CRD and
/// its schema, so none is generated here.
#[derive(CustomResource, Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Topology",
    plural = "topologies",
    schema = "disabled",
    derive = "PartialEq",
    doc = "A Kueue Topology: its name (a ResourceFlavor's `topologyName`) and its levels."
)]
pub struct TopologySpec {
    /// Coarsest first; 1 to [`MAX_LEVELS`], unique, [`HOSTNAME_LABEL`] only last.
    pub levels: Vec<TopologyLevel>,
}

/// One level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyLevel {
    /// The node label whose value names the domain at this level.
    pub node_label: String,
}
