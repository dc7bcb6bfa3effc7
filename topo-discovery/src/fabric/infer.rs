//! Inference, step by step: who is a switch, which cable goes where, which tier each switch is
//! in. Grouping into domains and the miswiring checks follow in `domains` and `report`.
//!
//! Interned string ids depend on the order tables were added, so they serve as keys and for
//! grouping only. Every order that reaches the output comes from string contents (natural
//! order), applied within small groups (a host's NICs, a switch pair's cables) so that 100k
//! hosts cost integer sorts, not string sorts.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use spinel_wire::neighbor::{ChassisId, ChassisIdSubtype, PortIdSubtype, Role};

use super::ingest::{FabricBuilder, NONE, RawNeighbor, caps};
use super::model::{
    Fabric, Finding, FindingKind, Host, LinkEnd, LinkKind, Nic, NicLink, PortRef, Severity, Switch,
    SwitchIdx, SwitchLink,
};
use super::names::natural_cmp;
use super::{InferOptions, RailKey};

const PORT_SUBTYPES: [PortIdSubtype; 7] = [
    PortIdSubtype::InterfaceAlias,
    PortIdSubtype::PortComponent,
    PortIdSubtype::MacAddress,
    PortIdSubtype::NetworkAddress,
    PortIdSubtype::InterfaceName,
    PortIdSubtype::AgentCircuitId,
    PortIdSubtype::Local,
];

const CHASSIS_SUBTYPES: [ChassisIdSubtype; 7] = [
    ChassisIdSubtype::ChassisComponent,
    ChassisIdSubtype::InterfaceAlias,
    ChassisIdSubtype::PortComponent,
    ChassisIdSubtype::MacAddress,
    ChassisIdSubtype::NetworkAddress,
    ChassisIdSubtype::InterfaceName,
    ChassisIdSubtype::Local,
];

/// Short subtype names used in unresolved port names (`local:Eth1/1`), as lldpd prints them.
pub(crate) fn port_subtype_label(subtype: u8) -> &'static str {
    match PORT_SUBTYPES.get(subtype as usize) {
        Some(PortIdSubtype::InterfaceAlias) => "ifalias",
        Some(PortIdSubtype::PortComponent) => "component",
        Some(PortIdSubtype::MacAddress) => "mac",
        Some(PortIdSubtype::NetworkAddress) => "ip",
        Some(PortIdSubtype::InterfaceName) => "ifname",
        Some(PortIdSubtype::AgentCircuitId) => "circuit",
        Some(PortIdSubtype::Local) | None => "local",
    }
}

fn is_ifname(subtype: u8) -> bool {
    PORT_SUBTYPES.get(subtype as usize) == Some(&PortIdSubtype::InterfaceName)
}

fn chassis_subtype(subtype: u8) -> ChassisIdSubtype {
    CHASSIS_SUBTYPES
        .get(subtype as usize)
        .copied()
        .unwrap_or(ChassisIdSubtype::Local)
}

/// Packs two 32-bit ids into one sortable key.
fn key(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

fn hi(k: u64) -> u32 {
    (k >> 32) as u32
}

fn lo(k: u64) -> u32 {
    k as u32
}

/// What a table's observer turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ObserverIs {
    Host(u32),
    Switch(u32),
}

/// Where inference stands before domains are built.
pub(crate) struct Draft {
    pub rails: Vec<Arc<str>>,
    pub switches: Vec<Switch>,
    /// Per switch: a stable string for hashing (its chassis ID, or its name).
    pub salts: Vec<String>,
    pub hosts: Vec<Host>,
    pub links: Vec<SwitchLink>,
    pub findings: Vec<Finding>,
    pub depth: u8,
}

pub(crate) fn run(b: FabricBuilder, options: &InferOptions) -> Fabric {
    let draft = build_draft(b, options);
    let mut fabric = super::domains::build(draft);
    super::report::check(&mut fabric);
    fabric.findings.sort_by(|a, b| {
        (a.severity, a.kind)
            .cmp(&(b.severity, b.kind))
            .then_with(|| natural_opt(&a.host, &b.host))
            .then_with(|| natural_opt(&a.nic, &b.nic))
            .then_with(|| natural_opt(&a.switch, &b.switch))
            .then_with(|| natural_opt(&a.port, &b.port))
            .then_with(|| a.message.cmp(&b.message))
    });
    fabric.findings.dedup();
    fabric
}

