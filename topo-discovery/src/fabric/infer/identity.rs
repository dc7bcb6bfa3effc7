//! Who is who: the systems behind the tables and sightings (one entity per chassis ID, plus
//! chassis-less switch tables), the evidence about each, switch or host, and the switch records.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use spinel_wire::neighbor::{ChassisId, ChassisIdSubtype, Role};

use crate::fabric::model::{Finding, FindingKind, Severity, Switch};
use crate::fabric::names::natural_cmp;
use crate::fabric::raw::{Interner, NONE, RawNeighbor, RawObserver, RawPort, caps};

use super::naming::{NameIndex, same_system};
use super::select::NicFilter;

const CHASSIS_SUBTYPES: [ChassisIdSubtype; 7] = [
    ChassisIdSubtype::ChassisComponent,
    ChassisIdSubtype::InterfaceAlias,
    ChassisIdSubtype::PortComponent,
    ChassisIdSubtype::MacAddress,
    ChassisIdSubtype::NetworkAddress,
    ChassisIdSubtype::InterfaceName,
    ChassisIdSubtype::Local,
];

fn chassis_subtype(subtype: u8) -> ChassisIdSubtype {
    CHASSIS_SUBTYPES
        .get(subtype as usize)
        .copied()
        .unwrap_or(ChassisIdSubtype::Local)
}

/// Phase 1 (reads the neighbours and their observers): what the others saw of each chassis.
///
/// Every count is of distinct observers (systems, by their tables' names), never of
/// sightings: one report that repeats a name on forty NICs is one voice.
#[derive(Debug, Default)]
pub(super) struct Sightings {
    /// Per chassis: (system name, distinct observers that saw it so), usually one name.
    pub names: Vec<Vec<(u32, u32)>>,
    /// Per chassis: capability bits, OR-ed over every sighting.
    pub caps: Vec<u8>,
    /// Per chassis: distinct observers that saw it.
    pub observers: Vec<u32>,
    /// Per chassis: the name most distinct observers saw (ties: natural order), or [`NONE`].
    pub elected: Vec<u32>,
}

impl Sightings {
    /// Capability bits of an entity (chassis-less entities were never seen: none).
    fn caps_of(&self, entity: usize) -> u8 {
        self.caps.get(entity).copied().unwrap_or(0)
    }

    /// Names an entity was seen with (none for chassis-less entities).
    fn names_of(&self, entity: usize) -> &[(u32, u32)] {
        self.names.get(entity).map_or(&[], Vec::as_slice)
    }

    /// The name most observers saw an entity under, if any.
    fn elected_of(&self, entity: usize) -> Option<u32> {
        self.elected.get(entity).copied().filter(|&n| n != NONE)
    }

    /// Distinct observers that saw an entity.
    pub(super) fn observers_of(&self, entity: usize) -> u32 {
        self.observers.get(entity).copied().unwrap_or(0)
    }
}

/// Names each chassis is seen with (by how many distinct observers), the name that wins, and
/// the capabilities it advertises. An observer's sightings are contiguous in `neighbors`
/// (tables are added whole), so remembering the last observer per chassis and per name
/// counts each observer once.
pub(super) fn sightings(
    neighbors: &[RawNeighbor],
    observers: &[RawObserver],
    n_chassis: usize,
    strings: &Interner,
) -> Sightings {
    // Per chassis: (name, observers, last observer's name).
    let mut names: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); n_chassis];
    let mut bits = vec![0u8; n_chassis];
    let mut count = vec![0u32; n_chassis];
    let mut last = vec![NONE; n_chassis];
    for n in neighbors {
        let c = n.chassis as usize;
        let who = observers[n.observer as usize].name;
        bits[c] |= n.caps;
        if last[c] != who {
            last[c] = who;
            count[c] += 1;
        }
        if n.sys_name != NONE {
            let list = &mut names[c];
            match list.iter_mut().find(|(name, _, _)| *name == n.sys_name) {
                Some(e) if e.2 != who => {
                    e.1 += 1;
                    e.2 = who;
                }
                Some(_) => {}
                None => list.push((n.sys_name, 1, who)),
            }
        }
    }
    let names: Vec<Vec<(u32, u32)>> = names
        .into_iter()
        .map(|l| l.into_iter().map(|(n, c, _)| (n, c)).collect())
        .collect();
    let elected = names
        .iter()
        .map(|list| {
            list.iter()
                .max_by(|a, b| {
                    a.1.cmp(&b.1)
                        .then_with(|| natural_cmp(strings.get(b.0), strings.get(a.0)))
                })
                .map_or(NONE, |x| x.0)
        })
        .collect();
    Sightings {
        names,
        caps: bits,
        observers: count,
        elected,
    }
}

