//! SONiC `config_db.json` (as `show runningconfiguration all` or `sonic-cfggen -d
//! --print-data` prints it).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{ObserveError, expand_indices};
use crate::render::sonic::ConfigDb;
use crate::state::{EcnState, PortState, QueueState, Sched, SwitchState, WatchdogState};

/// Parses config_db JSON; non-string values (leaf-lists, numbers) become strings the way
/// SONiC stores them (lists comma-joined).
pub fn parse_config_db(text: &str) -> Result<ConfigDb, ObserveError> {
    let value: Value = serde_json::from_str(text)?;
    let Value::Object(tables) = value else {
        return Err(ObserveError::Shape(
            "config_db.json must be an object of tables".into(),
        ));
    };
    let mut db = ConfigDb::new();
    for (table, entries) in tables {
        let Value::Object(entries) = entries else {
            continue;
        };
        let t = db.entry(table).or_default();
        for (key, fields) in entries {
            let Value::Object(fields) = fields else {
                continue;
            };
            let e = t.entry(key).or_default();
            for (f, v) in fields {
                e.insert(f, scalar(&v));
            }
        }
    }
    Ok(db)
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn get<'a>(db: &'a ConfigDb, table: &str, key: &str) -> Option<&'a BTreeMap<String, String>> {
    db.get(table)?.get(key)
}

fn field<'a>(db: &'a ConfigDb, table: &str, key: &str, f: &str) -> Option<&'a str> {
    get(db, table, key)?.get(f).map(String::as_str)
}

fn num<T: std::str::FromStr>(v: Option<&str>) -> Option<T> {
    v?.trim().parse().ok()
}

/// The RoCE-relevant state in a config_db.
pub fn state(db: &ConfigDb) -> SwitchState {
    let mut s = SwitchState {
        hostname: field(db, "DEVICE_METADATA", "localhost", "hostname").map(str::to_owned),
        ..SwitchState::default()
    };
    let poll = num(field(db, "PFC_WD", "GLOBAL", "POLL_INTERVAL"));
    if let Some(ports) = db.get("PORT") {
        for (name, port) in ports {
            s.ports
                .insert(name.clone(), port_state(db, name, port, poll));
        }
    }
    members(db, &mut s);
    vlans(db, &mut s);
    s
}

fn port_state(
    db: &ConfigDb,
    name: &str,
    port: &BTreeMap<String, String>,
    poll: Option<u32>,
) -> PortState {
    let mut p = PortState {
        description: port.get("description").cloned(),
        mtu: num(port.get("mtu").map(String::as_str)),
        ..PortState::default()
    };
    if let Some(qos) = get(db, "PORT_QOS_MAP", name) {
        if let Some(map) = qos
            .get("dscp_to_tc_map")
            .and_then(|m| get(db, "DSCP_TO_TC_MAP", m))
        {
            p.trust_dscp = true;
            p.dscp_to_tc = map
                .iter()
                .filter_map(|(d, tc)| Some((d.parse().ok()?, tc.parse().ok()?)))
                .collect();
        }
        p.pfc = qos
            .get("pfc_enable")
            .map(|v| expand_indices(v))
            .unwrap_or_default();
    }
    if let Some(wd) = get(db, "PFC_WD", name) {
        p.watchdog = Some(WatchdogState {
            detection_ms: num(wd.get("detection_time").map(String::as_str)),
            restoration_ms: num(wd.get("restoration_time").map(String::as_str)),
            poll_ms: poll,
            action: wd.get("action").cloned(),
        });
    }
    p.queues = queues(db, name);
    p.headroom_xoff = headroom(db, name, &p);
    p
}

/// Entries keyed `PORT|INDICES` (QUEUE, BUFFER_PG, BUFFER_QUEUE) of one port, expanded.
fn per_index<'a>(
    db: &'a ConfigDb,
    table: &str,
    port: &str,
) -> Vec<(u8, &'a BTreeMap<String, String>)> {
    let Some(t) = db.get(table) else {
        return Vec::new();
    };
    let prefix = format!("{port}|");
    t.range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .flat_map(|(k, v)| {
            expand_indices(&k[prefix.len()..])
                .into_iter()
                .map(move |i| (i, v))
        })
        .collect()
}

