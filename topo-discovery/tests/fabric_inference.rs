//! Inference on hand-cabled fabrics: tiers, leaf groups, rails, ids, and the miswiring report.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use spinel_wire::neighbor::Role;
use topo_discovery::fabric::synthetic::{Lab, TWO_RAIL_NICS};
use topo_discovery::fabric::{Fabric, FindingKind, InferOptions, RailKey, Severity, infer, names};

const NIC0: &str = TWO_RAIL_NICS[0];
const NIC1: &str = TWO_RAIL_NICS[1];

fn run(lab: &Lab) -> Fabric {
    infer(&lab.tables(), &InferOptions::default())
}

fn kinds(f: &Fabric) -> Vec<(Severity, FindingKind, Option<&str>, Option<&str>)> {
    f.findings
        .iter()
        .map(|x| (x.severity, x.kind, x.host.as_deref(), x.nic.as_deref()))
        .collect()
}

fn domain_of<'a>(f: &'a Fabric, host: &str) -> Vec<&'a str> {
    let h = f.host_by_name(host).expect("host exists");
    f.host_path(h).iter().map(|d| d.id.as_str()).collect()
}

#[test]
fn clean_rail_fabric_has_tiers_groups_and_no_findings() {
    let f = run(&Lab::two_rail_groups());
    assert!(f.findings.is_empty(), "{:#?}", f.findings);
    assert!(f.rail_optimized);
    assert_eq!(f.depth, 2);
    assert_eq!(&*f.rails[0], NIC0);
    assert_eq!(&*f.rails[1], NIC1);
    for s in &f.switches {
        let want = if s.name.starts_with("spine") { 2 } else { 1 };
        assert_eq!(s.tier, Some(want), "{}", s.name);
    }
    assert_eq!(domain_of(&f, "h1"), ["spine1-2.leaf1-2", "spine1-2"]);
    assert_eq!(domain_of(&f, "h4"), ["spine1-2.leaf1-2", "spine1-2"]);
    assert_eq!(domain_of(&f, "h5"), ["spine1-2.leaf3-4", "spine1-2"]);
    let leaf2 = f.switch(f.switch_by_name("leaf2").unwrap());
    assert_eq!(leaf2.rails, [1], "leaf2 serves rail 1");
    assert_eq!(leaf2.id, "spine1-2.leaf1-2.leaf2");
    let spine1 = f.switch(f.switch_by_name("spine1").unwrap());
    assert_eq!(spine1.id, "spine1-2.spine1");
    assert_eq!(f.domains.len(), 3);
    assert_eq!(f.links.len(), 8);
}

#[test]
fn swapped_cables_are_reported_per_nic_with_the_port_to_fix() {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("h1", NIC0).uncable("h1", NIC1);
    lab.cable("h1", NIC0, "leaf2", "swp1")
        .cable("h1", NIC1, "leaf1", "swp1");
    let f = run(&lab);
    assert_eq!(
        kinds(&f),
        [
            (
                Severity::Error,
                FindingKind::SwappedRail,
                Some("h1"),
                Some(NIC0)
            ),
            (
                Severity::Error,
                FindingKind::SwappedRail,
                Some("h1"),
                Some(NIC1)
            ),
        ]
    );
    let first = &f.findings[0];
    assert_eq!(first.switch.as_deref(), Some("leaf2"));
    assert_eq!(first.port.as_deref(), Some("swp1"));
    assert_eq!(first.expected.as_deref(), Some("leaf leaf1"));
    assert!(
        first.message.contains("swapped with ens1f1np1"),
        "{}",
        first.message
    );
    // One miswired host changes nothing else.
    assert_eq!(domain_of(&f, "h1"), ["spine1-2.leaf1-2", "spine1-2"]);
    assert!(f.rail_optimized);
}

#[test]
fn two_nics_on_one_leaf_are_reported_on_the_misplaced_nic() {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("h2", NIC1).cable("h2", NIC1, "leaf1", "swp9");
    let f = run(&lab);
    assert_eq!(
        kinds(&f),
        [(
            Severity::Error,
            FindingKind::SharedLeaf,
            Some("h2"),
            Some(NIC1)
        )]
    );
    let x = &f.findings[0];
    assert_eq!(
        (x.switch.as_deref(), x.port.as_deref()),
        (Some("leaf1"), Some("swp9"))
    );
    assert_eq!(x.expected.as_deref(), Some("leaf leaf2"));
}

