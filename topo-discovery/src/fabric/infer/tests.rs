//! One small test per inference phase: each builds the evidence its phase reads (from tiny
//! hand-written tables, through the earlier phases) and checks what the phase adds.

use spinel_wire::neighbor::{
    Capabilities, Capability, ChassisId, ChassisIdSubtype, Neighbor, NeighborTable, Observer,
    PortId, PortIdSubtype, PortNeighbors, Role, SCHEMA,
};

use super::hosts::{self, LinkContext};
use super::identity::{self, CallerHints, Entities, Evidence, Sightings, SwitchSet};
use super::links;
use super::management;
use super::observe::{self, HostNames, ObservationInputs, Observations, ObserverIs, PortMaps};
use super::select::NicFilter;
use super::tiers;
use crate::fabric::FabricBuilder;
use crate::fabric::model::{Finding, FindingKind, LinkKind};
use crate::fabric::options::{FabricNics, InferOptions, NicPattern, RailKey};
use crate::fabric::raw::{NONE, RawTables, caps, key};

/// A neighbour: chassis MAC from `id`, system name, Port ID subtype and value.
fn seen(id: u8, name: &str, subtype: PortIdSubtype, port: &str) -> Neighbor {
    let mut n = Neighbor::new(
        ChassisId {
            subtype: ChassisIdSubtype::MacAddress,
            value: format!("02:00:00:00:00:{id:02x}"),
        },
        PortId {
            subtype,
            value: port.to_owned(),
        },
        120,
    );
    n.system_name = Some(name.to_owned());
    n
}

/// A switch neighbour (bridge and router) whose port is advertised by name.
fn switch(id: u8, name: &str, port: &str) -> Neighbor {
    with_caps(
        seen(id, name, PortIdSubtype::InterfaceName, port),
        &[Capability::Bridge, Capability::Router],
    )
}

fn with_caps(mut n: Neighbor, enabled: &[Capability]) -> Neighbor {
    n.capabilities = Some(Capabilities {
        supported: enabled.to_vec(),
        enabled: enabled.to_vec(),
    });
    n
}

fn chassis(id: u8) -> ChassisId {
    ChassisId {
        subtype: ChassisIdSubtype::MacAddress,
        value: format!("02:00:00:00:00:{id:02x}"),
    }
}

fn table(
    name: &str,
    id: Option<u8>,
    role: Option<Role>,
    ports: Vec<(&str, Vec<Neighbor>)>,
) -> NeighborTable {
    NeighborTable {
        schema: SCHEMA.to_owned(),
        observer: Observer {
            name: name.to_owned(),
            chassis_id: id.map(chassis),
            role,
        },
        ports: ports
            .into_iter()
            .map(|(port, neighbors)| PortNeighbors {
                port: port.to_owned(),
                neighbors,
                counters: None,
            })
            .collect(),
    }
}

/// spine1 (id 1) above leaf1 (id 2); host h1 with two NICs on leaf1; leaf1 lists a free port.
fn small() -> Vec<NeighborTable> {
    vec![
        table(
            "spine1",
            Some(1),
            Some(Role::Switch),
            vec![("swp1", vec![switch(2, "leaf1", "swp51")])],
        ),
        table(
            "leaf1",
            Some(2),
            Some(Role::Switch),
            vec![
                ("swp51", vec![switch(1, "spine1", "swp1")]),
                ("swp1", vec![]),
                ("swp2", vec![]),
                ("swp9", vec![]),
            ],
        ),
        table(
            "h1",
            None,
            Some(Role::Host),
            vec![
                ("ens2", vec![switch(2, "leaf1", "swp2")]),
                ("ens10", vec![switch(2, "leaf1", "swp1")]),
            ],
        ),
    ]
}

fn raw(tables: &[NeighborTable]) -> RawTables {
    let mut b = FabricBuilder::new();
    for t in tables {
        b.add_table(t);
    }
    b.into_raw()
}

/// Phases 1-6 over `tables`.
struct Identity {
    raw: RawTables,
    seen: Sightings,
    entities: Entities,
    evidence: Evidence,
    is_switch: Vec<bool>,
    primary: Vec<u32>,
    host_names: Vec<u32>,
    switches: SwitchSet,
    findings: Vec<Finding>,
    options: InferOptions,
}