/// Phase 2 (reads observers and sightings): the entity each table describes.
#[derive(Debug)]
pub(super) struct Entities {
    /// Per observer: its entity, or [`NONE`] for a host table.
    pub of_observer: Vec<u32>,
    /// Entities: every chassis first, then one per chassis-less table that matched none.
    pub count: usize,
}

/// Tables with a chassis ID describe that chassis; a chassis-less switch table joins the one
/// chassis known under its name (its own table's, or the name most observers saw), preferring
/// a chassis that two observers or a table of its own confirm over one that a single report
/// mentions; else it stands alone (an `ambiguous_observer` error when several chassis carry the
/// name).
pub(super) fn entities(
    observers: &[RawObserver],
    chassis: &[(u8, u32)],
    seen: &Sightings,
    strings: &Interner,
    findings: &mut Vec<Finding>,
) -> Entities {
    let n_chassis = chassis.len();
    let by_name = chassis_by_name(observers, seen, strings);
    let owned: rustc_hash::FxHashSet<u32> = observers
        .iter()
        .filter(|o| o.role != Some(Role::Host) && o.chassis != NONE)
        .map(|o| o.chassis)
        .collect();
    let mut named: FxHashMap<u32, u32> = FxHashMap::default();
    let mut of_observer = Vec::with_capacity(observers.len());
    for o in observers {
        let entity = if o.role == Some(Role::Host) {
            NONE
        } else if o.chassis != NONE {
            o.chassis
        } else {
            let all = by_name.lookup(strings.get(o.name));
            let confirmed: Vec<u32> = all
                .iter()
                .copied()
                .filter(|&c| seen.observers_of(c as usize) >= 2 || owned.contains(&c))
                .collect();
            let candidates = if all.len() > 1 && !confirmed.is_empty() {
                confirmed.as_slice()
            } else {
                all
            };
            if let [only] = candidates {
                *only
            } else {
                if candidates.len() > 1 {
                    findings.push(ambiguous_observer(o.name, candidates, chassis, strings));
                }
                let next = (n_chassis + named.len()) as u32;
                *named.entry(o.name).or_insert(next)
            }
        };
        of_observer.push(entity);
    }
    Entities {
        of_observer,
        count: n_chassis + named.len(),
    }
}

/// Chassis per system name (any spelling, see `naming`): the name each chassis's own table
/// gives, and the name most observers saw it under (never a name one report alone gives a
/// chassis that others call otherwise). Built only when a table that may be a switch's lacks
/// its chassis ID.
fn chassis_by_name(
    observers: &[RawObserver],
    seen: &Sightings,
    strings: &Interner,
) -> NameIndex<u32> {
    let mut by_name = NameIndex::default();
    let needs_names = observers
        .iter()
        .any(|o| o.role != Some(Role::Host) && o.chassis == NONE);
    if !needs_names {
        return by_name;
    }
    for (c, &name) in seen.elected.iter().enumerate() {
        if name != NONE {
            by_name.insert(strings.get(name), c as u32);
        }
    }
    for o in observers
        .iter()
        .filter(|o| o.chassis != NONE && o.role != Some(Role::Host))
    {
        by_name.insert(strings.get(o.name), o.chassis);
    }
    by_name
}