fn natural_opt(a: &Option<String>, b: &Option<String>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(a), Some(b)) => natural_cmp(a, b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

/// A NIC's neighbour before ports are resolved: only the chosen one is.
#[derive(Clone, Copy)]
struct Candidate {
    /// `key(host, nic)`.
    slot: u64,
    /// Switch index, or [`NONE`] when the neighbour is not a switch.
    switch: u32,
    /// Index into the neighbours, or [`NONE`] for a host seen from its leaf.
    src: u32,
    /// For a host seen from its leaf: the leaf's own port.
    own_port: u32,
}

/// One switch's view of a cable to another switch.
#[derive(Clone, Copy)]
struct SwitchSighting {
    from: u32,
    from_port: u32,
    to: u32,
    src: u32,
}

/// A switch sighting with the far port resolved.
struct Seen {
    from: u32,
    from_port: u32,
    to: u32,
    to_port: PortRef,
    /// Interned name of the far port when resolved, else [`NONE`].
    to_sym: u32,
    /// Interned Port Description of the far port, or [`NONE`].
    to_descr: u32,
}

fn build_draft(b: FabricBuilder, options: &InferOptions) -> Draft {
    let FabricBuilder {
        mut strings,
        chassis_map: _,
        chassis,
        observers,
        neighbors,
        ports,
        advertised,
    } = b;
    let mut findings = Vec::new();
    let n_chassis = chassis.len();

    // --- Names each chassis is seen with (usually one) and the capabilities it advertises.
    let mut sighting_names: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n_chassis];
    let mut entity_caps = vec![0u8; n_chassis];
    for n in &neighbors {
        let c = n.chassis as usize;
        entity_caps[c] |= n.caps;
        if n.sys_name != NONE {
            let list = &mut sighting_names[c];
            match list.iter_mut().find(|(name, _)| *name == n.sys_name) {
                Some(e) => e.1 += 1,
                None => list.push((n.sys_name, 1)),
            }
        }
    }

    // --- Chassis-less switch tables join the chassis seen under their name (built only then).
    let needs_names = observers
        .iter()
        .any(|o| o.role != Some(Role::Host) && o.chassis == NONE);
    let mut chassis_by_name: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    if needs_names {
        for (c, names) in sighting_names.iter().enumerate() {
            for &(name, _) in names {
                chassis_by_name.entry(name).or_default().push(c as u32);
            }
        }
        for o in observers.iter().filter(|o| o.chassis != NONE) {
            chassis_by_name.entry(o.name).or_default().push(o.chassis);
        }
        for v in chassis_by_name.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
    }

    // --- Entities: one per chassis ID, plus one per chassis-less observer that matches none.
    let host_names: FxHashSet<u32> = observers
        .iter()
        .filter(|o| o.role == Some(Role::Host))
        .map(|o| o.name)
        .collect();
    let mut named_entities: FxHashMap<u32, u32> = FxHashMap::default();
    let mut observer_entity: Vec<u32> = Vec::with_capacity(observers.len());
    for o in &observers {
        let entity = if o.role == Some(Role::Host) {
            NONE
        } else if o.chassis != NONE {
            o.chassis
        } else {
            let candidates = chassis_by_name.get(&o.name).map_or(&[][..], Vec::as_slice);
            if candidates.len() == 1 {
                candidates[0]
            } else {
                if candidates.len() > 1 {
                    let mut ids: Vec<String> = candidates
                        .iter()
                        .map(|&c| strings.get(chassis[c as usize].1).to_string())
                        .collect();
                    ids.sort();
                    findings.push(Finding {
                        severity: Severity::Error,
                        kind: FindingKind::AmbiguousObserver,
                        host: None,
                        nic: None,
                        switch: Some(strings.get(o.name).to_string()),
                        port: None,
                        expected: None,
                        message: format!(
                            "the table of {} has no chassis ID and {} switches carry that name \
                             (chassis {}); its links are kept apart from theirs: add the chassis \
                             ID to the table or rename the switches",
                            strings.get(o.name),
                            ids.len(),
                            ids.join(", ")
                        ),
                    });
                }
                let next = (n_chassis + named_entities.len()) as u32;
                *named_entities.entry(o.name).or_insert(next)
            }
        };
        observer_entity.push(entity);
    }
    drop(chassis_by_name);
    let n_entities = n_chassis + named_entities.len();
    entity_caps.resize(n_entities, 0);
    // A host table that carries the host's chassis ID claims that chassis for the host, so the
    // host seen from a leaf is recognised under its table's name.
    let mut host_chassis: FxHashMap<u32, u32> = FxHashMap::default();
    for o in &observers {
        if o.role == Some(Role::Host) && o.chassis != NONE {
            host_chassis.entry(o.chassis).or_insert(o.name);
        }
    }

    // --- Evidence per entity.
    let mut explicit_switch = vec![false; n_entities];
    let mut is_observer = vec![false; n_entities];
    let mut observer_names: Vec<Vec<u32>> = vec![Vec::new(); n_entities];
    for (o, &e) in observers.iter().zip(&observer_entity) {
        if e == NONE {
            continue;
        }
        is_observer[e as usize] = true;
        observer_names[e as usize].push(o.name);
        if o.role == Some(Role::Switch) {
            explicit_switch[e as usize] = true;
        }
    }

    // Primary name: what the system calls itself in its own table, else the name most
    // neighbours saw (ties: natural order), else the chassis ID value.
    let primary_name = |e: usize| -> u32 {
        let own = observer_names[e]
            .iter()
            .copied()
            .min_by(|&a, &b| natural_cmp(strings.get(a), strings.get(b)));
        if let Some(own) = own {
            return own;
        }
        let seen = sighting_names.get(e).and_then(|v| {
            v.iter()
                .max_by(|a, b| {
                    a.1.cmp(&b.1)
                        .then_with(|| natural_cmp(strings.get(b.0), strings.get(a.0)))
                })
                .map(|x| x.0)
        });
        match (seen, chassis.get(e)) {
            (Some(name), _) => name,
            (None, Some(&(_, value))) => value,
            (None, None) => NONE,
        }
    };

    // --- Classification. Evidence in order of strength: an explicit role, a name that is a
    // host's, advertised capabilities, then defaults (an observer is a host, a neighbour that
    // says nothing about itself is assumed a switch).
    let is_switch: Vec<bool> = (0..n_entities)
        .map(|e| {
            if explicit_switch[e] {
                return true;
            }
            if host_chassis.contains_key(&(e as u32)) {
                return false;
            }
            let host_named = observer_names[e].iter().any(|n| host_names.contains(n))
                || sighting_names
                    .get(e)
                    .is_some_and(|v| v.iter().any(|(n, _)| host_names.contains(n)));
            if host_named {
                return false;
            }
            let c = entity_caps[e];
            if c & (caps::BRIDGE | caps::ROUTER) != 0 {
                return true;
            }
            if c & caps::PRESENT != 0 {
                return false;
            }
            !is_observer[e]
        })
        .collect();

    // --- Switches, in content order.
    let name_of = |sym: u32| -> Arc<str> {
        if sym == NONE {
            Arc::from("unnamed")
        } else {
            strings.get(sym).clone()
        }
    };
    let mut switch_entities: Vec<(Arc<str>, String, usize)> = (0..n_entities)
        .filter(|&e| is_switch[e])
        .map(|e| {
            let name = name_of(primary_name(e));
            let salt = match chassis.get(e) {
                Some(&(st, v)) => format!("{st}:{}", strings.get(v)),
                None => format!("name:{name}"),
            };
            (name, salt, e)
        })
        .collect();
    switch_entities.sort_by(|a, b| natural_cmp(&a.0, &b.0).then_with(|| a.1.cmp(&b.1)));
    let mut entity_switch = vec![NONE; n_entities];
    let mut switches = Vec::with_capacity(switch_entities.len());
    let mut salts = Vec::with_capacity(switch_entities.len());
    for (i, (name, salt, e)) in switch_entities.into_iter().enumerate() {
        entity_switch[e] = i as u32;
        switches.push(Switch {
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
        salts.push(salt);
    }

    // --- Hosts: named by their tables, or by what switches saw of them.
    let mut host_index: FxHashMap<u32, u32> = FxHashMap::default();
    let mut host_names_list: Vec<u32> = Vec::new();
    let mut host_own_table: Vec<bool> = Vec::new();
    let mut observer_is: Vec<ObserverIs> = Vec::with_capacity(observers.len());
    for (o, &e) in observers.iter().zip(&observer_entity) {
        if e == NONE || !is_switch[e as usize] {
            let idx = *host_index.entry(o.name).or_insert_with(|| {
                host_names_list.push(o.name);
                host_own_table.push(false);
                (host_names_list.len() - 1) as u32
            });
            host_own_table[idx as usize] = true;
            observer_is.push(ObserverIs::Host(idx));
        } else {
            observer_is.push(ObserverIs::Switch(entity_switch[e as usize]));
        }
    }
    let entity_host_name: Vec<u32> = (0..n_entities)
        .map(|e| {
            if is_switch[e] {
                NONE
            } else if let Some(&name) = host_chassis.get(&(e as u32)) {
                name
            } else {
                primary_name(e)
            }
        })
        .collect();
    drop(observer_names);
    drop(sighting_names);

    // --- Port resolution: a neighbour's Port ID to the far switch's interface name.
    let mut listed: Vec<u64> = ports
        .iter()
        .filter_map(|p| match observer_is[p.observer as usize] {
            ObserverIs::Switch(sw) => Some(key(sw, p.port)),
            ObserverIs::Host(_) => None,
        })
        .collect();
    listed.sort_unstable();
    listed.dedup();
    let mut alias: FxHashMap<(u32, u8, u32), u32> = FxHashMap::default();
    for a in &advertised {
        if let ObserverIs::Switch(sw) = observer_is[a.observer as usize] {
            alias.entry((sw, a.subtype, a.value)).or_insert(a.port);
        }
    }
    // --- Observations, as integer records.
    let mut slots: Vec<u64> = Vec::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut sightings: Vec<SwitchSighting> = Vec::new();
    let mut busy: Vec<u64> = Vec::new();
    let mut side: Vec<(u32, u32, u32)> = Vec::new(); // (host, neighbour index, leaf)
    for p in &ports {
        if let ObserverIs::Host(h) = observer_is[p.observer as usize] {
            slots.push(key(h, p.port));
        }
    }
    for (i, n) in neighbors.iter().enumerate() {
        let target = entity_switch[n.chassis as usize];
        match observer_is[n.observer as usize] {
            ObserverIs::Host(h) => {
                let slot = key(h, n.port);
                slots.push(slot);
                candidates.push(Candidate {
                    slot,
                    switch: target,
                    src: i as u32,
                    own_port: NONE,
                });
            }
            ObserverIs::Switch(sw) => {
                busy.push(key(sw, n.port));
                if target != NONE {
                    if target != sw {
                        sightings.push(SwitchSighting {
                            from: sw,
                            from_port: n.port,
                            to: target,
                            src: i as u32,
                        });
                    }
                    continue;
                }
                let name = entity_host_name[n.chassis as usize];
                if name == NONE {
                    continue;
                }
                let h = *host_index.entry(name).or_insert_with(|| {
                    host_names_list.push(name);
                    host_own_table.push(false);
                    (host_names_list.len() - 1) as u32
                });
                side.push((h, i as u32, sw));
            }
        }
    }
    // Hosts seen only from their leaves: the NIC is the Port ID (ifname) or its description.
    // A host's own table is authoritative, so these only fill in hosts without one.
    for (h, i, sw) in side {
        if host_own_table[h as usize] {
            continue;
        }
        let n = &neighbors[i as usize];
        let nic = if is_ifname(n.port_subtype) {
            n.port_value
        } else if n.port_descr != NONE {
            n.port_descr
        } else {
            let label = format!(
                "{}:{}",
                port_subtype_label(n.port_subtype),
                strings.get(n.port_value)
            );
            strings.intern(&label)
        };
        let slot = key(h, nic);
        slots.push(slot);
        candidates.push(Candidate {
            slot,
            switch: sw,
            src: NONE,
            own_port: n.port,
        });
    }
    // Order: ifname Port ID; the switch's advertised-port map (alias, MAC); a Port Description
    // naming one of its ports (lldpd's default); else keep `<subtype>:<value>`.
    let resolve = |sw: u32, n: &RawNeighbor| -> (PortRef, u32) {
        let descr = (n.port_descr != NONE).then(|| strings.get(n.port_descr).clone());
        let found = if is_ifname(n.port_subtype) {
            Some(n.port_value)
        } else if let Some(&port) = alias.get(&(sw, n.port_subtype, n.port_value)) {
            Some(port)
        } else if n.port_descr != NONE && listed.binary_search(&key(sw, n.port_descr)).is_ok() {
            Some(n.port_descr)
        } else {
            None
        };
        match found {
            Some(sym) => (
                PortRef {
                    name: strings.get(sym).clone(),
                    resolved: true,
                    description: descr,
                },
                sym,
            ),
            None => (
                PortRef {
                    name: Arc::from(format!(
                        "{}:{}",
                        port_subtype_label(n.port_subtype),
                        strings.get(n.port_value)
                    )),
                    resolved: false,
                    description: descr,
                },
                NONE,
            ),
        }
    };

    slots.sort_unstable();
    slots.dedup();
    candidates.sort_unstable_by_key(|c| c.slot);
    busy.sort_unstable();
    busy.dedup();
    let mut used: Vec<u64> = Vec::new();

    // --- Host records. Slots and candidates are both sorted by (host, NIC) key, so one walk
    // assembles every host; then hosts go to natural name order, each host's NICs too.
    let mut built: Vec<Option<(Host, Vec<u32>)>> =
        (0..host_names_list.len()).map(|_| None).collect();
    let mut next_candidate = 0usize;
    for per_host in slots.chunk_by(|a, b| hi(*a) == hi(*b)) {
        let h = hi(per_host[0]);
        let name = strings.get(host_names_list[h as usize]).to_string();
        let mut nics: Vec<(u32, Option<NicLink>)> = Vec::with_capacity(per_host.len());
        for &slot in per_host {
            while next_candidate < candidates.len() && candidates[next_candidate].slot < slot {
                next_candidate += 1;
            }
            let first = next_candidate;
            while next_candidate < candidates.len() && candidates[next_candidate].slot == slot {
                next_candidate += 1;
            }
            let nic = lo(slot);
            let link = pick_link(
                &candidates[first..next_candidate],
                &neighbors,
                &resolve,
                &switches,
                &strings,
                &name,
                strings.get(nic),
                &mut findings,
            );
            if let Some((l, sym)) = &link
                && *sym != NONE
            {
                used.push(key(l.switch.0, *sym));
            }
            nics.push((nic, link.map(|(l, _)| l)));
        }
        nics.sort_by(|a, b| natural_cmp(strings.get(a.0), strings.get(b.0)));
        let syms: Vec<u32> = nics.iter().map(|n| n.0).collect();
        let host = Host {
            name,
            domain: None,
            nics: nics
                .into_iter()
                .map(|(nic, link)| Nic {
                    name: strings.get(nic).clone(),
                    rail: 0,
                    link,
                })
                .collect(),
            seen_from_switches_only: !host_own_table[h as usize],
        };
        built[h as usize] = Some((host, syms));
    }
    drop(candidates);
    drop(slots);
    let mut order: Vec<u32> = (0..host_names_list.len() as u32).collect();
    order.sort_by(|&a, &b| {
        natural_cmp(
            strings.get(host_names_list[a as usize]),
            strings.get(host_names_list[b as usize]),
        )
    });
    let mut hosts: Vec<Host> = Vec::with_capacity(order.len());
    let mut nic_syms: Vec<u32> = Vec::new();
    for &h in &order {
        // A host known only by name (an unplaced sighting) still gets a record.
        let (host, syms) = built[h as usize].take().unwrap_or_else(|| {
            (
                Host {
                    name: strings.get(host_names_list[h as usize]).to_string(),
                    domain: None,
                    nics: Vec::new(),
                    seen_from_switches_only: !host_own_table[h as usize],
                },
                Vec::new(),
            )
        });
        hosts.push(host);
        nic_syms.extend(syms);
    }
    drop(built);

    // --- Rails: every distinct key, in natural order.
    let rails: Vec<Arc<str>> = match options.rail_key {
        RailKey::NicName => {
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
            for h in &mut hosts {
                for nic in &mut h.nics {
                    nic.rail = flat.next().and_then(|s| index.get(s)).copied().unwrap_or(0);
                }
            }
            keys.iter().map(|&k| strings.get(k).clone()).collect()
        }
        RailKey::NicOrder => {
            let most = hosts.iter().map(|h| h.nics.len()).max().unwrap_or(0);
            for h in &mut hosts {
                for (i, nic) in h.nics.iter_mut().enumerate() {
                    nic.rail = i as u16;
                }
            }
            (0..most).map(|i| Arc::from(format!("nic{i}"))).collect()
        }
    };
    drop(nic_syms);

    // --- Switch links: one per cable, observed from one side or both.
    let links = merge_switch_links(sightings, &neighbors, &resolve, &strings, &mut used);

    // --- Free ports: listed in the switch's own table with no neighbour, and not the far end
    // of any cable seen from elsewhere (a listening host is invisible to its leaf).
    used.sort_unstable();
    used.dedup();
    let mut free: Vec<(u32, Arc<str>)> = Vec::new();
    let (mut bi, mut ui) = (0usize, 0usize);
    for &k in &listed {
        while bi < busy.len() && busy[bi] < k {
            bi += 1;
        }
        while ui < used.len() && used[ui] < k {
            ui += 1;
        }
        if busy.get(bi) != Some(&k) && used.get(ui) != Some(&k) {
            free.push((hi(k), strings.get(lo(k)).clone()));
        }
    }
    drop(used);
    drop(busy);
    free.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| natural_cmp(&a.1, &b.1)));
    for (sw, port) in free {
        switches[sw as usize].free_ports.push(port);
    }

    // --- Tiers: leaves have hosts; each next tier is what the previous one reaches.
    let n_sw = switches.len();
    let mut adjacency: Vec<Vec<u32>> = vec![Vec::new(); n_sw];
    for l in &links {
        adjacency[l.lower.switch.0 as usize].push(l.upper.switch.0);
        adjacency[l.upper.switch.0 as usize].push(l.lower.switch.0);
    }
    let mut queue = VecDeque::new();
    for h in &hosts {
        for nic in &h.nics {
            if let Some(link) = &nic.link {
                let sw = &mut switches[link.switch.0 as usize];
                if sw.tier.is_none() {
                    sw.tier = Some(1);
                    queue.push_back(link.switch.0);
                }
            }
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
    for sw in &switches {
        if sw.tier.is_none() {
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
    }

    // Orient links: lower tier first; mark peers and unplaced.
    let links = links
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
        .collect();

    Draft {
        rails,
        switches,
        salts,
        hosts,
        links,
        findings,
        depth: depth.max(u8::from(n_sw > 0)),
    }
}

/// Chooses a NIC's link among what it sees (usually exactly one switch) and reports the rest:
/// several neighbours (a hub, a firmware agent, a stale entry), or a neighbour that is no switch.
#[allow(clippy::too_many_arguments)]
fn pick_link(
    seen: &[Candidate],
    neighbors: &[RawNeighbor],
    resolve: &impl Fn(u32, &RawNeighbor) -> (PortRef, u32),
    switches: &[Switch],
    strings: &super::ingest::Interner,
    host: &str,
    nic: &str,
    findings: &mut Vec<Finding>,
) -> Option<(NicLink, u32)> {
    let port_of = |c: &Candidate| -> (PortRef, u32) {
        if c.src == NONE {
            (
                PortRef {
                    name: strings.get(c.own_port).clone(),
                    resolved: true,
                    description: None,
                },
                c.own_port,
            )
        } else {
            resolve(c.switch, &neighbors[c.src as usize])
        }
    };
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
        .map(|c| {
            let n = &neighbors[c.src as usize];
            if n.sys_name != NONE {
                strings.get(n.sys_name).clone()
            } else {
                Arc::from(format!("chassis {}", n.chassis))
            }
        })
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
        let mut names: Vec<String> = on_switches
            .iter()
            .map(|(sw, port, _)| format!("{} {port}", switches[*sw as usize].name))
            .collect();
        names.extend(not_switches.iter().map(|n| format!("{n} (not a switch)")));
        findings.push(Finding {
            severity: Severity::Warning,
            kind: FindingKind::MultipleNeighbors,
            host: Some(host.to_owned()),
            nic: Some(nic.to_owned()),
            switch: link
                .as_ref()
                .map(|l| switches[l.0.switch.0 as usize].name.clone()),
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
    } else if let Some(other) = not_switches.first() {
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

/// Pairs each cable's observations from its two ends. An observation from switch A says "my
/// port p sees B's port q"; one from B says "my port q sees A's port p". They are the same cable
/// when either end's port matches what the other side reported; with neither end resolvable,
/// when each side's Port Description names the other's port (lldpd's default). What remains
/// unmatched is a cable seen from one end only.
fn merge_switch_links(
    mut sightings: Vec<SwitchSighting>,
    neighbors: &[RawNeighbor],
    resolve: &impl Fn(u32, &RawNeighbor) -> (PortRef, u32),
    strings: &super::ingest::Interner,
    used: &mut Vec<u64>,
) -> Vec<SwitchLink> {
    sightings.sort_unstable_by_key(|s| (s.from.min(s.to), s.from.max(s.to), s.from, s.from_port));
    let mut links = Vec::with_capacity(sightings.len() / 2 + 1);
    // Buffers reused across switch pairs: most pairs have one or two sightings.
    let mut seen: Vec<Seen> = Vec::new();
    let mut hi_used: Vec<bool> = Vec::new();
    for pair in sightings.chunk_by(|a, b| {
        (a.from.min(a.to), a.from.max(a.to)) == (b.from.min(b.to), b.from.max(b.to))
    }) {
        let lo_sw = pair[0].from.min(pair[0].to);
        seen.clear();
        seen.extend(pair.iter().map(|s| {
            let n = &neighbors[s.src as usize];
            let (to_port, to_sym) = resolve(s.to, n);
            Seen {
                from: s.from,
                from_port: s.from_port,
                to: s.to,
                to_port,
                to_sym,
                to_descr: n.port_descr,
            }
        }));
        seen.sort_by(|a, b| {
            a.from
                .cmp(&b.from)
                .then_with(|| natural_cmp(strings.get(a.from_port), strings.get(b.from_port)))
                .then_with(|| natural_cmp(&a.to_port.name, &b.to_port.name))
        });
        seen.dedup_by(|a, b| {
            a.from == b.from && a.from_port == b.from_port && a.to_port.name == b.to_port.name
        });
        // Sorted by observer first, so the lower switch's sightings come first.
        let split = seen.partition_point(|x| x.from == lo_sw);
        let (from_lo, from_hi) = seen.split_at(split);
        hi_used.clear();
        hi_used.resize(from_hi.len(), false);
        for a in from_lo {
            let matched = from_hi.iter().enumerate().position(|(i, b)| {
                !hi_used[i]
                    && ((a.to_sym != NONE && a.to_sym == b.from_port)
                        || (b.to_sym != NONE && b.to_sym == a.from_port)
                        || (a.to_sym == NONE
                            && b.to_sym == NONE
                            && a.to_descr == b.from_port
                            && b.to_descr == a.from_port))
            });
            used.push(key(a.from, a.from_port));
            let upper = match matched {
                Some(i) => {
                    hi_used[i] = true;
                    used.push(key(a.to, from_hi[i].from_port));
                    PortRef {
                        name: strings.get(from_hi[i].from_port).clone(),
                        resolved: true,
                        description: a.to_port.description.clone(),
                    }
                }
                None => {
                    if a.to_sym != NONE {
                        used.push(key(a.to, a.to_sym));
                    }
                    a.to_port.clone()
                }
            };
            links.push(SwitchLink {
                lower: LinkEnd {
                    switch: SwitchIdx(a.from),
                    port: own_port(strings.get(a.from_port)),
                },
                upper: LinkEnd {
                    switch: SwitchIdx(a.to),
                    port: upper,
                },
                kind: LinkKind::Unplaced,
            });
        }
        for (i, b) in from_hi.iter().enumerate() {
            if hi_used[i] {
                continue;
            }
            used.push(key(b.from, b.from_port));
            if b.to_sym != NONE {
                used.push(key(b.to, b.to_sym));
            }
            links.push(SwitchLink {
                lower: LinkEnd {
                    switch: SwitchIdx(b.to),
                    port: b.to_port.clone(),
                },
                upper: LinkEnd {
                    switch: SwitchIdx(b.from),
                    port: own_port(strings.get(b.from_port)),
                },
                kind: LinkKind::Unplaced,
            });
        }
    }
    links
}

fn own_port(name: &Arc<str>) -> PortRef {
    PortRef {
        name: name.clone(),
        resolved: true,
        description: None,
    }
}
