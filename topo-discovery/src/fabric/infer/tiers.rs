//! Tiers: leaves have hosts; each next tier is what the previous one reaches.

use std::collections::VecDeque;

use crate::fabric::model::{Finding, FindingKind, Host, LinkKind, Severity, Switch, SwitchLink};

/// Phase 15 (reads hosts' links and switch links): each switch's tier, breadth-first from the
/// leaves, never through a management switch; `unplaced_switch` for what no leaf reaches.
/// Returns the depth (at least 1 when there are switches).
///
/// A leaf is a switch that two or more hosts are cabled to, or that one host is cabled to
/// while it links to no switch with two or more hosts: so one host (a miscabled one, or one
/// report naming a spine) cannot make a spine a leaf and shift every tier above. Such a NIC
/// is not placed by that switch, and its host gets a finding.
pub(super) fn tiers(
    switches: &mut [Switch],
    hosts: &mut [Host],
    links: &[SwitchLink],
    findings: &mut Vec<Finding>,
) -> u8 {
    let mut adjacency: Vec<Vec<u32>> = vec![Vec::new(); switches.len()];
    for l in links {
        let (a, b) = (l.lower.switch.0, l.upper.switch.0);
        if switches[a as usize].management || switches[b as usize].management {
            continue;
        }
        adjacency[a as usize].push(b);
        adjacency[b as usize].push(a);
    }
    let is_leaf = leaves(switches.len(), hosts, &adjacency);
    unplace_off_leaf_nics(hosts, switches, &adjacency, &is_leaf, findings);
    let mut depth = breadth_first(switches, &adjacency, &is_leaf);
    let hostless = hostless_leaves(switches, &adjacency, &is_leaf);
    if hostless.contains(&true) {
        let seeds: Vec<bool> = is_leaf
            .iter()
            .zip(&hostless)
            .map(|(a, b)| *a || *b)
            .collect();
        for s in switches.iter_mut() {
            s.tier = None;
        }
        depth = breadth_first(switches, &adjacency, &seeds);
    }
    for sw in switches
        .iter()
        .filter(|s| s.tier.is_none() && !s.management)
    {
        findings.push(Finding {
            severity: Severity::Warning,
            kind: FindingKind::UnplacedSwitch,
            host: None,
            nic: None,
            switch: Some(sw.name.clone()),
            port: None,
            expected: None,
            message: format!(
                "switch {} is connected to no leaf (no host or leaf reaches it), so it has no \
                 tier: a management switch, or its links to the fabric were not observed",
                sw.name
            ),
        });
    }
    depth.max(u8::from(!switches.is_empty()))
}

/// Tiers breadth-first from `seeds` (tier 1); returns the deepest tier reached.
fn breadth_first(switches: &mut [Switch], adjacency: &[Vec<u32>], seeds: &[bool]) -> u8 {
    let mut queue = VecDeque::new();
    for (sw, &seed) in seeds.iter().enumerate() {
        if seed {
            switches[sw].tier = Some(1);
            queue.push_back(sw as u32);
        }
    }
    let mut depth = 0u8;
    while let Some(sw) = queue.pop_front() {
        let tier = switches[sw as usize].tier.unwrap_or(1);
        depth = depth.max(tier);
        for &next in &adjacency[sw as usize] {
            if switches[next as usize].tier.is_none() {
                switches[next as usize].tier = Some(tier.saturating_add(1));
                queue.push_back(next);
            }
        }
    }
    depth
}

/// Switches without hosts that are cabled like a leaf: every switch they link to is a tier-2
/// switch that one leaf links to as well (a leaf whose hosts are all gone, while it reboots).
/// Breadth-first they would sit above the spines, deepen the fabric and rename every domain
/// above; they are leaves without hosts instead. A switch above a single pod (all its links
/// to that pod's spines) cannot be told from them, and is taken for one: a tier above one pod
/// tells a scheduler nothing.
fn hostless_leaves(switches: &[Switch], adjacency: &[Vec<u32>], is_leaf: &[bool]) -> Vec<bool> {
    let tier = |s: u32| switches[s as usize].tier;
    (0..switches.len())
        .map(|s| {
            let up = &adjacency[s];
            if is_leaf[s] || tier(s as u32).is_none_or(|t| t < 3) || up.is_empty() {
                return false;
            }
            if up.iter().any(|&o| tier(o) != Some(2)) {
                return false;
            }
            // A leaf under the first of them that reaches every one of them.
            adjacency[up[0] as usize]
                .iter()
                .filter(|&&l| is_leaf[l as usize])
                .any(|&l| up.iter().all(|x| adjacency[l as usize].contains(x)))
        })
        .collect()
}

