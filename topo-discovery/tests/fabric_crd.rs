//! Generated HyperNodes, Kueue Topologies and Node label objects against what the API server
//! would check: the consumers' structural schemas (Volcano's and Kueue's CRDs, descriptions
//! removed, in `api/tests/schema/`), their CEL rules, and Kubernetes' label syntax.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{LazyLock, Mutex};

use regex::Regex;
use serde_json::Value;
use spinel_api::labels::{KeyMode, LabelOptions};
use topo_discovery::fabric::synthetic::{Lab, SyntheticSpec};
use topo_discovery::fabric::{Fabric, InferOptions, infer, kueue, labels, volcano};

fn schema(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../api/tests/schema")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Checks `doc` against a structural schema the way the API server does on create: types,
/// known fields (unknown ones would be pruned silently), required fields, enums, bounds,
/// patterns, and the CEL rules we know. Returns every violation.
fn validate(schema: &Value, doc: &Value, path: &str, errors: &mut Vec<String>) {
    let ty = schema["type"].as_str().unwrap_or("");
    let ok = match ty {
        "object" => doc.is_object(),
        "array" => doc.is_array(),
        "string" => doc.is_string(),
        "integer" => doc.is_i64() || doc.is_u64(),
        "boolean" => doc.is_boolean(),
        "" => true,
        other => panic!("{path}: schema type {other} not handled"),
    };
    if !ok {
        errors.push(format!("{path}: expected {ty}, found {doc}"));
        return;
    }
    if let Some(values) = schema["enum"].as_array()
        && !values.contains(doc)
    {
        errors.push(format!("{path}: {doc} is not one of {values:?}"));
    }
    bounds(schema, doc, path, errors);
    if let Some(rules) = schema["x-kubernetes-validations"].as_array() {
        for rule in rules {
            cel(rule["rule"].as_str().unwrap(), doc, path, errors);
        }
    }
    match doc {
        Value::Object(map) => {
            if let Some(props) = schema["properties"].as_object() {
                for (k, v) in map {
                    match props.get(k) {
                        Some(s) => validate(s, v, &format!("{path}.{k}"), errors),
                        None => errors.push(format!("{path}.{k}: unknown field (pruned)")),
                    }
                }
            } else if let Some(values) = schema.get("additionalProperties") {
                for (k, v) in map {
                    validate(values, v, &format!("{path}.{k}"), errors);
                }
            }
            for r in schema["required"].as_array().into_iter().flatten() {
                if !map.contains_key(r.as_str().unwrap()) {
                    errors.push(format!("{path}: required field {r} missing"));
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                validate(&schema["items"], item, &format!("{path}[{i}]"), errors);
            }
        }
        _ => {}
    }
}

fn bounds(schema: &Value, doc: &Value, path: &str, errors: &mut Vec<String>) {
    let n = |k: &str| schema[k].as_u64();
    let len = match doc {
        Value::String(s) => Some(s.chars().count() as u64),
        Value::Array(a) => Some(a.len() as u64),
        _ => None,
    };
    if let Some(len) = len {
        for (min, max) in [("minLength", "maxLength"), ("minItems", "maxItems")] {
            if n(min).is_some_and(|m| len < m) || n(max).is_some_and(|m| len > m) {
                errors.push(format!("{path}: length {len} outside {min}/{max}"));
            }
        }
    }
    if let (Some(min), Some(v)) = (schema["minimum"].as_i64(), doc.as_i64())
        && v < min
    {
        errors.push(format!("{path}: {v} below {min}"));
    }
    if let (Some(p), Some(s)) = (schema["pattern"].as_str(), doc.as_str())
        && !matches(p, s)
    {
        errors.push(format!("{path}: {s:?} does not match {p}"));
    }
}

/// The CEL rules of the two CRDs, evaluated by hand on create (no oldSelf).
fn cel(rule: &str, doc: &Value, path: &str, errors: &mut Vec<String>) {
    let has = |k: &str| doc.get(k).is_some();
    let ok = if rule.starts_with("has(self.exactMatch) ||") {
        has("exactMatch") || has("regexMatch") || has("labelMatch")
    } else if rule.starts_with("(has(self.exactMatch) ? 1 : 0)") {
        usize::from(has("exactMatch"))
            + usize::from(has("regexMatch"))
            + usize::from(has("labelMatch"))
            <= 1
    } else if rule.starts_with("self == oldSelf") {
        true // a transition rule: creates have no old object
    } else if rule.starts_with("size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0") {
        let items = doc.as_array().unwrap();
        items
            .iter()
            .all(|i| items.iter().filter(|j| *j == i).count() == 1)
    } else if rule.contains("i.nodeLabel == 'kubernetes.io/hostname'") {
        let items = doc.as_array().unwrap();
        let at: Vec<usize> = (0..items.len())
            .filter(|&i| items[i]["nodeLabel"] == "kubernetes.io/hostname")
            .collect();
        at.is_empty() || at == [items.len() - 1]
    } else {
        panic!("{path}: CEL rule not known to this test (teach it): {rule}");
    };
    if !ok {
        errors.push(format!("{path}: violates {rule}"));
    }
}

/// `pattern` matches `s` (patterns compiled once).
fn matches(pattern: &str, s: &str) -> bool {
    static COMPILED: LazyLock<Mutex<HashMap<String, Regex>>> = LazyLock::new(Mutex::default);
    let mut compiled = COMPILED.lock().unwrap();
    compiled
        .entry(pattern.to_owned())
        .or_insert_with(|| Regex::new(pattern).unwrap())
        .is_match(s)
}

/// Kubernetes' rules for a label key and value (apimachinery validation).
fn valid_label(key: &str, value: &str) -> bool {
    const NAME: &str = r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$";
    const SUBDOMAIN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
    let (prefix, key_name) = key.rsplit_once('/').unwrap_or(("", key));
    (prefix.is_empty() || (prefix.len() <= 253 && matches(SUBDOMAIN, prefix)))
        && !key_name.is_empty()
        && key_name.len() <= 63
        && matches(NAME, key_name)
        && value.len() <= 63
        && matches(NAME, value)
}

fn fabrics() -> Vec<(&'static str, Fabric)> {
    let mut miswired = Lab::two_rail_groups();
    miswired.uncable("leaf4", "swp51").uncable("leaf4", "swp52");
    let spec = SyntheticSpec::rail_optimized(1100);
    let synthetic: Vec<_> = spec.tables().collect();
    vec![
        (
            "lab",
            infer(&Lab::two_rail_groups().tables(), &InferOptions::default()),
        ),
        ("cut", infer(&miswired.tables(), &InferOptions::default())),
        ("synthetic", infer(&synthetic, &InferOptions::default())),
    ]
}

fn options() -> [LabelOptions; 2] {
    [
        LabelOptions::default(),
        LabelOptions {
            prefix: "net.example.com/".into(),
            keys: KeyMode::Topograph,
        },
    ]
}

#[test]
fn hypernodes_satisfy_volcanos_crd() {
    let schema = schema("hypernode-v1alpha1.json");
    for (name, f) in fabrics() {
        for opts in options() {
            for hn in volcano::hypernodes(&f, &opts) {
                let doc = serde_json::to_value(&hn).unwrap();
                let mut errors = Vec::new();
                validate(&schema, &doc, "HyperNode", &mut errors);
                assert!(errors.is_empty(), "{name}: {errors:#?}\n{doc:#}");
                assert_eq!(doc["apiVersion"], "topology.volcano.sh/v1alpha1");
                assert_eq!(doc["kind"], "HyperNode");
                for (k, v) in hn.metadata.labels.as_ref().unwrap() {
                    assert!(valid_label(k, v), "{name}: label {k}={v}");
                }
            }
        }
    }
}

#[test]
fn kueue_topologies_satisfy_kueues_crd() {
    let schema = schema("topology-v1beta2.json");
    for (name, f) in fabrics() {
        for opts in options() {
            let t = kueue::topology(&f, "spinel-fabric", &opts);
            let doc = serde_json::to_value(&t).unwrap();
            let mut errors = Vec::new();
            validate(&schema, &doc, "Topology", &mut errors);
            assert!(errors.is_empty(), "{name}: {errors:#?}\n{doc:#}");
            assert_eq!(
                (doc["apiVersion"].as_str(), doc["kind"].as_str()),
                (Some("kueue.x-k8s.io/v1beta2"), Some("Topology"))
            );
        }
    }
}

#[test]
fn node_label_objects_carry_only_valid_labels() {
    for (name, f) in fabrics() {
        for opts in options() {
            for node in labels::node_objects(&f, &opts) {
                let doc = serde_json::to_value(&node).unwrap();
                let keys: Vec<&str> = doc
                    .as_object()
                    .unwrap()
                    .keys()
                    .map(String::as_str)
                    .collect();
                assert_eq!(
                    keys,
                    ["apiVersion", "kind", "metadata"],
                    "{name}: only metadata"
                );
                let meta: Vec<&str> = doc["metadata"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .map(String::as_str)
                    .collect();
                assert_eq!(meta, ["labels", "name"], "{name}");
                for (k, v) in node.metadata.labels.as_ref().unwrap() {
                    assert!(valid_label(k, v), "{name}: label {k}={v}");
                }
            }
        }
    }
}

#[test]
fn the_validator_catches_what_the_api_server_rejects() {
    let schema = schema("hypernode-v1alpha1.json");
    let bad: Value = serde_json::json!({
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "x"},
        "spec": {"tier": -1, "members": [
            {"type": "Rack", "selector": {}},
            {"type": "Node", "selector": {"exactMatch": {"name": "Bad_Name"}, "regexMatch": {"pattern": "x"}}}
        ], "extra": 1}
    });
    let mut errors = Vec::new();
    validate(&schema, &bad, "HyperNode", &mut errors);
    for needle in [
        "below 0",
        "not one of",
        "violates has(self.exactMatch)",
        "does not match",
        "violates (has",
        "unknown field",
    ] {
        assert!(
            errors.iter().any(|e| e.contains(needle)),
            "{needle}: {errors:#?}"
        );
    }
}
