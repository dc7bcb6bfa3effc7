//! Inputs real clusters produce (issue 8), at the library level: lldpd on every box, hosts
//! that route, management NICs on an out-of-band switch, fully qualified switch names,
//! neighbours-only tables, host-to-host cables, and what the caller can say (host list,
//! fabric NICs). The namespace tier repeats these with real lldpd captures.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use spinel_wire::neighbor::{Capabilities, Capability, NeighborTable};
use topo_discovery::fabric::synthetic::{Lab, TWO_RAIL_NICS};
use topo_discovery::fabric::{
    Fabric, FabricBuilder, FabricNics, FindingKind, InferOptions, NicPattern, ObserverFacts,
    Severity,
};

const NIC1: &str = TWO_RAIL_NICS[1];

/// Tables with the capabilities their box advertises (lldpd), or none (Spinel's listener,
/// neighbours-only captures).
type Tables = Vec<(NeighborTable, Option<Capabilities>)>;

fn lldpd(lab: &Lab, host_caps: &[Capability]) -> Tables {
    lab.lldpd_tables(host_caps)
        .into_iter()
        .map(|(t, c)| (t, Some(c)))
        .collect()
}

fn infer_lldpd(tables: &Tables, options: &InferOptions) -> Fabric {
    let mut b = FabricBuilder::new();
    for (t, caps) in tables {
        match caps {
            Some(caps) => {
                let facts = ObserverFacts {
                    capabilities: Some(caps),
                    role_from_capabilities: true,
                    stand_in: None,
                };
                b.add_table_with(t, &facts);
            }
            None => b.add_table(t),
        }
    }
    b.infer(options)
}

fn kinds(f: &Fabric) -> Vec<(FindingKind, Option<&str>)> {
    f.findings
        .iter()
        .map(|x| (x.kind, x.host.as_deref()))
        .collect()
}

fn groups(f: &Fabric) -> Vec<&str> {
    f.domains
        .iter()
        .filter(|d| d.tier == 1)
        .map(|d| d.id.as_str())
        .collect()
}

/// The clean lab, plus an out-of-band switch on every host's `eno1`.
fn lab_with_oob() -> Lab {
    let mut lab = Lab::two_rail_groups();
    lab.switch("oob1");
    for h in 1..=8 {
        let host = format!("h{h}");
        lab.table_mut(&host).unwrap().ports.push(
            serde_json::from_value(serde_json::json!({"port": "eno1", "neighbors": []})).unwrap(),
        );
        lab.cable(&host, "eno1", "oob1", &format!("swp{h}"));
    }
    lab
}

#[test]
fn hosts_with_forwarding_on_are_hosts_by_what_they_are_cabled_to() {
    let tables = lldpd(&Lab::two_rail_groups(), &[Capability::Router]);
    let f = infer_lldpd(&tables, &InferOptions::default());
    assert_eq!(
        (f.hosts.len(), f.switches.len()),
        (8, 6),
        "{:#?}",
        f.findings
    );
    assert!(f.findings.is_empty(), "{:#?}", f.findings);
    assert_eq!(groups(&f), ["spine1-2.leaf1-2", "spine1-2.leaf3-4"]);
}

#[test]
fn hosts_that_look_like_switches_are_refused_unless_named() {
    // A node with a bridge (cni0) and forwarding advertises Bridge and Router, like a switch.
    let tables = lldpd(
        &Lab::two_rail_groups(),
        &[Capability::Bridge, Capability::Router],
    );
    let f = infer_lldpd(&tables, &InferOptions::default());
    assert_eq!(f.hosts.len(), 0);
    assert!(
        kinds(&f).contains(&(FindingKind::NoHostsPlaced, None)),
        "never an empty topology without an error: {:#?}",
        f.findings
    );
    assert!(f.error_count() > 0);

    let named = InferOptions {
        hosts: (1..=8).map(|h| format!("h{h}")).collect(),
        ..InferOptions::default()
    };
    let f = infer_lldpd(&tables, &named);
    assert_eq!(
        (f.hosts.len(), f.error_count()),
        (8, 0),
        "{:#?}",
        f.findings
    );

    let by_nic = InferOptions {
        fabric_nics: FabricNics::Matching(vec![NicPattern::new("ens*np*")]),
        ..InferOptions::default()
    };
    let f = infer_lldpd(&tables, &by_nic);
    assert_eq!(
        (f.hosts.len(), f.error_count()),
        (8, 0),
        "{:#?}",
        f.findings
    );
    assert_eq!(groups(&f), ["spine1-2.leaf1-2", "spine1-2.leaf3-4"]);
}

