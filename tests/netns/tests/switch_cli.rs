//! `spinelctl fabric` as an operator runs it: validate (with hostile intent files), render,
//! diff, check on collected evidence, an intent from LLDP captures, and cabling. Exit codes and
//! messages are part of the contract: 0 fine, 2 findings, 1 unreadable input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use spinel_netns_tests::lldpd::spinelctl;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn examples() -> PathBuf {
    repo().join("switch-config/examples")
}

fn intent() -> PathBuf {
    examples().join("fabric-intent.yaml")
}

fn fabric(args: &[&str]) -> Output {
    Command::new(spinelctl())
        .arg("fabric")
        .args(args)
        .current_dir(repo())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinel-fabric-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_example_validates() {
    let out = fabric(&["validate", s(&intent())]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("6 switches, 2 rails: 0 error(s), 0 warning(s)"));
}

#[test]
fn hostile_intent_files_get_clear_errors() {
    let dir = scratch("hostile");
    let base = std::fs::read_to_string(intent()).unwrap();
    let cases: Vec<(&str, Vec<u8>, i32, &str)> = vec![
        (
            "wrong-type.yaml",
            base.replace(
                "    speed_gbps: 400           # every port",
                "    speed_gbps: fast",
            )
            .into_bytes(),
            1,
            "switches[0].speed_gbps (switch leaf01): line",
        ),
        (
            "duplicate.yaml",
            format!(
                "{base}  - name: spine02\n    role: spine\n    os: sonic\n    buffer_bytes: 1\n"
            )
            .into_bytes(),
            2,
            "error: switches[spine02] (switch spine02): duplicate switch: entries 6 and 7",
        ),
        (
            "deep.yaml",
            format!("{base}arp: {}1{}\n", "[".repeat(50_000), "]".repeat(50_000)).into_bytes(),
            1,
            "arp",
        ),
        ("garbage.yaml", vec![0xff, 0xfe, 0x00, 0x41], 1, "not UTF-8"),
        (
            "unknown.yaml",
            base.replace("fabric: gpu-a", "fabric: gpu-a\nfabrik: typo")
                .into_bytes(),
            1,
            "unknown field `fabrik`",
        ),
        (
            "overlap.yaml",
            base.replace(
                "subnet: 10.0.1.0/24, gateway: 10.0.1.1",
                "subnet: 10.0.0.0/23, gateway: 10.0.1.1",
            )
            .into_bytes(),
            2,
            "overlaps",
        ),
    ];
    for (name, bytes, code, needle) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = fabric(&["validate", s(&path)]);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(code), "{name}: {all}");
        assert!(all.contains(needle), "{name}: want {needle:?} in {all}");
        assert!(!all.contains("panicked"), "{name}: {all}");
    }
    // A file larger than the limit is refused before it is read (sparse: instant, no memory).
    let huge = dir.join("huge.yaml");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let out = fabric(&["validate", s(&huge)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("1073741824 bytes is more than the 134217728-byte limit"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn render_writes_the_golden_files() {
    let dir = scratch("render");
    let running = examples().join("running");
    let out = fabric(&[
        "render",
        s(&intent()),
        "--running",
        s(&running),
        "--out",
        s(&dir),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("wrote 17 files"));
    for name in [
        "leaf01.config_db.json",
        "leaf02.nvue.sh",
        "leaf02.nvue.yaml",
        "leaf03.eos.cfg",
        "hosts/node01.sh",
    ] {
        assert_eq!(
            std::fs::read_to_string(dir.join(name)).unwrap(),
            std::fs::read_to_string(examples().join("rendered").join(name)).unwrap(),
            "{name}"
        );
    }
    // Without the platform's lanes the operator is told what the fragment lacks.
    let out = fabric(&[
        "render",
        s(&intent()),
        "--switch",
        "leaf01",
        "--out",
        s(&dir),
    ]);
    assert!(
        text(&out.stderr).contains("PORT lanes unknown for Ethernet0"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn diff_prints_only_what_must_change() {
    let drifted = examples().join("drifted/switches");
    let out = fabric(&[
        "diff",
        s(&intent()),
        "--switch",
        "leaf01",
        "--running",
        s(&drifted.join("leaf01.config_db.json")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ops: Value = serde_json::from_slice(&out.stdout).unwrap();
    let paths: Vec<&str> = ops
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"/PORT/Ethernet0/mtu") && paths.contains(&"/PFC_WD/Ethernet8"),
        "{paths:?}"
    );
    assert!(
        !paths
            .iter()
            .any(|p| p.contains("lanes") || p.contains("AZURE")),
        "{paths:?}"
    );
    let out = fabric(&[
        "diff",
        s(&intent()),
        "--switch",
        "leaf02",
        "--running",
        s(&drifted.join("leaf02.json")),
        "--exit-code",
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        text(&out.stdout),
        "nv unset qos pfc default-global switch-priority 4\nnv set qos mapping default-global trust l3\n\
         nv set qos pfc default-global switch-priority 3\nnv config apply\n"
    );
    let out = fabric(&[
        "diff",
        s(&intent()),
        "--switch",
        "leaf03",
        "--running",
        s(&drifted.join("leaf03.cfg")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("diff supports SONiC and NVUE"));
}

#[test]
fn check_reports_the_drift_in_every_source() {
    let d = examples().join("drifted");
    let out = fabric(&[
        "check",
        s(&intent()),
        "--switch-config",
        s(&d.join("switches")),
        "--host-state",
        s(&d.join("hosts")),
        "--lldp",
        s(&d.join("lldp")),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    let key = |f: &Value| {
        format!(
            "{} {} {}",
            f["kind"].as_str().unwrap(),
            f["switch"].as_str().unwrap_or("-"),
            f["source"].as_str().unwrap()
        )
    };
    let mut kinds: Vec<String> = findings.iter().map(key).collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "dscp_map leaf01 switch_config",
            "ecn leaf03 switch_config",
            "headroom leaf01 switch_config",
            "mtu leaf01 switch_config",
            "mtu leaf03 switch_config",
            "pfc leaf01 switch_config",
            "pfc leaf02 switch_config",
            "pfc leaf04 advertised",
            "roce_tos leaf01 host",
            "trust leaf01 host",
            "trust leaf02 switch_config",
            "watchdog leaf01 switch_config",
        ]
    );
    // The human form names the fix under each finding.
    let out = fabric(&[
        "check",
        s(&intent()),
        "--switch-config",
        s(&d.join("switches/leaf03.cfg")),
    ]);
    let printed = text(&out.stdout);
    assert!(printed.contains("error[mtu] leaf03 Ethernet2/1: MTU 1500 where the intent says 9100\n    fix: configure\n    fix: interface Ethernet2/1\n    fix:    mtu 9100\n    fix: end"), "{printed}");
    // A file that names no switch of the intent is an input error.
    let out = fabric(&["check", s(&intent()), "--switch-config", s(&intent())]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot tell which switch this is"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_intent_from_lldp_captures_validates_and_matches_their_cabling() {
    let captures = repo().join("topo-discovery/tests/fixtures/lldpd");
    let files: Vec<String> = std::fs::read_dir(&captures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json0"))
        .map(|p| p.to_str().unwrap().to_owned())
        .collect();
    let mut args = vec!["intent", "--fabric", "lab", "--leaf-os", "cumulus"];
    args.extend(files.iter().map(String::as_str));
    let out = fabric(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let dir = scratch("intent");
    let generated = dir.join("lab.yaml");
    std::fs::write(&generated, &out.stdout).unwrap();
    assert_eq!(fabric(&["validate", s(&generated)]).status.code(), Some(0));
    let mut cabling = vec!["cabling", s(&generated)];
    cabling.extend(files.iter().map(String::as_str));
    let out = fabric(&cabling);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // The example intent describes another fabric: its cabling is all wrong there.
    let example = intent();
    let mut cabling = vec!["cabling", s(&example)];
    cabling.extend(files.iter().map(String::as_str));
    let out = fabric(&cabling);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).contains("error[cabling] leaf01 Ethernet0 / node01 ens1f0np0: node01 ens1f0np0 is cabled to leaf01 swp1"), "{}", text(&out.stdout));
    std::fs::remove_dir_all(dir).ok();
}