fn ambiguous_observer(
    name: u32,
    candidates: &[u32],
    chassis: &[(u8, u32)],
    strings: &Interner,
) -> Finding {
    let mut ids: Vec<String> = candidates
        .iter()
        .map(|&c| strings.get(chassis[c as usize].1).to_string())
        .collect();
    ids.sort();
    Finding {
        severity: Severity::Error,
        kind: FindingKind::AmbiguousObserver,
        host: None,
        nic: None,
        switch: Some(strings.get(name).to_string()),
        port: None,
        expected: None,
        message: format!(
            "the table of {} has no chassis ID and {} switches carry that name (chassis {}); \
             its links are kept apart from theirs: add the chassis ID to the table or rename \
             the switches",
            strings.get(name),
            ids.len(),
            ids.join(", ")
        ),
    }
}

/// Phase 3 (reads observers, entities, the caller's host list and NIC selection): what the
/// tables and the caller say about each entity.
#[derive(Debug)]
pub(super) struct Evidence {
    /// Per entity: a table of its own states it is a switch (not derived from capabilities).
    pub explicit_switch: Vec<bool>,
    /// Per entity: it gave a table of its own.
    pub is_observer: Vec<bool>,
    /// Per entity: the names its own tables use.
    pub observer_names: Vec<Vec<u32>>,
    /// Per entity: the capabilities its own capture advertises.
    pub own_caps: Vec<u8>,
    /// Per entity: its table lists a NIC the caller's selection names as a fabric NIC.
    pub fabric_nic: Vec<bool>,
    /// Names that host tables use (any spelling), to the table's name.
    pub host_tables: NameIndex<u32>,
    /// Chassis that a host table claims, with the host's name.
    pub host_chassis: FxHashMap<u32, u32>,
    /// Hosts the caller named (host list, per-host NICs), any spelling, to the given name.
    pub listed: NameIndex<u32>,
    /// The caller named the hosts, so shape is not used to guess them.
    pub hosts_named: bool,
}

/// What phase 3 reads besides observers and entities.
pub(super) struct CallerHints<'a, 'b> {
    /// Interned names of the hosts the caller named.
    pub listed: &'a [u32],
    /// The fabric NIC selection.
    pub nics: &'a mut NicFilter<'b>,
    /// Every port the tables list.
    pub ports: &'a [RawPort],
}

/// Collects per-entity evidence from the tables and the caller.
pub(super) fn evidence(
    observers: &[RawObserver],
    entities: &Entities,
    hints: CallerHints<'_, '_>,
    seen: &Sightings,
    chassis: &[(u8, u32)],
    strings: &Interner,
    findings: &mut Vec<Finding>,
) -> Evidence {
    let n = entities.count;
    let mut ev = Evidence {
        explicit_switch: vec![false; n],
        is_observer: vec![false; n],
        observer_names: vec![Vec::new(); n],
        own_caps: vec![0; n],
        fabric_nic: vec![false; n],
        host_tables: NameIndex::default(),
        host_chassis: FxHashMap::default(),
        listed: NameIndex::default(),
        hosts_named: !hints.listed.is_empty() || hints.nics.names_hosts(),
    };
    for &name in hints.listed {
        ev.listed.insert(strings.get(name), name);
    }
    let mut claims: Vec<(u32, u32)> = Vec::new();
    for (o, &e) in observers.iter().zip(&entities.of_observer) {
        if o.role == Some(Role::Host) {
            ev.host_tables.insert(strings.get(o.name), o.name);
            // A host table that carries the host's chassis ID claims it, so the host seen
            // from a leaf is recognised under its table's name.
            if o.chassis != NONE {
                claims.push((o.chassis, o.name));
            }
        }
        if e == NONE {
            continue;
        }
        let e = e as usize;
        ev.is_observer[e] = true;
        ev.observer_names[e].push(o.name);
        ev.own_caps[e] |= o.caps;
        if o.role == Some(Role::Switch) && !o.role_from_caps {
            ev.explicit_switch[e] = true;
        }
        if hints.nics.names_host(strings.get(o.name)) {
            ev.fabric_nic[e] = true;
        }
    }
    for p in hints.ports {
        let e = entities.of_observer[p.observer as usize];
        if e != NONE && !ev.fabric_nic[e as usize] {
            let name = strings.get(observers[p.observer as usize].name);
            ev.fabric_nic[e as usize] = hints.nics.selects(strings, name, p.port) == Some(true);
        }
    }
    ev.host_chassis = hold_claims(claims, seen, chassis, strings, findings);
    ev
}

