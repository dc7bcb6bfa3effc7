//! The incremental model's fast path: a host's table replaced, and only what depends on that
//! host recomputed, by the very phase functions of the full inference.
//!
//! The host's new table is run through phases 10 and 11 on its own, with the tables of the
//! switches it sees (a one-host inference whose switch indices are the fabric's); rails,
//! leaves, leaf groups, rails per leaf, free ports and the report then change only where that
//! host's NICs were or are. Whenever a change would reach further (a rail appears or goes,
//! a switch becomes or stops being a leaf, two leaf groups join or part, a leaf's main or
//! served rails change, the host sees something that is not an anchored switch), the fast
//! path declines and the caller runs the full inference, which stays the reference.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use spinel_wire::neighbor::{ChassisId, Role};

use crate::fabric::compact::CompactTable;
use crate::fabric::domains::{best_group, host_swapped, leaves_of, served, strong_edge};
use crate::fabric::ingest::{FabricBuilder, ObserverFacts};
use crate::fabric::model::{DomainIdx, Fabric, Finding, Host, HostIdx};
use crate::fabric::names::natural_cmp;
use crate::fabric::options::FabricNics;
use crate::fabric::raw::{NONE, hi, lo};
use crate::fabric::report;

use super::hosts::{self, LinkContext};
use super::naming::NameIndex;
use super::observe::{self, HostNames, ObservationInputs, ObserverIs};
use super::select::NicFilter;
use super::tiers;
use super::trace::{SwitchPorts, Trace};

/// One host's report as the live model holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostInput<'a> {
    pub table: &'a CompactTable,
    pub nics: &'a [String],
}

/// A host's record before rails and leaves are settled (phase 11's output for it).
struct Pre {
    host: Host,
    used: Vec<(u32, Arc<str>)>,
    findings: Vec<Finding>,
}

/// What the fast path keeps between changes: the trace of the last full inference, kept up
/// to date, and the report split by what each finding is about.
pub(crate) struct FastState {
    trace: Trace,
    chassis: FxHashMap<(u8, Box<str>), u32>,
    per_host: NameIndex<u32>,
    adjacency: Vec<Vec<u32>>,
    hosts_post: Vec<u32>,
    pairs: FxHashMap<u64, u32>,
    partners: Vec<Vec<u32>>,
    all: Vec<Vec<(u16, u32)>>,
    kept: Vec<Vec<(u16, u32)>>,
    swapped: FxHashMap<u32, Vec<bool>>,
    draft_host: FxHashMap<String, Vec<Finding>>,
    report_host: FxHashMap<String, Vec<Finding>>,
    report_domain: FxHashMap<u32, Vec<Finding>>,
    global: Vec<Finding>,
}

/// What a fast change touched: the hosts whose labels or findings may differ, and the leaf
/// groups whose members changed.
#[derive(Debug, Default)]
pub(crate) struct Touched {
    pub hosts: FxHashSet<u32>,
    pub groups: FxHashSet<u32>,
}