fn identity(tables: &[NeighborTable]) -> Identity {
    identity_from_raw(raw(tables), InferOptions::default())
}

fn identity_with(tables: &[NeighborTable], options: InferOptions) -> Identity {
    identity_from_raw(raw(tables), options)
}

fn identity_from_raw(mut raw: RawTables, options: InferOptions) -> Identity {
    let mut findings = Vec::new();
    let listed: Vec<u32> = options
        .hosts
        .iter()
        .map(|h| raw.strings.intern(h))
        .collect();
    let mut nics = NicFilter::new(&options.fabric_nics);
    let seen = identity::sightings(
        &raw.neighbors,
        &raw.observers,
        raw.chassis.len(),
        &raw.strings,
    );
    let entities = identity::entities(
        &raw.observers,
        &raw.chassis,
        &seen,
        &raw.strings,
        &mut findings,
    );
    let hints = CallerHints {
        listed: &listed,
        nics: &mut nics,
        ports: &raw.ports,
    };
    let evidence = identity::evidence(
        &raw.observers,
        &entities,
        hints,
        &seen,
        &raw.chassis,
        &raw.strings,
        &mut findings,
    );
    let is_switch = identity::classify(
        &evidence,
        &seen,
        &raw.neighbors,
        &entities.of_observer,
        &raw.strings,
    );
    let primary = identity::primary_names(&evidence, &seen, &raw.chassis, &raw.strings);
    let switches = identity::switch_records(
        &is_switch,
        &primary,
        &raw.chassis,
        |e| evidence.is_observer[e] || seen.observers_of(e) >= 2,
        &raw.strings,
    );
    let host_names = identity::host_names(&evidence, &seen, &is_switch, &primary, &raw.strings);
    Identity {
        raw,
        seen,
        entities,
        evidence,
        is_switch,
        primary,
        host_names,
        switches,
        findings,
        options,
    }
}

/// Phases 7-10 over an identity.
struct Observed {
    is: Vec<ObserverIs>,
    hosts: HostNames,
    ports: PortMaps,
    obs: Observations,
}

fn observed(id: &mut Identity) -> Observed {
    let o = observe::observers(
        &id.raw.observers,
        &id.entities.of_observer,
        &id.is_switch,
        &id.switches.of_entity,
        &id.evidence,
        &id.raw.strings,
    );
    let ports = observe::port_maps(&id.raw.ports, &id.raw.advertised, &o.is);
    let mut hosts = o.hosts;
    let mut nics = NicFilter::new(&id.options.fabric_nics);
    let obs = observe::observations(
        &ObservationInputs {
            ports: &id.raw.ports,
            neighbors: &id.raw.neighbors,
            observer_is: &o.is,
            switch_of_entity: &id.switches.of_entity,
            host_name_of_entity: &id.host_names,
        },
        &mut hosts,
        &mut nics,
        &mut id.raw.strings,
    );
    Observed {
        is: o.is,
        hosts,
        ports,
        obs,
    }
}

fn name_of_sym(raw: &RawTables, sym: u32) -> &str {
    raw.strings.get(sym)
}

fn name_of(id: &Identity, sym: u32) -> &str {
    id.raw.strings.get(sym)
}

#[test]
fn sightings_count_names_and_merge_capabilities() {
    let mut t = small();
    // h1 sees leaf1 twice, once without capabilities and once under another name.
    t[2].ports[0]
        .neighbors
        .push(seen(2, "leaf1-alias", PortIdSubtype::InterfaceName, "swp2"));
    let r = raw(&t);
    let s = identity::sightings(&r.neighbors, &r.observers, r.chassis.len(), &r.strings);
    let leaf1 = r.chassis_map[&(3, r.strings.id_of("02:00:00:00:00:02"))] as usize;
    let mut names: Vec<(&str, u32)> = s.names[leaf1]
        .iter()
        .map(|&(n, c)| (&**r.strings.get(n), c))
        .collect();
    names.sort();
    // Observers, not sightings: h1 is one voice however many of its NICs see leaf1.
    assert_eq!(names, [("leaf1", 2), ("leaf1-alias", 1)]);
    assert_eq!(s.observers[leaf1], 2);
    assert_eq!(name_of_sym(&r, s.elected[leaf1]), "leaf1");
    assert_eq!(s.caps[leaf1], caps::PRESENT | caps::BRIDGE | caps::ROUTER);
}

