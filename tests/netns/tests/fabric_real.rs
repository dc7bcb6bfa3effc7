//! `spinelctl topo infer` on what real clusters produce (issue 8), from real lldpd captures in
//! namespaces. Two fabrics, each built once and captured, then torn down; the tests read the
//! captures:
//!
//! - the rack: 2 spines, 4 leaves in two rail groups, 8 hosts with 2 rails, every box running
//!   lldpd on every NIC, hosts with IPv4 forwarding on (lldpd advertises Router), every host's
//!   management NIC `eno1` on an out-of-band switch `oob1`, every system advertising a fully
//!   qualified name (`leaf1.fab.example`). Captured twice: `show interfaces details` + `show
//!   neighbors details` per box, and `show neighbors` alone per box (files named `leaf1.json`).
//! - the miswired rack: the same without forwarding, OOB or FQDNs, h2's two cables swapped and
//!   a cable from h4's second NIC to h8's.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use spinel_netns_tests::Sandbox;
use spinel_netns_tests::lldp_fabric::{Fault, NICS, rail_fabric_with, spinelctl};

const DOMAIN: &str = "fab.example";
const GROUPS: [&str; 2] = ["spine1-2.leaf1-2", "spine1-2.leaf3-4"];

/// Captures that outlive their fabric (the sandbox is swept after the test process ends).
struct Captures {
    sandbox: Sandbox,
    full: PathBuf,
    neighbours: PathBuf,
}

