//! lldpd input: real `lldpcli -f json0` and `-f json` captures from lldpd 1.0.16 (see
//! `fixtures/lldpd/capture.sh`), parsed and fed to inference.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use spinel_wire::neighbor::{Capability, ChassisIdSubtype, PortIdSubtype, Role, SCHEMA};
use topo_discovery::fabric::{FabricBuilder, FindingKind, InferOptions, LinkKind};
use topo_discovery::sources::{self, Capture, Format, ParseOptions, SourceError};

const SYSTEMS: [&str; 6] = ["spine01", "leaf01", "leaf02", "node01", "node02", "node03"];

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lldpd")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn capture(name: &str) -> Capture {
    let mut c = sources::parse(&fixture(name), &ParseOptions::default()).unwrap();
    assert_eq!(c.len(), 1, "{name}: one system per file");
    c.remove(0)
}

/// Ages differ between the two captures (they were taken a moment apart).
fn without_ages(mut c: Capture) -> Capture {
    for p in &mut c.table.ports {
        for n in &mut p.neighbors {
            n.age_seconds = None;
        }
    }
    c
}

#[test]
fn json0_and_json_give_the_same_table_for_every_system() {
    for system in SYSTEMS {
        let a = capture(&format!("{system}.json0"));
        let b = capture(&format!("{system}.json"));
        assert_eq!(a.format, Format::LldpdJson0);
        assert_eq!(b.format, Format::LldpdJson);
        let (a, b) = (without_ages(a), without_ages(b));
        assert_eq!(a.table, b.table, "{system}");
        assert_eq!(a.advertised, b.advertised, "{system}");
    }
}

#[test]
fn a_host_capture_has_its_nics_and_the_leaf_ports_they_see() {
    let c = capture("node01.json0");
    let t = &c.table;
    assert_eq!(t.schema, SCHEMA);
    assert_eq!(t.observer.name, "node01");
    assert_eq!(
        t.observer.role,
        Some(Role::Host),
        "lldpd reports Station only for a host"
    );
    assert_eq!(
        t.observer.chassis_id.as_ref().unwrap().subtype,
        ChassisIdSubtype::MacAddress
    );
    let names: Vec<&str> = t.ports.iter().map(|p| p.port.as_str()).collect();
    assert_eq!(names, ["ens1f0np0", "ens1f1np1"]);
    for (p, leaf_port) in t.ports.iter().zip(["swp1", "swp2"]) {
        assert_eq!(p.neighbors.len(), 1);
        let n = &p.neighbors[0];
        assert_eq!(n.system_name.as_deref(), Some("leaf01"));
        assert_eq!(
            n.port_id.subtype,
            PortIdSubtype::MacAddress,
            "lldpd's default Port ID"
        );
        assert_eq!(n.port_description.as_deref(), Some(leaf_port));
        assert_eq!(n.ttl, 4, "tx-interval 1 s x hold 4");
        let caps = n.capabilities.as_ref().unwrap();
        assert!(
            caps.enabled.contains(&Capability::Bridge)
                && caps.enabled.contains(&Capability::Router)
        );
        assert!(n.age_seconds.is_some());
        assert!(!n.management_addresses.is_empty());
    }
}

#[test]
fn a_port_behind_a_hub_has_two_neighbours() {
    let c = capture("node02.json");
    let hub = c
        .table
        .ports
        .iter()
        .find(|p| p.port == "ens1f1np1")
        .unwrap();
    let mut seen: Vec<&str> = hub
        .neighbors
        .iter()
        .filter_map(|n| n.system_name.as_deref())
        .collect();
    seen.sort();
    assert_eq!(seen, ["leaf01", "leaf02"]);
}

#[test]
fn a_single_neighbour_in_json_is_an_object_and_still_parses() {
    let text = fixture("node03.json");
    assert!(
        text.contains("\"interface\": {"),
        "fixture should show the collapsed shape"
    );
    let c = capture("node03.json");
    assert_eq!(c.table.ports.len(), 1);
    assert_eq!(
        c.table.ports[0].neighbors[0].system_name.as_deref(),
        Some("leaf02")
    );
    assert_eq!(
        c.table.ports[0].neighbors[0].port_id.subtype,
        PortIdSubtype::InterfaceName
    );
}

