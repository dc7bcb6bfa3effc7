//! Who is who: the systems behind the tables and sightings (one entity per chassis ID, plus
//! chassis-less switch tables), the evidence about each, switch or host, and the switch records.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use spinel_wire::neighbor::{ChassisId, ChassisIdSubtype, Role};

use crate::fabric::model::{Finding, FindingKind, Severity, Switch};
use crate::fabric::names::natural_cmp;
use crate::fabric::raw::{Interner, NONE, RawNeighbor, RawObserver, caps};

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

/// Phase 1 (reads the neighbours): what the others saw of each chassis.
#[derive(Debug, Default)]
pub(super) struct Sightings {
    /// Per chassis: (system name, times seen), usually one name.
    pub names: Vec<Vec<(u32, u32)>>,
    /// Per chassis: capability bits, OR-ed over every sighting.
    pub caps: Vec<u8>,
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
}

/// Names each chassis is seen with and the capabilities it advertises.
pub(super) fn sightings(neighbors: &[RawNeighbor], n_chassis: usize) -> Sightings {
    let mut names: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n_chassis];
    let mut bits = vec![0u8; n_chassis];
    for n in neighbors {
        let c = n.chassis as usize;
        bits[c] |= n.caps;
        if n.sys_name != NONE {
            let list = &mut names[c];
            match list.iter_mut().find(|(name, _)| *name == n.sys_name) {
                Some(e) => e.1 += 1,
                None => list.push((n.sys_name, 1)),
            }
        }
    }
    Sightings { names, caps: bits }
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
/// chassis seen under its name, else it stands alone (an `ambiguous_observer` error when several
/// chassis carry the name).
pub(super) fn entities(
    observers: &[RawObserver],
    chassis: &[(u8, u32)],
    seen: &Sightings,
    strings: &Interner,
    findings: &mut Vec<Finding>,
) -> Entities {
    let n_chassis = chassis.len();
    let by_name = chassis_by_name(observers, seen);
    let mut named: FxHashMap<u32, u32> = FxHashMap::default();
    let mut of_observer = Vec::with_capacity(observers.len());
    for o in observers {
        let entity = if o.role == Some(Role::Host) {
            NONE
        } else if o.chassis != NONE {
            o.chassis
        } else {
            let candidates = by_name.get(&o.name).map_or(&[][..], Vec::as_slice);
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

/// Chassis per system name, built only when a switch table lacks its chassis ID.
fn chassis_by_name(observers: &[RawObserver], seen: &Sightings) -> FxHashMap<u32, Vec<u32>> {
    let mut by_name: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    let needs_names = observers
        .iter()
        .any(|o| o.role != Some(Role::Host) && o.chassis == NONE);
    if !needs_names {
        return by_name;
    }
    for (c, names) in seen.names.iter().enumerate() {
        for &(name, _) in names {
            by_name.entry(name).or_default().push(c as u32);
        }
    }
    for o in observers.iter().filter(|o| o.chassis != NONE) {
        by_name.entry(o.name).or_default().push(o.chassis);
    }
    for v in by_name.values_mut() {
        v.sort_unstable();
        v.dedup();
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

/// Phase 3 (reads observers and entities): what the tables say about each entity.
#[derive(Debug)]
pub(super) struct Evidence {
    /// Per entity: a table of its own says it is a switch.
    pub explicit_switch: Vec<bool>,
    /// Per entity: it gave a table of its own.
    pub is_observer: Vec<bool>,
    /// Per entity: the names its own tables use.
    pub observer_names: Vec<Vec<u32>>,
    /// Names that host tables use.
    pub host_names: FxHashSet<u32>,
    /// Chassis that a host table claims, with the host's name.
    pub host_chassis: FxHashMap<u32, u32>,
}

/// Collects per-entity evidence from the tables.
pub(super) fn evidence(observers: &[RawObserver], entities: &Entities) -> Evidence {
    let n = entities.count;
    let mut ev = Evidence {
        explicit_switch: vec![false; n],
        is_observer: vec![false; n],
        observer_names: vec![Vec::new(); n],
        host_names: FxHashSet::default(),
        host_chassis: FxHashMap::default(),
    };
    for (o, &e) in observers.iter().zip(&entities.of_observer) {
        if o.role == Some(Role::Host) {
            ev.host_names.insert(o.name);
            // A host table that carries the host's chassis ID claims it, so the host seen
            // from a leaf is recognised under its table's name.
            if o.chassis != NONE {
                ev.host_chassis.entry(o.chassis).or_insert(o.name);
            }
        }
        if e == NONE {
            continue;
        }
        ev.is_observer[e as usize] = true;
        ev.observer_names[e as usize].push(o.name);
        if o.role == Some(Role::Switch) {
            ev.explicit_switch[e as usize] = true;
        }
    }
    ev
}

/// Phase 4 (reads evidence and sightings): switch or not, per entity. Evidence in order of
/// strength: an explicit role, a name that is a host's, advertised capabilities, then defaults
/// (an observer is a host, a neighbour that says nothing about itself is assumed a switch).
pub(super) fn classify(ev: &Evidence, seen: &Sightings) -> Vec<bool> {
    (0..ev.is_observer.len())
        .map(|e| {
            if ev.explicit_switch[e] {
                return true;
            }
            if ev.host_chassis.contains_key(&(e as u32)) {
                return false;
            }
            let host_named = ev.observer_names[e]
                .iter()
                .any(|n| ev.host_names.contains(n))
                || seen
                    .names_of(e)
                    .iter()
                    .any(|(n, _)| ev.host_names.contains(n));
            if host_named {
                return false;
            }
            let c = seen.caps_of(e);
            if c & (caps::BRIDGE | caps::ROUTER) != 0 {
                return true;
            }
            if c & caps::PRESENT != 0 {
                return false;
            }
            !ev.is_observer[e]
        })
        .collect()
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
            let most_seen = seen
                .names_of(e)
                .iter()
                .max_by(|a, b| {
                    a.1.cmp(&b.1)
                        .then_with(|| natural_cmp(strings.get(b.0), strings.get(a.0)))
                })
                .map(|x| x.0);
            match (most_seen, chassis.get(e)) {
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
    /// Per entity: its switch index, or [`NONE`].
    pub of_entity: Vec<u32>,
}

/// Phase 6 (reads the classification and names): a record per switch entity.
pub(super) fn switch_records(
    is_switch: &[bool],
    primary: &[u32],
    chassis: &[(u8, u32)],
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
        });
        set.salts.push(salt);
    }
    set
}
