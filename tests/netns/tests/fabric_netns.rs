//! Fabric inference over a real namespace fabric: lldpd on 2 spines and 4 leaves, Spinel's
//! listener on 8 hosts with 2 rails, `spinelctl topo infer` over the collected tables; then the
//! same fabric with a host's cables swapped, both NICs of a host on one leaf, and a leaf uplink
//! pulled.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use spinel_netns_tests::lldp_fabric::{Fault, NICS, infer, rail_fabric};

fn run(test: &str, fault: Fault, args: &[&str]) -> (Option<i32>, Value, String) {
    let fabric = rail_fabric(test, fault);
    let dir = fabric.collect();
    let out = infer(&dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("topo infer printed no JSON ({e}); stderr: {stderr}"));
    (out.status.code(), json, stderr)
}

fn findings(doc: &Value) -> Vec<(String, String, String, String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    doc["findings"]
        .as_array()
        .expect("findings array")
        .iter()
        .map(|f| {
            (
                text(&f["kind"]),
                text(&f["host"]),
                text(&f["nic"]),
                text(&f["switch"]),
                text(&f["port"]),
            )
        })
        .collect()
}

fn host<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["hosts"]
        .as_array()
        .and_then(|hs| hs.iter().find(|h| h["name"] == name))
        .unwrap_or_else(|| panic!("host {name} missing"))
}

#[test]
fn a_rail_optimised_fabric_is_inferred_from_lldpd_and_spinels_listener() {
    let fabric = rail_fabric("fabric_clean", Fault::None);
    let dir = fabric.collect();

    let out = infer(&dir, &["--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "clean fabric: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["summary"]["errors"], 0, "{stderr}");
    assert_eq!(doc["summary"]["warnings"], 0, "{stderr}");
    assert_eq!(doc["rail_optimized"], true);
    assert_eq!(doc["depth"], 2);
    assert_eq!(doc["rails"], serde_json::json!(NICS));

    let tier = |name: &str| -> Value {
        doc["switches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["tier"]
            .clone()
    };
    for s in ["spine1", "spine2"] {
        assert_eq!(tier(s), 2, "{s}");
    }
    for l in ["leaf1", "leaf2", "leaf3", "leaf4"] {
        assert_eq!(tier(l), 1, "{l}");
    }
    let groups: Vec<&str> = doc["domains"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["tier"] == 1)
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["spine1-2.leaf1-2", "spine1-2.leaf3-4"]);
    for h in 1..=8 {
        let want = if h <= 4 {
            "spine1-2.leaf1-2"
        } else {
            "spine1-2.leaf3-4"
        };
        assert_eq!(
            host(&doc, &format!("h{h}"))["path"],
            serde_json::json!([want, "spine1-2"]),
            "h{h}"
        );
    }
    // lldpd advertises MAC Port IDs; each leaf's `show interfaces` maps them back to names.
    let h3 = host(&doc, "h3");
    assert_eq!(h3["nics"][0]["switch"], "spine1-2.leaf1-2.leaf1");
    assert_eq!(h3["nics"][0]["port"], "swp3");
    assert_eq!(h3["nics"][1]["switch"], "spine1-2.leaf1-2.leaf2");
    assert_eq!(h3["nics"][1]["port"], "swp3");
    let links = doc["links"].as_array().unwrap();
    assert_eq!(
        links.len(),
        8,
        "one link per leaf-spine cable, seen from both ends"
    );
    for l in links {
        assert_eq!(l["kind"], "uplink");
        let lower = l["lower"]["port"].as_str().unwrap();
        assert!(lower == "swp51" || lower == "swp52", "{l}");
    }

    // The labels agree with the model.
    let out = infer(&dir, &["--labels", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let nodes: Value = serde_json::from_slice(&out.stdout).expect("labels JSON");
    let h5 = nodes["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["metadata"]["name"] == "h5")
        .expect("h5 labelled");
    let labels = &h5["metadata"]["labels"];
    assert_eq!(labels["fabric.spinel.dev/tier-1"], "spine1-2.leaf3-4");
    assert_eq!(labels["fabric.spinel.dev/tier-2"], "spine1-2");
    assert_eq!(labels["fabric.spinel.dev/rail-0"], "spine1-2.leaf3-4.leaf3");
    assert_eq!(labels["fabric.spinel.dev/rail-1"], "spine1-2.leaf3-4.leaf4");
    assert_eq!(labels["fabric.spinel.dev/rails"], "2");

    let out = infer(&dir, &["--hypernodes", "--format", "json"]);
    let hns: Value = serde_json::from_slice(&out.stdout).expect("HyperNodes JSON");
    let names: Vec<&str> = hns["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["spine1-2", "spine1-2.leaf1-2", "spine1-2.leaf3-4"]);
}

#[test]
fn swapped_host_cables_are_reported_with_their_ports() {
    let (code, doc, stderr) = run("fabric_swapped", Fault::SwappedCables(2), &["--json"]);
    assert_eq!(code, Some(2), "errors exit 2: {stderr}");
    let s = |x: &str| x.to_owned();
    assert_eq!(
        findings(&doc),
        [
            (
                s("swapped_rail"),
                s("h2"),
                s(NICS[0]),
                s("leaf2"),
                s("swp2")
            ),
            (
                s("swapped_rail"),
                s("h2"),
                s(NICS[1]),
                s("leaf1"),
                s("swp2")
            ),
        ],
        "{stderr}"
    );
    assert!(
        stderr.contains("error[swapped_rail]: h2 ens1f0np0 (rail 0) is on leaf leaf2 port swp2"),
        "{stderr}"
    );
    assert_eq!(
        host(&doc, "h2")["path"][0],
        "spine1-2.leaf1-2",
        "the host stays in its group"
    );
}

#[test]
fn both_nics_of_a_host_on_one_leaf_are_reported() {
    let (code, doc, stderr) = run(
        "fabric_shared_leaf",
        Fault::BothNicsOnOneLeaf(6),
        &["--json"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    let s = |x: &str| x.to_owned();
    assert_eq!(
        findings(&doc),
        [(s("shared_leaf"), s("h6"), s(NICS[1]), s("leaf3"), s("swp9"))],
        "{stderr}"
    );
    assert_eq!(doc["findings"][0]["expected"], "leaf leaf4");
}

#[test]
fn a_pulled_leaf_uplink_is_reported() {
    let (code, doc, stderr) = run("fabric_uplink_down", Fault::UplinkDown(3, 2), &["--json"]);
    assert_eq!(code, Some(2), "{stderr}");
    let f = findings(&doc);
    assert_eq!(f.len(), 1, "{stderr}");
    assert_eq!(
        (f[0].0.as_str(), f[0].3.as_str()),
        ("missing_uplink", "leaf3")
    );
    assert_eq!(
        f[0].4, "swp52",
        "the port lldpd lists on leaf3 without a neighbour"
    );
    assert_eq!(doc["findings"][0]["expected"], "spine spine2");
    assert_eq!(
        doc["summary"]["warnings"], 0,
        "the fan-out deficit is explained by the missing uplink"
    );
    // Hosts keep their domains: the group still reaches spine2 through leaf4.
    assert_eq!(
        host(&doc, "h7")["path"],
        serde_json::json!(["spine1-2.leaf3-4", "spine1-2"])
    );
}