fn queues(db: &ConfigDb, port: &str) -> BTreeMap<u8, QueueState> {
    let mut out = BTreeMap::new();
    for (q, entry) in per_index(db, "QUEUE", port) {
        let scheduler = entry
            .get("scheduler")
            .and_then(|s| get(db, "SCHEDULER", s))
            .and_then(|s| match s.get("type").map(String::as_str) {
                Some("STRICT") => Some(Sched::Strict),
                Some("DWRR") | Some("WRR") => {
                    num(s.get("weight").map(String::as_str)).map(Sched::Dwrr)
                }
                _ => None,
            });
        let ecn = entry
            .get("wred_profile")
            .and_then(|w| get(db, "WRED_PROFILE", w))
            .filter(|w| w.get("ecn").is_some_and(|e| e != "ecn_none"))
            .and_then(|w| {
                Some(EcnState {
                    min_bytes: num(w.get("green_min_threshold").map(String::as_str))?,
                    max_bytes: num(w.get("green_max_threshold").map(String::as_str))?,
                    probability: num(w.get("green_drop_probability").map(String::as_str))?,
                })
            });
        out.insert(q, QueueState { scheduler, ecn });
    }
    out
}

/// The XOFF of the profile on the port's first PFC-enabled priority group.
fn headroom(db: &ConfigDb, port: &str, p: &PortState) -> Option<u64> {
    let tc_to_pg = field(db, "PORT_QOS_MAP", port, "tc_to_pg_map")
        .and_then(|m| get(db, "TC_TO_PRIORITY_GROUP_MAP", m))?;
    let pfc_to_pg = field(db, "PORT_QOS_MAP", port, "pfc_to_pg_map")
        .and_then(|m| get(db, "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", m));
    let prio = *p.pfc.first()?;
    let pg: u8 = match pfc_to_pg.and_then(|m| m.get(&prio.to_string())) {
        Some(pg) => pg.parse().ok()?,
        None => tc_to_pg.get(&prio.to_string())?.parse().ok()?,
    };
    let (_, entry) = per_index(db, "BUFFER_PG", port)
        .into_iter()
        .find(|(i, _)| *i == pg)?;
    let profile = get(db, "BUFFER_PROFILE", entry.get("profile")?)?;
    num(profile.get("xoff").map(String::as_str))
}

fn members(db: &ConfigDb, s: &mut SwitchState) {
    if let Some(t) = db.get("VLAN_MEMBER") {
        for (key, f) in t {
            if let Some((vlan, port)) = key.split_once('|')
                && f.get("tagging_mode").is_some_and(|m| m == "untagged")
                && let Some(id) = vlan.strip_prefix("Vlan").and_then(|v| v.parse().ok())
                && let Some(p) = s.ports.get_mut(port)
            {
                p.access_vlan = Some(id);
            }
        }
    }
    if let Some(t) = db.get("INTERFACE") {
        for key in t.keys() {
            if let Some((port, addr)) = key.split_once('|')
                && let Ok(addr) = addr.parse()
                && let Some(p) = s.ports.get_mut(port)
            {
                p.address = Some(addr);
            }
        }
    }
}

fn vlans(db: &ConfigDb, s: &mut SwitchState) {
    if let Some(t) = db.get("VLAN") {
        for (name, f) in t {
            if let Some(id) = name.strip_prefix("Vlan").and_then(|v| v.parse().ok()) {
                s.vlans.entry(id).or_default().mtu = num(f.get("mtu").map(String::as_str));
            }
        }
    }
    if let Some(t) = db.get("VLAN_INTERFACE") {
        for key in t.keys() {
            if let Some((vlan, prefix)) = key.split_once('|')
                && let Some(id) = vlan.strip_prefix("Vlan").and_then(|v| v.parse().ok())
            {
                s.vlans.entry(id).or_default().gateway = Some(prefix.to_owned());
            }
        }
    }
}