#[test]
fn dropped_uplink_names_the_leaf_and_the_spine() {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("leaf3", "swp52")
        .free_port("leaf3", "swp52")
        .free_port("spine2", "swp3");
    let f = run(&lab);
    assert_eq!(
        kinds(&f),
        [(Severity::Error, FindingKind::MissingUplink, None, None)]
    );
    let x = &f.findings[0];
    assert_eq!(x.switch.as_deref(), Some("leaf3"));
    assert_eq!(x.port.as_deref(), Some("swp52"));
    assert_eq!(x.expected.as_deref(), Some("spine spine2"));
    assert!(x.message.contains("free ports: swp3"), "{}", x.message);
}

#[test]
fn extra_parallel_uplink_is_an_asymmetric_fan_out() {
    let mut lab = Lab::two_rail_groups();
    lab.cable("leaf1", "swp53", "spine1", "swp9");
    let f = run(&lab);
    assert_eq!(
        kinds(&f),
        [(Severity::Warning, FindingKind::AsymmetricFanout, None, None)]
    );
    let x = &f.findings[0];
    assert_eq!(x.switch.as_deref(), Some("spine1"));
    assert!(
        x.message.contains("leaf leaf1 (ports swp51, swp53)"),
        "{}",
        x.message
    );
}

#[test]
fn a_spine_reaching_few_leaves_is_an_asymmetric_fan_out() {
    let mut lab = Lab::two_rail_groups();
    lab.switch("spine3")
        .cable("leaf1", "swp53", "spine3", "swp1");
    let f = run(&lab);
    assert_eq!(
        kinds(&f),
        [(Severity::Warning, FindingKind::AsymmetricFanout, None, None)]
    );
    let x = &f.findings[0];
    assert_eq!(x.switch.as_deref(), Some("spine3"));
    assert_eq!(x.expected.as_deref(), Some("4 downlinks"));
}

#[test]
fn half_the_leaves_without_a_spine_are_missing_uplinks() {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("leaf3", "swp52").uncable("leaf4", "swp52");
    let f = run(&lab);
    let missing: Vec<&str> = f
        .findings
        .iter()
        .filter(|x| x.kind == FindingKind::MissingUplink)
        .filter_map(|x| x.switch.as_deref())
        .collect();
    assert_eq!(missing, ["leaf3", "leaf4"]);
    assert_eq!(f.findings.len(), 2, "{:#?}", f.findings);
}

#[test]
fn missing_rail_absent_nic_and_dark_nic() {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("h3", NIC1); // listed, no neighbour
    lab.table_mut("h6")
        .unwrap()
        .ports
        .retain(|p| p.port != NIC1); // not listed at all
    let f = run(&lab);
    assert_eq!(
        kinds(&f),
        [
            (
                Severity::Error,
                FindingKind::MissingRail,
                Some("h3"),
                Some(NIC1)
            ),
            (Severity::Error, FindingKind::MissingRail, Some("h6"), None),
        ]
    );
    assert_eq!(f.findings[0].switch.as_deref(), Some("leaf2"));
    assert_eq!(f.findings[1].switch.as_deref(), Some("leaf4"));
}

#[test]
fn a_nic_on_a_server_is_not_a_switch() {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("h7", NIC1)
        .sees_device("h7", NIC1, "storage01", "eth0");
    let f = run(&lab);
    let k = kinds(&f);
    assert!(
        k.contains(&(
            Severity::Error,
            FindingKind::NotASwitch,
            Some("h7"),
            Some(NIC1)
        )),
        "{k:?}"
    );
    assert!(
        k.contains(&(
            Severity::Error,
            FindingKind::MissingRail,
            Some("h7"),
            Some(NIC1)
        )),
        "{k:?}"
    );
    assert!(
        f.switch_by_name("storage01").is_none(),
        "a server is not a switch"
    );
}

#[test]
fn a_nic_in_another_group_is_reported_and_groups_hold() {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("h1", NIC1).cable("h1", NIC1, "leaf4", "swp9");
    let f = run(&lab);
    assert_eq!(
        kinds(&f),
        [(
            Severity::Error,
            FindingKind::WrongGroup,
            Some("h1"),
            Some(NIC1)
        )]
    );
    assert_eq!(f.findings[0].expected.as_deref(), Some("leaf leaf2"));
    assert_eq!(domain_of(&f, "h1"), ["spine1-2.leaf1-2", "spine1-2"]);
    assert_eq!(domain_of(&f, "h8"), ["spine1-2.leaf3-4", "spine1-2"]);
}