#[test]
fn entities_join_a_chassisless_switch_table_by_name_or_report_ambiguity() {
    let mut t = small();
    t[1].observer.chassis_id = None;
    let id = identity(&t);
    assert_eq!(id.entities.count, id.raw.chassis.len(), "no extra entity");
    let leaf1 = id.raw.chassis_map[&(3, id.raw.strings.id_of("02:00:00:00:00:02"))];
    assert_eq!(
        id.entities.of_observer[1], leaf1,
        "the chassis seen as leaf1"
    );
    assert_eq!(
        name_of(&id, id.primary[id.entities.of_observer[1] as usize]),
        "leaf1"
    );
    assert_eq!(
        id.entities.of_observer[2], NONE,
        "host tables have no entity"
    );
    assert!(id.findings.is_empty());

    // A second chassis that one observer alone calls leaf1 yields to the confirmed one.
    t[0].ports.push(PortNeighbors {
        port: "swp2".into(),
        neighbors: vec![switch(9, "leaf1", "swp51")],
        counters: None,
    });
    let id = identity(&t);
    assert_eq!(id.entities.of_observer[1], leaf1);
    assert!(id.findings.is_empty());

    // Two chassis that two observers each call leaf1: the chassis-less table stays apart,
    // with an error.
    t[2].ports.push(PortNeighbors {
        port: "ens3".into(),
        neighbors: vec![switch(9, "leaf1", "swp7")],
        counters: None,
    });
    let id = identity(&t);
    assert_eq!(id.entities.count, id.raw.chassis.len() + 1);
    assert_eq!(id.findings.len(), 1);
    assert_eq!(id.findings[0].kind, FindingKind::AmbiguousObserver);
}

#[test]
fn evidence_records_roles_observers_and_claimed_chassis() {
    let mut t = small();
    t[2].observer.chassis_id = Some(chassis(7));
    let id = identity(&t);
    let spine = id.entities.of_observer[0] as usize;
    assert!(id.evidence.explicit_switch[spine] && id.evidence.is_observer[spine]);
    let h1 = id.raw.observers[2].name;
    assert_eq!(id.evidence.host_tables.lookup("h1"), [h1]);
    let claimed: Vec<u32> = id.evidence.host_chassis.values().copied().collect();
    assert_eq!(claimed, [h1]);
}

#[test]
fn classification_follows_the_order_of_evidence() {
    let mut t = small();
    // A station on h1's NIC (not a switch), a silent neighbour on leaf1 (assumed a switch),
    // and leaf1 seeing something named like a host table (a host).
    t[2].ports[1].neighbors.push(with_caps(
        seen(5, "storage1", PortIdSubtype::MacAddress, "x"),
        &[Capability::Station],
    ));
    t[1].ports[3]
        .neighbors
        .push(seen(6, "mystery", PortIdSubtype::Local, "p"));
    t[1].ports[1]
        .neighbors
        .push(seen(8, "h1", PortIdSubtype::MacAddress, "aa"));
    let id = identity(&t);
    let by_name = |name: &str| {
        (0..id.is_switch.len())
            .find(|&e| id.primary[e] != NONE && name_of(&id, id.primary[e]) == name)
            .map(|e| id.is_switch[e])
    };
    assert_eq!(by_name("spine1"), Some(true), "explicit role");
    assert_eq!(by_name("leaf1"), Some(true));
    assert_eq!(by_name("storage1"), Some(false), "station capability");
    assert_eq!(by_name("mystery"), Some(true), "silent neighbour");
    assert_eq!(by_name("h1"), Some(false), "a host table's name");
}

