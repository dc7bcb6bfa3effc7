//! Volcano's `HyperNode` (`topology.volcano.sh/v1alpha1`, cluster-scoped): a named group of
//! nodes or of other HyperNodes at one network tier. The fabric controller writes them; Volcano's
//! scheduler reads them. Field names, enums and required fields follow Volcano's CRD
//! (`config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml`); the tests check generated
//! objects against that schema.
//!
//! [`HyperNode`] implements [`kube::Resource`], so a controller can use `Api<HyperNode>`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// API group.
pub const GROUP: &str = "topology.volcano.sh";
/// API version within the group.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of a HyperNode.
pub const API_VERSION: &str = "topology.volcano.sh/v1alpha1";
/// `kind` of a HyperNode.
pub const KIND: &str = "HyperNode";

/// Label Volcano's HyperNode controller uses to tell discovery sources apart.
pub const SOURCE_LABEL: &str = "volcano.sh/network-topology-source";

/// HyperNode spec. The derive makes [`HyperNode`] (`metadata`, `spec`, `status`); Volcano owns
/// the CRD and its schema, so none is generated here.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "topology.volcano.sh",
    version = "v1alpha1",
    kind = "HyperNode",
    plural = "hypernodes",
    status = "HyperNodeStatus",
    schema = "disabled",
    derive = "PartialEq",
    doc = "A HyperNode: name (a DNS-1123 subdomain) and labels, tier and members, and the \
           status Volcano maintains (absent in what Spinel creates)."
)]
#[serde(rename_all = "camelCase")]
pub struct HyperNodeSpec {
    /// Nodes (at the lowest tier) or HyperNodes (above); at least one.
    pub members: Vec<MemberSpec>,
    /// Tier, 1 closest to the nodes.
    pub tier: i32,
    /// A name for the tier (`leaf`, `spine`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier_name: Option<String>,
}

/// One member of a HyperNode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberSpec {
    /// How the member is found.
    #[serde(default)]
    pub selector: MemberSelector,
    /// Whether it is a node or a HyperNode.
    #[serde(rename = "type")]
    pub member_type: MemberType,
}

/// Member kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MemberType {
    /// A Kubernetes node.
    Node,
    /// Another HyperNode, one tier down.
    HyperNode,
}

impl MemberType {
    /// The name the CRD uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Node => "Node",
            Self::HyperNode => "HyperNode",
        }
    }
}

/// Member selector: exactly one of the three (the CRD enforces it with a CEL rule).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberSelector {
    /// The member's exact name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_match: Option<ExactMatch>,
    /// Node labels (only for `Node` members).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_match: Option<LabelSelector>,
    /// A regular expression over member names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex_match: Option<RegexMatch>,
}

impl MemberSelector {
    /// Selects the member named `name`.
    pub fn exact(name: impl Into<String>) -> Self {
        Self {
            exact_match: Some(ExactMatch { name: name.into() }),
            ..Self::default()
        }
    }

    /// The exact name selected, when the selector is by name.
    pub fn exact_name(&self) -> Option<&str> {
        self.exact_match.as_ref().map(|m| m.name.as_str())
    }
}

/// Exact name match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactMatch {
    /// Node or HyperNode name.
    pub name: String,
}

/// Regular-expression match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegexMatch {
    /// The pattern over names.
    pub pattern: String,
}

/// What Volcano reports about a HyperNode.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HyperNodeStatus {
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Nodes below the HyperNode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_count: Option<i64>,
}