#[test]
fn single_nic_hosts_make_each_leaf_its_own_domain() {
    let mut lab = Lab::new();
    lab.switch("spine1").switch("leaf1").switch("leaf2");
    lab.cable("leaf1", "swp51", "spine1", "swp1")
        .cable("leaf2", "swp51", "spine1", "swp2");
    for h in 1..=4 {
        let host = format!("h{h}");
        lab.host(&host, &["eth0"]);
        lab.cable(
            &host,
            "eth0",
            if h <= 2 { "leaf1" } else { "leaf2" },
            &format!("swp{h}"),
        );
    }
    let f = run(&lab);
    assert!(f.findings.is_empty(), "{:#?}", f.findings);
    assert!(!f.rail_optimized);
    assert_eq!(domain_of(&f, "h1"), ["spine1.leaf1", "spine1"]);
    assert_eq!(domain_of(&f, "h3"), ["spine1.leaf2", "spine1"]);
}

#[test]
fn all_nics_on_one_leaf_is_not_rail_optimised_and_not_an_error() {
    let mut lab = Lab::new();
    lab.switch("leaf1").switch("leaf2");
    for h in 1..=4 {
        let host = format!("h{h}");
        lab.host(&host, &[NIC0, NIC1]);
        let leaf = if h <= 2 { "leaf1" } else { "leaf2" };
        lab.cable(&host, NIC0, leaf, &format!("swp{h}a"));
        lab.cable(&host, NIC1, leaf, &format!("swp{h}b"));
    }
    let f = run(&lab);
    assert!(!f.rail_optimized);
    assert!(f.findings.is_empty(), "{:#?}", f.findings);
    assert_eq!(f.depth, 1);
    assert_eq!(domain_of(&f, "h1"), ["leaf1"]);
}

#[test]
fn leaves_named_alike_under_different_spines_never_merge() {
    let mut lab = Lab::new();
    // Two separate fabrics; their leaves share the system name "leaf1" (different chassis).
    lab.switch("spine-a").switch("spine-b");
    lab.switch("leaf1");
    lab.table_mut("leaf1").unwrap().observer.name = "leaf1".into();
    // A second switch whose system name is also leaf1: build it as "leaf1-b" and rename.
    lab.switch("leaf1-b");
    lab.cable("leaf1", "swp51", "spine-a", "swp1");
    lab.cable("leaf1-b", "swp51", "spine-b", "swp1");
    lab.host("h1", &["eth0"]).host("h2", &["eth0"]);
    lab.cable("h1", "eth0", "leaf1", "swp1")
        .cable("h2", "eth0", "leaf1-b", "swp1");
    let mut tables = lab.tables();
    for t in &mut tables {
        if t.observer.name == "leaf1-b" {
            t.observer.name = "leaf1".into();
        }
        for p in &mut t.ports {
            for n in &mut p.neighbors {
                if n.system_name.as_deref() == Some("leaf1-b") {
                    n.system_name = Some("leaf1".into());
                }
            }
        }
    }
    let f = infer(&tables, &InferOptions::default());
    assert!(f.findings.is_empty(), "{:#?}", f.findings);
    assert_eq!(domain_of(&f, "h1"), ["spine-a.leaf1", "spine-a"]);
    assert_eq!(domain_of(&f, "h2"), ["spine-b.leaf1", "spine-b"]);
    assert_eq!(f.switches.iter().filter(|s| s.name == "leaf1").count(), 2);
}

