//! Host records: each NIC's link chosen among what it sees, hosts and NICs in natural order,
//! and rails.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::fabric::model::{
    Finding, FindingKind, Host, HostIdx, Nic, NicLink, NicPeer, PortRef, Severity, Switch,
    SwitchIdx,
};
use crate::fabric::names::natural_cmp;
use crate::fabric::options::RailKey;
use crate::fabric::raw::{Interner, NONE, RawNeighbor, hi, key, lo};

use super::naming::same_system;
use super::observe::{Candidate, HostNames, Observations, PortMaps, is_ifname};

/// Phase 11 output: hosts in natural name order.
#[derive(Debug, Default)]
pub(super) struct HostRecords {
    /// Hosts (rails not yet assigned), NICs in natural order.
    pub hosts: Vec<Host>,
    /// Interned NIC names, host by host, NIC by NIC (for rails).
    pub nic_syms: Vec<u32>,
    /// `key(switch, port)` of every leaf port a host NIC is placed on.
    pub used: Vec<u64>,
}

/// What choosing a NIC's link reads.
pub(super) struct LinkContext<'a> {
    pub neighbors: &'a [RawNeighbor],
    pub chassis: &'a [(u8, u32)],
    pub ports: &'a PortMaps,
    pub switches: &'a [Switch],
    /// Per entity: its host name, [`NONE`] for switches.
    pub host_name_of_entity: &'a [u32],
    pub strings: &'a Interner,
}

/// Phase 11 (reads observations, port maps, switches): one record per host. Slots and
/// candidates are both sorted by (host, NIC) key, so one walk assembles every host; then hosts
/// go to natural name order, each host's NICs too.
pub(super) fn host_records(
    obs: &Observations,
    hosts: &HostNames,
    cx: &LinkContext<'_>,
    findings: &mut Vec<Finding>,
) -> HostRecords {
    let strings = cx.strings;
    let mut built: Vec<Option<(Host, Vec<u32>)>> = (0..hosts.names.len()).map(|_| None).collect();
    let mut used = Vec::new();
    let mut next = 0usize;
    let candidates = &obs.candidates;
    for per_host in obs.slots.chunk_by(|a, b| hi(*a) == hi(*b)) {
        let h = hi(per_host[0]);
        let name = strings.get(hosts.names[h as usize]).to_string();
        let mut nics: Vec<(u32, Option<NicLink>, Option<NicPeer>)> =
            Vec::with_capacity(per_host.len());
        for &slot in per_host {
            while next < candidates.len() && candidates[next].slot < slot {
                next += 1;
            }
            let first = next;
            while next < candidates.len() && candidates[next].slot == slot {
                next += 1;
            }
            let nic = lo(slot);
            let seen = &candidates[first..next];
            let peer = peer_of(seen, cx, hosts);
            let link = pick_link(seen, cx, &name, strings.get(nic), peer.as_ref(), findings);
            if let Some((l, sym)) = &link
                && *sym != NONE
            {
                used.push(key(l.switch.0, *sym));
            }
            nics.push((nic, link.map(|(l, _)| l), peer));
        }
        nics.sort_by(|a, b| natural_cmp(strings.get(a.0), strings.get(b.0)));
        let syms: Vec<u32> = nics.iter().map(|n| n.0).collect();
        let host = Host {
            name,
            domain: None,
            nics: nics
                .into_iter()
                .map(|(nic, link, peer)| Nic {
                    name: strings.get(nic).clone(),
                    rail: 0,
                    link,
                    peer,
                })
                .collect(),
            seen_from_switches_only: !hosts.own_table[h as usize],
        };
        built[h as usize] = Some((host, syms));
    }
    let mut order: Vec<u32> = (0..hosts.names.len() as u32).collect();
    order.sort_by(|&a, &b| {
        natural_cmp(
            strings.get(hosts.names[a as usize]),
            strings.get(hosts.names[b as usize]),
        )
    });
    let mut records = HostRecords {
        hosts: Vec::with_capacity(order.len()),
        nic_syms: Vec::new(),
        used,
    };
    for &h in &order {
        // A host known only by name (an unplaced sighting) still gets a record.
        let (host, syms) = built[h as usize].take().unwrap_or_else(|| {
            (
                Host {
                    name: strings.get(hosts.names[h as usize]).to_string(),
                    domain: None,
                    nics: Vec::new(),
                    seen_from_switches_only: !hosts.own_table[h as usize],
                },
                Vec::new(),
            )
        });
        records.hosts.push(host);
        records.nic_syms.extend(syms);
    }
    // Peers name hosts by first-met index so far; now hosts have their final order.
    let mut final_index = vec![0u32; order.len()];
    for (i, &h) in order.iter().enumerate() {
        final_index[h as usize] = i as u32;
    }
    for nic in records.hosts.iter_mut().flat_map(|h| h.nics.iter_mut()) {
        if let Some(HostIdx(h)) = nic.peer.as_mut().and_then(|p| p.host.as_mut()) {
            *h = final_index[*h as usize];
        }
    }
    records
}

