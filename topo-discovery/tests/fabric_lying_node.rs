//! One lying node must not bend the fabric for others (issue 25): with the options the fabric
//! controller uses (every node named, each node's fabric NICs as its report says), replacing
//! one node's report by anything at all leaves every other node's labels as they were. The
//! four attacks found against the live controller, then a property test over random fabrics
//! and arbitrary reports.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use spinel_api::labels::LabelOptions;
use spinel_wire::neighbor::{
    Capabilities, Capability, ChassisId, ChassisIdSubtype, Neighbor, NeighborTable, Observer,
    PortId, PortIdSubtype, PortNeighbors, Role, SCHEMA,
};
use topo_discovery::fabric::synthetic::{Lab, TWO_RAIL_NICS};
use topo_discovery::fabric::{self, Fabric, FabricNics, FindingKind, InferOptions, labels};

type Labels = BTreeMap<String, BTreeMap<String, String>>;

/// Inference as the controller runs it: the hosts are the nodes with a report, their fabric
/// NICs the ports their reports list.
fn infer(tables: &[NeighborTable]) -> Fabric {
    let hosts: Vec<&NeighborTable> = tables
        .iter()
        .filter(|t| t.observer.role == Some(Role::Host))
        .collect();
    let options = InferOptions {
        hosts: hosts.iter().map(|t| t.observer.name.clone()).collect(),
        fabric_nics: FabricNics::PerHost(
            hosts
                .iter()
                .map(|t| {
                    let nics = t.ports.iter().map(|p| p.port.clone()).collect();
                    (t.observer.name.clone(), nics)
                })
                .collect(),
        ),
        ..InferOptions::default()
    };
    fabric::infer(tables, &options)
}

fn all_labels(f: &Fabric) -> Labels {
    labels::node_labels(f, &LabelOptions::default())
        .into_iter()
        .map(|l| (l.node, l.labels))
        .collect()
}

/// Every node's labels but `liar`'s.
fn others(f: &Fabric, liar: &str) -> Labels {
    let mut l = all_labels(f);
    l.remove(liar);
    l
}

/// `tables` with `liar`'s report replaced by `report`.
fn with_report(tables: &[NeighborTable], liar: &str, report: NeighborTable) -> Vec<NeighborTable> {
    let mut out: Vec<NeighborTable> = tables
        .iter()
        .filter(|t| t.observer.name != liar)
        .cloned()
        .collect();
    out.push(report);
    out
}

fn report(node: &str, chassis: Option<ChassisId>, ports: Vec<PortNeighbors>) -> NeighborTable {
    NeighborTable {
        schema: SCHEMA.to_owned(),
        observer: Observer {
            name: node.to_owned(),
            chassis_id: chassis,
            role: Some(Role::Host),
        },
        ports,
    }
}

fn port(name: &str, neighbors: Vec<Neighbor>) -> PortNeighbors {
    PortNeighbors {
        port: name.to_owned(),
        neighbors,
        counters: None,
    }
}

/// What a leaf's LLDPDU says: `chassis` named `name`, on port `port`, bridge and router.
fn sees(chassis: ChassisId, name: &str, port: &str) -> Neighbor {
    Neighbor {
        system_name: Some(name.to_owned()),
        capabilities: Some(Capabilities {
            supported: vec![Capability::Bridge, Capability::Router],
            enabled: vec![Capability::Bridge, Capability::Router],
        }),
        ..Neighbor::new(
            chassis,
            PortId {
                subtype: PortIdSubtype::InterfaceName,
                value: port.to_owned(),
            },
            120,
        )
    }
}

fn junk_chassis(n: u32) -> ChassisId {
    ChassisId {
        subtype: ChassisIdSubtype::MacAddress,
        value: format!(
            "0e:00:00:{:02x}:{:02x}:{:02x}",
            n >> 16,
            (n >> 8) & 0xff,
            n & 0xff
        ),
    }
}

/// The lab fabric as the controller gets it: every node's report, and the switches' tables
/// when the operator gave them.
fn lab_tables(switch_tables: bool) -> Vec<NeighborTable> {
    Lab::two_rail_groups()
        .tables()
        .into_iter()
        .filter(|t| switch_tables || t.observer.role == Some(Role::Host))
        .collect()
}