#[test]
fn leaves_named_alike_under_one_spine_get_distinct_ids() {
    let mut lab = Lab::new();
    lab.switch("spine1").switch("leafx").switch("leafy");
    lab.cable("leafx", "swp51", "spine1", "swp1")
        .cable("leafy", "swp51", "spine1", "swp2");
    lab.host("h1", &["eth0"]).host("h2", &["eth0"]);
    lab.cable("h1", "eth0", "leafx", "swp1")
        .cable("h2", "eth0", "leafy", "swp1");
    let mut tables = lab.tables();
    for t in &mut tables {
        if t.observer.name.starts_with("leaf") {
            t.observer.name = "leaf".into();
        }
        for p in &mut t.ports {
            for n in &mut p.neighbors {
                if n.system_name
                    .as_deref()
                    .is_some_and(|s| s.starts_with("leaf"))
                {
                    n.system_name = Some("leaf".into());
                }
            }
        }
    }
    let f = infer(&tables, &InferOptions::default());
    let a = domain_of(&f, "h1")[0].to_owned();
    let b = domain_of(&f, "h2")[0].to_owned();
    assert_ne!(a, b);
    assert!(
        a.starts_with("spine1.leaf-") && names::is_valid_id(&a),
        "{a}"
    );
}

#[test]
fn long_names_fall_back_to_hashed_ids_that_stay_valid() {
    let mut lab = Lab::new();
    let spine = "spine-with-a-really-long-hostname-in-datacenter-frankfurt-hall-7";
    let leaf = "leaf-with-a-really-long-hostname-in-datacenter-frankfurt-hall-7";
    lab.switch(spine).switch(leaf);
    lab.cable(leaf, "swp51", spine, "swp1");
    lab.host("h1", &["eth0"]).cable("h1", "eth0", leaf, "swp1");
    let f = run(&lab);
    for d in &f.domains {
        assert!(names::is_valid_id(&d.id), "{}", d.id);
    }
    let path = domain_of(&f, "h1");
    assert!(
        path[0].starts_with("leaf-with-a-really-long-hostname-in-datac"),
        "{}",
        path[0]
    );
    assert_eq!(path[0].len(), 63);
}

#[test]
fn an_observer_without_chassis_id_is_matched_by_system_name() {
    let mut lab = Lab::two_rail_groups();
    // leaf1's own table lost its chassis ID (another tool wrote it): hosts and spines still
    // see leaf1 by chassis; the table must join the same switch by name.
    let t = lab.table_mut("leaf1").unwrap();
    t.observer.chassis_id = None;
    t.observer.role = None;
    lab.free_port("leaf1", "swp30");
    let f = run(&lab);
    assert!(f.findings.is_empty(), "{:#?}", f.findings);
    assert_eq!(f.switches.iter().filter(|s| s.name == "leaf1").count(), 1);
    let leaf1 = f.switch(f.switch_by_name("leaf1").unwrap());
    assert_eq!(&*leaf1.free_ports[0], "swp30");
}

#[test]
fn hosts_seen_only_from_switch_tables_are_placed() {
    // Hosts that run lldpd (transmitting) but gave no table: the leaf's table shows them.
    let mut lab = Lab::new();
    lab.switch("spine1").switch("leaf1");
    lab.cable("leaf1", "swp51", "spine1", "swp1");
    let tables = {
        let mut t = lab.tables();
        let leaf = t.iter_mut().find(|t| t.observer.name == "leaf1").unwrap();
        let mut seen = leaf.ports[0].neighbors[0].clone();
        seen.system_name = Some("gpu01".into());
        seen.chassis_id = Lab::chassis_of("gpu01");
        seen.port_id.value = "ens1f0np0".into();
        seen.capabilities = Some(spinel_wire::neighbor::Capabilities {
            supported: vec![spinel_wire::neighbor::Capability::Station],
            enabled: vec![spinel_wire::neighbor::Capability::Station],
        });
        leaf.ports.push(spinel_wire::neighbor::PortNeighbors {
            port: "swp1".into(),
            neighbors: vec![seen],
            counters: None,
        });
        t
    };
    let f = infer(&tables, &InferOptions::default());
    let h = f.host_by_name("gpu01").expect("host placed");
    let host = f.host(h);
    assert!(host.seen_from_switches_only);
    assert_eq!(&*host.nics[0].name, "ens1f0np0");
    assert_eq!(domain_of(&f, "gpu01"), ["spine1.leaf1", "spine1"]);
}

