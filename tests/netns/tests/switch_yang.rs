//! Rendered SONiC configurations against SONiC's own YANG models (the kit in
//! `tests/peers/sonic-yang`, Debian's yanglint): the example and its variants (two lossless
//! priorities, CNP in another class), a synthetic rail-optimised fabric, and a drifted switch
//! after `spinelctl fabric diff`'s patch is applied. A known-bad fragment must fail, so a
//! silent validator cannot pass this test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use spinel_netns_tests::require_tool;
use spinel_switch_config::diff;
use spinel_switch_config::intent::{self, Intent, SwitchOs};
use spinel_switch_config::observe::sonic::parse_config_db;
use spinel_switch_config::plan::FabricPlan;
use spinel_switch_config::render::{Running, sonic};
use spinel_switch_config::synthetic::{self, Spec};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinel-yang-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the kit's validate.sh; returns (passed, output).
fn validate(file: &Path) -> (bool, String) {
    require_tool("yanglint", "libyang2-tools");
    require_tool("python3", "python3");
    let out = Command::new(repo().join("tests/peers/sonic-yang/validate.sh"))
        .arg("-q")
        .arg(file)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "validate.sh could not run: {text}"
    );
    (out.status.success(), text)
}

/// PORT entries with lanes for every port of every SONiC switch, as a platform's port_config
/// would give them.
fn platform(plan: &FabricPlan<'_>) -> Running {
    let mut r = Running::default();
    for sp in plan
        .switches
        .iter()
        .filter(|s| s.switch.os == SwitchOs::Sonic)
    {
        let mut db = sonic::ConfigDb::new();
        for (i, p) in sp.ports.iter().enumerate() {
            let lanes: Vec<String> = (0..4).map(|l| (i * 4 + l).to_string()).collect();
            db.entry("PORT".into()).or_default().insert(
                p.name.to_owned(),
                sonic::Fields::from([
                    ("lanes".into(), lanes.join(",")),
                    ("alias".into(), format!("etp{}", i + 1)),
                ]),
            );
        }
        r.sonic.insert(sp.switch.name.clone(), db);
    }
    r
}

fn validate_all(intent: &Intent, name: &str) -> usize {
    let plan = FabricPlan::new(intent);
    let running = platform(&plan);
    let dir = scratch(name);
    let mut n = 0;
    for sp in plan
        .switches
        .iter()
        .filter(|s| s.switch.os == SwitchOs::Sonic)
    {
        let r = sonic::render(&plan, sp, running.sonic.get(sp.switch.name.as_str()));
        assert!(r.ports_without_lanes.is_empty());
        let file = dir.join(format!("{}.config_db.json", sp.switch.name));
        std::fs::write(&file, sonic::to_json(&r.config_db)).unwrap();
        let (ok, out) = validate(&file);
        assert!(ok, "{name}: {out}");
        n += 1;
    }
    std::fs::remove_dir_all(dir).ok();
    n
}

fn example_text() -> String {
    std::fs::read_to_string(repo().join("switch-config/examples/fabric-intent.yaml")).unwrap()
}

#[test]
fn a_known_bad_fragment_fails() {
    let (ok, out) =
        validate(&repo().join("tests/peers/sonic-yang/examples/invalid/01_pfc_enable_3_9.json"));
    assert!(!ok && out.contains("FAIL"), "{out}");
}

#[test]
fn the_example_and_its_variants_validate() {
    let example = Intent::parse(&example_text(), "example").unwrap();
    assert_eq!(validate_all(&example, "example"), 2);
    let two_lossless = example_text()
        .replace(
            "    priorities: [3]           # at most",
            "    priorities: [3, 4]        # at most",
        )
        .replace(
            "    priority: 6\n",
            "    priority: 6\n    traffic_class: 7\n",
        );
    let variant = Intent::parse(&two_lossless, "variant").unwrap();
    assert!(
        intent::validate(&variant).iter().all(|i| !i.is_error()),
        "{:#?}",
        intent::validate(&variant)
    );
    assert_eq!(variant.roce.pfc.priorities, [3, 4]);
    assert_eq!(validate_all(&variant, "variant"), 2);
}

#[test]
fn a_synthetic_rail_optimised_fabric_validates() {
    let spec = Spec {
        hosts: 48,
        rails: 4,
        hosts_per_group: 16,
        groups_per_pod: 3,
        spines_per_pod: 2,
    };
    let i = synthetic::intent(&spec);
    assert!(intent::validate(&i).iter().all(|x| !x.is_error()));
    assert!(validate_all(&i, "synthetic") >= 4);
}

#[test]
fn a_drifted_switch_validates_after_the_diff_patch() {
    let i = Intent::parse(&example_text(), "example").unwrap();
    let plan = FabricPlan::new(&i);
    let sp = plan.switch("leaf01").unwrap();
    let drifted = repo().join("switch-config/examples/drifted/switches/leaf01.config_db.json");
    let running = parse_config_db(&std::fs::read_to_string(&drifted).unwrap()).unwrap();
    let rendered = sonic::render(&plan, sp, Some(&running)).config_db;
    let ops = diff::sonic::patch(&rendered, &running);
    assert!(!ops.is_empty());
    let mut value = serde_json::to_value(&running).unwrap();
    for op in &ops {
        let parts: Vec<String> = op.path[1..]
            .split('/')
            .map(|p| p.replace("~1", "/").replace("~0", "~"))
            .collect();
        let (last, parents) = parts.split_last().unwrap();
        let node = parents
            .iter()
            .fold(&mut value, |n, p| n.get_mut(p).unwrap());
        let obj: &mut serde_json::Map<String, Value> = node.as_object_mut().unwrap();
        match op.op {
            "remove" => {
                obj.remove(last);
            }
            _ => {
                obj.insert(last.clone(), op.value.clone().unwrap());
            }
        }
    }
    let dir = scratch("patched");
    let file = dir.join("leaf01.config_db.json");
    std::fs::write(&file, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let (ok, out) = validate(&file);
    assert!(ok, "{out}");
    std::fs::remove_dir_all(dir).ok();
}
