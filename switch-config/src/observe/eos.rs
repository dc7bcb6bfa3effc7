//! Arista EOS `show running-config` text: global QoS maps and PFC watchdog timers, `qos
//! profile` sections (trust, unicast queues as `tx-queue` or `uc-tx-queue` by platform, PFC),
//! interfaces (with or without a service-profile; trust and PFC lines on the interface itself
//! win over the profile's), VLAN interfaces.

use std::collections::BTreeMap;

use super::expand_indices;
use crate::state::{EcnState, PortState, QueueState, Sched, SwitchState, VlanState, WatchdogState};

#[derive(Default)]
struct Profile {
    /// `Some(true)` for `qos trust dscp`, `Some(false)` for another trust; `None`: not said.
    trust_dscp: Option<bool>,
    pfc_on: Option<bool>,
    pfc: Vec<u8>,
    watchdog: bool,
    queues: BTreeMap<u8, QueueState>,
}

#[derive(Default)]
struct Interface {
    description: Option<String>,
    mtu: Option<u16>,
    access_vlan: Option<u16>,
    address: Option<String>,
    profile: Option<String>,
    dcbx: bool,
    direct: Profile,
    arp_capacity: Option<u64>,
}

enum Section {
    Top,
    Profile(String),
    Queue(String, u8),
    /// A multicast queue (`mc-tx-queue`): not RoCE's, its lines are skipped.
    McQueue(String),
    Interface(String),
}

#[derive(Default)]
struct Parsed {
    hostname: Option<String>,
    dscp: crate::state::DscpMap,
    watchdog: WatchdogState,
    app_priority: Option<u8>,
    arp_aging: Option<u32>,
    profiles: BTreeMap<String, Profile>,
    interfaces: BTreeMap<String, Interface>,
}

/// The RoCE-relevant state of an EOS configuration.
pub fn state(text: &str) -> SwitchState {
    let parsed = parse(text);
    resolve(parsed)
}

fn parse(text: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut section = Section::Top;
    for raw in text.lines() {
        let line = raw.trim_end();
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('!') {
            continue;
        }
        let indent = line.len() - body.len();
        let words: Vec<&str> = body.split_whitespace().collect();
        if indent == 0 {
            section = top_level(&mut p, &words);
            continue;
        }
        section = match section {
            Section::Profile(name) | Section::Queue(name, _) | Section::McQueue(name)
                if indent <= 3 && matches!(words.first(), Some(&("tx-queue" | "uc-tx-queue"))) =>
            {
                let q = words.get(1).and_then(|q| q.parse().ok()).unwrap_or(0);
                Section::Queue(name, q)
            }
            Section::Profile(name) | Section::Queue(name, _) | Section::McQueue(name)
                if indent <= 3 && words.first() == Some(&"mc-tx-queue") =>
            {
                Section::McQueue(name)
            }
            Section::McQueue(name) if indent > 3 => Section::McQueue(name),
            Section::Queue(name, q) if indent > 3 => {
                let prof = p.profiles.entry(name.clone()).or_default();
                queue_line(prof.queues.entry(q).or_default(), &words);
                Section::Queue(name, q)
            }
            Section::Profile(name) | Section::Queue(name, _) | Section::McQueue(name) => {
                let prof = p.profiles.entry(name.clone()).or_default();
                profile_line(prof, &words);
                Section::Profile(name)
            }
            Section::Interface(name) => {
                interface_line(p.interfaces.entry(name.clone()).or_default(), &words);
                Section::Interface(name)
            }
            Section::Top => Section::Top,
        };
    }
    p
}

fn top_level(p: &mut Parsed, w: &[&str]) -> Section {
    match w {
        ["hostname", name] => p.hostname = Some((*name).to_owned()),
        ["qos", "profile", name] => return Section::Profile((*name).to_owned()),
        ["interface", name] => return Section::Interface((*name).to_owned()),
        ["qos", "map", "dscp", rest @ ..] => {
            if let [dscps @ .., "to", "traffic-class", tc] = rest
                && let Ok(tc) = tc.parse::<u8>()
            {
                for d in dscps.iter().flat_map(|d| expand_indices(d)) {
                    p.dscp.set(d, tc);
                }
            }
        }
        [
            "priority-flow-control",
            "pause",
            "watchdog",
            "default",
            what,
            value,
        ] => {
            let ms = seconds_to_ms(value);
            match *what {
                "timeout" => p.watchdog.detection_ms = ms,
                "polling-interval" => p.watchdog.poll_ms = ms,
                "recovery-time" => p.watchdog.restoration_ms = ms,
                _ => {}
            }
        }
        [
            "priority-flow-control",
            "pause",
            "watchdog",
            "action",
            action,
        ] => {
            p.watchdog.action = Some(
                if *action == "no-drop" {
                    "forward"
                } else {
                    action
                }
                .to_owned(),
            );
        }
        ["dcbx", "application", "udp", port, "priority", prio] if *port == "4791" => {
            p.app_priority = prio.parse().ok();
        }
        ["arp", "aging", "timeout", "default", secs] => p.arp_aging = secs.parse().ok(),
        _ => {}
    }
    Section::Top
}