#[test]
fn primary_names_prefer_the_own_table_then_the_most_seen() {
    let mut t = small();
    t[1].observer.name = "LEAF-1".into();
    t.push(table(
        "h2",
        None,
        Some(Role::Host),
        vec![("ens2", vec![switch(9, "odd", "swp1")])],
    ));
    let id = identity(&t);
    let leaf = id.entities.of_observer[1] as usize;
    assert_eq!(name_of(&id, id.primary[leaf]), "LEAF-1");
    let odd = (0..id.primary.len())
        .find(|&e| !id.evidence.is_observer[e] && name_of(&id, id.primary[e]) == "odd");
    assert!(odd.is_some());
}

#[test]
fn switch_records_are_in_natural_name_order_with_chassis_salts() {
    let mut t = small();
    t.push(table("leaf10", Some(10), Some(Role::Switch), vec![]));
    t.push(table("leaf2", Some(11), Some(Role::Switch), vec![]));
    let id = identity(&t);
    let names: Vec<&str> = id
        .switches
        .switches
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["leaf1", "leaf2", "leaf10", "spine1"]);
    assert!(id.switches.salts[0].ends_with("02:00:00:00:00:02"));
    assert_eq!(
        id.switches.switches[0]
            .chassis_id
            .as_ref()
            .map(|c| c.subtype),
        Some(ChassisIdSubtype::MacAddress)
    );
}

#[test]
fn observers_and_host_names_of_entities() {
    let mut id = identity(&small());
    let o = observed(&mut id);
    assert!(matches!(o.is[0], ObserverIs::Switch(_)));
    assert_eq!(o.is[2], ObserverIs::Host(0));
    assert_eq!(o.hosts.own_table, [true]);
    assert!(
        id.host_names
            .iter()
            .zip(&id.is_switch)
            .all(|(&n, &sw)| (n == NONE) == sw)
    );
}

#[test]
fn ports_resolve_by_ifname_alias_description_or_stay_advertised() {
    let mut t = small();
    t[2].ports[0].neighbors[0] = seen(2, "leaf1", PortIdSubtype::MacAddress, "aa:bb");
    t[2].ports[0].neighbors[0].port_description = Some("swp2".into());
    t[2].ports[1].neighbors[0] = seen(2, "leaf1", PortIdSubtype::Local, "Eth1/1");
    let mut b = FabricBuilder::new();
    for x in &t {
        b.add_table(x);
    }
    b.add_advertised_ports(
        &t[1].observer,
        &[crate::fabric::AdvertisedPort {
            port: "swp1".into(),
            port_id: PortId {
                subtype: PortIdSubtype::Local,
                value: "Eth1/1".into(),
            },
        }],
    );
    let r = b.into_raw();
    let mut id = identity_from_raw(r, InferOptions::default());
    let o = observed(&mut id);
    let leaf = id.switches.of_entity[id.entities.of_observer[1] as usize];
    let resolve = |i: usize| o.ports.resolve(&id.raw.strings, leaf, &id.raw.neighbors[i]);
    let h1 = |port: &str| {
        id.raw
            .neighbors
            .iter()
            .position(|n| {
                id.raw.observers[n.observer as usize].role == Some(Role::Host)
                    && name_of(&id, n.port) == port
            })
            .unwrap()
    };
    let (by_descr, _) = resolve(h1("ens2"));
    assert!(by_descr.resolved);
    assert_eq!(&*by_descr.name, "swp2");
    let (by_alias, sym) = resolve(h1("ens10"));
    assert_eq!((&*by_alias.name, name_of(&id, sym)), ("swp1", "swp1"));
    // The same MAC Port ID without a description stays what it advertised.
    let mut n = id.raw.neighbors[h1("ens2")];
    n.port_descr = NONE;
    let (kept, sym) = o.ports.resolve(&id.raw.strings, leaf, &n);
    assert_eq!(
        (&*kept.name, kept.resolved, sym),
        ("mac:aa:bb", false, NONE)
    );
}

