//! Inference, step by step: who is a switch, which cable goes where, which tier each switch is
//! in. Grouping into domains and the miswiring checks follow in `domains` and `report`.
//!
//! Interned string ids depend on the order tables were added, so nothing here orders by them:
//! every order that reaches the output comes from string contents (natural order).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use crate::neighbor::{ChassisId, ChassisIdSubtype, PortIdSubtype, Role};

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

fn chassis_subtype(subtype: u8) -> ChassisIdSubtype {
    CHASSIS_SUBTYPES
        .get(subtype as usize)
        .copied()
        .unwrap_or(ChassisIdSubtype::Local)
}

/// What a table's observer turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ObserverIs {
    Host(u32),
    Switch(u32),
}

/// Where inference stands before domains are built: the parts of the model that do not depend
/// on grouping, plus what the later steps need.
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

fn build_draft(b: FabricBuilder, options: &InferOptions) -> Draft {
    let FabricBuilder {
        strings,
        chassis_map: _,
        chassis,
        observers,
        neighbors,
        ports,
        advertised,
    } = b;
    let s = |id: u32| -> &Arc<str> { strings.get(id) };
    let mut findings = Vec::new();
    let n_chassis = chassis.len();

    // --- Which chassis carry which system names (from sightings and observers).
    let mut name_chassis: Vec<(u32, u32)> = neighbors
        .iter()
        .filter(|n| n.sys_name != NONE)
        .map(|n| (n.sys_name, n.chassis))
        .chain(
            observers
                .iter()
                .filter(|o| o.chassis != NONE)
                .map(|o| (o.name, o.chassis)),
        )
        .collect();
    name_chassis.sort_unstable();
    name_chassis.dedup();
    let chassis_named = |name: u32| -> &[(u32, u32)] {
        let lo = name_chassis.partition_point(|&(n, _)| n < name);
        let hi = name_chassis.partition_point(|&(n, _)| n <= name);
        &name_chassis[lo..hi]
    };

    // --- Entities: one per chassis ID, plus one per chassis-less observer that matches none.
    let host_names: HashSet<u32> = observers
        .iter()
        .filter(|o| o.role == Some(Role::Host))
        .map(|o| o.name)
        .collect();
    let mut named_entities: HashMap<u32, u32> = HashMap::new();
    // entity per raw observer (NONE for explicit hosts, keyed by name instead)
    let mut observer_entity: Vec<u32> = Vec::with_capacity(observers.len());
    for o in &observers {
        let entity = if o.role == Some(Role::Host) {
            NONE
        } else if o.chassis != NONE {
            o.chassis
        } else {
            let candidates = chassis_named(o.name);
            if candidates.len() == 1 {
                candidates[0].1
            } else {
                if candidates.len() > 1 {
                    let mut ids: Vec<String> = candidates
                        .iter()
                        .map(|&(_, c)| s(chassis[c as usize].1).to_string())
                        .collect();
                    ids.sort();
                    findings.push(Finding {
                        severity: Severity::Error,
                        kind: FindingKind::AmbiguousObserver,
                        host: None,
                        nic: None,
                        switch: Some(s(o.name).to_string()),
                        port: None,
                        expected: None,
                        message: format!(
                            "the table of {} has no chassis ID and {} switches carry that name \
                             (chassis {}); its links are kept apart from theirs: add the chassis \
                             ID to the table or rename the switches",
                            s(o.name),
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
    let n_entities = n_chassis + named_entities.len();
    // A host table that carries the host's chassis ID claims that chassis for the host, so the
    // host seen from a leaf is recognised under its table's name.
    let mut host_chassis: HashMap<u32, u32> = HashMap::new();
    for o in &observers {
        if o.role == Some(Role::Host) && o.chassis != NONE {
            host_chassis.entry(o.chassis).or_insert(o.name);
        }
    }

    // --- Evidence per entity.
    let mut explicit_switch = vec![false; n_entities];
    let mut is_observer = vec![false; n_entities];
    let mut entity_caps = vec![0u8; n_entities];
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
    // sighting names with counts, per chassis
    let mut sightings: Vec<(u32, u32)> = Vec::with_capacity(neighbors.len());
    for n in &neighbors {
        entity_caps[n.chassis as usize] |= n.caps;
        if n.sys_name != NONE {
            sightings.push((n.chassis, n.sys_name));
        }
    }
    sightings.sort_unstable();
    let mut sighting_names: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n_chassis];
    for run in sightings.chunk_by(|a, b| a == b) {
        sighting_names[run[0].0 as usize].push((run[0].1, run.len() as u32));
    }
    drop(sightings);

    // Primary name: what the system calls itself in its own table, else the name most
    // neighbours saw, else the chassis ID value.
    let primary_name = |e: usize| -> Arc<str> {
        let mut own: Vec<&Arc<str>> = observer_names[e].iter().map(|&n| s(n)).collect();
        own.sort_by(|a, b| natural_cmp(a, b));
        if let Some(first) = own.first() {
            return (*first).clone();
        }
        if let Some(seen) = sighting_names.get(e) {
            let best = seen
                .iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| natural_cmp(s(b.0), s(a.0))));
            if let Some(&(name, _)) = best {
                return s(name).clone();
            }
        }
        match chassis.get(e) {
            Some(&(_, value)) => s(value).clone(),
            None => Arc::from("unnamed"),
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
    let mut switch_entities: Vec<(Arc<str>, String, usize)> = (0..n_entities)
        .filter(|&e| is_switch[e])
        .map(|e| {
            let salt = match chassis.get(e) {
                Some(&(st, v)) => format!("{st}:{}", s(v)),
                None => format!("name:{}", primary_name(e)),
            };
            (primary_name(e), salt, e)
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
                value: s(v).to_string(),
            }),
            tier: None,
            domain: None,
            rails: Vec::new(),
            free_ports: Vec::new(),
        });
        salts.push(salt);
    }

    // --- Hosts: named by their tables, or by what switches saw of them.
    let mut host_index: HashMap<u32, u32> = HashMap::new();
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
    // Hosts only switches saw (no table of their own).
    let entity_host_name: Vec<u32> = (0..n_entities)
        .map(|e| {
            if is_switch[e] {
                return NONE;
            }
            if let Some(&name) = host_chassis.get(&(e as u32)) {
                return name;
            }
            let name = primary_name(e);
            strings.lookup(&name).unwrap_or(NONE)
        })
        .collect();

    // --- Port resolution tables for switches.
    let mut local_ports: HashSet<(u32, u32)> = HashSet::new();
    let mut ports_by_switch: Vec<(u32, u32, bool)> = Vec::new(); // (switch, port, has neighbour)
    for p in &ports {
        if let ObserverIs::Switch(sw) = observer_is[p.observer as usize]
            && local_ports.insert((sw, p.port))
        {
            ports_by_switch.push((sw, p.port, false));
        }
    }
    let mut alias: HashMap<(u32, u8, u32), u32> = HashMap::new();
    for a in &advertised {
        if let ObserverIs::Switch(sw) = observer_is[a.observer as usize] {
            alias.entry((sw, a.subtype, a.value)).or_insert(a.port);
        }
    }
    let resolve = |sw: u32, n: &RawNeighbor| -> PortRef {
        let descr = (n.port_descr != NONE).then(|| s(n.port_descr).clone());
        if PORT_SUBTYPES.get(n.port_subtype as usize) == Some(&PortIdSubtype::InterfaceName) {
            return PortRef {
                name: s(n.port_value).clone(),
                resolved: true,
                description: descr,
            };
        }
        if let Some(&port) = alias.get(&(sw, n.port_subtype, n.port_value)) {
            return PortRef {
                name: s(port).clone(),
                resolved: true,
                description: descr,
            };
        }
        if n.port_descr != NONE && local_ports.contains(&(sw, n.port_descr)) {
            return PortRef {
                name: s(n.port_descr).clone(),
                resolved: true,
                description: descr,
            };
        }
        PortRef {
            name: Arc::from(format!(
                "{}:{}",
                port_subtype_label(n.port_subtype),
                s(n.port_value)
            )),
            resolved: false,
            description: descr,
        }
    };

    // --- Observations.
    enum Seen {
        Switch(u32, PortRef),
        NotSwitch(Arc<str>),
        Nothing,
    }
    struct NicSeen {
        host: u32,
        nic: Arc<str>,
        seen: Seen,
    }
    struct SwitchSeen {
        from: u32,
        from_port: Arc<str>,
        to: u32,
        to_port: PortRef,
    }
    let mut nic_seen: Vec<NicSeen> = Vec::new();
    let mut switch_seen: Vec<SwitchSeen> = Vec::new();
    let mut side_seen: Vec<NicSeen> = Vec::new(); // hosts seen from switches
    let mut busy_ports: HashSet<(u32, u32)> = HashSet::new();
    for p in &ports {
        if let ObserverIs::Host(h) = observer_is[p.observer as usize] {
            nic_seen.push(NicSeen {
                host: h,
                nic: s(p.port).clone(),
                seen: Seen::Nothing,
            });
        }
    }
    for n in &neighbors {
        let e = n.chassis as usize;
        let target_switch = entity_switch[e];
        match observer_is[n.observer as usize] {
            ObserverIs::Host(h) => {
                let seen = if target_switch != NONE {
                    Seen::Switch(target_switch, resolve(target_switch, n))
                } else {
                    let name = if n.sys_name != NONE {
                        s(n.sys_name).clone()
                    } else {
                        s(chassis[e].1).clone()
                    };
                    Seen::NotSwitch(name)
                };
                nic_seen.push(NicSeen {
                    host: h,
                    nic: s(n.port).clone(),
                    seen,
                });
            }
            ObserverIs::Switch(sw) => {
                busy_ports.insert((sw, n.port));
                if target_switch != NONE {
                    if target_switch != sw {
                        switch_seen.push(SwitchSeen {
                            from: sw,
                            from_port: s(n.port).clone(),
                            to: target_switch,
                            to_port: resolve(target_switch, n),
                        });
                    }
                } else {
                    let name = entity_host_name[e];
                    let name = if name != NONE {
                        name
                    } else {
                        continue;
                    };
                    let h = *host_index.entry(name).or_insert_with(|| {
                        host_names_list.push(name);
                        host_own_table.push(false);
                        (host_names_list.len() - 1) as u32
                    });
                    // A host's own table is authoritative; switch sightings only fill gaps.
                    let nic: Arc<str> = if PORT_SUBTYPES.get(n.port_subtype as usize)
                        == Some(&PortIdSubtype::InterfaceName)
                    {
                        s(n.port_value).clone()
                    } else if n.port_descr != NONE {
                        s(n.port_descr).clone()
                    } else {
                        Arc::from(format!(
                            "{}:{}",
                            port_subtype_label(n.port_subtype),
                            s(n.port_value)
                        ))
                    };
                    side_seen.push(NicSeen {
                        host: h,
                        nic,
                        seen: Seen::Switch(
                            sw,
                            PortRef {
                                name: s(n.port).clone(),
                                resolved: true,
                                description: None,
                            },
                        ),
                    });
                }
            }
        }
    }
    for x in side_seen {
        if !host_own_table[x.host as usize] {
            nic_seen.push(x);
        }
    }
    for (sw, port, busy) in &mut ports_by_switch {
        *busy = busy_ports.contains(&(*sw, *port));
    }

    // --- Host records, in content order.
    let mut order: Vec<u32> = (0..host_names_list.len() as u32).collect();
    order.sort_by(|&a, &b| {
        natural_cmp(
            s(host_names_list[a as usize]),
            s(host_names_list[b as usize]),
        )
    });
    let mut host_rank = vec![0u32; order.len()];
    for (rank, &h) in order.iter().enumerate() {
        host_rank[h as usize] = rank as u32;
    }
    nic_seen.sort_by(|a, b| {
        host_rank[a.host as usize]
            .cmp(&host_rank[b.host as usize])
            .then_with(|| natural_cmp(&a.nic, &b.nic))
    });
    let mut hosts: Vec<Host> = order
        .iter()
        .map(|&h| Host {
            name: s(host_names_list[h as usize]).to_string(),
            domain: None,
            nics: Vec::new(),
            seen_from_switches_only: !host_own_table[h as usize],
        })
        .collect();
    let mut rail_keys: Vec<(u32, usize, Arc<str>)> = Vec::new(); // (host rank, nic pos, key)
    for per_nic in nic_seen.chunk_by(|a, b| a.host == b.host && a.nic == b.nic) {
        let rank = host_rank[per_nic[0].host as usize];
        let host = &mut hosts[rank as usize];
        let nic_name = per_nic[0].nic.clone();
        let mut on_switches: Vec<(u32, PortRef)> = Vec::new();
        let mut not_switches: Vec<Arc<str>> = Vec::new();
        for x in per_nic {
            match &x.seen {
                Seen::Switch(sw, port) => on_switches.push((*sw, port.clone())),
                Seen::NotSwitch(name) => not_switches.push(name.clone()),
                Seen::Nothing => {}
            }
        }
        on_switches.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| natural_cmp(&a.1.name, &b.1.name))
        });
        on_switches.dedup();
        not_switches.sort_by(|a, b| natural_cmp(a, b));
        not_switches.dedup();
        let link = on_switches.first().map(|(sw, port)| NicLink {
            switch: SwitchIdx(*sw),
            port: port.clone(),
        });
        if on_switches.len() + not_switches.len() > 1 {
            let mut seen: Vec<String> = on_switches
                .iter()
                .map(|(sw, port)| format!("{} {port}", switches[*sw as usize].name))
                .collect();
            seen.extend(not_switches.iter().map(|n| format!("{n} (not a switch)")));
            findings.push(Finding {
                severity: Severity::Warning,
                kind: FindingKind::MultipleNeighbors,
                host: Some(host.name.clone()),
                nic: Some(nic_name.to_string()),
                switch: link
                    .as_ref()
                    .map(|l| switches[l.switch.0 as usize].name.clone()),
                port: link.as_ref().map(|l| l.port.to_string()),
                expected: None,
                message: format!(
                    "{} {nic_name} sees {} neighbours ({}): a hub, a NIC firmware LLDP agent or a \
                     stale neighbour; placed by {}",
                    host.name,
                    seen.len(),
                    seen.join(", "),
                    seen.first().map_or("none", String::as_str)
                ),
            });
        } else if let Some(other) = not_switches.first() {
            findings.push(Finding {
                severity: Severity::Error,
                kind: FindingKind::NotASwitch,
                host: Some(host.name.clone()),
                nic: Some(nic_name.to_string()),
                switch: None,
                port: None,
                expected: Some(String::from("a leaf switch")),
                message: format!(
                    "{} {nic_name} is cabled to {other}, which is not a switch (it advertises no \
                     bridge or router capability, or it is a host): move the cable to its leaf",
                    host.name
                ),
            });
        }
        let position = host.nics.len();
        host.nics.push(Nic {
            name: nic_name.clone(),
            rail: 0,
            link,
        });
        let key = match options.rail_key {
            RailKey::NicName => nic_name,
            RailKey::NicOrder => Arc::from(format!("nic{position}")),
        };
        rail_keys.push((rank, position, key));
    }

    // --- Rails: every distinct key, in natural order.
    let mut rails: Vec<Arc<str>> = rail_keys.iter().map(|(_, _, k)| k.clone()).collect();
    rails.sort_by(|a, b| natural_cmp(a, b));
    rails.dedup();
    let rail_of: HashMap<&str, u16> = rails
        .iter()
        .enumerate()
        .map(|(i, r)| (&**r, i as u16))
        .collect();
    for (rank, pos, key) in &rail_keys {
        hosts[*rank as usize].nics[*pos].rail = rail_of.get(&**key).copied().unwrap_or(0);
    }

    // --- Switch links: one per cable, observed from one side or both.
    let links = merge_switch_links(
        switch_seen
            .into_iter()
            .map(|x| (x.from, x.from_port, x.to, x.to_port))
            .collect(),
    );

    // --- Free ports: listed in the switch's own table with no neighbour, and not the far end
    // of any cable seen from elsewhere (a listening host is invisible to its leaf).
    let mut used: HashSet<(u32, &str)> = HashSet::new();
    for h in &hosts {
        for nic in &h.nics {
            if let Some(l) = &nic.link {
                used.insert((l.switch.0, &*l.port.name));
            }
        }
    }
    for l in &links {
        used.insert((l.lower.switch.0, &*l.lower.port.name));
        used.insert((l.upper.switch.0, &*l.upper.port.name));
    }
    let mut free: Vec<(u32, Arc<str>)> = ports_by_switch
        .iter()
        .filter(|&&(sw, port, busy)| !busy && !used.contains(&(sw, &**s(port))))
        .map(|&(sw, port, _)| (sw, s(port).clone()))
        .collect();
    drop(used);
    free.sort_by(|a, b| natural_cmp(&a.1, &b.1));
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

/// Pairs each cable's observations from its two ends. An observation from switch A says "my
/// port p sees B's port q"; one from B says "my port q sees A's port p". They are the same cable
/// when either end's port matches what the other side reported (ports that could not be resolved
/// to names still match on the other end). What remains unmatched is a cable seen from one end.
fn merge_switch_links(mut seen: Vec<(u32, Arc<str>, u32, PortRef)>) -> Vec<SwitchLink> {
    seen.sort_by(|a, b| {
        let ka = (a.0.min(a.2), a.0.max(a.2), a.0);
        let kb = (b.0.min(b.2), b.0.max(b.2), b.0);
        ka.cmp(&kb)
            .then_with(|| natural_cmp(&a.1, &b.1))
            .then_with(|| natural_cmp(&a.3.name, &b.3.name))
    });
    seen.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1 && a.2 == b.2 && a.3.name == b.3.name);
    let mut links = Vec::new();
    for pair in seen.chunk_by(|a, b| (a.0.min(a.2), a.0.max(a.2)) == (b.0.min(b.2), b.0.max(b.2))) {
        let lo = pair[0].0.min(pair[0].2);
        let (from_lo, from_hi): (Vec<_>, Vec<_>) = pair.iter().partition(|x| x.0 == lo);
        let mut hi_used = vec![false; from_hi.len()];
        for a in &from_lo {
            let matched = from_hi.iter().enumerate().position(|(i, b)| {
                !hi_used[i]
                    && ((a.3.resolved && b.1 == a.3.name)
                        || (b.3.resolved && a.1 == b.3.name)
                        || (!a.3.resolved && !b.3.resolved && matches_description(a, b)))
            });
            let upper = match matched {
                Some(i) => {
                    hi_used[i] = true;
                    PortRef {
                        name: from_hi[i].1.clone(),
                        resolved: true,
                        description: a.3.description.clone(),
                    }
                }
                None => a.3.clone(),
            };
            links.push(SwitchLink {
                lower: LinkEnd {
                    switch: SwitchIdx(a.0),
                    port: own_port(&a.1),
                },
                upper: LinkEnd {
                    switch: SwitchIdx(a.2),
                    port: upper,
                },
                kind: LinkKind::Unplaced,
            });
        }
        for (i, b) in from_hi.iter().enumerate() {
            if !hi_used[i] {
                links.push(SwitchLink {
                    lower: LinkEnd {
                        switch: SwitchIdx(b.2),
                        port: b.3.clone(),
                    },
                    upper: LinkEnd {
                        switch: SwitchIdx(b.0),
                        port: own_port(&b.1),
                    },
                    kind: LinkKind::Unplaced,
                });
            }
        }
    }
    links
}

/// With neither end resolvable, two observations are one cable when each side's description
/// names the other side's port (lldpd's default: MAC Port ID, ifname description).
fn matches_description(
    a: &(u32, Arc<str>, u32, PortRef),
    b: &(u32, Arc<str>, u32, PortRef),
) -> bool {
    a.3.description.as_deref() == Some(&*b.1) && b.3.description.as_deref() == Some(&*a.1)
}

fn own_port(name: &Arc<str>) -> PortRef {
    PortRef {
        name: name.clone(),
        resolved: true,
        description: None,
    }
}