fn seconds_to_ms(text: &str) -> Option<u32> {
    let secs: f64 = text.parse().ok()?;
    let ms = (secs * 1000.0).round();
    (0.0..=f64::from(u32::MAX))
        .contains(&ms)
        .then_some(ms as u32)
}

fn profile_line(prof: &mut Profile, w: &[&str]) {
    match w {
        ["qos", "trust", "dscp"] => prof.trust_dscp = Some(true),
        ["qos", "trust", _] | ["no", "qos", "trust"] => prof.trust_dscp = Some(false),
        ["priority-flow-control", "on"] => prof.pfc_on = Some(true),
        ["no", "priority-flow-control"] => prof.pfc_on = Some(false),
        ["priority-flow-control", "priority", p, "no-drop"] => {
            if let Ok(p) = p.parse() {
                prof.pfc.push(p);
            }
        }
        ["priority-flow-control", "pause", "watchdog"] => prof.watchdog = true,
        _ => {}
    }
}

fn queue_line(q: &mut QueueState, w: &[&str]) {
    match w {
        ["priority", "strict"] => q.scheduler = Some(Sched::Strict),
        ["bandwidth", "percent", b] | ["bandwidth", "guaranteed", "percent", b] => {
            q.scheduler = b.parse().ok().map(Sched::Dwrr);
        }
        [
            "random-detect",
            "ecn",
            "minimum-threshold",
            min,
            unit,
            "maximum-threshold",
            max,
            unit2,
            rest @ ..,
        ] => {
            let prob = match rest {
                ["max-mark-probability", p, ..] => p.parse().ok(),
                _ => Some(100),
            };
            q.ecn = (|| {
                Some(EcnState {
                    min_bytes: bytes(min, unit)?,
                    max_bytes: bytes(max, unit2)?,
                    probability: prob?,
                })
            })();
        }
        _ => {}
    }
}

/// Thresholds in byte units; segments and milliseconds depend on the platform and stay unknown.
fn bytes(value: &str, unit: &str) -> Option<u32> {
    let v: u64 = value.parse().ok()?;
    let factor = match unit {
        "bytes" => 1,
        "kbytes" => 1024,
        "mbytes" => 1024 * 1024,
        _ => return None,
    };
    u32::try_from(v.checked_mul(factor)?).ok()
}

fn interface_line(i: &mut Interface, w: &[&str]) {
    match w {
        ["description", ..] => i.description = Some(w[1..].join(" ")),
        ["mtu", m] => i.mtu = m.parse().ok(),
        ["switchport", "access", "vlan", v] => i.access_vlan = v.parse().ok(),
        ["ip", "address", a] => i.address = Some((*a).to_owned()),
        ["service-profile", name] => i.profile = Some((*name).to_owned()),
        ["dcbx", "mode", "ieee"] => i.dcbx = true,
        ["arp", "cache", "dynamic", "capacity", n] => i.arp_capacity = n.parse().ok(),
        _ => profile_line(&mut i.direct, w),
    }
}

fn resolve(p: Parsed) -> SwitchState {
    let mut s = SwitchState {
        hostname: p.hostname,
        arp_aging_seconds: p.arp_aging,
        lldp_app_priority: p.app_priority,
        ..SwitchState::default()
    };
    let empty = Profile::default();
    for (name, i) in &p.interfaces {
        if let Some(id) = name.strip_prefix("Vlan").and_then(|v| v.parse().ok()) {
            s.vlans.insert(
                id,
                VlanState {
                    gateway: i.address.clone(),
                    mtu: i.mtu,
                    arp_capacity: i.arp_capacity,
                },
            );
            continue;
        }
        if !name.starts_with("Ethernet") {
            continue;
        }
        let prof = i
            .profile
            .as_ref()
            .and_then(|n| p.profiles.get(n))
            .unwrap_or(&empty);
        // What the interface says itself overrides its service profile.
        let trust_dscp = i.direct.trust_dscp.or(prof.trust_dscp).unwrap_or(false);
        let pfc_on = i.direct.pfc_on.or(prof.pfc_on).unwrap_or(false);
        let mut pfc = if i.direct.pfc.is_empty() {
            prof.pfc.clone()
        } else {
            i.direct.pfc.clone()
        };
        if !pfc_on {
            pfc.clear();
        }
        pfc.sort_unstable();
        pfc.dedup();
        let watchdog = (prof.watchdog || i.direct.watchdog).then(|| p.watchdog.clone());
        s.ports.insert(
            name.clone(),
            PortState {
                description: i.description.clone(),
                mtu: i.mtu,
                trust_dscp,
                dscp_to_tc: if trust_dscp {
                    p.dscp
                } else {
                    Default::default()
                },
                pfc,
                watchdog,
                queues: prof.queues.clone(),
                headroom_xoff: Default::default(),
                access_vlan: i.access_vlan,
                address: i.address.as_deref().and_then(|a| a.parse().ok()),
                dcbx_tlvs: Some(i.dcbx),
            },
        );
    }
    s
}