#[test]
fn observations_collect_nics_sightings_busy_ports_and_hosts_seen_from_leaves() {
    let mut t = small();
    // gpu7 has no table; leaf1 sees it on swp9 (a host: station).
    t[1].ports[3].neighbors.push(with_caps(
        seen(7, "gpu7", PortIdSubtype::InterfaceName, "ens1f0np0"),
        &[Capability::Station],
    ));
    let mut id = identity(&t);
    let o = observed(&mut id);
    assert_eq!(o.obs.slots.len(), 3, "h1's two NICs and gpu7's");
    assert_eq!(o.obs.sightings.len(), 2, "spine1->leaf1 and leaf1->spine1");
    assert_eq!(o.obs.busy.len(), 3, "spine1 swp1, leaf1 swp51 and swp9");
    let gpu7 = o
        .hosts
        .names
        .iter()
        .position(|&n| name_of(&id, n) == "gpu7");
    let gpu7 = gpu7.expect("gpu7 joined from the leaf's table") as u32;
    assert!(!o.hosts.own_table[gpu7 as usize]);
    let c = o
        .obs
        .candidates
        .iter()
        .find(|c| c.slot >> 32 == u64::from(gpu7))
        .unwrap();
    assert_eq!((c.src, name_of(&id, c.own_port)), (NONE, "swp9"));
    assert_eq!(name_of(&id, c.slot as u32), "ens1f0np0");
}

fn records(id: &mut Identity) -> (hosts::HostRecords, Vec<Finding>) {
    let o = observed(id);
    let cx = LinkContext {
        neighbors: &id.raw.neighbors,
        chassis: &id.raw.chassis,
        ports: &o.ports,
        switches: &id.switches.switches,
        host_name_of_entity: &id.host_names,
        strings: &id.raw.strings,
    };
    let mut findings = Vec::new();
    let r = hosts::host_records(&o.obs, &o.hosts, &cx, &mut findings);
    (r, findings)
}

#[test]
fn host_records_pick_links_and_report_extra_or_foreign_neighbours() {
    let mut t = small();
    t[2].ports[0].neighbors.push(with_caps(
        seen(5, "storage1", PortIdSubtype::MacAddress, "x"),
        &[Capability::Station],
    ));
    t.push(table(
        "h0",
        None,
        Some(Role::Host),
        vec![(
            "ens2",
            vec![with_caps(
                seen(5, "storage1", PortIdSubtype::MacAddress, "x"),
                &[Capability::Station],
            )],
        )],
    ));
    let mut id = identity(&t);
    let (r, findings) = records(&mut id);
    let names: Vec<&str> = r.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["h0", "h1"]);
    let nics: Vec<&str> = r.hosts[1].nics.iter().map(|n| &*n.name).collect();
    assert_eq!(nics, ["ens2", "ens10"], "natural order");
    assert!(r.hosts[1].nics.iter().all(|n| n.link.is_some()));
    assert!(r.hosts[0].nics[0].link.is_none());
    let mut kinds: Vec<(FindingKind, &str)> = findings
        .iter()
        .map(|f| (f.kind, f.host.as_deref().unwrap_or("")))
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            (FindingKind::NotASwitch, "h0"),
            (FindingKind::MultipleNeighbors, "h1"),
        ]
    );
    assert_eq!(r.used.len(), 2, "both leaf ports h1 is placed on");
}

#[test]
fn rails_by_nic_name_or_by_order() {
    let mut t = small();
    t.push(table(
        "h2",
        None,
        Some(Role::Host),
        vec![
            ("eth0", vec![switch(2, "leaf1", "swp9")]),
            ("ens10", vec![switch(2, "leaf1", "swp10")]),
        ],
    ));
    let mut id = identity(&t);
    let (mut r, _) = records(&mut id);
    let mut findings = Vec::new();
    let mut syms = r.nic_syms.clone();
    let by_name = hosts::rails(
        &mut r.hosts,
        &mut syms,
        &id.raw.strings,
        RailKey::NicName,
        &mut findings,
    );
    let keys: Vec<&str> = by_name.iter().map(|k| &**k).collect();
    assert_eq!(keys, ["ens10"], "the one NIC name both hosts have");
    assert_eq!(r.hosts[1].nics[0].rail, 0, "h2 ens10");
    let lone: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| (f.host.as_deref().unwrap(), f.nic.as_deref().unwrap()))
        .collect();
    assert_eq!(
        lone,
        [("h1", "ens2"), ("h2", "eth0")],
        "no other host has them"
    );
    assert!(
        findings
            .iter()
            .all(|f| f.kind == FindingKind::DisputedReport)
    );
    let (mut r, _) = records(&mut id);
    let mut syms = r.nic_syms.clone();
    let by_order = hosts::rails(
        &mut r.hosts,
        &mut syms,
        &id.raw.strings,
        RailKey::NicOrder,
        &mut findings,
    );
    assert_eq!(by_order.len(), 2);
    assert_eq!(r.hosts[1].nics[1].rail, 1, "h2's second NIC, eth0");
}