fn pair(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

fn bump(counts: &mut Vec<(u16, u32)>, rail: u16, by: i64) {
    match counts.iter_mut().position(|c| c.0 == rail) {
        Some(i) => {
            let n = i64::from(counts[i].1) + by;
            if n <= 0 {
                counts.remove(i);
            } else {
                counts[i].1 = n as u32;
            }
        }
        None if by > 0 => {
            counts.push((rail, by as u32));
            counts.sort_unstable();
        }
        None => {}
    }
}

/// Phase 12 for one host: each NIC's rail; NICs whose name is no rail dropped, with findings.
fn settle(fabric: &Fabric, mut host: Host, out: &mut Vec<Finding>) -> Option<Host> {
    let name = host.name.clone();
    host.nics.retain(|nic| {
        let found = fabric.rails.binary_search_by(|r| natural_cmp(r, &nic.name));
        if found.is_err() {
            out.push(hosts::lone_nic_finding(&name, &nic.name));
        }
        found.is_ok()
    });
    for nic in &mut host.nics {
        let at = fabric.rails.binary_search_by(|r| natural_cmp(r, &nic.name));
        nic.rail = u16::try_from(at.ok()?).ok()?;
    }
    Some(host)
}

fn main_rails(counts: &[(u16, u32)]) -> Vec<u16> {
    let max = counts.iter().map(|c| c.1).max().unwrap_or(0);
    counts.iter().filter(|c| c.1 == max).map(|c| c.0).collect()
}

impl FastState {
    /// The state after a full inference that left `trace`; `None` when the inputs do not
    /// allow the fast path at all.
    pub(crate) fn new(fabric: &Fabric, trace: Trace, fabric_nics: &FabricNics) -> Option<Self> {
        let FabricNics::PerHost(map) = fabric_nics else {
            return None;
        };
        if !trace.eligible || fabric.hosts.iter().any(|h| h.seen_from_switches_only) {
            return None;
        }
        let n = fabric.switches.len();
        let mut chassis = FxHashMap::default();
        for (i, s) in fabric.switches.iter().enumerate() {
            let c = s.chassis_id.as_ref()?;
            chassis.insert((c.subtype as u8, Box::from(c.value.as_str())), i as u32);
        }
        let mut per_host = NameIndex::default();
        for (i, name) in map.keys().enumerate() {
            per_host.insert(&Arc::from(name.as_str()), i as u32);
        }
        let mut adjacency: Vec<Vec<u32>> = vec![Vec::new(); n];
        for l in &fabric.links {
            let (a, b) = (l.lower.switch.0, l.upper.switch.0);
            if fabric.switches[a as usize].management || fabric.switches[b as usize].management {
                continue;
            }
            adjacency[a as usize].push(b);
            adjacency[b as usize].push(a);
        }
        let mut st = Self {
            trace,
            chassis,
            per_host,
            adjacency,
            hosts_post: vec![0; n],
            pairs: FxHashMap::default(),
            partners: vec![Vec::new(); n],
            all: vec![Vec::new(); n],
            kept: vec![Vec::new(); n],
            swapped: FxHashMap::default(),
            draft_host: FxHashMap::default(),
            report_host: FxHashMap::default(),
            report_domain: FxHashMap::default(),
            global: Vec::new(),
        };
        for h in &fabric.hosts {
            st.add_leaves(&leaves_of(h), 1);
            for nic in &h.nics {
                if let Some(l) = &nic.link {
                    bump(&mut st.all[l.switch.0 as usize], nic.rail, 1);
                }
            }
        }
        for (i, h) in fabric.hosts.iter().enumerate() {
            let flags = host_swapped(h, &|leaf, rail| st.is_main(leaf, rail));
            st.add_kept(h, &flags, 1);
            if !flags.is_empty() {
                st.swapped.insert(i as u32, flags);
            }
        }
        st.split_findings(fabric, map.keys().cloned().collect());
        Some(st)
    }

    fn is_main(&self, leaf: u32, rail: u16) -> bool {
        let c = &self.all[leaf as usize];
        let max = c.iter().map(|x| x.1).max().unwrap_or(0);
        c.iter().any(|&(r, n)| r == rail && n == max)
    }

    fn add_leaves(&mut self, leaves: &[u32], by: i64) {
        for &l in leaves {
            let v = i64::from(self.hosts_post[l as usize]) + by;
            self.hosts_post[l as usize] = v.max(0) as u32;
        }
        if let Some((&a, rest)) = leaves.split_first() {
            for &b in rest {
                let e = self.pairs.entry(pair(a, b)).or_default();
                *e = (i64::from(*e) + by).max(0) as u32;
                if by > 0 {
                    self.partners[a as usize].push(b);
                    self.partners[b as usize].push(a);
                }
            }
        }
    }

    fn add_kept(&mut self, h: &Host, flags: &[bool], by: i64) {
        for (i, nic) in h.nics.iter().enumerate() {
            let Some(l) = &nic.link else { continue };
            if flags.get(i) == Some(&true) {
                continue;
            }
            bump(&mut self.kept[l.switch.0 as usize], nic.rail, by);
        }
    }

    /// The report split by subject: findings of the report phase per host and per domain,
    /// the others per host or fabric-wide.
    fn split_findings(&mut self, fabric: &Fabric, listed: Vec<String>) {
        let all: Vec<HostIdx> = (0..fabric.hosts.len() as u32).map(HostIdx).collect();
        let mut by_host = Vec::new();
        report::host_findings(fabric, &all, &mut by_host);
        let domains: Vec<DomainIdx> = (0..fabric.domains.len() as u32).map(DomainIdx).collect();
        let by_domain = report::domain_findings(fabric, &domains);
        let placement = report::placement_findings(fabric, &listed);
        // What is left of the report once the report phase's own findings are taken out: the
        // findings of the earlier phases. The report is sorted: each is found by search.
        let all = &fabric.findings;
        let mut taken = vec![false; all.len()];
        for f in by_host
            .iter()
            .chain(by_domain.iter().map(|x| &x.1))
            .chain(&placement)
        {
            let from = all.partition_point(|x| super::finding_order(x, f).is_lt());
            if let Some(i) = (from..all.len())
                .take_while(|&i| super::finding_order(&all[i], f).is_eq())
                .find(|&i| !taken[i] && all[i] == *f)
            {
                taken[i] = true;
            }
        }
        let rest: Vec<Finding> = all
            .iter()
            .zip(&taken)
            .filter(|(_, t)| !**t)
            .map(|(f, _)| f.clone())
            .collect();
        for f in by_host {
            let h = f.host.clone().unwrap_or_default();
            self.report_host.entry(h).or_default().push(f);
        }
        for (d, f) in by_domain {
            self.report_domain.entry(d).or_default().push(f);
        }
        self.global = placement;
        for f in rest {
            match &f.host {
                Some(h) if fabric.host_by_name(h).is_some() => {
                    self.draft_host.entry(h.clone()).or_default().push(f);
                }
                _ => self.global.push(f),
            }
        }
    }

    /// Phases 10-11 for one host on its own: its NICs, what each sees, its links.
    fn pre_record(&self, fabric: &Fabric, name: &str, input: &HostInput<'_>) -> Option<Pre> {
        if input.table.has_chassis() || self.per_host.lookup(name).len() != 1 {
            return None;
        }
        let mut seen: Vec<u32> = Vec::new();
        for (subtype, value) in input.table.chassis_seen() {
            let sw = *self.chassis.get(&(subtype as u8, Box::from(value)))?;
            if !self.trace.anchored[sw as usize] {
                return None;
            }
            seen.push(sw);
        }
        seen.sort_unstable();
        seen.dedup();
        let mut b = FabricBuilder::new();
        input.table.add_to(name, &mut b);
        let mut is = vec![ObserverIs::Host(0)];
        for &sw in &seen {
            let s = &fabric.switches[sw as usize];
            let c: &ChassisId = s.chassis_id.as_ref()?;
            let facts = ObserverFacts::default();
            let t = b.begin_table(
                &s.name,
                Some((c.subtype, &c.value)),
                Some(Role::Switch),
                &facts,
            );
            let SwitchPorts { listed, advertised } = &self.trace.ports[sw as usize];
            for p in listed {
                b.add_port(t, p);
            }
            b.add_advertised_to(t, advertised);
            is.push(ObserverIs::Switch(sw));
        }
        let mut raw = b.into_raw();
        let switch_of: Vec<u32> = raw
            .chassis
            .iter()
            .map(|&(st, v)| {
                let key = (st, Box::from(&**raw.strings.get(v)));
                self.chassis.get(&key).copied().unwrap_or(NONE)
            })
            .collect();
        if switch_of.contains(&NONE) {
            return None;
        }
        let no_hosts = vec![NONE; raw.chassis.len()];
        let ports = observe::port_maps(&raw.ports, &raw.advertised, &is);
        let me = raw.observers[0].name;
        let mut host_names = HostNames {
            index: std::iter::once((me, 0)).collect(),
            names: vec![me],
            own_table: vec![true],
        };
        let nics =
            FabricNics::PerHost(std::iter::once((name.to_owned(), input.nics.to_vec())).collect());
        let mut filter = NicFilter::new(&nics);
        let obs = observe::observations(
            &ObservationInputs {
                ports: &raw.ports,
                neighbors: &raw.neighbors,
                observer_is: &is,
                switch_of_entity: &switch_of,
                host_name_of_entity: &no_hosts,
            },
            &mut host_names,
            &mut filter,
            &mut raw.strings,
        );
        if host_names.names.len() != 1 {
            return None;
        }
        let mut findings = Vec::new();
        let cx = LinkContext {
            neighbors: &raw.neighbors,
            chassis: &raw.chassis,
            ports: &ports,
            switches: &fabric.switches,
            host_name_of_entity: &no_hosts,
            strings: &raw.strings,
        };
        let records = hosts::host_records(&obs, &host_names, &cx, &mut findings);
        let used = records
            .used
            .iter()
            .map(|&k| (hi(k), raw.strings.get(lo(k)).clone()))
            .collect();
        let mut host = records.hosts.into_iter().next()?;
        host.name = name.to_owned();
        Some(Pre {
            host,
            used,
            findings,
        })
    }

    /// Replaces host `name`'s table (`old` by `new`) in `fabric`, or declines (`None`): the
    /// fabric and this state are then stale, and the caller runs the full inference.
    pub(crate) fn replace_host(
        &mut self,
        fabric: &mut Fabric,
        name: &str,
        old: &HostInput<'_>,
        new: &HostInput<'_>,
        touched: &mut Touched,
    ) -> Option<()> {
        let HostIdx(h) = fabric.host_by_name(name)?;
        let before = self.pre_record(fabric, name, old)?;
        let after = self.pre_record(fabric, name, new)?;
        self.rails_hold(&before.host, &after.host)?;
        let mut draft_findings = after.findings;
        let was = settle(fabric, before.host, &mut Vec::new())?;
        let mut host = settle(fabric, after.host, &mut draft_findings)?;
        self.leaves_hold(&was, &host)?;
        self.off_leaves(fabric, &mut host, &mut draft_findings);
        let old_host = std::mem::replace(&mut fabric.hosts[h as usize], host.clone());
        self.groups_hold(&old_host, &host)?;
        self.rails_per_leaf_hold(fabric, h, &old_host, &host)?;
        // Its group, and the free ports of the switches its NICs use.
        host.domain = best_group(&host, &fabric.switches).map(DomainIdx);
        fabric.hosts[h as usize].domain = host.domain;
        for d in [old_host.domain, host.domain].into_iter().flatten() {
            touched.groups.insert(d.0);
        }
        if let Some(d) = old_host.domain {
            fabric.domains[d.0 as usize].hosts.retain(|&x| x.0 != h);
        }
        if let Some(d) = host.domain {
            let list = &mut fabric.domains[d.0 as usize].hosts;
            if let Err(at) = list.binary_search(&HostIdx(h)) {
                list.insert(at, HostIdx(h));
            }
        }
        let mut ports_changed: FxHashSet<u32> = FxHashSet::default();
        for (sw, port) in &before.used {
            let e = self.trace.host_used.entry((*sw, port.clone())).or_default();
            *e = e.saturating_sub(1);
            ports_changed.insert(*sw);
        }
        for (sw, port) in &after.used {
            *self.trace.host_used.entry((*sw, port.clone())).or_default() += 1;
            ports_changed.insert(*sw);
        }
        for &sw in &ports_changed {
            let free: Vec<Arc<str>> = self.trace.spare[sw as usize]
                .iter()
                .filter(|p| {
                    self.trace
                        .host_used
                        .get(&(sw, (*p).clone()))
                        .is_none_or(|&n| n == 0)
                })
                .cloned()
                .collect();
            let s = &mut fabric.switches[sw as usize];
            if s.free_ports != free {
                s.free_ports = free;
                if let Some(d) = s.domain {
                    touched.groups.insert(d.0);
                    self.refresh_domain(fabric, d);
                }
            }
        }
        self.draft_host.insert(name.to_owned(), draft_findings);
        touched.hosts.insert(h);
        Some(())
    }

    /// Rails by NIC name stay as they are: no name crosses the two-host quorum.
    fn rails_hold(&mut self, before: &Host, after: &Host) -> Option<()> {
        let quorum = |with: usize| if with >= 2 { 2 } else { 1 };
        let q0 = quorum(self.trace.with_nics);
        let with = self.trace.with_nics - usize::from(!before.nics.is_empty())
            + usize::from(!after.nics.is_empty());
        if quorum(with) != q0 {
            return None;
        }
        self.trace.with_nics = with;
        for nic in &before.nics {
            let c = self.trace.nic_hosts.entry(nic.name.clone()).or_default();
            *c = c.saturating_sub(1);
        }
        for nic in &after.nics {
            *self.trace.nic_hosts.entry(nic.name.clone()).or_default() += 1;
        }
        for nic in before.nics.iter().chain(&after.nics) {
            let now = self.trace.nic_hosts.get(&nic.name).copied().unwrap_or(0);
            let was = now + u32::from(before.nics.iter().any(|n| n.name == nic.name))
                - u32::from(after.nics.iter().any(|n| n.name == nic.name));
            if (was >= q0) != (now >= q0) {
                return None;
            }
        }
        Some(())
    }

    /// The end of phase 15 for one host: its NICs on switches that are no leaf are taken off,
    /// with findings.
    fn off_leaves(&self, fabric: &Fabric, host: &mut Host, out: &mut Vec<Finding>) {
        let is_leaf = |s: u32| tiers::is_leaf(&self.trace.hosts_pre, &self.adjacency, s as usize);
        for nic in &mut host.nics {
            let Some(link) = nic.link.take_if(|l| !is_leaf(l.switch.0)) else {
                continue;
            };
            let below = self.adjacency[link.switch.0 as usize]
                .iter()
                .filter(|&&o| is_leaf(o))
                .count();
            out.push(tiers::off_leaf_finding(
                &host.name,
                &nic.name,
                &fabric.switches[link.switch.0 as usize].name,
                &link.port.to_string(),
                below,
            ));
        }
    }

    /// Phase 15's leaf rule gives the same leaves with the host's links moved; then the
    /// host's NICs on switches that are no leaf are taken off, with findings.
    fn leaves_hold(&mut self, before: &Host, after: &Host) -> Option<()> {
        let (old, new) = (leaves_of(before), leaves_of(after));
        let mut near: Vec<u32> = Vec::new();
        for &s in old.iter().chain(&new) {
            near.push(s);
            near.extend(&self.adjacency[s as usize]);
        }
        let rule =
            |st: &Self, s: u32| tiers::is_leaf(&st.trace.hosts_pre, &st.adjacency, s as usize);
        let was: Vec<bool> = near.iter().map(|&s| rule(self, s)).collect();
        for &s in &old {
            self.trace.hosts_pre[s as usize] -= 1;
        }
        for &s in &new {
            self.trace.hosts_pre[s as usize] += 1;
        }
        if near.iter().zip(&was).any(|(&s, &w)| rule(self, s) != w) {
            return None;
        }
        Some(())
    }

    /// Leaf groups stay as they are: no pair of leaves the change touches changes strength.
    fn groups_hold(&mut self, old: &Host, new: &Host) -> Option<()> {
        let (lo_, ln) = (leaves_of(old), leaves_of(new));
        if lo_ == ln {
            return Some(());
        }
        let mut touched: Vec<(u32, u32)> = Vec::new();
        for ls in [&lo_, &ln] {
            if let Some((&a, rest)) = ls.split_first() {
                touched.extend(rest.iter().map(|&b| (a, b)));
            }
            for &s in ls.iter() {
                for &p in &self.partners[s as usize] {
                    touched.push((s.min(p), s.max(p)));
                }
            }
        }
        touched.sort_unstable();
        touched.dedup();
        let strong = |st: &Self, (a, b): (u32, u32)| {
            let shared = st.pairs.get(&pair(a, b)).copied().unwrap_or(0);
            shared > 0 && strong_edge(shared, st.hosts_post[a as usize], st.hosts_post[b as usize])
        };
        let was: Vec<bool> = touched.iter().map(|&p| strong(self, p)).collect();
        self.add_leaves(&lo_, -1);
        self.add_leaves(&ln, 1);
        if touched
            .iter()
            .zip(&was)
            .any(|(&p, &w)| strong(self, p) != w)
        {
            return None;
        }
        Some(())
    }

    /// Rails per leaf stay as they are: main rails (which decide swapped pairs) and served
    /// rails of every leaf the host's NICs were or are on.
    fn rails_per_leaf_hold(
        &mut self,
        fabric: &Fabric,
        h: u32,
        old: &Host,
        new: &Host,
    ) -> Option<()> {
        let leaves: FxHashSet<u32> = leaves_of(old).into_iter().chain(leaves_of(new)).collect();
        let mains: Vec<(u32, Vec<u16>)> = leaves
            .iter()
            .map(|&l| (l, main_rails(&self.all[l as usize])))
            .collect();
        for (h_, by) in [(old, -1i64), (new, 1)] {
            for nic in &h_.nics {
                if let Some(l) = &nic.link {
                    bump(&mut self.all[l.switch.0 as usize], nic.rail, by);
                }
            }
        }
        if mains
            .iter()
            .any(|(l, m)| main_rails(&self.all[*l as usize]) != *m)
        {
            return None;
        }
        let old_flags = self.swapped.remove(&h).unwrap_or_default();
        self.add_kept(old, &old_flags, -1);
        let flags = host_swapped(new, &|leaf, rail| self.is_main(leaf, rail));
        self.add_kept(new, &flags, 1);
        if !flags.is_empty() {
            self.swapped.insert(h, flags);
        }
        // A switch's rails are empty exactly when no NIC counts on it.
        for &l in &leaves {
            let sw = &fabric.switches[l as usize];
            match served(&self.kept[l as usize]) {
                Some(r) if r == sw.rails => {}
                None if sw.rails.is_empty() => {}
                _ => return None,
            }
        }
        Some(())
    }

    /// Recomputes the report's findings about domain `d` and its parent.
    fn refresh_domain(&mut self, fabric: &Fabric, d: DomainIdx) {
        let mut ds = vec![d];
        if let Some(p) = fabric.domain(d).parent {
            ds.push(p);
        }
        for x in &ds {
            self.report_domain.remove(&x.0);
        }
        for (x, f) in report::domain_findings(fabric, &ds) {
            self.report_domain.entry(x).or_default().push(f);
        }
    }

    /// After fast changes: the report's findings about the touched hosts' groups recomputed,
    /// and the whole report put together in the full inference's order.
    pub(crate) fn finish(&mut self, fabric: &mut Fabric, touched: &mut Touched) {
        let mut hosts: Vec<HostIdx> = touched.hosts.iter().map(|&h| HostIdx(h)).collect();
        for &g in &touched.groups {
            hosts.extend(fabric.domains[g as usize].hosts.iter().copied());
        }
        hosts.sort_unstable();
        hosts.dedup();
        for &h in &hosts {
            self.report_host.remove(&fabric.host(h).name);
            touched.hosts.insert(h.0);
        }
        let mut found = Vec::new();
        report::host_findings(fabric, &hosts, &mut found);
        for f in found {
            let h = f.host.clone().unwrap_or_default();
            self.report_host.entry(h).or_default().push(f);
        }
        let mut all: Vec<Finding> = self.global.clone();
        for list in self
            .draft_host
            .values()
            .chain(self.report_host.values())
            .chain(self.report_domain.values())
        {
            all.extend(list.iter().cloned());
        }
        super::sort_findings(&mut all);
        fabric.findings = all;
    }
}
