//! Switches: names, roles, ports and cabling, per-switch overrides, buffers.

use std::collections::{HashMap, HashSet};

use super::{
    Issues, switch_field, valid_host_name, valid_nic_name, valid_port_name, valid_switch_name,
};
use crate::intent::software::Software;
use crate::intent::{Intent, Switch, SwitchOs, SwitchRole, WatchdogAction, cut};
use crate::plan::{FabricPlan, PortPeer, SwitchPlan};
use crate::qos::{comma_list, pfc_headroom_bytes};

const SPEEDS_GBPS: [u32; 9] = [10, 25, 40, 50, 100, 200, 400, 800, 1600];

pub(super) fn check(intent: &Intent, plan: &FabricPlan<'_>, issues: &mut Issues) {
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    for (i, s) in intent.switches.iter().enumerate() {
        let field = switch_field(&s.name);
        if !valid_switch_name(&s.name) {
            issues.error(
                &field,
                Some(&s.name),
                format!(
                    "{} is not a valid switch name (a hostname: letters, digits, '.', '_', \
                     '-'; at most 63)",
                    cut(&s.name)
                ),
            );
        }
        if let Some(first) = first_seen.insert(&s.name, i) {
            issues.error(
                &field,
                Some(&s.name),
                format!(
                    "duplicate switch: entries {} and {} share the name {}",
                    first + 1,
                    i + 1,
                    s.name
                ),
            );
        }
        role(s, issues);
        software(intent, s, issues);
        overrides(intent, s, issues);
    }
    host_nics(intent, issues);
    for sp in &plan.switches {
        ports(sp, issues);
        buffers(intent, plan, sp, issues);
    }
    links(plan, issues);
}

fn role(s: &Switch, issues: &mut Issues) {
    let field = switch_field(&s.name);
    match s.role {
        SwitchRole::Leaf if s.networks.is_empty() => issues.error(
            format!("{field}.networks"),
            Some(&s.name),
            "a leaf needs a network (rail, VLAN, subnet, gateway) for each rail it serves".into(),
        ),
        SwitchRole::Spine | SwitchRole::SuperSpine if !s.networks.is_empty() => issues.error(
            format!("{field}.networks"),
            Some(&s.name),
            "only leaves serve rail networks".into(),
        ),
        _ => {}
    }
    if let Some(speed) = s.speed_gbps
        && !SPEEDS_GBPS.contains(&speed)
    {
        issues.error(
            format!("{field}.speed_gbps"),
            Some(&s.name),
            format!("{speed} is not an Ethernet speed ({SPEEDS_GBPS:?})"),
        );
    }
    if s.os == SwitchOs::Sonic && s.buffer_bytes.is_none() {
        issues.error(
            format!("{field}.buffer_bytes"),
            Some(&s.name),
            "SONiC switches need the ASIC's packet buffer size for BUFFER_POOL (for example \
             67108864 on Spectrum-3, 167772160 on Tomahawk 5)"
                .into(),
        );
    }
}

/// The release must be one whose syntax is known, and the intent expressible in it.
fn software(intent: &Intent, s: &Switch, issues: &mut Issues) {
    let field = switch_field(&s.name);
    match Software::of(s) {
        Err(e) => issues.error(
            format!("{field}.{}", e.field()),
            Some(&s.name),
            e.to_string(),
        ),
        Ok(Software::Eos { .. }) if intent.roce.pfc.watchdog.action == WatchdogAction::Forward => {
            issues.error(
                "roce.pfc.watchdog.action",
                Some(&s.name),
                "EOS's PFC watchdog acts by drop, errdisable or notify-only; it has no forward \
                 action: use drop, or keep this switch off EOS"
                    .into(),
            );
        }
        Ok(_) => {}
    }
}