/// The chassis claims of host tables that stand: a claim is one voice, so it falls when two
/// or more other observers see that chassis under names that are not the claimant's (a report
/// that calls a leaf's MAC its own); of several claims on one chassis, the first name in
/// natural order (so the result does not depend on the order of tables). Each claim that falls
/// is a finding against its host.
fn hold_claims(
    mut claims: Vec<(u32, u32)>,
    seen: &Sightings,
    chassis_ids: &[(u8, u32)],
    strings: &Interner,
    findings: &mut Vec<Finding>,
) -> FxHashMap<u32, u32> {
    claims.sort_unstable();
    claims.dedup();
    let mut held: FxHashMap<u32, u32> = FxHashMap::default();
    for (chassis, name) in claims {
        let claimant = strings.get(name);
        let others: Vec<(u32, u32)> = seen
            .names_of(chassis as usize)
            .iter()
            .copied()
            .filter(|&(n, _)| !same_system(strings.get(n), claimant))
            .collect();
        let against: u32 = others.iter().map(|x| x.1).sum();
        if against >= 2 {
            let called = others
                .iter()
                .max_by(|a, b| a.1.cmp(&b.1))
                .map_or_else(String::new, |x| strings.get(x.0).to_string());
            findings.push(Finding {
                severity: Severity::Error,
                kind: FindingKind::DisputedReport,
                host: Some(claimant.to_string()),
                nic: None,
                switch: Some(called.clone()),
                port: None,
                expected: None,
                message: format!(
                    "{claimant}'s table claims chassis {} as its own, but {against} other \
                     observers see that chassis as {called}: the claim is ignored (a stale or \
                     forged report)",
                    strings.get(chassis_ids[chassis as usize].1)
                ),
            });
            continue;
        }
        held.entry(chassis)
            .and_modify(|held| {
                if natural_cmp(claimant, strings.get(*held)).is_lt() {
                    *held = name;
                }
            })
            .or_insert(name);
    }
    held
}

/// The names an entity goes by: its own tables', and the name most observers saw it under.
/// A name that fewer observers give (one report's) is no evidence of what the system is.
fn names_of<'a>(ev: &'a Evidence, seen: &'a Sightings, e: usize) -> impl Iterator<Item = u32> + 'a {
    ev.observer_names[e]
        .iter()
        .copied()
        .chain(seen.elected_of(e))
}

/// What the evidence decides before the shape of the graph is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decided {
    Switch,
    Host,
    /// Advertises Router only and gave a table: decided by what it is cabled to.
    ByShape,
}

/// Phase 4 (reads evidence, sightings and neighbours): switch or not, per entity. Evidence in
/// order of strength:
///
/// 1. the caller named it a host (host list, Kubernetes node names, per-host NICs);
/// 2. its own table states a role (not derived from capabilities);
/// 3. a host table claims its chassis or uses one of its names;
/// 4. its table lists a NIC the caller's fabric NIC selection names;
/// 5. capabilities (its own and what neighbours saw): Bridge is a switch, a System
///    Capabilities TLV without Bridge or Router (Station) a host;
/// 6. Router alone (a Kubernetes node with forwarding on, or a routed switch): a system that
///    gave a table is a host when it is cabled to more bridges that are part of a switch
///    fabric (they link to other bridges) than to hosts, and the caller named no hosts;
///    otherwise a switch;
/// 7. defaults: a table's observer is a host, a silent neighbour a switch.
pub(super) fn classify(
    ev: &Evidence,
    seen: &Sightings,
    neighbors: &[RawNeighbor],
    of_observer: &[u32],
    strings: &Interner,
) -> Vec<bool> {
    let decided: Vec<Decided> = (0..ev.is_observer.len())
        .map(|e| decide(ev, seen, strings, e))
        .collect();
    if !decided.contains(&Decided::ByShape) {
        return decided.iter().map(|d| *d == Decided::Switch).collect();
    }
    let by_shape = by_shape(&decided, neighbors, of_observer);
    decided
        .iter()
        .enumerate()
        .map(|(e, d)| match d {
            Decided::Switch => true,
            Decided::Host => false,
            Decided::ByShape => !by_shape[e],
        })
        .collect()
}