/// The first (natural order) system a NIC sees that is not a switch, with its host index by
/// first sight (remapped once hosts are ordered).
fn peer_of(seen: &[Candidate], cx: &LinkContext<'_>, hosts: &HostNames) -> Option<NicPeer> {
    seen.iter()
        .filter(|c| c.switch == NONE && c.src != NONE)
        .map(|c| {
            let n = &cx.neighbors[c.src as usize];
            let host_name = cx.host_name_of_entity[n.chassis as usize];
            let system = if host_name != NONE {
                cx.strings.get(host_name).to_string()
            } else {
                system_name(cx, n)
            };
            let port = if is_ifname(n.port_subtype) || n.port_descr == NONE {
                cx.strings.get(n.port_value).to_string()
            } else {
                cx.strings.get(n.port_descr).to_string()
            };
            let host = (host_name != NONE)
                .then(|| hosts.index.get(&host_name).copied())
                .flatten()
                .map(HostIdx);
            NicPeer { system, port, host }
        })
        .min_by(|a, b| natural_cmp(&a.system, &b.system).then_with(|| a.port.cmp(&b.port)))
}

/// What a neighbour calls itself: its System Name, else its chassis ID.
fn system_name(cx: &LinkContext<'_>, n: &RawNeighbor) -> String {
    if n.sys_name != NONE {
        return cx.strings.get(n.sys_name).to_string();
    }
    let (_, value) = cx.chassis[n.chassis as usize];
    format!("chassis {}", cx.strings.get(value))
}

/// Chooses a NIC's link among what it sees (usually exactly one switch) and reports the rest:
/// several neighbours (a hub, a firmware agent, a stale entry), or a neighbour that is no switch.
/// A cable to another host of the fabric is reported once per cable by the report, which
/// knows where both ends belong; a cable to any other device is reported here.
fn pick_link(
    seen: &[Candidate],
    cx: &LinkContext<'_>,
    host: &str,
    nic: &str,
    peer: Option<&NicPeer>,
    findings: &mut Vec<Finding>,
) -> Option<(NicLink, u32)> {
    let port_of = |c: &Candidate| -> (PortRef, u32) {
        if c.src == NONE {
            (
                PortRef {
                    name: cx.strings.get(c.own_port).clone(),
                    resolved: true,
                    description: None,
                },
                c.own_port,
            )
        } else {
            cx.ports
                .resolve(cx.strings, c.switch, &cx.neighbors[c.src as usize])
        }
    };
    disputed_names(seen, cx, host, nic, findings);
    if let [only] = seen
        && only.switch != NONE
    {
        let (port, sym) = port_of(only);
        return Some((
            NicLink {
                switch: SwitchIdx(only.switch),
                port,
            },
            sym,
        ));
    }
    let mut on_switches: Vec<(u32, PortRef, u32)> = seen
        .iter()
        .filter(|c| c.switch != NONE)
        .map(|c| {
            let (port, sym) = port_of(c);
            (c.switch, port, sym)
        })
        .collect();
    on_switches.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| natural_cmp(&a.1.name, &b.1.name))
    });
    on_switches.dedup_by(|a, b| a.0 == b.0 && a.1.name == b.1.name);
    let mut not_switches: Vec<Arc<str>> = seen
        .iter()
        .filter(|c| c.switch == NONE)
        .map(|c| Arc::from(system_name(cx, &cx.neighbors[c.src as usize])))
        .collect();
    not_switches.sort_by(|a, b| natural_cmp(a, b));
    not_switches.dedup();
    let link = on_switches.first().map(|(sw, port, sym)| {
        (
            NicLink {
                switch: SwitchIdx(*sw),
                port: port.clone(),
            },
            *sym,
        )
    });
    if on_switches.len() + not_switches.len() > 1 {
        let names: Vec<String> = on_switches
            .iter()
            .map(|(sw, port, _)| format!("{} {port}", cx.switches[*sw as usize].name))
            .chain(not_switches.iter().map(|n| format!("{n} (not a switch)")))
            .collect();
        findings.push(Finding {
            severity: Severity::Warning,
            kind: FindingKind::MultipleNeighbors,
            host: Some(host.to_owned()),
            nic: Some(nic.to_owned()),
            switch: link
                .as_ref()
                .map(|l| cx.switches[l.0.switch.0 as usize].name.clone()),
            port: link.as_ref().map(|l| l.0.port.to_string()),
            expected: None,
            message: format!(
                "{host} {nic} sees {} neighbours ({}): a hub, a NIC firmware LLDP agent or a stale \
                 neighbour; placed by {}",
                names.len(),
                names.join(", "),
                names.first().map_or("none", String::as_str)
            ),
        });
    } else if let Some(other) = not_switches.first()
        && peer.is_none_or(|p| p.host.is_none())
    {
        findings.push(Finding {
            severity: Severity::Error,
            kind: FindingKind::NotASwitch,
            host: Some(host.to_owned()),
            nic: Some(nic.to_owned()),
            switch: None,
            port: None,
            expected: Some(String::from("a leaf switch")),
            message: format!(
                "{host} {nic} is cabled to {other}, which is not a switch (it advertises no bridge \
                 or router capability, or it is a host): move the cable to its leaf"
            ),
        });
    }
    link
}

