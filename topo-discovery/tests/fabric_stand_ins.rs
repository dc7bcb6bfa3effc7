//! Captures of neighbours only whose file name is not the box's name (issue 20): real lldpd
//! 1.0.16 captures of a 2-spine, 4-leaf, 8-host rack (`fixtures/lldpd-rack/capture.sh`), read
//! under file names an operator uses (management IPs, inventory ids, double extensions), are
//! matched to their boxes by their cabling and infer the same fabric as full captures; what
//! cannot be decided is refused, never turned into a miswiring verdict.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use spinel_api::labels::LabelOptions;
use topo_discovery::fabric::{Fabric, FabricBuilder, InferOptions, StandInError, labels};
use topo_discovery::sources::{self, ParseOptions, stand_in_name};

const BOXES: [&str; 14] = [
    "sp1", "sp2", "lf1a", "lf1b", "lf2a", "lf2b", "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8",
];

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lldpd-rack")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Reads `(file name, capture)` pairs as `topo infer` reads files, and decides the stand-ins.
fn read(files: &[(String, Vec<u8>)]) -> Result<(FabricBuilder, Vec<String>), StandInError> {
    let mut b = FabricBuilder::new();
    for (name, bytes) in files {
        let path = format!("captures/{name}");
        sources::ingest(bytes, &ParseOptions::for_file(&path, name), &mut b).unwrap();
    }
    let notes = b.resolve_stand_ins()?;
    Ok((b, notes.iter().map(ToString::to_string).collect()))
}

fn infer(files: &[(String, Vec<u8>)]) -> (Fabric, Vec<String>) {
    let (b, notes) = read(files).unwrap_or_else(|e| panic!("{e}"));
    (b.infer(&InferOptions::default()), notes)
}

fn labels_of(f: &Fabric) -> BTreeMap<String, BTreeMap<String, String>> {
    labels::node_labels(f, &LabelOptions::default())
        .into_iter()
        .map(|l| (l.node, l.labels))
        .collect()
}

/// Every box's capture of neighbours only, under the file name `name` gives it.
fn neighbours_only(name: impl Fn(usize, &str) -> String) -> Vec<(String, Vec<u8>)> {
    BOXES
        .iter()
        .enumerate()
        .map(|(i, b)| (name(i, b), fixture(&format!("{b}.neighbours.json0"))))
        .collect()
}

/// The reference: every box captured with `show interfaces details` (it names itself).
fn full() -> Fabric {
    let files: Vec<(String, Vec<u8>)> = BOXES
        .iter()
        .map(|b| (format!("{b}.json"), fixture(&format!("{b}.full.json0"))))
        .collect();
    infer(&files).0
}

fn assert_like_full(f: &Fabric, notes: &[String]) {
    let reference = full();
    assert_eq!(f.error_count(), 0, "{:#?}\n{notes:#?}", f.findings);
    assert_eq!(f.hosts.len(), 8, "each box once: {notes:#?}");
    assert_eq!(f.switches.len(), 6, "{notes:#?}");
    assert_eq!(labels_of(f), labels_of(&reference));
    let ids = |f: &Fabric| -> Vec<String> { f.domains.iter().map(|d| d.id.clone()).collect() };
    assert_eq!(ids(f), ids(&reference));
    assert_eq!(ids(f), ["sp1-2.lf1a-1b", "sp1-2.lf2a-2b", "sp1-2"]);
}

#[test]
fn captures_named_by_management_ip_are_placed_by_their_cabling() {
    let files = neighbours_only(|i, _| format!("10.0.0.{}.json", 11 + i));
    let (f, notes) = infer(&files);
    assert_like_full(&f, &notes);
    let note = notes
        .iter()
        .find(|n| n.starts_with("captures/10.0.0.13.json:"))
        .unwrap();
    assert!(
        note.contains("it is lf1a.fab.example") && note.contains("by its cabling"),
        "which file became which box, and why: {note}"
    );
}

