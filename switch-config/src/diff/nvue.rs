//! NVUE tree → `nv set` / `nv unset`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::render::nvue::NvSet;

/// Leaves of a tree: path → value (`None` for an empty object: a collection member).
fn flatten(v: &Value, path: &mut Vec<String>, out: &mut BTreeMap<Vec<String>, Option<String>>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                path.push(k.clone());
                flatten(child, path, out);
                path.pop();
            }
        }
        Value::Object(_) => {
            out.insert(path.clone(), None);
        }
        Value::String(s) => {
            out.insert(path.clone(), Some(s.clone()));
        }
        Value::Null => {}
        other => {
            out.insert(path.clone(), Some(other.to_string()));
        }
    }
}

/// Collections whose members the renderer decides entirely: a member the switch has and the
/// intent does not is removed. PFC priorities and the lossless pool's priorities (`qos roce
/// mode lossless` puts priority 3 in both), the traffic classes with ECN (it marks 0 and 3) and
/// addresses qualify; everything else is set, never unset.
fn owned_collection(path: &[String]) -> Option<usize> {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match p.as_slice() {
        ["qos", "pfc", _, "switch-priority", ..]
        | ["qos", "traffic-pool", _, "switch-priority", ..]
        | ["qos", "congestion-control", _, "traffic-class", ..]
        | ["interface", _, "ip" | "ipv4", "address", ..] => Some(4),
        _ => None,
    }
}

/// The commands that make `running` (a tree, as [`crate::observe::nvue::parse_tree`] returns)
/// carry every rendered command: unsets first, then sets in the rendered order, then
/// `nv config apply`. Empty when nothing must change.
pub fn commands(rendered: &[NvSet], running: &Value) -> Vec<String> {
    let mut have = BTreeMap::new();
    flatten(running, &mut Vec::new(), &mut have);
    let want: BTreeMap<Vec<String>, Option<String>> = rendered
        .iter()
        .map(|c| (c.path.clone(), c.value.clone()))
        .collect();
    let roots: BTreeSet<Vec<String>> = rendered
        .iter()
        .filter_map(|c| owned_collection(&c.path).map(|n| c.path[..n].to_vec()))
        .collect();
    let mut out = Vec::new();
    for path in have.keys() {
        let in_owned = roots
            .iter()
            .any(|r| path.starts_with(r) && path.len() > r.len());
        if in_owned && !want.contains_key(path) {
            out.push(format!(
                "nv unset {}",
                path[..=roots_len(&roots, path)].join(" ")
            ));
        }
    }
    out.dedup();
    for c in rendered {
        let ok = match (&c.value, have.get(&c.path)) {
            (Some(v), Some(Some(h))) => h == v,
            (None, Some(_)) => true,
            // A member listed in the running tree with children is present too.
            (None, None) => have
                .keys()
                .any(|k| k.starts_with(&c.path) && k.len() > c.path.len()),
            _ => false,
        };
        if !ok {
            let mut line = format!("nv set {}", c.path.join(" "));
            if let Some(v) = &c.value {
                line.push(' ');
                line.push_str(v);
            }
            out.push(line);
        }
    }
    if !out.is_empty() {
        out.push("nv config apply".to_owned());
    }
    out
}

/// Index of the member segment of `path` under its owned root.
fn roots_len(roots: &BTreeSet<Vec<String>>, path: &[String]) -> usize {
    roots
        .iter()
        .filter(|r| path.starts_with(r))
        .map(Vec::len)
        .max()
        .unwrap_or(path.len().saturating_sub(1))
}