/// Runs an attack by `h1` with and without the switches' tables: the other nodes keep their
/// labels, and the fabric is what it was.
fn holds(attack: &NeighborTable) -> Fabric {
    let mut last = None;
    for switch_tables in [false, true] {
        let honest = lab_tables(switch_tables);
        let before = infer(&honest);
        let after = infer(&with_report(&honest, "h1", attack.clone()));
        assert_eq!(
            others(&after, "h1"),
            others(&before, "h1"),
            "switch tables: {switch_tables}"
        );
        assert!(
            others(&before, "h1")
                .values()
                .all(|l| l.contains_key("fabric.spinel.dev/tier-1")),
            "every honest node is placed"
        );
        assert_eq!(after.rails, before.rails, "no rail added or renumbered");
        last = Some(after);
    }
    last.unwrap()
}

fn disputed(f: &Fabric, host: &str) -> usize {
    f.findings
        .iter()
        .filter(|x| x.kind == FindingKind::DisputedReport && x.host.as_deref() == Some(host))
        .count()
}

#[test]
fn a_fake_first_leaf_and_a_third_nic_do_not_merge_leaf_groups() {
    let [nic0, nic1] = TWO_RAIL_NICS;
    let attack = report(
        "h1",
        None,
        vec![
            port(nic0, vec![sees(junk_chassis(1), "leaf0", "swp1")]),
            port(nic1, vec![sees(Lab::chassis_of("leaf2"), "leaf2", "swp1")]),
            port(
                "ens3f0np0",
                vec![sees(Lab::chassis_of("leaf3"), "leaf3", "swp9")],
            ),
        ],
    );
    let f = holds(&attack);
    let h2 = &all_labels(&f)["h2"];
    assert_eq!(h2["fabric.spinel.dev/tier-1"], "spine1-2.leaf1-2");
}

#[test]
fn forty_nics_naming_a_leaf_evil_are_one_voice() {
    let ports = (0..40)
        .map(|i| {
            port(
                &format!("fake{i}"),
                vec![sees(Lab::chassis_of("leaf1"), "evil", "swp1")],
            )
        })
        .collect();
    let f = holds(&report("h1", None, ports));
    assert!(f.switch_by_name("evil").is_none(), "leaf1 keeps its name");
    assert!(f.switch_by_name("leaf1").is_some());
    assert!(
        disputed(&f, "h1") >= 40,
        "each lone NIC and the name are findings"
    );
}

#[test]
fn an_observer_chassis_equal_to_a_leafs_mac_takes_nothing_from_the_leaf() {
    let [nic0, nic1] = TWO_RAIL_NICS;
    let attack = report(
        "h1",
        Some(Lab::chassis_of("leaf3")),
        vec![
            port(nic0, vec![sees(Lab::chassis_of("leaf1"), "leaf1", "swp1")]),
            port(nic1, vec![sees(Lab::chassis_of("leaf2"), "leaf2", "swp1")]),
        ],
    );
    let f = holds(&attack);
    assert!(
        all_labels(&f)["h5"].contains_key("fabric.spinel.dev/rail-0"),
        "h5 keeps rail-0 on leaf3"
    );
    assert!(disputed(&f, "h1") >= 1, "the claim is a finding against h1");
}

#[test]
fn four_thousand_junk_neighbours_make_no_leaf_group_of_others() {
    let [nic0, nic1] = TWO_RAIL_NICS;
    let junk = (0..4000)
        .map(|i| sees(junk_chassis(i), &format!("junk{i}"), "swp1"))
        .collect();
    let attack = report(
        "h1",
        None,
        vec![
            port(nic0, junk),
            port(nic1, vec![sees(Lab::chassis_of("leaf2"), "leaf2", "swp1")]),
        ],
    );
    let f = holds(&attack);
    assert_eq!(
        all_labels(&f)["h2"]["fabric.spinel.dev/tier-1"],
        "spine1-2.leaf1-2"
    );
}

/// A clean rail-optimised fabric: `groups` leaf groups of `rails` leaves, `per_group` hosts
/// each (NIC k on leaf k of the group), `spines` spines above every leaf, switch names fully
/// qualified or not.
fn clean_fabric(groups: usize, rails: usize, per_group: usize, spines: usize, fqdn: bool) -> Lab {
    let dom = if fqdn { ".fab.example" } else { "" };
    let mut lab = Lab::new();
    for s in 1..=spines {
        lab.switch(&format!("spine{s}{dom}"));
    }
    let nics: Vec<String> = (0..rails).map(|k| format!("ens{}f0np0", k + 1)).collect();
    let nic_refs: Vec<&str> = nics.iter().map(String::as_str).collect();
    for g in 1..=groups {
        for k in 0..rails {
            let leaf = format!("leaf{g}-{k}{dom}");
            lab.switch(&leaf);
            for s in 1..=spines {
                let spine = format!("spine{s}{dom}");
                let leaf_no = (g - 1) * rails + k + 1;
                lab.cable(
                    &leaf,
                    &format!("swp{}", 50 + s),
                    &spine,
                    &format!("swp{leaf_no}"),
                );
            }
        }
        for h in 1..=per_group {
            let host = format!("h{g}x{h}");
            lab.host(&host, &nic_refs);
            for (k, nic) in nics.iter().enumerate() {
                lab.cable(&host, nic, &format!("leaf{g}-{k}{dom}"), &format!("swp{h}"));
            }
        }
    }
    lab
}

