//! Kueue's `Topology` (`kueue.x-k8s.io/v1beta2`, cluster-scoped): the node-label keys of the
//! topology levels, coarsest first. A ResourceFlavor names it in `topologyName`. Field names and
//! limits follow Kueue's CRD (`config/components/crd/bases/kueue.x-k8s.io_topologies.yaml`); the
//! tests check generated objects against that schema.
//!
//! [`Topology`] implements [`kube::Resource`], so a controller can use `Api<Topology>`.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::ser::SerializeStruct as _;
use serde::{Deserialize, Serialize, Serializer};

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

/// A Kueue Topology.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "TopologyWire")]
pub struct Topology {
    /// Its name (referenced by a ResourceFlavor's `topologyName`).
    pub metadata: ObjectMeta,
    /// The levels.
    pub spec: TopologySpec,
}

/// Topology spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

impl Topology {
    /// A Topology with `metadata` and `spec`.
    pub fn new(metadata: ObjectMeta, spec: TopologySpec) -> Self {
        Self { metadata, spec }
    }
}

// apiVersion and kind are constants, written on the way out and checked on the way in.
impl Serialize for Topology {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct(KIND, 4)?;
        s.serialize_field("apiVersion", API_VERSION)?;
        s.serialize_field("kind", KIND)?;
        s.serialize_field("metadata", &self.metadata)?;
        s.serialize_field("spec", &self.spec)?;
        s.end()
    }
}

/// A Topology as written, before apiVersion and kind are checked.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TopologyWire {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
    spec: TopologySpec,
}

impl TryFrom<TopologyWire> for Topology {
    type Error = crate::TypeMismatch;

    fn try_from(w: TopologyWire) -> Result<Self, Self::Error> {
        crate::TypeMismatch::check(&w.api_version, &w.kind, API_VERSION, KIND)?;
        Ok(Self {
            metadata: w.metadata,
            spec: w.spec,
        })
    }
}

impl kube::Resource for Topology {
    type DynamicType = ();
    type Scope = kube::core::ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(KIND)
    }

    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(GROUP)
    }

    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(VERSION)
    }

    fn api_version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(API_VERSION)
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("topologies")
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
