//! Management switches: an out-of-band switch that every host reaches through its management
//! NIC (`eno1`) would otherwise look like one more leaf serving one more rail, and join every
//! leaf group into one. Without the caller's word on which NICs are the fabric's, a switch
//! is taken for a management switch when it joins hosts of two or more leaf groups that share
//! no leaf otherwise: no fabric leaf does that.

use rustc_hash::FxHashMap;

use crate::fabric::domains::strong_edge;
use crate::fabric::model::{Finding, FindingKind, Host, Severity, Switch};
use crate::fabric::names::natural_cmp;

use super::hosts::HostRecords;

/// A union-find over switch indices; the smaller root wins, so results do not depend on the
/// order of unions.
struct Groups(Vec<u32>);

impl Groups {
    fn new(n: usize) -> Self {
        Self((0..n as u32).collect())
    }

    fn find(&mut self, mut x: u32) -> u32 {
        while self.0[x as usize] != x {
            let parent = self.0[x as usize];
            self.0[x as usize] = self.0[parent as usize];
            x = parent;
        }
        x
    }

    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra < rb {
            self.0[rb as usize] = ra;
        } else if rb < ra {
            self.0[ra as usize] = rb;
        }
    }
}

/// The switches each host's NICs are linked to, sorted.
fn host_leaves(hosts: &[Host]) -> Vec<Vec<u32>> {
    hosts
        .iter()
        .map(|h| {
            let mut v: Vec<u32> = h
                .nics
                .iter()
                .filter_map(|n| n.link.as_ref().map(|l| l.switch.0))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect()
}

/// Leaf pairs sharing hosts, star-wise from each host's first leaf not in `skip`, with the
/// number of hosts each pair shares; only pairs sharing at least half of the smaller leaf's
/// hosts (the rule leaf groups use).
fn strong_pairs(leaves: &[Vec<u32>], per_switch: &[u32], skip: &[bool]) -> Vec<(u32, u32)> {
    let mut pairs: Vec<u64> = Vec::new();
    for ls in leaves {
        let mut kept = ls.iter().copied().filter(|&l| !skip[l as usize]);
        if let Some(first) = kept.next() {
            pairs.extend(kept.map(|b| (u64::from(first) << 32) | u64::from(b)));
        }
    }
    pairs.sort_unstable();
    pairs
        .chunk_by(|a, b| a == b)
        .filter_map(|run| {
            let (a, b) = ((run[0] >> 32) as u32, run[0] as u32);
            strong_edge(
                run.len() as u32,
                per_switch[a as usize],
                per_switch[b as usize],
            )
            .then_some((a, b))
        })
        .collect()
}

/// Phase 11b (reads host records; skipped when the caller selected the fabric NICs): finds
/// management switches, marks them, and takes the NICs linked to them out of the hosts (they
/// are no rail). One warning per management switch.
pub(super) fn management_switches(
    records: &mut HostRecords,
    switches: &mut [Switch],
    findings: &mut Vec<Finding>,
) {
    let leaves = host_leaves(&records.hosts);
    let mut per_switch = vec![0u32; switches.len()];
    for &l in leaves.iter().flatten() {
        per_switch[l as usize] += 1;
    }
    // A candidate needs a host whose leaves carry different numbers of hosts: in a clean
    // fabric no host has one, and the pairs below are never built.
    let uneven = leaves.iter().any(|ls| {
        ls.windows(2)
            .any(|w| per_switch[w[0] as usize] != per_switch[w[1] as usize])
    });
    if !uneven {
        return;
    }
    // Candidates: the larger end of a strong pair of unequal leaves. Rail-group leaves and
    // MLAG pairs have equal host sets, so a clean fabric has none and stops here.
    let none = vec![false; switches.len()];
    let mut candidate = vec![false; switches.len()];
    for (a, b) in strong_pairs(&leaves, &per_switch, &none) {
        let (pa, pb) = (per_switch[a as usize], per_switch[b as usize]);
        if pa > pb {
            candidate[a as usize] = true;
        } else if pb > pa {
            candidate[b as usize] = true;
        }
    }
    if !candidate.contains(&true) {
        return;
    }
    // Groups without the candidates; each group's size is its largest leaf's host count.
    let mut groups = Groups::new(switches.len());
    for (a, b) in strong_pairs(&leaves, &per_switch, &candidate) {
        groups.union(a, b);
    }
    let mut size: FxHashMap<u32, u32> = FxHashMap::default();
    for (l, &n) in per_switch.iter().enumerate() {
        if n > 0 && !candidate[l] {
            let root = groups.find(l as u32);
            let s = size.entry(root).or_default();
            *s = (*s).max(n);
        }
    }
    // Per candidate: the groups its hosts' other leaves belong to, hosts counted per group.
    let mut reach: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    for ls in &leaves {
        let mut roots: Vec<u32> = ls
            .iter()
            .filter(|&&l| !candidate[l as usize])
            .map(|&l| groups.find(l))
            .collect();
        roots.sort_unstable();
        roots.dedup();
        for &s in ls.iter().filter(|&&l| candidate[l as usize]) {
            for &r in &roots {
                *reach.entry((s, r)).or_default() += 1;
            }
        }
    }
    // Management: it holds most of the hosts of at least two groups.
    let mut strong: FxHashMap<u32, u32> = FxHashMap::default();
    for (&(s, r), &n) in &reach {
        if 2 * n >= size.get(&r).copied().unwrap_or(u32::MAX) {
            *strong.entry(s).or_default() += 1;
        }
    }
    let mut management: Vec<u32> = strong
        .into_iter()
        .filter(|&(_, groups)| groups >= 2)
        .map(|(s, _)| s)
        .collect();
    if management.is_empty() {
        return;
    }
    management.sort_unstable();
    for &s in &management {
        switches[s as usize].management = true;
    }
    detach(records, switches, &management, findings);
}

/// Takes NICs linked to management switches out of the hosts, and reports each switch once.
fn detach(
    records: &mut HostRecords,
    switches: &[Switch],
    management: &[u32],
    findings: &mut Vec<Finding>,
) {
    let mut nics_on: FxHashMap<u32, (u32, Vec<String>)> = FxHashMap::default();
    let mut syms = records.nic_syms.iter();
    let mut kept_syms = Vec::with_capacity(records.nic_syms.len());
    for h in &mut records.hosts {
        h.nics.retain(|nic| {
            let sym = syms.next().copied();
            let on = nic.link.as_ref().map(|l| l.switch.0);
            match on.filter(|s| management.contains(s)) {
                Some(s) => {
                    let e = nics_on.entry(s).or_default();
                    e.0 += 1;
                    if !e.1.iter().any(|n| **n == *nic.name) {
                        e.1.push(nic.name.to_string());
                    }
                    false
                }
                None => {
                    kept_syms.extend(sym);
                    true
                }
            }
        });
    }
    records.nic_syms = kept_syms;
    for &s in management {
        let (hosts, mut nics) = nics_on.remove(&s).unwrap_or_default();
        nics.sort_by(|a, b| natural_cmp(a, b));
        let sw = &switches[s as usize].name;
        findings.push(Finding {
            severity: Severity::Warning,
            kind: FindingKind::ManagementSwitch,
            host: None,
            nic: None,
            switch: Some(sw.clone()),
            port: None,
            expected: None,
            message: format!(
                "switch {sw} is reached by {hosts} hosts through {} and joins leaf groups that \
                 share no leaf otherwise: taken for a management (out-of-band) switch and left \
                 out of the fabric; name the fabric NICs (--fabric-nics) to say so explicitly",
                nics.join(", ")
            ),
        });
    }
}
