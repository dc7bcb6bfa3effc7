//! `spinelctl topo infer` as an operator runs it: on lldpd captures and Spinel tables in files
//! and directories, every output format, SVG through Graphviz, exit codes and error messages.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use spinel_netns_tests::lldp_fabric::spinelctl;
use spinel_netns_tests::require_tool;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../topo-discovery/tests/fixtures/lldpd")
}

fn json0_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json0"))
        .collect();
    files.sort();
    files
}

fn topo(args: &[&str], files: &[PathBuf]) -> Output {
    Command::new(spinelctl())
        .args(["topo", "infer"])
        .args(args)
        .args(files)
        .stdin(Stdio::null())
        .output()
        .expect("run spinelctl")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinel-fabric-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn lldpd_captures_infer_a_fabric_with_warnings_only() {
    let out = topo(&["--json"], &json0_files());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "warnings do not fail: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["schema"], "spinel.dev/fabric/v1");
    assert_eq!(doc["summary"]["hosts"], 3);
    assert!(
        stderr.starts_with("fabric: 3 hosts, 3 switches, 2 tier(s)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("warning[multiple_neighbors]: node02 ens1f1np1 sees 2 neighbours"),
        "{stderr}"
    );
}

#[test]
fn a_directory_and_json_captures_give_the_same_document() {
    let dir = scratch("dir");
    for f in json0_files() {
        std::fs::copy(&f, dir.join(f.file_name().expect("name"))).expect("copy");
    }
    let from_dir = topo(&["--json"], std::slice::from_ref(&dir));
    let from_files = topo(&["--json"], &json0_files());
    assert_eq!(from_dir.stdout, from_files.stdout);
    let json_files: Vec<PathBuf> = json0_files()
        .iter()
        .map(|p| p.with_extension("json"))
        .collect();
    let from_json = topo(&["--json"], &json_files);
    assert_eq!(
        from_json.stdout, from_files.stdout,
        "-f json and -f json0 captures agree"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn every_output_format_prints() {
    let files = json0_files();
    let labels = String::from_utf8(topo(&["--labels"], &files).stdout).expect("utf-8");
    assert!(
        labels.contains("kind: Node")
            && labels.contains("fabric.spinel.dev/tier-1: spine01.leaf01-02"),
        "{labels}"
    );
    let topograph =
        String::from_utf8(topo(&["--labels", "--topograph"], &files).stdout).expect("utf-8");
    assert!(
        topograph.contains("fabric.topograph.run/tier-0: spine01.leaf01-02"),
        "{topograph}"
    );
    let prefixed =
        String::from_utf8(topo(&["--labels", "--label-prefix", "net.example.com/"], &files).stdout)
            .expect("utf-8");
    assert!(
        prefixed.contains("net.example.com/tier-2: spine01"),
        "{prefixed}"
    );
    let hn = String::from_utf8(topo(&["--hypernodes"], &files).stdout).expect("utf-8");
    assert!(
        hn.contains("apiVersion: topology.volcano.sh/v1alpha1") && hn.contains("tierName: spine"),
        "{hn}"
    );
    let kueue = String::from_utf8(topo(&["--kueue"], &files).stdout).expect("utf-8");
    assert!(
        kueue.ends_with("- nodeLabel: kubernetes.io/hostname\n"),
        "{kueue}"
    );
    let slurm = String::from_utf8(topo(&["--slurm"], &files).stdout).expect("utf-8");
    assert!(
        slurm.contains("SwitchName=spine01.leaf01-02 Nodes=node[01-03]"),
        "{slurm}"
    );
    let dot = String::from_utf8(topo(&["--dot"], &files).stdout).expect("utf-8");
    assert!(dot.starts_with("digraph fabric {"), "{dot}");
}

#[test]
fn svg_is_rendered_with_graphviz() {
    require_tool("dot", "graphviz");
    let dir = scratch("svg");
    let svg = dir.join("fabric.svg");
    let out = topo(
        &["--svg", svg.to_str().expect("utf-8 path")],
        &json0_files(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "--svg alone prints nothing to stdout"
    );
    let text = std::fs::read_to_string(&svg).expect("svg written");
    // Graphviz writes '-' in text as "&#45;".
    for needle in [
        "<svg",
        "<title>cluster_d0</title>",
        ">node02</text>",
        ">spine01</text>",
    ] {
        assert!(text.contains(needle), "{needle} missing from the SVG");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_input_names_the_file_and_the_problem() {
    let dir = scratch("bad");
    let bad = dir.join("leaf9.json");
    std::fs::write(&bad, "{\"lldp\": [").expect("write");
    let out = topo(&[], std::slice::from_ref(&bad));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{}: not valid JSON", bad.display())),
        "{stderr}"
    );

    let missing = dir.join("nope.json");
    let out = topo(&[], std::slice::from_ref(&missing));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("reading {}", missing.display()))
    );

    // A capture of neighbours only needs its observer named.
    let text = std::fs::read_to_string(fixtures().join("node03.json0")).expect("fixture");
    let second = text.find("\n{").expect("two documents");
    let neighbours_only = dir.join("node03-neighbours.json");
    std::fs::write(&neighbours_only, &text[second..]).expect("write");
    let out = topo(&[], std::slice::from_ref(&neighbours_only));
    assert!(String::from_utf8_lossy(&out.stderr).contains("show interfaces details"));
    let named = format!("node03={}", neighbours_only.display());
    let out = Command::new(spinelctl())
        .args(["topo", "infer", "--json", &named])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["hosts"][0]["name"], "node03");

    let out = topo(&["--label-prefix", "Bad_Prefix"], &json0_files());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("label prefix \"Bad_Prefix\" is invalid")
    );
    std::fs::remove_dir_all(dir).ok();
}
