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
    /// Candidate node names (set when it is `nodeCacheCapable`), as sent: read with
    /// [`names`], echoed as they are when every candidate passes.
    #[serde(borrow, default)]
    pub node_names: Option<&'a RawValue>,
}

/// One name of a `NodeNames` array: borrowed from the body unless it holds an escape. (serde
/// decodes a bare `Cow<str>` as an owned string: an allocation per candidate.)
#[derive(Deserialize)]
#[serde(transparent)]
struct Name<'a>(#[serde(borrow)] Cow<'a, str>);

/// The names of a `NodeNames` array, borrowed from the request body.
pub fn names(raw: &RawValue) -> Result<Vec<Cow<'_, str>>, serde_json::Error> {
    let names: Vec<Name<'_>> = serde_json::from_str(raw.get())?;
    Ok(names.into_iter().map(|n| n.0).collect())
}

/// `NodeNames` as written in a reply: the request's own array when every candidate passes
/// (copied, not encoded again), else the names kept.
#[derive(Debug)]
pub enum NameList<'a> {
    /// The request's array, byte for byte.
    Echo(&'a RawValue),
    /// The names kept.
    Kept(Vec<&'a str>),
}

impl Serialize for NameList<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            NameList::Echo(raw) => raw.serialize(s),
            NameList::Kept(names) => names.serialize(s),
        }
    }
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
    pub node_names: Option<NameList<'a>>,
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

/// Whether `s` can be written between JSON quotes as it is (no quote, backslash or control
/// character), which node names always can.
fn plain_json_string(s: &str) -> bool {
    s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\')
}

/// Appends `s` as a JSON string: copied as it is when nothing needs escaping (the common case,
/// a tenth of what a general encoder costs per name), else through serde_json.
pub fn push_json_string(out: &mut Vec<u8>, s: &str) {
    if plain_json_string(s) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else if serde_json::to_writer(&mut *out, s).is_err() {
        // Writing into a Vec cannot fail; keep the output valid JSON regardless.
        out.extend_from_slice(b"\"\"");
    }
}

/// The `HostPriorityList` for `hosts` and their scores, written directly: a prioritize answer
/// names every candidate, 10,000 of them in a large cluster.
pub fn host_priorities<S: AsRef<str>>(hosts: &[S], scores: &[i64]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(hosts.iter().map(|h| h.as_ref().len() + 24).sum::<usize>() + 2);
    out.push(b'[');
    for (i, (h, score)) in hosts.iter().zip(scores).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"Host\":");
        push_json_string(&mut out, h.as_ref());
        out.extend_from_slice(b",\"Score\":");
        push_integer(&mut out, *score);
        out.push(b'}');
    }
    out.push(b']');
    out
}

/// Appends `n` in decimal without an allocation (a prioritize answer writes one per candidate).
fn push_integer(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

#[derive(Deserialize)]
struct NameOnly<'a> {
    #[serde(borrow)]
    metadata: MetaName<'a>,
}

#[derive(Deserialize)]
struct MetaName<'a> {
    #[serde(borrow)]
    name: Option<Name<'a>>,
}

/// A node's name from its raw JSON.
pub fn node_name<'a>(node: &'a RawValue) -> Option<Cow<'a, str>> {
    serde_json::from_str::<NameOnly<'a>>(node.get())
        .ok()?
        .metadata
        .name
        .map(|n| n.0)
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
        // The direct writer gives what serde gives, escaping included.
        let hosts = ["n1", "we\"ird\\", "tab\t"];
        let written = host_priorities(&hosts, &[10, 0, 7]);
        let by_serde = serde_json::to_vec(
            &hosts
                .iter()
                .zip([10, 0, 7])
                .map(|(h, score)| HostPriorityRef { host: h, score })
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            String::from_utf8(by_serde).unwrap()
        );
    }

    #[test]
    fn names_borrow_the_body_unless_escaped() {
        let raw: &RawValue = serde_json::from_str(r#"["n1","we\"ird"]"#).unwrap();
        let n = names(raw).unwrap();
        assert!(matches!(n[0], Cow::Borrowed("n1")), "{n:?}");
        assert!(matches!(&n[1], Cow::Owned(s) if s == "we\"ird"), "{n:?}");
        let written = host_priorities(&["a", "b", "c"], &[0, -7, i64::MIN]);
        let parsed: Vec<HostPriority> = serde_json::from_slice(&written).unwrap();
        assert_eq!(
            parsed.iter().map(|h| h.score).collect::<Vec<_>>(),
            [0, -7, i64::MIN]
        );
    }
}
