//! The kube-scheduler extender v1 wire format (`k8s.io/kube-scheduler/extender/v1`). The Go
//! types have no json tags, so every key is the Go field name (PascalCase); the embedded Pod and
//! Node objects use the usual camelCase Kubernetes JSON. The server borrows names and raw node
//! JSON from the request body and writes replies without copying them, so a 10k-node request
//! costs one parse and one write; nodes are echoed exactly as sent.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// Highest score an extender may give (`MaxExtenderPriority`).
pub const MAX_PRIORITY: i64 = 10;

/// A `v1.NodeList` as the scheduler sends it, decoded (owned): for clients and tests.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct NodeList {
    /// The nodes, untouched.
    #[serde(default)]
    pub items: Vec<Value>,
    /// Everything else of the list (apiVersion, kind, metadata), echoed back.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

impl PartialEq for NodeList {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items && self.rest == other.rest
    }
}

/// A `v1.NodeList` borrowed from the request body: each node stays raw JSON, echoed as sent.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeListRef<'a> {
    /// `v1`.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<Cow<'a, str>>,
    /// `NodeList`.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Cow<'a, str>>,
    /// List metadata.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<&'a RawValue>,
    /// The nodes.
    #[serde(borrow, default)]
    pub items: Vec<&'a RawValue>,
}

/// `ExtenderArgs`: the pod and its candidate nodes, borrowed from the request body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExtenderArgs<'a> {
    /// The pod being scheduled.
    pub pod: Option<Pod>,
    /// Candidate nodes (set when the extender is not `nodeCacheCapable`).
    #[serde(borrow, default)]
    pub nodes: Option<NodeListRef<'a>>,
    /// Candidate node names (set when it is `nodeCacheCapable`).
    #[serde(borrow, default)]
    pub node_names: Option<Vec<Cow<'a, str>>>,
}

/// `ExtenderFilterResult`, decoded (owned): for clients and tests.
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

/// Rejected nodes sharing one reason, written as a JSON map without building one.
#[derive(Debug, Clone, Copy, Default)]
pub struct Failures<'a> {
    /// Candidate names.
    pub names: &'a [Cow<'a, str>],
    /// A name left out (the planned node).
    pub except: Option<&'a str>,
    /// When set, only the names whose entry is `true` (same order as `names`).
    pub mask: Option<&'a [bool]>,
    /// The reason of every other name.
    pub reason: &'a str,
}

impl Serialize for Failures<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (i, n) in self.names.iter().enumerate() {
            let masked = self
                .mask
                .is_some_and(|m| !m.get(i).copied().unwrap_or(false));
            if !masked && Some(n.as_ref()) != self.except {
                map.serialize_entry(n.as_ref(), self.reason)?;
            }
        }
        map.end()
    }
}

/// `ExtenderFilterResult` as the server writes it, borrowing from the request.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct FilterReply<'a> {
    /// Passing nodes (full-node mode).
    pub nodes: Option<NodeListRef<'a>>,
    /// Passing node names (`nodeCacheCapable` mode).
    pub node_names: Option<Vec<&'a str>>,
    /// Rejected nodes that preemption might free.
    pub failed_nodes: Failures<'a>,
    /// Rejected nodes that preemption cannot help.
    pub failed_and_unresolvable_nodes: Failures<'a>,
    /// A failure of the extender itself.
    pub error: &'a str,
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

/// `HostPriority` as the server writes it, borrowing the name from the request.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostPriorityRef<'a> {
    /// Node name.
    pub host: &'a str,
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

#[derive(Deserialize)]
struct NameOnly<'a> {
    #[serde(borrow)]
    metadata: MetaName<'a>,
}

#[derive(Deserialize)]
struct MetaName<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

/// A node's name from its raw JSON.
pub fn node_name<'a>(node: &'a RawValue) -> Option<Cow<'a, str>> {
    serde_json::from_str::<NameOnly<'a>>(node.get())
        .ok()?
        .metadata
        .name
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