fn decide(ev: &Evidence, seen: &Sightings, strings: &Interner, e: usize) -> Decided {
    let mut names = names_of(ev, seen, e);
    if !ev.listed.is_empty() && names.any(|n| !ev.listed.lookup(strings.get(n)).is_empty()) {
        return Decided::Host;
    }
    if ev.explicit_switch[e] {
        return Decided::Switch;
    }
    if ev.host_chassis.contains_key(&(e as u32))
        || names_of(ev, seen, e).any(|n| !ev.host_tables.lookup(strings.get(n)).is_empty())
    {
        return Decided::Host;
    }
    if ev.fabric_nic[e] {
        return Decided::Host;
    }
    let c = seen.caps_of(e) | ev.own_caps[e];
    if c & caps::BRIDGE != 0 {
        return Decided::Switch;
    }
    if c & caps::ROUTER != 0 {
        return if ev.is_observer[e] && !ev.hosts_named {
            Decided::ByShape
        } else {
            Decided::Switch
        };
    }
    if c & caps::PRESENT != 0 {
        return Decided::Host;
    }
    if ev.is_observer[e] {
        Decided::Host
    } else {
        Decided::Switch
    }
}

/// Rule 6 for the Router-only observers: per entity, true when it is a host by shape.
fn by_shape(decided: &[Decided], neighbors: &[RawNeighbor], of_observer: &[u32]) -> Vec<bool> {
    // Bridges that link to another bridge: part of a switch fabric, not a lone device.
    let mut fabric = vec![false; decided.len()];
    for n in neighbors {
        let (a, b) = (of_observer[n.observer as usize], n.chassis);
        if a != NONE
            && a != b
            && decided[a as usize] == Decided::Switch
            && decided[b as usize] == Decided::Switch
        {
            fabric[a as usize] = true;
            fabric[b as usize] = true;
        }
    }
    // Per undecided observer: (fabric switches, hosts) among what its own tables see.
    let mut votes: FxHashMap<u32, (Vec<u32>, Vec<u32>)> = FxHashMap::default();
    for n in neighbors {
        let a = of_observer[n.observer as usize];
        if a == NONE || decided[a as usize] != Decided::ByShape {
            continue;
        }
        let v = votes.entry(a).or_default();
        match decided[n.chassis as usize] {
            Decided::Switch if fabric[n.chassis as usize] => v.0.push(n.chassis),
            Decided::Host => v.1.push(n.chassis),
            _ => {}
        }
    }
    let mut host = vec![false; decided.len()];
    for (e, (mut switches, mut hosts)) in votes {
        switches.sort_unstable();
        switches.dedup();
        hosts.sort_unstable();
        hosts.dedup();
        host[e as usize] = switches.len() > hosts.len();
    }
    host
}

/// Phase 4b (reads evidence and sightings): the name a non-switch entity goes by as a host:
/// the name a host table claims it with (by chassis or any spelling), else its primary name;
/// then the caller's spelling when the caller named it. [`NONE`] for switches.
pub(super) fn host_names(
    ev: &Evidence,
    seen: &Sightings,
    is_switch: &[bool],
    primary: &[u32],
    strings: &Interner,
) -> Vec<u32> {
    (0..is_switch.len())
        .map(|e| {
            if is_switch[e] {
                return NONE;
            }
            let claimed = ev.host_chassis.get(&(e as u32)).copied().or_else(|| {
                names_of(ev, seen, e).find_map(|n| match ev.host_tables.lookup(strings.get(n)) {
                    [only] => Some(*only),
                    _ => None,
                })
            });
            let name = claimed.unwrap_or(primary[e]);
            if name == NONE {
                return NONE;
            }
            canonical(ev, strings, name)
        })
        .collect()
}

