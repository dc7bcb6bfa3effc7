//! lldpd's `lldpcli -f json0` and `-f json` output to a neighbour table.
//!
//! Both formats come from one tag tree (lldpd `display.c`). `json0` keeps it as is: every node
//! an array of objects, scalars as `{"value": ...}`, names as a `name` field. `json` rewrites it
//! (lldpd issue #236): one-element arrays collapse to the element, `{"value": x}` to `x`,
//! children with a name become keys (`"interface": {"eth0": {...}}`, `"chassis": {"leaf01":
//! {...}}`, but an unnamed chassis is not keyed), and yes/no become booleans. The readers
//! below accept every one of those shapes, so both formats give the same table.

use serde_json::{Map, Value};

use crate::fabric::AdvertisedPort;
use crate::fabric::names::natural_cmp;
use spinel_wire::neighbor::{
    Capabilities, Capability, ChassisId, ChassisIdSubtype, Dcbx, ManagementAddress, Neighbor,
    NeighborTable, Observer, PortId, PortIdSubtype, PortNeighbors, Role, SCHEMA, UnknownTlv,
    VlanName,
};

use super::{Capture, Format, NamedBy, ParseOptions};

/// lldpd output that cannot be turned into a table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LldpdError {
    /// No local chassis in the document and no observer name given.
    #[error(
        "lldpd output without the observer's own chassis (neighbours only): capture `lldpcli \
         -f json0 show interfaces details` into the same file before `show neighbors details`, \
         or name the observer: `spinelctl topo infer NAME=FILE` (files named after their system, \
         such as leaf01.json, are named by their file name)"
    )]
    NoObserver,
    /// One file holds the captures of several systems.
    #[error(
        "the file holds the lldpd output of {count} systems ({}): split it, one file per \
         system (`lldpcli` on each box into its own file; a directory of them is one argument)",
        systems.join(", ")
    )]
    SeveralSystems {
        /// How many systems (or `show neighbors` outputs).
        count: usize,
        /// What tells them apart: their names, or `show neighbors` output numbers.
        systems: Vec<String>,
    },
    /// An element that must be there is missing or malformed.
    #[error("lldpd output, {context}: {problem}")]
    Shape {
        /// Where (for example `interface swp1, chassis`).
        context: String,
        /// What is wrong.
        problem: String,
    },
}

/// Keys that only appear inside an interface entry (as opposed to a name keying one).
const INTERFACE_KEYS: &[&str] = &[
    "name",
    "via",
    "rid",
    "age",
    "chassis",
    "port",
    "status",
    "ttl",
    "vlan",
    "ppvid",
    "pi",
    "lldp-med",
    "unknown-tlvs",
];

/// Keys that only appear inside a chassis entry.
const CHASSIS_KEYS: &[&str] = &["id", "name", "descr", "mgmt-ip", "mgmt-iface", "capability"];

/// An array's elements, nothing for null, else the value itself (json's collapsed arrays).
fn items(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        Value::Null => Vec::new(),
        other => vec![other],
    }
}

/// A scalar however it is wrapped: `"x"`, `{"value": "x"}`, `[{"value": "x"}]`, `true`, `4`.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "yes" } else { "no" }.to_owned()),
        Value::Array(a) => a.first().and_then(text),
        Value::Object(o) => o.get("value").and_then(text),
        Value::Null => None,
    }
}

fn flag(v: &Value) -> bool {
    matches!(text(v).as_deref(), Some("yes" | "on" | "true"))
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(o) => o.get(key),
        Value::Array(a) => a.first().and_then(|x| get(x, key)),
        _ => None,
    }
}

/// Entries that may be keyed by name: returns (name, entry) pairs.
fn named<'a>(v: &'a Value, known: &[&str]) -> Vec<(Option<String>, &'a Map<String, Value>)> {
    let mut out = Vec::new();
    for item in items(v) {
        let Value::Object(map) = item else { continue };
        if map.is_empty() {
            continue;
        }
        if map.keys().any(|k| known.contains(&k.as_str())) {
            out.push((map.get("name").and_then(text), map));
        } else {
            for (k, inner) in map {
                for entry in items(inner) {
                    if let Value::Object(m) = entry {
                        out.push((Some(k.clone()), m));
                    }
                }
            }
        }
    }
    out
}

fn chassis_subtype(t: &str) -> ChassisIdSubtype {
    match t {
        "mac" => ChassisIdSubtype::MacAddress,
        "ip" => ChassisIdSubtype::NetworkAddress,
        "ifname" => ChassisIdSubtype::InterfaceName,
        "ifalias" => ChassisIdSubtype::InterfaceAlias,
        // "local", and lldpd's "unhandled" for the component subtypes it does not name
        _ => ChassisIdSubtype::Local,
    }
}

