//! config_db → JSON Patch.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::render::sonic::{ConfigDb, Fields, OWNED_PORT_FIELDS};

/// One RFC 6902 operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatchOp {
    /// `add`, `replace` or `remove`.
    pub op: &'static str,
    /// JSON Pointer into config_db.
    pub path: String,
    /// The value, for `add` and `replace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// Tables whose entries are keyed by port first (`Ethernet0|3`) or hold the port
/// (`Vlan100|Ethernet0`): entries of the intent's ports there are the renderer's.
const PER_PORT: [&str; 8] = [
    "PORT_QOS_MAP",
    "QUEUE",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "PFC_WD",
    "VLAN_MEMBER",
    "INTERFACE",
    "PORT",
];

/// JSON Pointer escaping (`~` → `~0`, `/` → `~1`).
fn escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn pointer(parts: &[&str]) -> String {
    parts.iter().map(|p| format!("/{}", escape(p))).collect()
}

fn entry_value(fields: &Fields) -> Value {
    Value::Object(
        fields
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(v.clone())))
            .collect(),
    )
}

fn owns_key(table: &str, key: &str, ports: &BTreeSet<&str>) -> bool {
    if !PER_PORT.contains(&table) || table == "PORT" {
        return false;
    }
    key.split('|').any(|part| ports.contains(part))
}

/// The patch that turns `running` into `running` merged with `rendered`, within the renderer's
/// scope. Deterministic: tables, keys and fields in order, removals of a table's stale entries
/// before its additions.
pub fn patch(rendered: &ConfigDb, running: &ConfigDb) -> Vec<PatchOp> {
    let ports: BTreeSet<&str> = rendered
        .get("PORT")
        .map(|t| t.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut ops = Vec::new();
    for (table, entries) in rendered {
        let Some(current) = running.get(table) else {
            let value = Value::Object(
                entries
                    .iter()
                    .map(|(k, f)| (k.clone(), entry_value(f)))
                    .collect(),
            );
            ops.push(PatchOp {
                op: "add",
                path: pointer(&[table]),
                value: Some(value),
            });
            continue;
        };
        for key in current.keys() {
            if !entries.contains_key(key) && owns_key(table, key, &ports) {
                ops.push(PatchOp {
                    op: "remove",
                    path: pointer(&[table, key]),
                    value: None,
                });
            }
        }
        for (key, fields) in entries {
            let Some(have) = current.get(key) else {
                ops.push(PatchOp {
                    op: "add",
                    path: pointer(&[table, key]),
                    value: Some(entry_value(fields)),
                });
                continue;
            };
            entry_ops(&mut ops, table, key, fields, have);
        }
    }
    ops
}

fn entry_ops(ops: &mut Vec<PatchOp>, table: &str, key: &str, want: &Fields, have: &Fields) {
    // PORT and DEVICE_METADATA carry platform fields the renderer does not own.
    let partial = table == "PORT" || table == "DEVICE_METADATA";
    for f in have.keys() {
        let owned = !partial || (table == "PORT" && OWNED_PORT_FIELDS.contains(&f.as_ref()));
        if owned && !want.contains_key(f) {
            ops.push(PatchOp {
                op: "remove",
                path: pointer(&[table, key, f]),
                value: None,
            });
        }
    }
    for (f, v) in want {
        match have.get(f) {
            Some(h) if h == v => {}
            Some(_) => ops.push(PatchOp {
                op: "replace",
                path: pointer(&[table, key, f]),
                value: Some(Value::from(v.clone())),
            }),
            None => ops.push(PatchOp {
                op: "add",
                path: pointer(&[table, key, f]),
                value: Some(Value::from(v.clone())),
            }),
        }
    }
}

/// The patch as pretty JSON with a trailing newline.
pub fn to_json(ops: &[PatchOp]) -> String {
    let mut s = serde_json::to_string_pretty(ops).unwrap_or_default();
    s.push('\n');
    s
}
