//! `sources::ingest`, the reader the CLI uses: Spinel tables on the borrowed fast path give the
//! same fabric as whole tables, whatever their layout; anything else goes through the full
//! reader with its errors, and a failed file adds nothing.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use spinel_wire::neighbor::NeighborTable;
use topo_discovery::fabric::synthetic::{Lab, SyntheticSpec};
use topo_discovery::fabric::{FabricBuilder, InferOptions, infer, json};
use topo_discovery::sources::{self, ParseOptions, SourceError};

fn fixture_tables() -> Vec<NeighborTable> {
    let mut lab = Lab::two_rail_groups();
    lab.uncable("h3", "ens1f1np1").free_port("leaf2", "swp30");
    let mut tables = lab.tables();
    tables.extend(SyntheticSpec::rail_optimized(700).tables());
    // Every optional field of the schema, on one neighbour.
    let rich: serde_json::Value = serde_json::json!({
        "chassis_id": {"subtype": "mac_address", "value": "02:00:00:00:99:01"},
        "port_id": {"subtype": "local", "value": "Eth1/9"},
        "ttl": 120,
        "age_seconds": 3,
        "port_description": "to h1",
        "system_name": "leaf9",
        "system_description": "SONiC",
        "capabilities": {"supported": ["bridge", "router"], "enabled": ["bridge"]},
        "management_addresses": [{"family": 1, "address": "10.0.0.9", "interface_numbering": 2, "interface_number": 7}],
        "port_vlan_id": 10,
        "vlan_names": [{"vid": 10, "name": "v10"}],
        "max_frame_size": 9216,
        "unknown_tlvs": [{"tlv_type": 127, "oui": "00:12:bb", "subtype": 1, "data": "00"}]
    });
    let n = serde_json::from_value(rich).unwrap();
    tables[0].ports[0].neighbors.push(n);
    tables
}

fn by_tables(tables: &[NeighborTable]) -> String {
    let f = infer(tables, &InferOptions::default());
    serde_json::to_string(&json::document(&f)).unwrap()
}

fn by_ingest(files: &[Vec<u8>]) -> String {
    let mut b = FabricBuilder::new();
    for bytes in files {
        sources::ingest(bytes, &ParseOptions::default(), &mut b).unwrap();
    }
    serde_json::to_string(&json::document(&b.infer(&InferOptions::default()))).unwrap()
}

#[test]
fn the_fast_path_gives_the_fabric_whole_tables_give() {
    let tables = fixture_tables();
    let want = by_tables(&tables);
    let pretty: Vec<Vec<u8>> = tables
        .iter()
        .map(|t| serde_json::to_vec_pretty(t).unwrap())
        .collect();
    assert_eq!(by_ingest(&pretty), want);
    // Several tables in one file: a stream, and an array.
    let mut stream = Vec::new();
    for t in &tables {
        stream.extend(serde_json::to_vec(t).unwrap());
        stream.push(b'\n');
    }
    assert_eq!(by_ingest(&[stream]), want);
    assert_eq!(by_ingest(&[serde_json::to_vec(&tables).unwrap()]), want);
    // Fields in another order than Spinel writes them: the full reader takes over.
    let reordered: Vec<Vec<u8>> = tables
        .iter()
        .map(|t| {
            let v = serde_json::to_value(t).unwrap();
            format!(
                "{{\"ports\": {}, \"observer\": {}, \"schema\": {}}}",
                v["ports"], v["observer"], v["schema"]
            )
            .into_bytes()
        })
        .collect();
    assert_eq!(by_ingest(&reordered), want);
}

#[test]
fn a_failed_file_adds_nothing_and_errors_come_from_the_full_reader() {
    let tables = fixture_tables();
    let good = serde_json::to_vec_pretty(&tables[0]).unwrap();
    let mut b = FabricBuilder::new();
    sources::ingest(&good, &ParseOptions::default(), &mut b).unwrap();
    let truncated = &good[..good.len() / 2];
    let err = sources::ingest(truncated, &ParseOptions::default(), &mut b).unwrap_err();
    assert!(matches!(err, SourceError::Json(_)), "{err}");
    // Two good tables then a bad one: the whole file is refused, nothing of it stays.
    let mut mixed = serde_json::to_vec(&tables[1]).unwrap();
    mixed.extend(serde_json::to_vec(&tables[2]).unwrap());
    mixed.extend(
        br#"{"schema": "spinel.dev/neighbors/v2", "observer": {"name": "x"}, "ports": []}"#,
    );
    let err = sources::ingest(&mixed, &ParseOptions::default(), &mut b).unwrap_err();
    assert!(err.to_string().contains("is not supported"), "{err}");
    assert_eq!(b.table_count(), 1);
    let err = sources::ingest(b"\xff\xfe", &ParseOptions::default(), &mut b).unwrap_err();
    assert!(err.to_string().contains("not UTF-8"), "{err}");
    let f = b.infer(&InferOptions::default());
    assert_eq!(
        serde_json::to_string(&json::document(&f)).unwrap(),
        by_tables(&tables[..1]),
        "the builder holds exactly the good file"
    );
}