#[test]
fn rails_by_nic_order_tolerate_different_nic_names() {
    let mut lab = Lab::new();
    lab.switch("leaf1").switch("leaf2");
    for h in 1..=4 {
        let host = format!("h{h}");
        let nics = if h % 2 == 0 {
            ["eth0", "eth1"]
        } else {
            ["ens1", "ens2"]
        };
        lab.host(&host, &nics);
        lab.cable(&host, nics[0], "leaf1", &format!("swp{h}"));
        lab.cable(&host, nics[1], "leaf2", &format!("swp{h}"));
    }
    let by_name = run(&lab);
    assert_eq!(by_name.rails.len(), 4);
    let by_order = infer(
        &lab.tables(),
        &InferOptions {
            rail_key: RailKey::NicOrder,
            ..InferOptions::default()
        },
    );
    assert_eq!(by_order.rails.len(), 2);
    assert!(by_order.rail_optimized);
    assert!(by_order.findings.is_empty(), "{:#?}", by_order.findings);
}

#[test]
fn explicit_host_role_with_chassis_does_not_invent_a_switch() {
    let mut lab = Lab::two_rail_groups();
    let t = lab.table_mut("h1").unwrap();
    t.observer.chassis_id = Some(Lab::chassis_of("h1"));
    assert_eq!(t.observer.role, Some(Role::Host));
    let f = run(&lab);
    assert!(f.findings.is_empty(), "{:#?}", f.findings);
    assert_eq!(f.switches.len(), 6);
}

#[test]
fn a_synthetic_three_tier_fabric_has_the_expected_shape() {
    use topo_discovery::fabric::FabricBuilder;
    use topo_discovery::fabric::synthetic::SyntheticSpec;
    let spec = SyntheticSpec::rail_optimized(1500);
    let mut b = FabricBuilder::new();
    for t in spec.tables() {
        b.add_table(&t);
    }
    let f = b.infer(&InferOptions::default());
    assert!(
        f.findings.is_empty(),
        "{:#?}",
        &f.findings[..f.findings.len().min(5)]
    );
    assert!(f.rail_optimized);
    assert_eq!((f.depth, f.rails.len()), (3, 8));
    let per_tier = |t: u8| f.domains.iter().filter(|d| d.tier == t).count();
    assert_eq!(
        (per_tier(1), per_tier(2), per_tier(3)),
        (spec.groups(), spec.pods(), 1)
    );
    assert_eq!(
        f.switches.len(),
        spec.leaves() + spec.spines() + spec.super_spines
    );
    // Host 40 is in group 1 of pod 0: its path names its leaf group, its pod and the core.
    let path = domain_of(&f, &spec.host_name(40));
    assert_eq!(
        path,
        [
            "super0-15.spine-p0-0-7.leaf-g1-r0-7",
            "super0-15.spine-p0-0-7",
            "super0-15"
        ]
    );
    for d in &f.domains {
        assert!(names::is_valid_id(&d.id), "{}", d.id);
    }
}

#[test]
fn finding_names_in_text_match_the_json() {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("h1", NIC0).uncable("h1", NIC1);
    lab.cable("h1", NIC0, "leaf2", "swp1")
        .cable("h1", NIC1, "leaf1", "swp1");
    let f = run(&lab);
    for x in &f.findings {
        let json = serde_json::to_value(x).unwrap();
        assert_eq!(json["kind"], x.kind.as_str());
        assert_eq!(json["severity"], x.severity.as_str());
        assert!(
            x.to_string()
                .starts_with(&format!("error[{}]: h1 ", x.kind.as_str())),
            "{x}"
        );
    }
}

#[test]
fn a_leaf_that_lost_every_host_stays_a_leaf_and_relabels_nobody_else() {
    // leaf1 reboots: h1..h4's first NICs see nothing, the spines' tables still show leaf1.
    let before = run(&Lab::two_rail_groups());
    let mut lab = Lab::two_rail_groups();
    for h in 1..=4 {
        let host = format!("h{h}");
        let t = lab.table_mut(&host).unwrap();
        t.ports
            .iter_mut()
            .filter(|p| p.port == NIC0)
            .for_each(|p| p.neighbors.clear());
    }
    lab.drop_table("leaf1");
    let f = run(&lab);
    let leaf1 = f.switch(f.switch_by_name("leaf1").unwrap());
    assert_eq!(
        leaf1.tier,
        Some(1),
        "a leaf without hosts, not a tier above the spines"
    );
    assert_eq!(f.depth, 2);
    for h in 5..=8 {
        let host = format!("h{h}");
        assert_eq!(domain_of(&f, &host), domain_of(&before, &host), "{host}");
    }
    assert_eq!(domain_of(&f, "h1"), ["spine1-2.leaf2", "spine1-2"]);
}
