//! Golden files: the annotated example rendered for every switch and host is exactly what
//! `examples/rendered/` holds (reviewed against the vendors' published RoCE examples; see
//! docs/switch-config.md). Rendering is deterministic: twice gives the same bytes.
//!
//! After an intended change: `SPINEL_UPDATE_GOLDEN=1 cargo test -p spinel-switch-config --test
//! golden`, then review the diff.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use spinel_switch_config::intent;
use spinel_switch_config::observe::sonic::parse_config_db;
use spinel_switch_config::plan::FabricPlan;
use spinel_switch_config::render::{self, RenderedFile, Running};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn rendered() -> Vec<RenderedFile> {
    let i = intent::load(&dir().join("fabric-intent.yaml")).unwrap();
    let plan = FabricPlan::new(&i);
    let mut running = Running::default();
    for sw in ["leaf01", "spine01"] {
        let text =
            std::fs::read_to_string(dir().join(format!("running/{sw}.config_db.json"))).unwrap();
        running
            .sonic
            .insert(sw.into(), parse_config_db(&text).unwrap());
    }
    let (files, notes) = render::all(&plan, &running);
    assert!(notes.is_empty(), "{notes:?}");
    files
}

fn on_disk(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for sub in ["", "hosts"] {
        for e in std::fs::read_dir(root.join(sub)).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                let name = e.file_name().to_string_lossy().into_owned();
                out.insert(if sub.is_empty() {
                    name
                } else {
                    format!("{sub}/{name}")
                });
            }
        }
    }
    out
}

#[test]
fn the_example_renders_to_the_golden_files() {
    let files = rendered();
    let root = dir().join("rendered");
    if std::env::var_os("SPINEL_UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("hosts")).unwrap();
        for f in &files {
            std::fs::write(root.join(&f.name), &f.text).unwrap();
        }
    }
    let names: BTreeSet<String> = files.iter().map(|f| f.name.clone()).collect();
    assert_eq!(names, on_disk(&root), "the set of rendered files changed");
    for f in &files {
        let golden = std::fs::read_to_string(root.join(&f.name)).unwrap();
        assert!(
            golden == f.text,
            "{} differs from its golden file; rerun with SPINEL_UPDATE_GOLDEN=1 and review",
            f.name
        );
    }
    assert_eq!(rendered(), files, "rendering is deterministic");
}
