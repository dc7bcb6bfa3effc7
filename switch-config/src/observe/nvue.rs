//! NVUE configuration trees: `nv config show -o json` (`[{"header": ...}, {"set": TREE}]`), a
//! bare tree, or the `nv config patch` YAML (`- set: TREE`).

use serde_json::{Map, Value};

use super::ObserveError;
use crate::render::nvue::{BRIDGE, ROCE_UDP_PORT};
use crate::state::{EcnState, PortState, QueueState, Sched, SwitchState, VlanState, WatchdogState};

/// What a JSON document starts with (an object or an array).
const JSON_OPENERS: [char; 2] = ['{', '['];

/// The configuration tree in `text` (JSON or YAML).
pub fn parse_tree(text: &str) -> Result<Value, ObserveError> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(json_err) => {
            let trimmed = text.trim_start();
            if trimmed.starts_with(JSON_OPENERS) {
                return Err(json_err.into());
            }
            serde_saphyr::from_str(text).map_err(|e| ObserveError::Yaml(e.to_string()))?
        }
    };
    let tree = match value {
        Value::Array(items) => items
            .into_iter()
            .find_map(|i| match i {
                Value::Object(mut o) => o.remove("set"),
                _ => None,
            })
            .ok_or_else(|| ObserveError::Shape("no item with a \"set\" tree".into()))?,
        Value::Object(mut o) if o.contains_key("set") => o.remove("set").unwrap_or_default(),
        other @ Value::Object(_) => other,
        _ => {
            return Err(ObserveError::Shape(
                "an NVUE configuration is a JSON object".into(),
            ));
        }
    };
    Ok(tree)
}

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |node, seg| node.get(*seg))
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn num<T: std::str::FromStr>(v: Option<&Value>) -> Option<T> {
    text(v)?.trim().parse().ok()
}