#[test]
fn switch_links_pair_both_ends_and_free_ports_exclude_used_ones() {
    let mut id = identity(&small());
    let o = observed(&mut id);
    let mut used = vec![key(0, id.raw.strings.id_of("swp2"))];
    let links = links::switch_links(
        o.obs.sightings.clone(),
        &id.raw.neighbors,
        &o.ports,
        &id.raw.strings,
        &mut used,
    );
    assert_eq!(links.len(), 1, "one cable seen from both ends");
    let l = &links[0];
    assert_eq!(
        (&*l.lower.port.name, &*l.upper.port.name),
        ("swp51", "swp1")
    );
    let mut switches = id.switches.switches.clone();
    links::free_ports(
        &o.ports.listed,
        &o.obs.busy,
        used,
        &id.raw.strings,
        &mut switches,
    );
    let free: Vec<&str> = switches[0].free_ports.iter().map(|p| &**p).collect();
    assert_eq!(
        free,
        ["swp1", "swp9"],
        "leaf1: swp2 is used by h1, swp51 busy"
    );
}

#[test]
fn tiers_grow_from_the_leaves_and_links_point_up() {
    let mut t = small();
    t.push(table("lonely", Some(20), Some(Role::Switch), vec![]));
    let mut id = identity(&t);
    let (mut r, _) = records(&mut id);
    let o = observed(&mut id);
    let mut used = Vec::new();
    let links = links::switch_links(
        o.obs.sightings.clone(),
        &id.raw.neighbors,
        &o.ports,
        &id.raw.strings,
        &mut used,
    );
    let mut switches = id.switches.switches.clone();
    let mut findings = Vec::new();
    let depth = tiers::tiers(&mut switches, &mut r.hosts, &links, &mut findings);
    assert_eq!(depth, 2);
    let tiers: Vec<(&str, Option<u8>)> =
        switches.iter().map(|s| (s.name.as_str(), s.tier)).collect();
    assert_eq!(
        tiers,
        [("leaf1", Some(1)), ("lonely", None), ("spine1", Some(2))]
    );
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].kind, FindingKind::UnplacedSwitch);
    let oriented = tiers::orient(links, &switches);
    assert_eq!(oriented[0].kind, LinkKind::Uplink);
    assert_eq!(switches[oriented[0].lower.switch.0 as usize].name, "leaf1");
}

#[test]
fn unused_identity_parts_stay_consistent() {
    // Every switch entity maps to a switch record and back.
    let id = identity(&small());
    for (e, &sw) in id.switches.of_entity.iter().enumerate() {
        assert_eq!(sw != NONE, id.is_switch[e]);
    }
    assert_eq!(id.seen.names.len(), id.raw.chassis.len());
}

/// `small()` as lldpd on every box would give it with h1 routing: h1 gives its chassis and no
/// role, and leaf1 sees it advertise Router.
fn small_routing_host() -> Vec<NeighborTable> {
    let mut t = small();
    t[2].observer.chassis_id = Some(chassis(3));
    t[2].observer.role = None;
    t[1].ports[1].neighbors.push(with_caps(
        seen(3, "h1", PortIdSubtype::InterfaceName, "ens10"),
        &[Capability::Router],
    ));
    t
}

#[test]
fn a_router_only_system_is_a_host_when_cabled_to_a_switch_fabric() {
    let id = identity(&small_routing_host());
    let h1 = id.entities.of_observer[2] as usize;
    assert!(
        !id.is_switch[h1],
        "h1 hangs off leaf1, which links to spine1"
    );
    assert_eq!(name_of(&id, id.host_names[h1]), "h1");
    // Named hosts: shape is not consulted, and h1 is one of them.
    let id = identity_with(
        &small_routing_host(),
        InferOptions {
            hosts: vec!["h1".into()],
            ..InferOptions::default()
        },
    );
    assert!(!id.is_switch[h1]);
    // Named hosts that do not include it: a Router is a switch.
    let id = identity_with(
        &small_routing_host(),
        InferOptions {
            hosts: vec!["other".into()],
            ..InferOptions::default()
        },
    );
    assert!(id.is_switch[h1]);
}

