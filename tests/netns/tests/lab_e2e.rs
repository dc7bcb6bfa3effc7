//! The lab end to end, as the README's first command runs it: `spinelctl lab run` on the
//! default lab with every real binary (agent per node, controller, spinel-scheduler behind the
//! real kube-scheduler, the spinel CNI), and afterwards nothing left: no namespace, no process,
//! no file. Then a lab whose supervisor is killed with SIGKILL is swept by `lab down`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    )
}

/// Builds every binary the lab runs (one cargo call) and returns `spinelctl`.
fn spinelctl() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "spinelctl",
            "-p",
            "spinel-cni",
            "-p",
            "spinel-agent",
        ])
        .args(["-p", "spinel-fabric-controller", "-p", "spinel-scheduler"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo build");
    assert!(status.success(), "building the lab's binaries failed");
    let harness = target_dir().join("k8s/spinel-k8s");
    assert!(
        harness.is_file(),
        "{} is missing: run tests/k8s/build.sh (scripts/test.sh does)",
        harness.display()
    );
    target_dir().join("debug/spinelctl").canonicalize().unwrap()
}

fn lab(bin: &Path, args: &[&str], state: &Path) -> Output {
    Command::new(bin)
        .arg("lab")
        .args(args)
        .arg("--state-dir")
        .arg(state)
        .output()
        .expect("run spinelctl lab")
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(needle) {
            found.push(text);
        }
    }
    found
}

/// A fresh state directory for one test (the lab creates it and removes it again).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinel-lab-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("lab")
}

fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the lab creates network namespaces: run this test as root"
    );
}

#[test]
fn the_main_job_holds_and_leaves_nothing_behind() {
    require_root();
    let bin = spinelctl();
    let state = scratch("run");
    let out = lab(&bin, &["run", "--json"], &state);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "lab run failed:\n{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("lab run --json prints JSON");

    // Every node labelled, HyperNodes and a Kueue Topology published.
    assert_eq!(doc["labels"].as_object().unwrap().len(), 8, "{doc}");
    assert!(
        doc["labels"]
            .as_object()
            .unwrap()
            .values()
            .all(|v| { v["labels"].as_object().is_some_and(|l| !l.is_empty()) })
    );
    assert!(!doc["hyperNodes"].as_array().unwrap().is_empty());
    assert!(!doc["kueueLevels"].as_array().unwrap().is_empty());

    // 6 pods, ranks 0-5, each stage of 3 pods on one rail group (nodes 01-04 or 05-08).
    let placement = doc["placement"].as_array().unwrap();
    assert_eq!(placement.len(), 6);
    for stage in placement.chunks(3) {
        let groups: std::collections::BTreeSet<bool> = stage
            .iter()
            .map(|p| p["node"].as_str().unwrap() > "node04")
            .collect();
        assert_eq!(groups.len(), 1, "a stage spans rail groups: {stage:?}");
    }
    // Two rails per pod, every address and VF distinct.
    let atts = doc["attachments"].as_array().unwrap();
    assert_eq!(atts.len(), 12);
    let ips: std::collections::BTreeSet<&str> =
        atts.iter().map(|a| a["ip"].as_str().unwrap()).collect();
    assert_eq!(ips.len(), 12);
    for figure in [
        "labelsPublishedMs",
        "gangPlacedMs",
        "attachAllMs",
        "labUpMs",
    ] {
        assert!(
            doc["figures"][figure].as_u64().is_some(),
            "no {figure}: {doc}"
        );
    }

    // Nothing left: the state directory, the lab's namespaces, its processes.
    assert!(!state.exists(), "{} survives lab run", state.display());
    let leftovers = processes_mentioning(state.to_str().unwrap());
    assert!(leftovers.is_empty(), "processes survive: {leftovers:?}");
}

#[test]
fn down_sweeps_a_lab_whose_supervisor_was_killed() {
    require_root();
    let bin = spinelctl();
    let state = scratch("killed");
    let small = [
        "--nodes",
        "2",
        "--rail-groups",
        "1",
        "--rails",
        "1",
        "--spines",
        "1",
    ];
    let mut args = vec!["up"];
    args.extend(small);
    let out = lab(&bin, &args, &state);
    assert!(
        out.status.success(),
        "lab up: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Value =
        serde_json::from_slice(&std::fs::read(state.join("status.json")).unwrap()).unwrap();
    assert_eq!(status["phase"], "ready");
    let pid = status["pid"].as_i64().unwrap() as i32;
    let netns = std::fs::read_dir(state.join("netns")).unwrap().count();
    assert!(netns >= 4, "{netns} namespaces");

    // A second up is refused while this one runs.
    let again = lab(&bin, &args, &state);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already runs"));

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !processes_mentioning(state.to_str().unwrap()).is_empty(),
        "the components should outlive a killed supervisor until down"
    );
    let down = lab(&bin, &["down"], &state);
    assert!(
        down.status.success(),
        "lab down: {}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert!(!state.exists(), "{} survives lab down", state.display());
    let leftovers = processes_mentioning(state.to_str().unwrap());
    assert!(leftovers.is_empty(), "processes survive: {leftovers:?}");
}