/// A NIC that sees a switch under another name than the switch goes by (its own table's, or
/// the one most observers give): a finding against the host, which is placed by the switch
/// all the same.
fn disputed_names(
    seen: &[Candidate],
    cx: &LinkContext<'_>,
    host: &str,
    nic: &str,
    findings: &mut Vec<Finding>,
) {
    for c in seen.iter().filter(|c| c.switch != NONE && c.src != NONE) {
        let n = &cx.neighbors[c.src as usize];
        if n.sys_name == NONE {
            continue;
        }
        let called = cx.strings.get(n.sys_name);
        let sw = &cx.switches[c.switch as usize].name;
        if **called == **sw || same_system(called, sw) {
            continue;
        }
        findings.push(Finding {
            severity: Severity::Warning,
            kind: FindingKind::DisputedReport,
            host: Some(host.to_owned()),
            nic: Some(nic.to_owned()),
            switch: Some(sw.clone()),
            port: None,
            expected: Some(sw.clone()),
            message: format!(
                "{host} {nic} sees switch {sw} under the name {called}, which the switch's own \
                 table or most of its observers do not give it: a renamed switch not yet \
                 re-announced, or a forged report"
            ),
        });
        return;
    }
}

/// Phase 12 (reads hosts' NIC names): rails, every distinct key in natural order; sets each
/// NIC's rail. By NIC name, a name is a rail when at least two hosts have a NIC of that name
/// (any name when only one host has NICs): one report cannot add a rail, which would shift
/// every other node's rail numbers. A NIC whose name no other host has is dropped from its
/// host, with a finding.
pub(super) fn rails(
    hosts: &mut [Host],
    nic_syms: &mut Vec<u32>,
    strings: &Interner,
    rail_key: RailKey,
    findings: &mut Vec<Finding>,
) -> Vec<Arc<str>> {
    match rail_key {
        RailKey::NicName => {
            let mut count: FxHashMap<u32, u32> = FxHashMap::default();
            for &s in nic_syms.iter() {
                *count.entry(s).or_default() += 1;
            }
            let with_nics = hosts.iter().filter(|h| !h.nics.is_empty()).count();
            let quorum = if with_nics >= 2 { 2 } else { 1 };
            if count.values().any(|&c| c < quorum) {
                drop_lone_nics(hosts, nic_syms, &count, quorum, findings);
            }
            let mut keys: Vec<u32> = nic_syms.clone();
            keys.sort_unstable();
            keys.dedup();
            keys.sort_by(|&a, &b| natural_cmp(strings.get(a), strings.get(b)));
            let index: FxHashMap<u32, u16> = keys
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, i as u16))
                .collect();
            let mut flat = nic_syms.iter();
            for h in hosts.iter_mut() {
                for nic in &mut h.nics {
                    nic.rail = flat.next().and_then(|s| index.get(s)).copied().unwrap_or(0);
                }
            }
            keys.iter().map(|&k| strings.get(k).clone()).collect()
        }
        RailKey::NicOrder => {
            let most = hosts.iter().map(|h| h.nics.len()).max().unwrap_or(0);
            for h in hosts.iter_mut() {
                for (i, nic) in h.nics.iter_mut().enumerate() {
                    nic.rail = i as u16;
                }
            }
            (0..most).map(|i| Arc::from(format!("nic{i}"))).collect()
        }
    }
}

/// The finding against a host whose NIC no other host has a NIC of that name for.
pub(super) fn lone_nic_finding(host: &str, nic: &str) -> Finding {
    Finding {
        severity: Severity::Warning,
        kind: FindingKind::DisputedReport,
        host: Some(host.to_owned()),
        nic: Some(nic.to_owned()),
        switch: None,
        port: None,
        expected: None,
        message: format!(
            "{host} reports NIC {nic} and no other node has a NIC of that name: it is no rail \
             and places nothing (rename the NIC like its peers', or use --rail-key order)"
        ),
    }
}

/// Drops the NICs whose name fewer than `quorum` hosts have, keeping `nic_syms` in step.
fn drop_lone_nics(
    hosts: &mut [Host],
    nic_syms: &mut Vec<u32>,
    count: &FxHashMap<u32, u32>,
    quorum: u32,
    findings: &mut Vec<Finding>,
) {
    let mut syms = nic_syms.iter();
    let mut kept = Vec::with_capacity(nic_syms.len());
    for h in hosts.iter_mut() {
        let host = h.name.clone();
        h.nics.retain(|nic| {
            let Some(&sym) = syms.next() else {
                return true;
            };
            if count.get(&sym).copied().unwrap_or(0) >= quorum {
                kept.push(sym);
                return true;
            }
            findings.push(lone_nic_finding(&host, &nic.name));
            false
        });
    }
    *nic_syms = kept;
}
