//! SONiC `config_db.json` (as `show runningconfiguration all` or `sonic-cfggen -d
//! --print-data` prints it).

use std::collections::BTreeMap;

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{ObserveError, expand_indices};
use crate::render::sonic::{ConfigDb, Fields};
use crate::state::{EcnState, PortState, QueueState, Sched, SwitchState, WatchdogState};

/// Parses config_db JSON; non-string values (leaf-lists, numbers) become strings the way
/// SONiC stores them (lists comma-joined); entries that are not objects are skipped. Straight
/// into the tables, without an intermediate JSON value: a large switch's config_db is MiBs.
pub fn parse_config_db(text: &str) -> Result<ConfigDb, ObserveError> {
    let db: Db = serde_json::from_str(text)?;
    Ok(db.0)
}

struct Db(ConfigDb);
struct MaybeTable(Option<BTreeMap<String, Fields>>);
struct MaybeEntry(Option<Fields>);
struct Scalar(String);

impl<'de> Deserialize<'de> for Db {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Db;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("config_db.json: an object of tables")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Db, A::Error> {
                let mut db = ConfigDb::new();
                while let Some((table, entries)) = map.next_entry::<String, MaybeTable>()? {
                    if let Some(entries) = entries.0 {
                        db.insert(table, entries);
                    }
                }
                Ok(Db(db))
            }
        }
        d.deserialize_map(V)
    }
}

/// Implements "an object of objects, else skipped" for tables and entries.
macro_rules! maybe_object {
    ($name:ident, $value:ty, $wrap:expr) => {
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("any JSON value")
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut out = BTreeMap::new();
                        while let Some((k, v)) = map.next_entry::<String, $value>()? {
                            if let Some(v) = $wrap(v) {
                                out.insert(k.into(), v);
                            }
                        }
                        Ok($name(Some(out)))
                    }
                    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$name, A::Error> {
                        while seq.next_element::<IgnoredAny>()?.is_some() {}
                        Ok($name(None))
                    }
                    fn visit_str<E: de::Error>(self, _: &str) -> Result<$name, E> {
                        Ok($name(None))
                    }
                    fn visit_u64<E: de::Error>(self, _: u64) -> Result<$name, E> {
                        Ok($name(None))
                    }
                    fn visit_i64<E: de::Error>(self, _: i64) -> Result<$name, E> {
                        Ok($name(None))
                    }
                    fn visit_f64<E: de::Error>(self, _: f64) -> Result<$name, E> {
                        Ok($name(None))
                    }
                    fn visit_bool<E: de::Error>(self, _: bool) -> Result<$name, E> {
                        Ok($name(None))
                    }
                    fn visit_unit<E: de::Error>(self) -> Result<$name, E> {
                        Ok($name(None))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

maybe_object!(MaybeTable, MaybeEntry, |e: MaybeEntry| e.0);
maybe_object!(MaybeEntry, Scalar, |s: Scalar| Some(s.0));

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a config_db field value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
                Ok(Scalar(String::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
                let mut items = Vec::new();
                while let Some(Scalar(s)) = seq.next_element()? {
                    items.push(s);
                }
                Ok(Scalar(items.join(",")))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar(String::new()))
            }
        }
        d.deserialize_any(V)
    }
}

fn get<'a>(db: &'a ConfigDb, table: &str, key: &str) -> Option<&'a Fields> {
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

fn port_state(db: &ConfigDb, name: &str, port: &Fields, poll: Option<u32>) -> PortState {
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
    p.headroom_xoff = headroom(db, name);
    p
}

/// Entries keyed `PORT|INDICES` (QUEUE, BUFFER_PG, BUFFER_QUEUE) of one port, expanded.
fn per_index<'a>(db: &'a ConfigDb, table: &str, port: &str) -> Vec<(u8, &'a Fields)> {
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

/// The XOFF of the buffer profile on the priority group each priority pauses, by priority: the
/// group is the port's `pfc_to_pg_map` entry, else the priority's own number (the SAI default).
/// Per priority, so the checker looks at the priorities the intent makes lossless, whatever
/// `pfc_enable` says (a wrong `pfc_enable` is a PFC finding, not a headroom one).
fn headroom(db: &ConfigDb, port: &str) -> BTreeMap<u8, u64> {
    let pfc_to_pg = field(db, "PORT_QOS_MAP", port, "pfc_to_pg_map")
        .and_then(|m| get(db, "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", m));
    let groups = per_index(db, "BUFFER_PG", port);
    let mut out = BTreeMap::new();
    if groups.is_empty() {
        return out;
    }
    for prio in 0..8u8 {
        let pg = match pfc_to_pg.and_then(|m| m.get(PRIORITIES[usize::from(prio)])) {
            Some(pg) => pg.parse().ok(),
            None => Some(prio),
        };
        let xoff = pg
            .and_then(|pg| groups.iter().find(|(i, _)| *i == pg))
            .and_then(|(_, entry)| get(db, "BUFFER_PROFILE", entry.get("profile")?))
            .and_then(|profile| num(profile.get("xoff").map(String::as_str)));
        if let Some(xoff) = xoff {
            out.insert(prio, xoff);
        }
    }
    out
}

/// Priority keys as config_db spells them.
const PRIORITIES: [&str; 8] = ["0", "1", "2", "3", "4", "5", "6", "7"];

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