fn keys(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// The RoCE-relevant state of an NVUE tree.
pub fn state(tree: &Value) -> SwitchState {
    let qos = tree
        .get("qos")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    let sp_to_tc = |sp: &str| {
        num::<u8>(at(
            &qos,
            &[
                "egress-queue-mapping",
                "default-global",
                "switch-priority",
                sp,
                "traffic-class",
            ],
        ))
    };
    let mapping = at(&qos, &["mapping", "default-global"]);
    let trust = text(mapping.and_then(|m| m.get("trust")));
    let trust_dscp = matches!(trust.as_deref(), Some("l3" | "both"));
    let dscp_to_tc: crate::state::DscpMap = keys(mapping.and_then(|m| m.get("dscp")))
        .into_iter()
        .filter_map(|d| {
            let sp = text(at(
                &qos,
                &["mapping", "default-global", "dscp", &d, "switch-priority"],
            ))?;
            Some((d.parse().ok()?, sp_to_tc(&sp)?))
        })
        .collect();
    let queues = queues(&qos);
    let poll: Option<u32> = num(at(&qos, &["pfc-watchdog", "polling-interval"]));
    let robustness: Option<u32> = num(at(&qos, &["pfc-watchdog", "robustness"]));
    let watchdog = WatchdogState {
        detection_ms: poll.zip(robustness).map(|(p, r)| p * r),
        restoration_ms: None,
        poll_ms: poll,
        action: None,
    };
    let mut s = SwitchState {
        arp_aging_seconds: num(at(
            tree,
            &["system", "global", "arp", "base-reachable-time"],
        )),
        // `service lldp` until Cumulus Linux 5.14, `system lldp` from 5.15.
        lldp_app_priority: ["service", "system"].iter().find_map(|root| {
            num(at(
                tree,
                &[
                    root,
                    "lldp",
                    "application-tlv",
                    "udp-port",
                    &ROCE_UDP_PORT.to_string(),
                    "priority",
                ],
            ))
        }),
        ..SwitchState::default()
    };
    let Some(Value::Object(interfaces)) = tree.get("interface") else {
        return s;
    };
    for (name, i) in interfaces {
        if let Some(vlan) = svi(name, i) {
            s.vlans.insert(vlan.0, vlan.1);
            continue;
        }
        if !name.starts_with("swp") && text(i.get("type")).as_deref() != Some("swp") {
            continue;
        }
        let profile =
            text(at(i, &["qos", "pfc", "profile"])).unwrap_or_else(|| "default-global".into());
        let pfc_profile = at(&qos, &["pfc", &profile]);
        let mut pfc: Vec<u8> = keys(pfc_profile.and_then(|p| p.get("switch-priority")))
            .iter()
            .filter_map(|k| k.parse().ok())
            .collect();
        pfc.sort_unstable();
        let wd_on = match at(i, &["qos", "pfc-watchdog"]) {
            Some(Value::Object(m)) => text(m.get("state")).is_none_or(|s| s == "enable"),
            _ => false,
        };
        s.ports.insert(
            name.clone(),
            PortState {
                description: text(i.get("description")),
                mtu: num(at(i, &["link", "mtu"])),
                trust_dscp,
                dscp_to_tc: if trust_dscp {
                    dscp_to_tc
                } else {
                    Default::default()
                },
                pfc,
                watchdog: wd_on.then(|| watchdog.clone()),
                queues: queues.clone(),
                headroom_xoff: Default::default(),
                access_vlan: num(at(i, &["bridge", "domain", BRIDGE, "access"])),
                address: addresses(i).iter().find_map(|a| a.parse().ok()),
                // `on` until Cumulus Linux 5.14, `enabled` from 5.15.
                dcbx_tlvs: Some(matches!(
                    text(at(i, &["lldp", "dcbx-pfc-tlv"])).as_deref(),
                    Some("on" | "enabled")
                )),
            },
        );
    }
    s
}

fn queues(qos: &Value) -> std::collections::BTreeMap<u8, QueueState> {
    let mut out = std::collections::BTreeMap::new();
    let sched = at(
        qos,
        &["egress-scheduler", "default-global", "traffic-class"],
    );
    for tc in keys(sched) {
        let Ok(idx) = tc.parse::<u8>() else { continue };
        let node = sched.and_then(|s| s.get(&tc));
        let scheduler = match text(node.and_then(|n| n.get("mode"))).as_deref() {
            Some("strict") => Some(Sched::Strict),
            Some("dwrr") => num(node.and_then(|n| n.get("bw-percent"))).map(Sched::Dwrr),
            _ => None,
        };
        out.entry(idx).or_insert_with(QueueState::default).scheduler = scheduler;
    }
    let cc = at(
        qos,
        &["congestion-control", "default-global", "traffic-class"],
    );
    for tc in keys(cc) {
        let Ok(idx) = tc.parse::<u8>() else { continue };
        let node = cc.and_then(|c| c.get(&tc));
        if text(node.and_then(|n| n.get("ecn"))).as_deref() == Some("disable") {
            continue;
        }
        let ecn = (|| {
            Some(EcnState {
                min_bytes: num(node?.get("min-threshold"))?,
                max_bytes: num(node?.get("max-threshold"))?,
                probability: num(node?.get("probability"))?,
            })
        })();
        out.entry(idx).or_insert_with(QueueState::default).ecn = ecn;
    }
    out
}

/// An interface's IPv4 addresses: under `ip` until Cumulus Linux 5.14, `ipv4` from 5.15.
fn addresses(i: &Value) -> Vec<String> {
    let mut a = keys(at(i, &["ipv4", "address"]));
    a.extend(keys(at(i, &["ip", "address"])));
    a
}

fn svi(name: &str, i: &Value) -> Option<(u16, VlanState)> {
    let is_svi = text(i.get("type")).as_deref() == Some("svi") || name.starts_with("vlan");
    if !is_svi {
        return None;
    }
    let id: u16 = num(i.get("vlan")).or_else(|| name.strip_prefix("vlan")?.parse().ok())?;
    Some((
        id,
        VlanState {
            gateway: addresses(i).into_iter().next(),
            mtu: num(at(i, &["link", "mtu"])),
            arp_capacity: None,
        },
    ))
}