fn port_subtype(t: &str) -> PortIdSubtype {
    match t {
        "mac" => PortIdSubtype::MacAddress,
        "ip" => PortIdSubtype::NetworkAddress,
        "ifname" => PortIdSubtype::InterfaceName,
        "ifalias" => PortIdSubtype::InterfaceAlias,
        _ => PortIdSubtype::Local,
    }
}

fn capability(t: &str) -> Option<Capability> {
    Some(match t.to_ascii_lowercase().as_str() {
        "other" => Capability::Other,
        "repeater" => Capability::Repeater,
        "bridge" => Capability::Bridge,
        "wlan" => Capability::WlanAccessPoint,
        "router" => Capability::Router,
        "tel" | "telephone" => Capability::Telephone,
        "docsis" => Capability::Docsis,
        "station" => Capability::Station,
        "cvlan" => Capability::CVlan,
        "svlan" => Capability::SVlan,
        "tpmr" => Capability::Tpmr,
        _ => return None,
    })
}

/// A chassis entry with its (possibly keyed) name.
struct Chassis {
    id: ChassisId,
    name: Option<String>,
    descr: Option<String>,
    capabilities: Option<Capabilities>,
    mgmt: Vec<ManagementAddress>,
}

fn chassis(v: &Value, context: &str) -> Result<Chassis, LldpdError> {
    let shape = |problem: &str| LldpdError::Shape {
        context: format!("{context}, chassis"),
        problem: problem.to_owned(),
    };
    let (keyed_name, map) = named(v, CHASSIS_KEYS)
        .into_iter()
        .next()
        .ok_or_else(|| shape("missing"))?;
    let id = map.get("id").ok_or_else(|| shape("no id"))?;
    let value = get(id, "value")
        .and_then(text)
        .ok_or_else(|| shape("id has no value"))?;
    let subtype = chassis_subtype(&get(id, "type").and_then(text).unwrap_or_default());
    let capabilities = map.get("capability").map(|caps| {
        let mut supported = Vec::new();
        let mut enabled = Vec::new();
        for c in items(caps) {
            if let Some(cap) = get(c, "type")
                .and_then(text)
                .as_deref()
                .and_then(capability)
            {
                supported.push(cap);
                if get(c, "enabled").is_some_and(flag) {
                    enabled.push(cap);
                }
            }
        }
        Capabilities { supported, enabled }
    });
    let iface: u32 = map
        .get("mgmt-iface")
        .and_then(text)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mgmt = map
        .get("mgmt-ip")
        .map(|ips| {
            items(ips)
                .into_iter()
                .filter_map(text)
                .map(|address| ManagementAddress {
                    family: if address.contains(':') { 2 } else { 1 },
                    address,
                    interface_numbering: if iface == 0 { 1 } else { 2 },
                    interface_number: iface,
                    oid: None,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Chassis {
        id: ChassisId { subtype, value },
        name: map.get("name").and_then(text).or(keyed_name),
        descr: map.get("descr").and_then(text),
        capabilities,
        mgmt,
    })
}

fn port_id(port: &Value, context: &str) -> Result<PortId, LldpdError> {
    let shape = |problem: &str| LldpdError::Shape {
        context: format!("{context}, port"),
        problem: problem.to_owned(),
    };
    let id = get(port, "id").ok_or_else(|| shape("no id"))?;
    let value = get(id, "value")
        .and_then(text)
        .ok_or_else(|| shape("id has no value"))?;
    Ok(PortId {
        subtype: port_subtype(&get(id, "type").and_then(text).unwrap_or_default()),
        value,
    })
}

/// `0 day, 00:01:02` (or `3 days, ...`) to seconds.
fn age_seconds(age: &str) -> Option<u64> {
    let (days, clock) = age.split_once(',')?;
    let days: u64 = days.split_whitespace().next()?.parse().ok()?;
    let mut parts = clock.trim().split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(days * 86_400 + h * 3_600 + m * 60 + s)
}

fn neighbor(entry: &Map<String, Value>, context: &str) -> Result<Neighbor, LldpdError> {
    let entry_value = Value::Object(entry.clone());
    let c = chassis(entry.get("chassis").unwrap_or(&Value::Null), context)?;
    let port = entry.get("port").ok_or_else(|| LldpdError::Shape {
        context: context.to_owned(),
        problem: "no port".to_owned(),
    })?;
    let port_id = port_id(port, context)?;
    let ttl = get(port, "ttl")
        .and_then(text)
        .or_else(|| {
            get(&entry_value, "ttl")
                .and_then(|t| get(t, "ttl"))
                .and_then(text)
        })
        .and_then(|t| t.parse::<u16>().ok())
        .unwrap_or(0);
    let mut port_vlan_id = None;
    let mut vlan_names = Vec::new();
    for v in entry.get("vlan").map(items).unwrap_or_default() {
        let vid = get(v, "vlan-id")
            .and_then(text)
            .and_then(|s| s.parse::<u16>().ok());
        if let Some(vid) = vid {
            if get(v, "pvid").is_some_and(flag) {
                port_vlan_id = Some(vid);
            }
            if let Some(name) = get(v, "value").and_then(text) {
                vlan_names.push(VlanName { vid, name });
            }
        }
    }
    let unknown_tlvs = entry
        .get("unknown-tlvs")
        .and_then(|u| get(u, "unknown-tlv"))
        .map(|list| {
            items(list)
                .into_iter()
                .map(|t| UnknownTlv {
                    tlv_type: 127,
                    oui: get(t, "oui")
                        .and_then(text)
                        .map(|o| o.replace(',', ":").to_ascii_lowercase()),
                    subtype: get(t, "subtype")
                        .and_then(text)
                        .and_then(|s| s.parse().ok()),
                    data: get(t, "value")
                        .and_then(text)
                        .unwrap_or_default()
                        .replace(',', "")
                        .to_ascii_lowercase(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Neighbor {
        chassis_id: c.id,
        port_id,
        ttl,
        age_seconds: entry
            .get("age")
            .and_then(text)
            .as_deref()
            .and_then(age_seconds),
        port_description: get(port, "descr").and_then(text),
        system_name: c.name,
        system_description: c.descr,
        capabilities: c.capabilities,
        management_addresses: c.mgmt,
        port_vlan_id,
        vlan_names,
        link_aggregation: None,
        mac_phy: None,
        max_frame_size: get(port, "mfs").and_then(text).and_then(|s| s.parse().ok()),
        dcbx: Dcbx::default(),
        unknown_tlvs,
    })
}

/// Converts the lldpd documents of one system (already split from the file) into a capture.
/// `options.observer` names the system (overriding its own chassis name); without it,
/// `options.fallback_observer` names a system whose documents lack its own chassis. Documents
/// of several systems (different own chassis, or several `show neighbors` outputs) are refused.
pub fn capture(docs: &[Value], options: &ParseOptions) -> Result<Capture, LldpdError> {
    one_system(docs)?;
    let json0 = docs.iter().all(|d| {
        d.get("lldp")
            .or_else(|| d.get("local-chassis"))
            .is_some_and(Value::is_array)
    });
    let mut local: Option<Chassis> = None;
    let mut advertised: Vec<AdvertisedPort> = Vec::new();
    let mut port_names: Vec<String> = Vec::new();
    let mut seen: Vec<(String, Neighbor)> = Vec::new();
    for doc in docs {
        if let Some(lc) = doc.get("local-chassis") {
            let c = chassis(get(lc, "chassis").unwrap_or(&Value::Null), "local-chassis")?;
            local.get_or_insert(c);
        }
        let Some(lldp) = doc.get("lldp") else {
            continue;
        };
        for container in items(lldp) {
            let Some(interfaces) = get(container, "interface") else {
                continue;
            };
            for (name, entry) in named(interfaces, INTERFACE_KEYS) {
                let name = name.ok_or_else(|| LldpdError::Shape {
                    context: "interface".to_owned(),
                    problem: "entry without a name".to_owned(),
                })?;
                let context = format!("interface {name}");
                if entry.contains_key("status") {
                    // `show interfaces`: the system itself on this port.
                    let c = chassis(entry.get("chassis").unwrap_or(&Value::Null), &context)?;
                    if let Some(port) = entry.get("port") {
                        advertised.push(AdvertisedPort {
                            port: name.clone(),
                            port_id: port_id(port, &context)?,
                        });
                    }
                    local.get_or_insert(c);
                    port_names.push(name);
                } else {
                    let n = neighbor(entry, &context)?;
                    port_names.push(name.clone());
                    seen.push((name, n));
                }
            }
        }
    }
    let (name, observer_named_by) = match (&options.observer, &local, &options.fallback_observer) {
        (Some(name), _, _) => (name.clone(), NamedBy::Caller),
        (None, Some(c), _) => (
            c.name.clone().unwrap_or_else(|| c.id.value.clone()),
            NamedBy::Capture,
        ),
        (None, None, Some(name)) => (name.clone(), NamedBy::Fallback),
        (None, None, None) => return Err(LldpdError::NoObserver),
    };
    // lldpd computes capabilities from the kernel: a bridge is a switch; a system that says it
    // is neither bridge nor router is a host; a router alone may be either (a Kubernetes node
    // with forwarding on), so inference decides.
    let own_capabilities = local.as_ref().and_then(|c| c.capabilities.clone());
    let role = own_capabilities.as_ref().and_then(|caps| {
        if caps.enabled.contains(&Capability::Bridge) {
            Some(Role::Switch)
        } else if caps.enabled.contains(&Capability::Router) {
            None
        } else {
            Some(Role::Host)
        }
    });
    port_names.sort_by(|a, b| natural_cmp(a, b));
    port_names.dedup();
    let ports = port_names
        .into_iter()
        .map(|port| {
            let mut neighbors: Vec<Neighbor> = seen
                .iter()
                .filter(|(p, _)| *p == port)
                .map(|(_, n)| n.clone())
                .collect();
            neighbors.sort_by(|a, b| (&a.chassis_id, &a.port_id).cmp(&(&b.chassis_id, &b.port_id)));
            PortNeighbors {
                port,
                neighbors,
                counters: None,
            }
        })
        .collect();
    advertised.sort_by(|a, b| natural_cmp(&a.port, &b.port));
    advertised.dedup_by(|a, b| a.port == b.port);
    Ok(Capture {
        table: NeighborTable {
            schema: SCHEMA.to_owned(),
            observer: Observer {
                name,
                chassis_id: local.map(|c| c.id),
                role,
            },
            ports,
        },
        advertised,
        format: if json0 {
            Format::LldpdJson0
        } else {
            Format::LldpdJson
        },
        own_capabilities,
        observer_named_by,
        source: options.source.clone(),
    })
}

/// Refuses documents of several systems: own chassis that differ (`show interfaces` or
/// `show chassis` of two boxes), or more than one `show neighbors` output.
fn one_system(docs: &[Value]) -> Result<(), LldpdError> {
    let mut own: Vec<(String, String)> = Vec::new(); // (chassis ID, name)
    let mut neighbour_docs = 0usize;
    for doc in docs {
        if let Some(lc) = doc.get("local-chassis")
            && let Ok(c) = chassis(get(lc, "chassis").unwrap_or(&Value::Null), "local-chassis")
        {
            own.push((c.id.value.clone(), c.name.unwrap_or(c.id.value)));
        }
        let Some(lldp) = doc.get("lldp") else {
            continue;
        };
        let mut interfaces = false;
        for container in items(lldp) {
            let Some(list) = get(container, "interface") else {
                continue;
            };
            for (name, entry) in named(list, INTERFACE_KEYS) {
                if entry.contains_key("status") {
                    interfaces = true;
                    let context = format!("interface {}", name.unwrap_or_default());
                    if let Ok(c) = chassis(entry.get("chassis").unwrap_or(&Value::Null), &context) {
                        own.push((c.id.value.clone(), c.name.unwrap_or(c.id.value)));
                    }
                }
            }
        }
        if !interfaces {
            neighbour_docs += 1;
        }
    }
    own.sort();
    own.dedup_by(|a, b| a.0 == b.0);
    if own.len() > 1 {
        let mut systems: Vec<String> = own.into_iter().map(|(_, name)| name).collect();
        systems.sort_by(|a, b| natural_cmp(a, b));
        return Err(LldpdError::SeveralSystems {
            count: systems.len(),
            systems,
        });
    }
    if neighbour_docs > 1 {
        return Err(LldpdError::SeveralSystems {
            count: neighbour_docs,
            systems: vec![format!("{neighbour_docs} `show neighbors` outputs")],
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse() {
        assert_eq!(age_seconds("0 day, 00:01:02"), Some(62));
        assert_eq!(age_seconds("2 days, 01:00:00"), Some(2 * 86_400 + 3_600));
        assert_eq!(age_seconds("soon"), None);
    }

    #[test]
    fn scalars_unwrap_from_every_shape() {
        let v: Value = serde_json::from_str(r#"[{"value": "x"}]"#).unwrap();
        assert_eq!(text(&v).as_deref(), Some("x"));
        assert_eq!(text(&Value::Bool(true)).as_deref(), Some("yes"));
        assert_eq!(text(&serde_json::json!({"value": 4})).as_deref(), Some("4"));
    }
}