#[test]
fn a_sonic_style_switch_advertises_aliases_with_subtype_local() {
    let c = capture("spine01.json0");
    assert_eq!(c.table.observer.role, Some(Role::Switch));
    let adv: Vec<(&str, PortIdSubtype, &str)> = c
        .advertised
        .iter()
        .map(|a| (a.port.as_str(), a.port_id.subtype, a.port_id.value.as_str()))
        .collect();
    assert_eq!(
        adv,
        [
            ("swp1", PortIdSubtype::Local, "Eth1/1"),
            ("swp2", PortIdSubtype::Local, "Eth1/2")
        ]
    );
    let leaf = capture("leaf02.json0");
    assert!(
        leaf.advertised
            .iter()
            .all(|a| a.port_id.subtype == PortIdSubtype::InterfaceName)
    );
}

fn infer_fixtures(ext: &str) -> topo_discovery::fabric::Fabric {
    let mut b = FabricBuilder::new();
    for system in SYSTEMS {
        capture(&format!("{system}.{ext}")).add_to(&mut b);
    }
    b.infer(&InferOptions::default())
}

#[test]
fn inference_over_lldpd_captures_resolves_every_port_style() {
    let f = infer_fixtures("json0");
    let tier = |name: &str| f.switch(f.switch_by_name(name).unwrap()).tier;
    assert_eq!(
        (tier("spine01"), tier("leaf01"), tier("leaf02")),
        (Some(2), Some(1), Some(1))
    );
    // Each cable once, with interface names at both ends: leaf01 sees spine01's alias Eth1/1,
    // spine01 sees leaf01's MAC Port ID; both resolve through the advertised-port maps.
    let uplinks: Vec<(String, String, String, String)> = f
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::Uplink)
        .map(|l| {
            (
                f.switch(l.lower.switch).name.clone(),
                l.lower.port.name.to_string(),
                f.switch(l.upper.switch).name.clone(),
                l.upper.port.name.to_string(),
            )
        })
        .collect();
    let s = |x: &str| x.to_owned();
    assert_eq!(
        uplinks,
        [
            (s("leaf01"), s("swp51"), s("spine01"), s("swp1")),
            (s("leaf02"), s("swp51"), s("spine01"), s("swp2")),
        ]
    );
    assert_eq!(
        f.links.iter().filter(|l| l.kind == LinkKind::Peer).count(),
        1,
        "leaf01-leaf02 via the hub"
    );
    let node01 = f.host(f.host_by_name("node01").unwrap());
    let ports: Vec<&str> = node01
        .nics
        .iter()
        .map(|n| &*n.link.as_ref().unwrap().port.name)
        .collect();
    assert_eq!(ports, ["swp1", "swp2"]);
    assert!(
        node01
            .nics
            .iter()
            .all(|n| n.link.as_ref().unwrap().port.resolved)
    );
    let warnings: Vec<(FindingKind, Option<&str>)> = f
        .findings
        .iter()
        .map(|x| (x.kind, x.host.as_deref()))
        .collect();
    assert!(
        warnings.contains(&(FindingKind::MultipleNeighbors, Some("node02"))),
        "{warnings:?}"
    );
    // node03 has one NIC where its group's hosts have two: a warning outside rail-optimised
    // fabrics.
    assert!(
        warnings.contains(&(FindingKind::MissingRail, Some("node03"))),
        "{warnings:?}"
    );
    assert_eq!(f.error_count(), 0, "{:#?}", f.findings);
}

#[test]
fn json_and_json0_captures_infer_the_same_fabric() {
    assert_eq!(infer_fixtures("json0"), infer_fixtures("json"));
}

