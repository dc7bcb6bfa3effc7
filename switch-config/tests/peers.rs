//! Rendered NVUE and EOS configurations against their vendors' own definitions, the real peers
//! that run here (see docs/switch-config.md, "What is proven, per OS"):
//!
//! - NVUE: every Cumulus Linux release this renderer knows, validated against NVIDIA's NVUE
//!   schema of that release (the `nvueschema` package's models, generated from NVIDIA's NVUE
//!   OpenAPI documents), unknown keys refused; the `nv unset` paths too.
//! - EOS: every platform family, read into Arista AVD's structured configuration, validated by
//!   AVD's schema and rendered by AVD's `eos_cli_config_gen` templates (`pyavd`): every block
//!   must come back with the same lines.
//!
//! A configuration each validator must refuse is checked too, so a validator that passes
//! everything fails this test. The validators run in the virtual environment
//! `scripts/install-deps.sh test` makes (target/switch-peers); without it this test fails and
//! says so.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use spinel_switch_config::intent::software::{CUMULUS_RELEASES, EosPlatform};
use spinel_switch_config::intent::{self, Intent};
use spinel_switch_config::plan::FabricPlan;
use spinel_switch_config::render::{self, Running, nvue};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The peers' Python: `SPINEL_SWITCH_PEERS_PYTHON`, else the install-deps virtual environment.
fn python() -> PathBuf {
    let path = std::env::var_os("SPINEL_SWITCH_PEERS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir().join("../target/switch-peers/bin/python"));
    assert!(
        path.exists(),
        "{} is missing: run ./scripts/install-deps.sh test (it installs the NVUE schema and \
         Arista AVD from PyPI into target/switch-peers)",
        path.display()
    );
    path
}

fn example() -> Intent {
    intent::load(&crate_dir().join("examples/fabric-intent.yaml")).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinel-peers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a validator; returns the verdict line of each file (`PASS ...`/`FAIL ...`) and the
/// whole output.
fn run(script: &str, args: &[String]) -> (Vec<String>, String) {
    let out = Command::new(python())
        .arg(crate_dir().join("tests/peers").join(script))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{script} could not run: {text}"
    );
    let verdicts = text
        .lines()
        .filter(|l| l.starts_with("PASS ") || l.starts_with("FAIL "))
        .map(str::to_owned)
        .collect();
    (verdicts, text)
}

/// The example's variants: as written, RoCE on priority 5 (NVIDIA's defaults unset), and two
/// lossless priorities.
fn variants() -> Vec<(&'static str, Intent)> {
    let mut five = example();
    five.roce.data.priority = 5;
    five.roce.pfc.priorities = vec![5];
    let mut two = example();
    two.roce.pfc.priorities = vec![3, 4];
    vec![
        ("example", example()),
        ("priority5", five),
        ("lossless34", two),
    ]
}

#[test]
fn nvue_validates_against_nvidias_schema_of_each_release() {
    let dir = scratch("nvue");
    let mut args = Vec::new();
    for (name, base) in variants() {
        for release in CUMULUS_RELEASES {
            let mut i = base.clone();
            i.switches
                .iter_mut()
                .find(|s| s.name == "leaf02")
                .unwrap()
                .version = Some(release.into());
            let plan = FabricPlan::new(&i);
            let sp = plan.switch("leaf02").unwrap();
            let r = render::switch(&plan, sp, &Running::default());
            let yaml = dir.join(format!("{name}-{release}.nvue.yaml"));
            std::fs::write(&yaml, &r.files[1].text).unwrap();
            args.push(format!("{release}:{}", yaml.display()));
            // Every `nv unset` path must exist in the release's schema too.
            let unsets = nvue::roce_default_unsets(&plan, sp);
            if !unsets.is_empty() {
                let tree = nvue::to_tree(
                    &unsets
                        .into_iter()
                        .map(|path| nvue::NvSet { path, value: None })
                        .collect::<Vec<_>>(),
                );
                let json = dir.join(format!("{name}-{release}.unset.json"));
                std::fs::write(&json, tree.to_string()).unwrap();
                args.push(format!("{release}:{}", json.display()));
            }
        }
    }
    // Controls the schema must refuse: 5.12's syntax on 5.15, 5.15's on 5.12, an MTU out of
    // range.
    let golden = crate_dir().join("examples/rendered/leaf02.nvue.yaml");
    let bad_mtu = dir.join("bad-mtu.nvue.yaml");
    std::fs::write(
        &bad_mtu,
        std::fs::read_to_string(&golden)
            .unwrap()
            .replacen("mtu: 9100", "mtu: 99999", 1),
    )
    .unwrap();
    let controls = [
        format!("5.15:{}", golden.display()),
        format!("5.12:{}", dir.join("example-5.15.nvue.yaml").display()),
        format!("5.12:{}", bad_mtu.display()),
    ];
    args.extend(controls.iter().cloned());
    let (verdicts, text) = run("nvue_schema.py", &args);
    assert_eq!(verdicts.len(), args.len(), "{text}");
    for (arg, verdict) in args.iter().zip(&verdicts) {
        let (release, file) = arg.split_once(':').unwrap();
        let want = if controls.contains(arg) {
            "FAIL"
        } else {
            "PASS"
        };
        assert_eq!(
            verdict,
            &format!("{want} {release} {file}"),
            "NVIDIA's {release} schema: {text}"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn eos_renders_the_same_through_aristas_avd_templates() {
    let dir = scratch("eos");
    let mut files = Vec::new();
    for (name, base) in variants() {
        for platform in [EosPlatform::Strata, EosPlatform::Sand] {
            let mut i = base.clone();
            for s in i
                .switches
                .iter_mut()
                .filter(|s| s.version.as_deref() == Some("4.33"))
            {
                s.platform = Some(platform);
            }
            let plan = FabricPlan::new(&i);
            for sp in plan.switches.iter().filter(|s| s.switch.platform.is_some()) {
                let r = render::switch(&plan, sp, &Running::default());
                let path = dir.join(format!(
                    "{name}-{}-{}.eos.cfg",
                    platform.as_str(),
                    sp.switch.name
                ));
                std::fs::write(&path, &r.files[0].text).unwrap();
                files.push(path.display().to_string());
            }
        }
    }
    // Controls AVD must refuse: a watchdog action EOS does not have (what this renderer wrote
    // for `forward` before), an ECN threshold unit that does not exist.
    let golden =
        std::fs::read_to_string(crate_dir().join("examples/rendered/leaf03.eos.cfg")).unwrap();
    let controls = [
        ("watchdog action drop", "watchdog action no-drop"),
        (
            "minimum-threshold 150000 bytes",
            "minimum-threshold 150000 cells",
        ),
    ];
    let mut control_files = Vec::new();
    for (k, (from, to)) in controls.iter().enumerate() {
        assert!(golden.contains(from));
        let path = dir.join(format!("control{k}.eos.cfg"));
        std::fs::write(&path, golden.replace(from, to)).unwrap();
        control_files.push(path.display().to_string());
    }
    let mut args = files.clone();
    args.extend(control_files.iter().cloned());
    let (verdicts, text) = run("eos_avd.py", &args);
    assert_eq!(verdicts.len(), args.len(), "{text}");
    for (file, verdict) in args.iter().zip(&verdicts) {
        let want = if control_files.contains(file) {
            "FAIL"
        } else {
            "PASS"
        };
        assert_eq!(verdict, &format!("{want} {file}"), "{text}");
    }
    // What AVD cannot model is said, not passed silently: the two DCBX lines.
    assert!(
        text.contains("not proven by AVD (no model): dcbx mode ieee"),
        "{text}"
    );
    std::fs::remove_dir_all(dir).ok();
}