fn overrides(intent: &Intent, s: &Switch, issues: &mut Issues) {
    let field = switch_field(&s.name);
    let mtu = s.mtu.unwrap_or(intent.roce.mtu.switch);
    if mtu > s.os.max_mtu() {
        issues.error(
            format!("{field}.mtu"),
            Some(&s.name),
            format!(
                "MTU {mtu} is above {}, the most {} accepts; set roce.mtu.switch or this \
                 switch's mtu to at most {}",
                s.os.max_mtu(),
                s.os.as_str(),
                s.os.max_mtu()
            ),
        );
    }
    if s.mtu.is_some() && mtu < intent.roce.mtu.host {
        issues.error(
            format!("{field}.mtu"),
            Some(&s.name),
            format!(
                "MTU {mtu} is below the host MTU {}: full-size RoCE packets would be dropped",
                intent.roce.mtu.host
            ),
        );
    }
    let Some(pfc) = &s.pfc_priorities else {
        return;
    };
    let profile = &intent.roce.pfc.priorities;
    let extra: Vec<u8> = pfc
        .iter()
        .copied()
        .filter(|p| !profile.contains(p))
        .collect();
    if !extra.is_empty() {
        issues.error(
            format!("{field}.pfc_priorities"),
            Some(&s.name),
            format!(
                "PFC on priority {} which the profile does not make lossless (roce.pfc.priorities \
                 = {}): no headroom is reserved for it and neighbours will not pause it",
                comma_list(&extra),
                comma_list(profile)
            ),
        );
    }
    if !pfc.contains(&intent.roce.data.priority) {
        issues.error(
            format!("{field}.pfc_priorities"),
            Some(&s.name),
            format!(
                "PFC is off on the RoCE data priority {} on this switch: RoCE would be lossy here",
                intent.roce.data.priority
            ),
        );
    }
}

fn ports(sp: &SwitchPlan<'_>, issues: &mut Issues) {
    let s = sp.switch;
    let field = switch_field(&s.name);
    let mut names = HashSet::new();
    for p in s.ports.iter() {
        let pfield = format!("{field}.ports.{}", p.name);
        if !valid_port_name(&p.name) {
            issues.error(
                &pfield,
                Some(&s.name),
                format!("{} is not a port name", cut(&p.name)),
            );
        }
        if !names.insert(p.name.as_str()) {
            issues.error(&pfield, Some(&s.name), "port listed twice".into());
        }
        if let Some(speed) = p.speed_gbps
            && !SPEEDS_GBPS.contains(&speed)
        {
            issues.error(
                format!("{pfield}.speed_gbps"),
                Some(&s.name),
                format!("{speed} is not an Ethernet speed"),
            );
        }
        if p.peer.system == s.name {
            issues.error(
                &pfield,
                Some(&s.name),
                "a port cannot be cabled to its own switch".into(),
            );
        }
    }
    for p in &sp.ports {
        let pfield = format!("{field}.ports.{}", p.name);
        let PortPeer::Host { host, nic, network } = &p.peer else {
            continue;
        };
        if s.role != SwitchRole::Leaf {
            issues.error(
                &pfield,
                Some(&s.name),
                format!(
                    "{host}/{nic} is not a switch in this intent, and hosts are cabled to leaves \
                     only (a typo in a switch name?)"
                ),
            );
            continue;
        }
        if !valid_host_name(host) {
            issues.error(
                &pfield,
                Some(&s.name),
                format!(
                    "{} is not a valid node name (lowercase DNS name)",
                    cut(host)
                ),
            );
        }
        if !valid_nic_name(nic) {
            issues.error(
                &pfield,
                Some(&s.name),
                format!("{} is not a Linux interface name", cut(nic)),
            );
        }
        if network.is_none() && !s.networks.is_empty() {
            let rails: Vec<&str> = s.networks.iter().map(|n| n.rail.as_str()).collect();
            issues.error(
                &pfield,
                Some(&s.name),
                format!(
                    "this leaf serves rails {} and none of them names NIC {nic} (rails[].nic): \
                     which rail is {host}/{nic} on?",
                    rails.join(", ")
                ),
            );
        }
        if p.address.is_some() {
            issues.error(
                format!("{pfield}.address"),
                Some(&s.name),
                format!(
                    "{host} is not a switch in this intent (a typo in a switch name?): host ports \
                     are members of their rail VLAN; routed addresses are for switch links"
                ),
            );
        }
    }
}