#[test]
fn without_interface_captures_ports_still_resolve_or_stay_distinct() {
    // Keep only `show neighbors` from every capture (no advertised-port maps, and the observer
    // named explicitly): descriptions still resolve lldpd's MAC Port IDs.
    let mut b = FabricBuilder::new();
    for system in SYSTEMS {
        let text = fixture(&format!("{system}.json0"));
        let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text)
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        let neighbours_only = docs[1].to_string();
        let opts = ParseOptions {
            observer: Some(system.to_owned()),
            ..ParseOptions::default()
        };
        let c = sources::parse(&neighbours_only, &opts).unwrap().remove(0);
        assert!(c.advertised.is_empty());
        assert_eq!(c.table.observer.chassis_id, None);
        c.add_to(&mut b);
    }
    let f = b.infer(&InferOptions::default());
    let uplinks: Vec<(&str, &str)> = f
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::Uplink)
        .map(|l| (&*l.lower.port.name, &*l.upper.port.name))
        .collect();
    assert_eq!(
        uplinks,
        [("swp51", "swp1"), ("swp51", "swp2")],
        "one link per cable"
    );
}

#[test]
fn lldpd_output_without_its_own_chassis_needs_a_name() {
    let text = fixture("leaf01.json0");
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    let err = sources::parse(&docs[1].to_string(), &ParseOptions::default()).unwrap_err();
    assert!(matches!(err, SourceError::Lldpd(_)), "{err}");
    assert!(err.to_string().contains("show interfaces details"), "{err}");
}

#[test]
fn bad_documents_get_clear_errors() {
    let empty = sources::parse("  \n", &ParseOptions::default()).unwrap_err();
    assert!(matches!(empty, SourceError::Empty), "{empty}");
    let garbage = sources::parse("{\"lldp\": [", &ParseOptions::default()).unwrap_err();
    assert!(garbage.to_string().contains("not valid JSON"), "{garbage}");
    assert!(garbage.to_string().contains("line 1"), "{garbage}");
    let other = sources::parse("{\"hello\": 1}", &ParseOptions::default()).unwrap_err();
    assert!(
        other
            .to_string()
            .contains("document 1: not a Spinel neighbour table"),
        "{other}"
    );
    let v2 = sources::parse(
        r#"{"schema": "spinel.dev/neighbors/v2", "observer": {"name": "x"}, "ports": []}"#,
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(
        v2.to_string()
            .contains("\"spinel.dev/neighbors/v2\" is not supported"),
        "{v2}"
    );
    let bad = sources::parse(
        r#"{"schema": "spinel.dev/neighbors/v1", "observer": {"name": "x"}, "ports": [{"port": 1}]}"#,
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(
        bad.to_string()
            .contains("not a valid spinel.dev/neighbors/v1 table"),
        "{bad}"
    );
    let broken_lldpd = sources::parse(
        r#"{"lldp": [{"interface": [{"name": "eth0", "via": "LLDP", "chassis": [{"name": [{"value": "x"}]}]}]}]}"#,
        &ParseOptions { observer: Some("h".into()), ..ParseOptions::default() },
    )
    .unwrap_err();
    assert!(
        broken_lldpd
            .to_string()
            .contains("interface eth0, chassis: no id"),
        "{broken_lldpd}"
    );
}

#[test]
fn spinel_tables_come_as_one_object_an_array_or_a_stream() {
    let t = r#"{"schema": "spinel.dev/neighbors/v1", "observer": {"name": "h1", "role": "host"}, "ports": []}"#;
    let one = sources::parse(t, &ParseOptions::default()).unwrap();
    let array = sources::parse(&format!("[{t}, {t}]"), &ParseOptions::default()).unwrap();
    let stream = sources::parse(&format!("{t}\n{t}\n"), &ParseOptions::default()).unwrap();
    assert_eq!((one.len(), array.len(), stream.len()), (1, 2, 2));
    assert!(
        one.iter()
            .all(|c| c.format == Format::Spinel && c.table.observer.name == "h1")
    );
}