/// The caller's spelling of a host name when the caller named that host.
pub(super) fn canonical(ev: &Evidence, strings: &Interner, name: u32) -> u32 {
    if ev.listed.is_empty() {
        return name;
    }
    match ev.listed.lookup(strings.get(name)) {
        [only] => *only,
        _ => name,
    }
}

/// Phase 5 (reads evidence and sightings): each entity's primary name: what the system calls
/// itself in its own table, else the name most neighbours saw (ties: natural order), else its
/// chassis ID value; [`NONE`] when there is nothing at all.
pub(super) fn primary_names(
    ev: &Evidence,
    seen: &Sightings,
    chassis: &[(u8, u32)],
    strings: &Interner,
) -> Vec<u32> {
    (0..ev.is_observer.len())
        .map(|e| {
            let own = ev.observer_names[e]
                .iter()
                .copied()
                .min_by(|&a, &b| natural_cmp(strings.get(a), strings.get(b)));
            if let Some(own) = own {
                return own;
            }
            match (seen.elected_of(e), chassis.get(e)) {
                (Some(name), _) => name,
                (None, Some(&(_, value))) => value,
                (None, None) => NONE,
            }
        })
        .collect()
}

/// Phase 6 output: the switches in content order.
#[derive(Debug)]
pub(super) struct SwitchSet {
    /// Switch records (no tier, domain or id yet), by name (natural order), then chassis.
    pub switches: Vec<Switch>,
    /// Per switch: a stable string for hashing (its chassis ID, or its name).
    pub salts: Vec<String>,
    /// Per switch: confirmed by a table of its own or by two or more observers (a switch that
    /// one report alone shows yields its names and ids to confirmed ones).
    pub confirmed: Vec<bool>,
    /// Per entity: its switch index, or [`NONE`].
    pub of_entity: Vec<u32>,
}

/// Phase 6 (reads the classification and names): a record per switch entity.
pub(super) fn switch_records(
    is_switch: &[bool],
    primary: &[u32],
    chassis: &[(u8, u32)],
    confirmed: impl Fn(usize) -> bool,
    strings: &Interner,
) -> SwitchSet {
    let mut entities: Vec<(Arc<str>, String, usize)> = (0..is_switch.len())
        .filter(|&e| is_switch[e])
        .map(|e| {
            let name: Arc<str> = if primary[e] == NONE {
                Arc::from("unnamed")
            } else {
                strings.get(primary[e]).clone()
            };
            let salt = match chassis.get(e) {
                Some(&(st, v)) => format!("{st}:{}", strings.get(v)),
                None => format!("name:{name}"),
            };
            (name, salt, e)
        })
        .collect();
    entities.sort_by(|a, b| natural_cmp(&a.0, &b.0).then_with(|| a.1.cmp(&b.1)));
    let mut set = SwitchSet {
        switches: Vec::with_capacity(entities.len()),
        salts: Vec::with_capacity(entities.len()),
        confirmed: Vec::with_capacity(entities.len()),
        of_entity: vec![NONE; is_switch.len()],
    };
    for (i, (name, salt, e)) in entities.into_iter().enumerate() {
        set.of_entity[e] = i as u32;
        set.switches.push(Switch {
            id: String::new(),
            name: name.to_string(),
            chassis_id: chassis.get(e).map(|&(st, v)| ChassisId {
                subtype: chassis_subtype(st),
                value: strings.get(v).to_string(),
            }),
            tier: None,
            domain: None,
            rails: Vec::new(),
            free_ports: Vec::new(),
            management: false,
        });
        set.salts.push(salt);
        set.confirmed.push(confirmed(e));
    }
    set
}