#[test]
fn a_management_switch_neither_becomes_a_rail_nor_merges_the_groups() {
    for tables in [
        lldpd(&lab_with_oob(), &[Capability::Router]),
        lab_with_oob()
            .tables()
            .into_iter()
            .map(|t| (t, None))
            .collect(),
    ] {
        let f = infer_lldpd(&tables, &InferOptions::default());
        assert_eq!(groups(&f), ["spine1-2.leaf1-2", "spine1-2.leaf3-4"]);
        let rails: Vec<&str> = f.rails.iter().map(|r| &**r).collect();
        assert_eq!(rails, TWO_RAIL_NICS);
        assert_eq!(kinds(&f), [(FindingKind::ManagementSwitch, None)]);
        assert!(f.findings[0].message.contains("eno1"));
        let oob = f.switch(f.switch_by_name("oob1").unwrap());
        assert!(oob.management && oob.tier.is_none());
    }
    // Named fabric NICs: the management NICs are simply not the fabric's.
    let nics = InferOptions {
        fabric_nics: FabricNics::Matching(vec![
            NicPattern::new(TWO_RAIL_NICS[0]),
            NicPattern::new(NIC1),
        ]),
        ..InferOptions::default()
    };
    let f = infer_lldpd(&lldpd(&lab_with_oob(), &[Capability::Router]), &nics);
    assert_eq!(groups(&f), ["spine1-2.leaf1-2", "spine1-2.leaf3-4"]);
    assert_eq!(kinds(&f), [(FindingKind::UnplacedSwitch, None)]);
    // Per host, as an agent reports the NICs with an RDMA device.
    let per_host = InferOptions {
        fabric_nics: FabricNics::PerHost(
            (1..=8)
                .map(|h| (format!("h{h}"), TWO_RAIL_NICS.map(String::from).to_vec()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..InferOptions::default()
    };
    let f = infer_lldpd(&lldpd(&lab_with_oob(), &[Capability::Router]), &per_host);
    assert_eq!(groups(&f), ["spine1-2.leaf1-2", "spine1-2.leaf3-4"]);
    assert_eq!(f.hosts.len(), 8);
}

/// The lab with every switch advertising `<name>.fab.example`; switch tables keep only their
/// neighbours and are named by the short name (as files named after the box are).
fn fqdn_lab(neighbours_only: bool) -> Tables {
    let fq = |n: &str| {
        if n.starts_with('h') {
            n.to_owned()
        } else {
            format!("{n}.fab.example")
        }
    };
    lldpd(&Lab::two_rail_groups(), &[Capability::Router])
        .into_iter()
        .map(|(mut t, caps)| {
            for n in t.ports.iter_mut().flat_map(|p| p.neighbors.iter_mut()) {
                n.system_name = n.system_name.as_deref().map(fq);
            }
            let switch = !t.observer.name.starts_with('h');
            if neighbours_only {
                t.observer.chassis_id = None;
                t.observer.role = None;
                (t, None)
            } else {
                if switch {
                    t.observer.name = fq(&t.observer.name);
                }
                (t, caps)
            }
        })
        .collect()
}

#[test]
fn fully_qualified_switch_names_match_short_names_and_keep_ids_readable() {
    for neighbours_only in [false, true] {
        let f = infer_lldpd(&fqdn_lab(neighbours_only), &InferOptions::default());
        assert_eq!(
            (f.hosts.len(), f.switches.len()),
            (8, 6),
            "neighbours only: {neighbours_only}: {:#?}",
            f.findings
        );
        assert!(f.findings.is_empty(), "{:#?}", f.findings);
        assert_eq!(groups(&f), ["spine1-2.leaf1-2", "spine1-2.leaf3-4"]);
    }
    // Kubernetes node names in short form match hosts that call themselves by FQDN.
    let mut tables = fqdn_lab(false);
    for (t, _) in &mut tables {
        if t.observer.name.starts_with('h') {
            t.observer.name.push_str(".fab.example");
        }
    }
    let named = InferOptions {
        hosts: (1..=9).map(|h| format!("h{h}")).collect(),
        ..InferOptions::default()
    };
    let f = infer_lldpd(&tables, &named);
    let hosts: Vec<&str> = f.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(hosts, ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"]);
    assert_eq!(kinds(&f), [(FindingKind::HostNotSeen, Some("h9"))]);
}

#[test]
fn a_host_to_host_cable_is_one_not_a_switch_and_no_missing_rail() {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("h4", NIC1)
        .uncable("h8", NIC1)
        .cable("h4", NIC1, "h8", NIC1);
    let f = infer_lldpd(&lldpd(&lab, &[]), &InferOptions::default());
    let errors: Vec<_> = f
        .findings
        .iter()
        .filter(|x| x.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{:#?}", f.findings);
    let e = errors[0];
    assert_eq!(
        (e.kind, e.host.as_deref(), e.nic.as_deref()),
        (FindingKind::NotASwitch, Some("h4"), Some(NIC1))
    );
    assert!(
        e.message.contains("cabled to host h8 ens1f1np1")
            && e.message.contains("h4 ens1f1np1 belongs on leaf leaf2")
            && e.message.contains("h8 ens1f1np1 belongs on leaf leaf4"),
        "{}",
        e.message
    );
    let h4 = f.host(f.host_by_name("h4").unwrap());
    let peer = h4.nics[1].peer.as_ref().unwrap();
    assert_eq!(peer.host, f.host_by_name("h8"));
}

#[test]
fn the_graph_draws_both_swapped_nics_and_the_host_to_host_cable_in_red_in_order() {
    let mut lab = Lab::two_rail_groups();
    let [nic0, nic1] = TWO_RAIL_NICS;
    lab.uncable("h2", nic0)
        .uncable("h2", nic1)
        .cable("h2", nic0, "leaf2", "swp2")
        .cable("h2", nic1, "leaf1", "swp2")
        .uncable("h4", nic1)
        .uncable("h8", nic1)
        .cable("h4", nic1, "h8", nic1);
    let f = infer_lldpd(&lldpd(&lab, &[]), &InferOptions::default());
    let text = dot(&f);
    let h = |name: &str| f.host_by_name(name).unwrap().0;
    let red_to = |host: u32| {
        text.lines()
            .filter(|l| l.contains(&format!("-> h{host} ")) && l.contains("color=red"))
            .count()
    };
    assert_eq!(red_to(h("h2")), 2, "both swapped NICs: {text}");
    let host_cable: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&format!("h{} -> h{}", h("h4"), h("h8"))))
        .collect();
    assert_eq!(host_cable.len(), 1, "{text}");
    assert!(host_cable[0].contains("color=red"));
    assert!(
        !text.contains(&format!("h{} -> h{}", h("h8"), h("h4"))),
        "drawn once"
    );
    // Hosts in natural order inside their group, and edges down the tree in that order.
    let declared: Vec<usize> = (1..=4)
        .map(|i| text.find(&format!("[label=\"h{i}\"")).unwrap())
        .collect();
    assert!(declared.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.contains("ordering=out"));
}

fn dot(f: &Fabric) -> String {
    topo_discovery::fabric::dot::render(f, topo_discovery::fabric::dot::HostDetail::Each)
}