/// Per switch: whether it is a leaf (see [`tiers`]).
fn leaves(n_switches: usize, hosts: &[Host], adjacency: &[Vec<u32>]) -> Vec<bool> {
    let hosts_on = hosts_on(n_switches, hosts);
    (0..n_switches)
        .map(|s| is_leaf(&hosts_on, adjacency, s))
        .collect()
}

/// Per switch: how many distinct hosts are cabled to it.
pub(super) fn hosts_on(n_switches: usize, hosts: &[Host]) -> Vec<u32> {
    let mut hosts_on = vec![0u32; n_switches];
    let mut on: Vec<u32> = Vec::new();
    for h in hosts {
        on.clear();
        on.extend(
            h.nics
                .iter()
                .filter_map(|n| n.link.as_ref().map(|l| l.switch.0)),
        );
        on.sort_unstable();
        on.dedup();
        for &s in &on {
            hosts_on[s as usize] += 1;
        }
    }
    hosts_on
}

/// The leaf rule for one switch, from the distinct hosts cabled to each switch.
pub(super) fn is_leaf(hosts_on: &[u32], adjacency: &[Vec<u32>], s: usize) -> bool {
    match hosts_on[s] {
        0 => false,
        1 => !adjacency[s].iter().any(|&o| hosts_on[o as usize] >= 2),
        _ => true,
    }
}

/// Takes host NICs off switches that are not leaves, with a finding for each.
fn unplace_off_leaf_nics(
    hosts: &mut [Host],
    switches: &[Switch],
    adjacency: &[Vec<u32>],
    is_leaf: &[bool],
    findings: &mut Vec<Finding>,
) {
    for h in hosts.iter_mut() {
        for nic in &mut h.nics {
            let Some(link) = nic.link.take_if(|l| !is_leaf[l.switch.0 as usize]) else {
                continue;
            };
            let below = adjacency[link.switch.0 as usize]
                .iter()
                .filter(|&&o| is_leaf[o as usize])
                .count();
            findings.push(off_leaf_finding(
                &h.name,
                &nic.name,
                &switches[link.switch.0 as usize].name,
                &link.port.to_string(),
                below,
            ));
        }
    }
}

/// The finding against a host whose NIC is on a switch that is not a leaf.
pub(super) fn off_leaf_finding(
    host: &str,
    nic: &str,
    sw: &str,
    port: &str,
    below: usize,
) -> Finding {
    Finding {
        severity: Severity::Error,
        kind: FindingKind::DisputedReport,
        host: Some(host.to_owned()),
        nic: Some(nic.to_owned()),
        switch: Some(sw.to_owned()),
        port: Some(port.to_owned()),
        expected: Some(String::from("a leaf switch")),
        message: format!(
            "{host} {nic} is on {sw} port {port}, which no other host is cabled to and which \
             links to {below} leaves: a switch above the leaves, not a leaf; the NIC is not \
             placed by it (move the cable to its leaf, or the report is forged)"
        ),
    }
}

/// Phase 16 (reads tiers): orients links lower tier first; marks peer and unplaced links.
pub(super) fn orient(links: Vec<SwitchLink>, switches: &[Switch]) -> Vec<SwitchLink> {
    links
        .into_iter()
        .map(|mut l| {
            let ta = switches[l.lower.switch.0 as usize].tier;
            let tb = switches[l.upper.switch.0 as usize].tier;
            l.kind = match (ta, tb) {
                (Some(a), Some(b)) if a == b => LinkKind::Peer,
                (Some(a), Some(b)) => {
                    if a > b {
                        std::mem::swap(&mut l.lower, &mut l.upper);
                    }
                    LinkKind::Uplink
                }
                _ => LinkKind::Unplaced,
            };
            l
        })
        .collect()
}