/// Names and chassis an arbitrary report draws from: the fabric's own, spellings of them,
/// and junk.
fn pools(lab: &Lab) -> (Vec<String>, Vec<ChassisId>) {
    let tables = lab.tables();
    let mut names: Vec<String> = tables.iter().map(|t| t.observer.name.clone()).collect();
    let mut extra: Vec<String> = names
        .iter()
        .filter_map(|n| n.split_once('.').map(|(s, _)| s.to_owned()))
        .collect();
    extra.extend(["evil", "leaf1", "junk0", "spine1.evil", "LEAF1-0"].map(String::from));
    names.extend(extra);
    let mut chassis: Vec<ChassisId> = tables
        .iter()
        .filter(|t| t.observer.role == Some(Role::Switch))
        .map(|t| Lab::chassis_of(&t.observer.name))
        .collect();
    chassis.extend((0..4).map(junk_chassis));
    (names, chassis)
}

/// One forged neighbour: indices into the chassis and name pools, a port number, capabilities.
type Forged = (usize, usize, usize, u8);

#[derive(Debug, Clone)]
struct Lie {
    chassis: Option<usize>,
    ports: Vec<(usize, Vec<Forged>)>,
}

fn lie() -> impl Strategy<Value = Lie> {
    let neighbor = (0usize..64, 0usize..64, 0usize..8, 0u8..4);
    let ports = prop::collection::vec((0usize..8, prop::collection::vec(neighbor, 0..4)), 0..6);
    (prop::option::of(0usize..64), ports).prop_map(|(chassis, ports)| Lie { chassis, ports })
}

/// The arbitrary report `lie` describes, drawn from the pools.
fn forge(node: &str, lie: &Lie, names: &[String], chassis: &[ChassisId]) -> NeighborTable {
    let nic_pool = [
        "ens1f0np0",
        "ens2f0np0",
        "ens3f0np0",
        "aaa0",
        "zz9",
        "eth0",
        "ens1f0np0",
        "x",
    ];
    let caps = |c: u8| -> Option<Capabilities> {
        let enabled = match c {
            0 => return None,
            1 => vec![Capability::Bridge, Capability::Router],
            2 => vec![Capability::Station],
            _ => vec![Capability::Router],
        };
        Some(Capabilities {
            supported: enabled.clone(),
            enabled,
        })
    };
    let ports = lie
        .ports
        .iter()
        .map(|(nic, seen)| {
            let neighbors = seen
                .iter()
                .map(|&(c, n, p, k)| Neighbor {
                    system_name: Some(names[n % names.len()].clone()),
                    capabilities: caps(k),
                    ..Neighbor::new(
                        chassis[c % chassis.len()].clone(),
                        PortId {
                            subtype: PortIdSubtype::InterfaceName,
                            value: format!("swp{p}"),
                        },
                        120,
                    )
                })
                .collect();
            port(nic_pool[nic % nic_pool.len()], neighbors)
        })
        .collect();
    report(
        node,
        lie.chassis.map(|c| chassis[c % chassis.len()].clone()),
        ports,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn any_one_report_leaves_every_other_nodes_labels_as_they_were(
        groups in 1usize..=3,
        rails in 2usize..=3,
        per_group in 3usize..=5,
        spines in 0usize..=2,
        fqdn in any::<bool>(),
        switch_tables in any::<bool>(),
        liar in 0usize..64,
        lie in lie(),
    ) {
        let lab = clean_fabric(groups, rails, per_group, spines, fqdn);
        let honest: Vec<NeighborTable> = lab
            .tables()
            .into_iter()
            .filter(|t| switch_tables || t.observer.role == Some(Role::Host))
            .collect();
        let hosts: Vec<String> = honest
            .iter()
            .filter(|t| t.observer.role == Some(Role::Host))
            .map(|t| t.observer.name.clone())
            .collect();
        let liar = &hosts[liar % hosts.len()];
        let (names, chassis) = pools(&lab);
        let forged = forge(liar, &lie, &names, &chassis);
        let before = infer(&honest);
        let after = infer(&with_report(&honest, liar, forged.clone()));
        prop_assert_eq!(others(&after, liar), others(&before, liar), "forged: {:#?}", forged);
    }
}
