//! The workspace's shape, as docs/architecture.md describes it: the crate graph there is the
//! real one (from `cargo metadata`), no product crate with binaries depends on another, and no
//! module imports a sibling that imports it back.

// A test fails loudly on what it cannot read.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn metadata() -> Value {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("metadata is JSON")
}

/// `crate -> dependency` edges between workspace crates (normal dependencies only).
fn edges(meta: &Value) -> BTreeSet<(String, String)> {
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut out = BTreeSet::new();
    for p in packages {
        for d in p["dependencies"].as_array().expect("dependencies") {
            let dep = d["name"].as_str().unwrap_or_default();
            if names.contains(dep) && d["kind"].is_null() {
                out.insert((
                    p["name"].as_str().unwrap_or_default().to_owned(),
                    dep.to_owned(),
                ));
            }
        }
    }
    out
}

#[test]
fn the_documented_crate_graph_is_the_real_one() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).expect("the doc");
    let block = doc
        .split("<!-- crate-graph:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- crate-graph:end -->").next())
        .expect("docs/architecture.md holds the crate-graph block");
    let documented: BTreeSet<(String, String)> = block
        .lines()
        .filter_map(|l| l.trim().split_once(" -> "))
        .flat_map(|(from, to)| {
            to.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(move |t| (from.trim().to_owned(), t.to_owned()))
        })
        .collect();
    let real = edges(&metadata());
    let missing: Vec<_> = real.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&real).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/architecture.md's crate graph differs from Cargo.toml: missing {missing:?}, stale {stale:?}"
    );
}

#[test]
fn no_crate_with_binaries_depends_on_another() {
    let meta = metadata();
    let with_bins: BTreeSet<String> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| {
            p["targets"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["kind"][0] == "bin"))
        })
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    // The test harnesses (tests/) may link a product's library where its binary cannot run:
    // the kernel tier's guest programs drive the agent's NIC discovery and health rules on a
    // real PF driver, with no API server in the guest. Products may not.
    let harnesses: BTreeSet<String> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| {
            p["manifest_path"].as_str().is_some_and(|m| {
                Path::new(m).starts_with(root().canonicalize().unwrap().join("tests"))
            })
        })
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    assert!(
        harnesses.contains("spinel-kernel-tests") && !harnesses.contains("spinel-agent"),
        "the harnesses are told by their directory: {harnesses:?}"
    );
    let offending: Vec<_> = edges(&meta)
        .into_iter()
        .filter(|(from, to)| {
            !harnesses.contains(from) && with_bins.contains(from) && with_bins.contains(to)
        })
        .collect();
    assert!(
        offending.is_empty(),
        "binary crates depending on binary crates: {offending:?}"
    );
}

/// Module paths of a crate's source files (`a::b` for `src/a/b.rs` or `src/a/b/mod.rs`).
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("source dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(src)
                    .expect("under src")
                    .with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                if parts.first().is_some_and(|p| p == "bin") {
                    continue;
                }
                out.insert(parts.join("::"), path);
            }
        }
    }
    out
}

/// Sibling-level import edges of one crate: `a::x -> a::y` when `a::x` uses something in
/// `a::y` (a module using its parent or children is how Rust is written; siblings that use
/// each other are a circle).
fn import_edges(src: &Path) -> BTreeSet<(String, String)> {
    let mods = modules(src);
    let mut out = BTreeSet::new();
    for (module, path) in &mods {
        let text = std::fs::read_to_string(path).expect("source");
        // Code only: comments (doc links included) name modules without importing them.
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .map(|l| l.split("//").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        let parent: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        for (prefix, base) in [
            ("crate::", Vec::new()),
            ("super::", parent[..parent.len().saturating_sub(1)].to_vec()),
        ] {
            for (i, _) in code.match_indices(prefix) {
                let rest: String = code[i + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let mut target = base.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
                target.extend(
                    rest.split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned),
                );
                // The longest module that path names.
                while !target.is_empty() && !mods.contains_key(&target.join("::")) {
                    target.pop();
                }
                let target = target.join("::");
                let related = target.is_empty()
                    || module.starts_with(&format!("{target}::"))
                    || target.starts_with(&format!("{module}::"))
                    || target == *module;
                if !related {
                    out.insert((module.clone(), target));
                }
            }
        }
    }
    out
}

#[test]
fn no_module_imports_a_sibling_that_imports_it_back() {
    let meta = metadata();
    let mut cycles = Vec::new();
    for p in meta["packages"].as_array().expect("packages") {
        let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or_default());
        let src = manifest.parent().expect("crate dir").join("src");
        if !src.is_dir() {
            continue;
        }
        let edges = import_edges(&src);
        // Reachability within the crate: a cycle is an edge whose target reaches its source.
        for (from, to) in &edges {
            let mut seen = BTreeSet::new();
            let mut todo = vec![to.clone()];
            while let Some(m) = todo.pop() {
                if m == *from {
                    cycles.push(format!("{}: {from} -> {to} -> ... -> {from}", p["name"]));
                    break;
                }
                if seen.insert(m.clone()) {
                    todo.extend(
                        edges
                            .iter()
                            .filter(|(a, _)| *a == m)
                            .map(|(_, b)| b.clone()),
                    );
                }
            }
        }
    }
    assert!(cycles.is_empty(), "import circles:\n{}", cycles.join("\n"));
}
