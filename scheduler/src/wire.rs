//! The kube-scheduler extender v1 wire format (`k8s.io/kube-scheduler/extender/v1`). The Go
//! types have no json tags, so every key is the Go field name (PascalCase); the embedded Pod and
//! Node objects use the usual camelCase Kubernetes JSON. Nodes are kept as raw JSON so the
//! filter echoes them byte-for-byte in meaning, whatever fields this build does not know.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Highest score an extender may give (`MaxExtenderPriority`).
pub const MAX_PRIORITY: i64 = 10;

/// A `v1.NodeList` as the scheduler sends it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct NodeList {
    /// The nodes, untouched.
    #[serde(default)]
    pub items: Vec<Value>,
    /// Everything else of the list (apiVersion, kind, metadata), echoed back.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

/// `ExtenderArgs`: the pod and its candidate nodes.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExtenderArgs {
    /// The pod being scheduled.
    pub pod: Option<Pod>,
    /// Candidate nodes (set when the extender is not `nodeCacheCapable`).
    #[serde(default)]
    pub nodes: Option<NodeList>,
    /// Candidate node names (set when it is `nodeCacheCapable`).
    #[serde(default)]
    pub node_names: Option<Vec<String>>,
}

/// `ExtenderFilterResult`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct ExtenderFilterResult {
    /// Passing nodes (full-node mode).
    pub nodes: Option<NodeList>,
    /// Passing node names (`nodeCacheCapable` mode).
    pub node_names: Option<Vec<String>>,
    /// Rejected nodes that preemption might free.
    pub failed_nodes: BTreeMap<String, String>,
    /// Rejected nodes that preemption cannot help.
    pub failed_and_unresolvable_nodes: BTreeMap<String, String>,
    /// A failure of the extender itself (fails the scheduling attempt).
    pub error: String,
}

impl PartialEq for NodeList {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items && self.rest == other.rest
    }
}

/// `HostPriority`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "PascalCase")]
pub struct HostPriority {
    /// Node name.
    pub host: String,
    /// 0..=[`MAX_PRIORITY`].
    pub score: i64,
}

/// `ExtenderBindingArgs`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExtenderBindingArgs {
    /// Pod name.
    pub pod_name: String,
    /// Pod namespace.
    pub pod_namespace: String,
    /// Pod UID.
    #[serde(rename = "PodUID")]
    pub pod_uid: String,
    /// The node chosen.
    pub node: String,
}

/// `ExtenderBindingResult`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "PascalCase")]
pub struct ExtenderBindingResult {
    /// Why binding failed; empty on success.
    pub error: String,
}

/// A node's name from its JSON.
pub fn node_name(node: &Value) -> Option<&str> {
    node.get("metadata")?.get("name")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_go_field_names() {
        let r = ExtenderFilterResult {
            node_names: Some(vec!["a".into()]),
            ..Default::default()
        };
        let v = serde_json::to_value(&r).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "Error",
                "FailedAndUnresolvableNodes",
                "FailedNodes",
                "NodeNames",
                "Nodes"
            ]
        );
        let b: ExtenderBindingArgs =
            serde_json::from_str(r#"{"PodName":"p","PodNamespace":"n","PodUID":"u","Node":"x"}"#)
                .unwrap();
        assert_eq!((b.pod_uid.as_str(), b.node.as_str()), ("u", "x"));
        let h = serde_json::to_string(&HostPriority {
            host: "a".into(),
            score: 3,
        })
        .unwrap();
        assert_eq!(h, r#"{"Host":"a","Score":3}"#);
    }
}