#[test]
fn the_caller_names_hosts_by_any_spelling_and_by_their_fabric_nics() {
    let mut t = small_routing_host();
    // h1 advertises Bridge too (a node with a CNI bridge): capabilities say switch.
    t[1].ports[1].neighbors[0] = with_caps(
        seen(3, "h1.fab.example", PortIdSubtype::InterfaceName, "ens10"),
        &[Capability::Bridge, Capability::Router],
    );
    let h1 = |id: &Identity| id.entities.of_observer[2] as usize;
    let id = identity(&t);
    assert!(id.is_switch[h1(&id)], "capabilities alone");
    let id = identity_with(
        &t,
        InferOptions {
            hosts: vec!["H1".into()],
            ..InferOptions::default()
        },
    );
    assert!(!id.is_switch[h1(&id)]);
    assert_eq!(
        name_of(&id, id.host_names[h1(&id)]),
        "H1",
        "the caller's spelling"
    );
    let id = identity_with(
        &t,
        InferOptions {
            fabric_nics: FabricNics::Matching(vec![NicPattern::new("ens*")]),
            ..InferOptions::default()
        },
    );
    assert!(!id.is_switch[h1(&id)], "it lists fabric NICs");
}

#[test]
fn the_nic_selection_drops_other_nics_before_they_are_observed() {
    let mut t = small();
    t[2].ports.push(PortNeighbors {
        port: "eno1".into(),
        neighbors: vec![switch(9, "oob1", "swp1")],
        counters: None,
    });
    let mut id = identity_with(
        &t,
        InferOptions {
            fabric_nics: FabricNics::Matching(vec![NicPattern::new("ens*")]),
            ..InferOptions::default()
        },
    );
    let o = observed(&mut id);
    let nics: Vec<&str> = o
        .obs
        .slots
        .iter()
        .map(|&s| name_of(&id, s as u32))
        .collect();
    assert_eq!(nics.len(), 2);
    assert!(!nics.contains(&"eno1"));
    let mut filter = NicFilter::new(&id.options.fabric_nics);
    let eno1 = id.raw.strings.id_of("eno1");
    assert_eq!(filter.selects(&id.raw.strings, "h1", eno1), Some(false));
}

#[test]
fn a_switch_joining_otherwise_separate_groups_is_taken_for_management() {
    // Two leaves of single-homed hosts (h1, h2 on leaf1; h3, h4 on leaf2) and oob1 on every
    // host's eno1.
    let tables: Vec<NeighborTable> = (1..=4u8)
        .map(|h| {
            let (leaf, name) = if h <= 2 { (1, "leaf1") } else { (2, "leaf2") };
            table(
                &format!("h{h}"),
                None,
                Some(Role::Host),
                vec![
                    ("ens1", vec![switch(leaf, name, &format!("swp{h}"))]),
                    ("eno1", vec![switch(9, "oob1", &format!("swp{h}"))]),
                ],
            )
        })
        .collect();
    let mut id = identity(&tables);
    let (mut r, _) = records(&mut id);
    let mut switches = id.switches.switches.clone();
    let mut findings = Vec::new();
    management::management_switches(&mut r, &mut switches, &mut findings);
    let oob = switches.iter().position(|s| s.name == "oob1").unwrap();
    assert!(switches[oob].management);
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].kind, FindingKind::ManagementSwitch);
    assert!(
        r.hosts
            .iter()
            .all(|h| h.nics.len() == 1 && &*h.nics[0].name == "ens1")
    );
    assert_eq!(r.nic_syms.len(), 4, "rails follow the NICs that are left");
    // A leaf shared by both hosts' only fabric NICs is a leaf, not a management switch.
    let mut id = identity(&tables[..1]);
    let (mut r, _) = records(&mut id);
    let mut switches = id.switches.switches.clone();
    management::management_switches(&mut r, &mut switches, &mut Vec::new());
    assert!(switches.iter().all(|s| !s.management));
}