/// Every host NIC is cabled once.
fn host_nics(intent: &Intent, issues: &mut Issues) {
    let switch_names: HashSet<&str> = intent.switches.iter().map(|s| s.name.as_str()).collect();
    let mut seen: HashMap<(&str, &str), (&str, &str)> = HashMap::new();
    for s in &intent.switches {
        for p in s.ports.iter() {
            if switch_names.contains(p.peer.system.as_str()) {
                continue;
            }
            let key = (p.peer.system.as_str(), p.peer.interface.as_str());
            if let Some((other, other_port)) = seen.insert(key, (&s.name, &p.name)) {
                issues.error(
                    format!("{}.ports.{}", switch_field(&s.name), p.name),
                    Some(&s.name),
                    format!(
                        "{}/{} is also cabled to {other} port {other_port}: a NIC has one cable",
                        key.0, key.1
                    ),
                );
            }
        }
    }
}

/// Switch links: both ends agree, PFC matches across the link.
fn links(plan: &FabricPlan<'_>, issues: &mut Issues) {
    for sp in &plan.switches {
        let s = sp.switch;
        for p in s.ports.iter() {
            let Some(peer) = plan.switch(&p.peer.system) else {
                continue;
            };
            let pfield = format!("{}.ports.{}", switch_field(&s.name), p.name);
            if let Some(back) = peer
                .switch
                .ports
                .iter()
                .find(|q| q.name == p.peer.interface)
                && (back.peer.system != s.name || back.peer.interface != p.name)
            {
                issues.error(
                    &pfield,
                    Some(&s.name),
                    format!(
                        "says {} but {} port {} says {}: one of the two cabling entries is wrong",
                        p.peer, peer.switch.name, back.name, back.peer
                    ),
                );
            }
            // Report each link once, from its lexically smaller end.
            if s.name < peer.switch.name && sp.pfc != peer.pfc {
                issues.error(
                    &pfield,
                    Some(&s.name),
                    format!(
                        "PFC on {} here but {} on {} (port {}): the ends of a link must pause the \
                         same priorities",
                        comma_list(&sp.pfc),
                        comma_list(&peer.pfc),
                        peer.switch.name,
                        p.peer.interface
                    ),
                );
            }
            if s.role == SwitchRole::Leaf && peer.switch.role == SwitchRole::Leaf {
                issues.warning(
                    &pfield,
                    Some(&s.name),
                    format!(
                        "leaf-to-leaf link to {} (an MLAG peer link, or a cable in the wrong \
                         tier?)",
                        peer.switch.name
                    ),
                );
            }
        }
    }
}

/// Lossless headroom and pools must fit the ASIC's buffer (SONiC #28657: they did not).
fn buffers(intent: &Intent, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, issues: &mut Issues) {
    let Some(buffer) = sp.switch.buffer_bytes else {
        return;
    };
    let groups = plan.qos.lossless_tcs(&sp.pfc).len() as u64;
    let headroom: u64 = sp
        .ports
        .iter()
        .map(|p| pfc_headroom_bytes(p.speed_gbps, p.cable_m, sp.mtu) * groups)
        .sum();
    let pool = buffer * u64::from(intent.roce.buffer.lossless_pool_percent) / 100;
    if pool + headroom > buffer {
        issues.error(
            format!("{}.buffer_bytes", switch_field(&sp.switch.name)),
            Some(&sp.switch.name),
            format!(
                "PFC headroom for {} ports × {groups} lossless group(s) ({headroom} bytes) plus \
                 the lossless pool ({pool} bytes, roce.buffer.lossless_pool_percent) exceed the \
                 {buffer}-byte buffer: lower the pool share, the cable lengths or the lossless \
                 priorities",
                sp.ports.len()
            ),
        );
    }
}