#[test]
fn captures_named_by_inventory_id_are_placed_by_their_cabling() {
    let files = neighbours_only(|i, _| format!("INV-{:05}.json", 9000 - 37 * i));
    let (f, notes) = infer(&files);
    assert_like_full(&f, &notes);
}

#[test]
fn double_extensions_are_dropped_and_short_names_stay() {
    assert_eq!(stand_in_name("lf1a.json0.json").as_deref(), Some("lf1a"));
    assert_eq!(
        stand_in_name("h1.fab.example.json0").as_deref(),
        Some("h1.fab.example")
    );
    let files = neighbours_only(|_, b| format!("{b}.json0.json"));
    let (f, notes) = infer(&files);
    assert_eq!(f.error_count(), 0, "{:#?}", f.findings);
    assert!(
        f.switch_by_name("lf1a").is_some(),
        "short name = FQDN: {notes:#?}"
    );
    let hosts: Vec<&str> = f.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(hosts, ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("named lf1a after the file")),
        "{notes:#?}"
    );
}

#[test]
fn a_file_named_like_another_box_is_placed_by_its_cabling() {
    // lf1a's capture in a file called sp2.json, sp2's under its management IP.
    let files = neighbours_only(|i, b| match b {
        "lf1a" => "sp2.json".to_owned(),
        _ => format!("10.0.0.{}.json", 11 + i),
    });
    let (f, notes) = infer(&files);
    assert_like_full(&f, &notes);
    let note = notes
        .iter()
        .find(|n| n.starts_with("captures/sp2.json:"))
        .unwrap();
    assert!(note.contains("it is lf1a.fab.example"), "{note}");
}

#[test]
fn two_files_for_one_box_are_refused() {
    let mut files = neighbours_only(|i, _| format!("10.0.0.{}.json", 11 + i));
    files.push(("LF-0042.json".to_owned(), fixture("lf1a.neighbours.json0")));
    let err = read(&files).expect_err("refused");
    let sources: Vec<&str> = err.undecided.iter().map(|u| u.source.as_str()).collect();
    assert_eq!(
        sources,
        ["captures/10.0.0.13.json", "captures/LF-0042.json"]
    );
    assert!(
        err.undecided
            .iter()
            .all(|u| u.candidates == ["lf1a.fab.example"]),
        "{err}"
    );
    assert!(
        err.to_string().contains("one box, several captures"),
        "{err}"
    );
}

#[test]
fn a_symmetric_rack_without_a_capture_that_tells_the_groups_apart_is_refused() {
    // Without the spines' captures nothing tells leaf group 1 from group 2: each capture fits
    // two boxes. Refused with the candidates, rather than a fabric built on a guess.
    let files: Vec<(String, Vec<u8>)> = neighbours_only(|i, _| format!("10.0.0.{}.json", 11 + i))
        .into_iter()
        .skip(2)
        .collect();
    let err = read(&files).expect_err("refused");
    assert_eq!(err.undecided.len(), 12, "{err}");
    let h1 = err
        .undecided
        .iter()
        .find(|u| u.source == "captures/10.0.0.17.json")
        .unwrap();
    assert_eq!(h1.candidates, ["h1.fab.example", "h5.fab.example"]);
    // One capture that names its box (a spine's full capture) settles everything.
    let mut files = files;
    files.push(("sp1.json".to_owned(), fixture("sp1.full.json0")));
    let (f, notes) = infer(&files);
    assert_eq!(f.error_count(), 0, "{:#?}\n{notes:#?}", f.findings);
    assert_eq!(f.hosts.len(), 8);
}

#[test]
fn captures_named_after_their_boxes_still_infer_as_before() {
    let files = neighbours_only(|_, b| format!("{b}.json"));
    let (f, notes) = infer(&files);
    assert_eq!(f.error_count(), 0, "{:#?}", f.findings);
    assert!(
        notes.iter().any(|n| n.contains("named h1 after the file")),
        "{notes:#?}"
    );
    let hosts: Vec<&str> = f.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(hosts, ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"]);
}