impl Captures {
    /// A scratch directory for one test.
    fn scratch(&self, name: &str) -> PathBuf {
        let dir = self.sandbox.dir().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

fn keep(test: &str, dirs: &[(&str, &Path)]) -> Captures {
    let sandbox = Sandbox::new(test);
    for (name, from) in dirs {
        let to = sandbox.dir().join(name);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
    let full = sandbox.dir().join("full");
    let neighbours = sandbox.dir().join("neighbours");
    Captures {
        sandbox,
        full,
        neighbours,
    }
}

fn rack() -> &'static Captures {
    static RACK: OnceLock<Captures> = OnceLock::new();
    RACK.get_or_init(|| {
        let fabric = rail_fabric_with("fabric_real_rack", Fault::None, |f| {
            f.hosts_run_lldpd(true).domain(DOMAIN).switch("oob1");
            for h in 1..=8 {
                f.cable(&format!("h{h}"), "eno1", "oob1", &format!("swp{h}"));
            }
        });
        let full = fabric.collect();
        let neighbours = fabric.collect_neighbours_only();
        keep(
            "fabric_real_rack_captures",
            &[("full", &full), ("neighbours", &neighbours)],
        )
    })
}

fn miswired() -> &'static Captures {
    static MISWIRED: OnceLock<Captures> = OnceLock::new();
    MISWIRED.get_or_init(|| {
        let fabric = rail_fabric_with("fabric_real_miswired", Fault::SwappedCables(2), |f| {
            f.hosts_run_lldpd(false)
                .uncable("h4", NICS[1])
                .uncable("h8", NICS[1])
                .cable("h4", NICS[1], "h8", NICS[1]);
        });
        let full = fabric.collect();
        keep("fabric_real_miswired_captures", &[("full", &full)])
    })
}

fn topo(args: &[&str], inputs: &[&Path]) -> Output {
    Command::new(spinelctl())
        .args(["topo", "infer"])
        .args(args)
        .args(inputs)
        .stdin(Stdio::null())
        .output()
        .expect("run spinelctl topo infer")
}

fn doc(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON on stdout ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn groups(doc: &Value) -> Vec<&str> {
    doc["domains"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["tier"] == 1)
        .map(|d| d["id"].as_str().unwrap())
        .collect()
}

fn hosts(doc: &Value) -> Vec<&str> {
    doc["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect()
}

fn kinds(doc: &Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_owned(),
                f["host"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn hosts_with_forwarding_on_are_hosts() {
    let c = rack();
    // The capture really says Router: lldpd on a node with ip_forward=1.
    let h1 = std::fs::read_to_string(c.full.join("h1.json")).unwrap();
    assert!(
        h1.contains("\"type\": \"Router\",\n                  \"enabled\": true"),
        "h1 advertises Router: {h1}"
    );
    let out = topo(&["--json"], &[&c.full]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let d = doc(&out);
    let want: Vec<String> = (1..=8).map(|h| format!("h{h}.{DOMAIN}")).collect();
    assert_eq!(hosts(&d), want, "{}", stderr(&out));
    assert_eq!(groups(&d), GROUPS);
    assert_eq!(d["summary"]["errors"], 0, "{}", stderr(&out));
}

#[test]
fn a_management_nic_on_an_oob_switch_does_not_merge_the_fabric() {
    let c = rack();
    let out = topo(&["--json"], &[&c.full]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let d = doc(&out);
    assert_eq!(groups(&d), GROUPS, "not one collapsed domain");
    assert_eq!(d["rails"], serde_json::json!(NICS), "eno1 is no rail");
    assert_eq!(
        kinds(&d),
        [("management_switch".to_owned(), String::new())],
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("switch oob1.fab.example is reached by 8 hosts through eno1"));
    // Saying which NICs are the fabric's gives the same fabric, without guessing.
    for nics in ["ens1f0np0,ens1f1np1", "ens*np*"] {
        let out = topo(&["--json", "--fabric-nics", nics], &[&c.full]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let d = doc(&out);
        assert_eq!(groups(&d), GROUPS);
        assert_eq!(d["rails"], serde_json::json!(NICS));
        assert!(
            !kinds(&d).iter().any(|k| k.0 == "management_switch"),
            "{nics}"
        );
    }
}

#[test]
fn neighbours_only_captures_are_named_by_their_files() {
    let c = rack();
    let out = topo(&["--json"], &[&c.neighbours]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("named leaf1 after the file") && err.contains("named h1 after the file"),
        "{err}"
    );
    let d = doc(&out);
    let want: Vec<String> = (1..=8).map(|h| format!("h{h}")).collect();
    assert_eq!(hosts(&d), want);
    assert_eq!(groups(&d), GROUPS);
    // NAME=FILE names one capture explicitly, mixed with files named by their names.
    let leaf1 = format!("leaf1={}", c.neighbours.join("leaf1.json").display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&c.neighbours)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("leaf1.json"))
        .collect();
    files.sort();
    let out = Command::new(spinelctl())
        .args(["topo", "infer", "--json", &leaf1])
        .args(&files)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(groups(&doc(&out)), GROUPS);
}

#[test]
fn fully_qualified_switch_names_match_short_names_and_ids_stay_readable() {
    let c = rack();
    let out = topo(&["--json"], &[&c.full]);
    let d = doc(&out);
    let ids: Vec<&str> = d["switches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"spine1-2.leaf1-2.leaf1") && ids.contains(&"spine1-2.spine1"),
        "readable ids, no hash fallback: {ids:?}"
    );
    // Kubernetes node names are short: the hosts take them.
    let names: Vec<String> = (1..=8).map(|h| format!("h{h}")).collect();
    let out = topo(
        &["--labels", "--format", "json", "--host", &names.join(",")],
        &[&c.full],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let items = doc(&out)["items"].as_array().unwrap().clone();
    let labelled: Vec<&str> = items
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(labelled, names);
    assert_eq!(
        items[0]["metadata"]["labels"]["fabric.spinel.dev/tier-1"],
        GROUPS[0]
    );
    // A neighbours-only switch capture named by its short name joins the FQDN switch.
    let dir = c.scratch("fqdn-named");
    for e in std::fs::read_dir(&c.full).unwrap() {
        let p = e.unwrap().path();
        if !p.ends_with("leaf1.json") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    let leaf1 = format!("leaf1={}", c.neighbours.join("leaf1.json").display());
    let out = Command::new(spinelctl())
        .args(["topo", "infer", "--json"])
        .arg(&dir)
        .arg(&leaf1)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let d = doc(&out);
    assert_eq!(d["summary"]["errors"], 0, "{}", stderr(&out));
    assert_eq!(d["summary"]["hosts"], 8);
}

#[test]
fn a_file_of_several_boxes_is_refused_and_a_stray_file_is_skipped() {
    let c = rack();
    let dir = c.scratch("concatenated");
    for (name, from) in [("full.json", &c.full), ("neighbours.json", &c.neighbours)] {
        let mut text = std::fs::read(from.join("leaf1.json")).unwrap();
        text.extend(std::fs::read(from.join("leaf2.json")).unwrap());
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let out = topo(&["--json"], &[&path]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("holds the lldpd output of 2 systems"), "{err}");
        assert!(err.contains("one file per system"), "{err}");
    }
    let err = stderr(&topo(&["--json"], &[&dir.join("full.json")]));
    assert!(
        err.contains("leaf1.fab.example, leaf2.fab.example"),
        "{err}"
    );

    let strays = c.scratch("stray");
    for e in std::fs::read_dir(&c.neighbours).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, strays.join(p.file_name().unwrap())).unwrap();
    }
    std::fs::write(strays.join("README.txt"), "captured on Tuesday\n").unwrap();
    let out = topo(&["--json"], &[&strays]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("README.txt: not JSON, skipped"));
    assert_eq!(
        out.stdout,
        topo(&["--json"], &[&c.neighbours]).stdout,
        "the stray file changes nothing"
    );
    // Named on the command line, the same file is an error.
    let out = topo(&["--json"], &[&strays.join("README.txt")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

#[test]
fn several_outputs_in_one_run_and_distinct_exit_codes() {
    let c = rack();
    let dir = c.scratch("outputs");
    let out_dir = dir.join("out");
    let out = topo(&["--out-dir", out_dir.to_str().unwrap()], &[&c.full]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let read = |f: &str| std::fs::read_to_string(out_dir.join(f)).unwrap();
    assert_eq!(doc_of(&read("fabric.json"))["summary"]["hosts"], 8);
    assert!(read("labels.yaml").contains("kind: Node"));
    assert!(read("hypernodes.yaml").contains("kind: HyperNode"));
    assert!(read("kueue.yaml").contains("kind: Topology"));
    assert!(read("topology.conf").contains(&format!("SwitchName={} Nodes=", GROUPS[0])));
    assert!(read("fabric.dot").starts_with("digraph fabric {"));

    // The README's example, and --emit beside a stdout output.
    let kueue = dir.join("kueue.yaml");
    let slurm = dir.join("topology.conf");
    let out = topo(
        &[
            "--json",
            "--emit",
            &format!("kueue={}", kueue.display()),
            "--emit",
            &format!("slurm={}", slurm.display()),
        ],
        &[&c.full],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(doc(&out)["summary"]["hosts"], 8);
    assert!(
        std::fs::read_to_string(&kueue)
            .unwrap()
            .contains("kueue.x-k8s.io/v1beta2")
    );
    assert!(
        std::fs::read_to_string(&slurm)
            .unwrap()
            .contains("SwitchName=")
    );

    // Exit statuses: usage 64, unreadable input 1, no hosts placed 3 (miswired 2: below).
    let out = topo(&["--kueue", "--slurm"], &[&c.full]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    assert!(stderr(&out).contains("--out-dir"));
    assert_eq!(topo(&["--emit", "pdf"], &[&c.full]).status.code(), Some(64));
    assert_eq!(
        topo(&["--no-such-flag"], &[&c.full]).status.code(),
        Some(64)
    );
    let missing = dir.join("nope.json");
    assert_eq!(topo(&[], &[&missing]).status.code(), Some(1));
    // Only the switches' captures: hosts that route, seen from their leaves, cannot be told
    // from switches; that is said, never printed as an empty topology with status 0.
    let switches = c.scratch("switches-only");
    for name in [
        "spine1", "spine2", "leaf1", "leaf2", "leaf3", "leaf4", "oob1",
    ] {
        let f = format!("{name}.json");
        std::fs::copy(c.full.join(&f), switches.join(&f)).unwrap();
    }
    let out = topo(&["--json"], &[&switches]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("error[no_hosts_placed]"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--host"), "{}", stderr(&out));
}

fn doc_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn a_host_to_host_cable_is_one_not_a_switch_and_the_graph_shows_it() {
    let c = miswired();
    let out = topo(&["--json"], &[&c.full]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "miswired: {err}");
    let d = doc(&out);
    let s = |k: &str, h: &str| (k.to_owned(), h.to_owned());
    assert_eq!(
        kinds(&d),
        [
            s("swapped_rail", "h2"),
            s("swapped_rail", "h2"),
            s("not_a_switch", "h4"),
        ],
        "{err}"
    );
    assert!(
        err.contains("h4 ens1f1np1 is cabled to host h8 ens1f1np1, not to a switch"),
        "{err}"
    );
    assert!(!err.contains("sees no LLDP neighbour"), "{err}");

    let dot = String::from_utf8(topo(&["--dot"], &[&c.full]).stdout).unwrap();
    let index = |name: &str| {
        d["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .position(|h| h["name"] == name)
            .unwrap()
    };
    let red_to_h2 = dot
        .lines()
        .filter(|l| l.contains(&format!("-> h{} ", index("h2"))) && l.contains("color=red"))
        .count();
    assert_eq!(red_to_h2, 2, "both swapped NICs in red: {dot}");
    let cable = format!("h{} -> h{} ", index("h4"), index("h8"));
    assert_eq!(
        dot.lines().filter(|l| l.contains(&cable)).count(),
        1,
        "{dot}"
    );

    // Laid out left to right in natural order.
    spinel_netns_tests::require_tool("dot", "graphviz");
    let svg = c.scratch("svg").join("fabric.svg");
    let out = topo(&["--emit", &format!("svg={}", svg.display())], &[&c.full]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&svg).unwrap();
    let x = |label: &str| -> f64 {
        let at = svg
            .find(&format!(">{label}</text>"))
            .unwrap_or_else(|| panic!("{label} not drawn"));
        let start = svg[..at].rfind(" x=\"").unwrap() + 4;
        let end = start + svg[start..].find('"').unwrap();
        svg[start..end].parse().unwrap()
    };
    for pair in [
        ["h1", "h2"],
        ["h2", "h3"],
        ["h3", "h4"],
        ["h5", "h6"],
        ["leaf1", "leaf2"],
    ] {
        assert!(x(pair[0]) < x(pair[1]), "{} left of {}", pair[0], pair[1]);
    }
}
