//! The intent file: the annotated example is valid, and every kind of mistake or hostile input
//! is answered with an error that names the field and the switch.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use spinel_switch_config::intent::{self, Intent, IntentError, Issue, Limits};

const BASE: &str = "\
schema: spinel.dev/fabric-intent/v1
fabric: lab
rails:
  - {name: rail0, nic: eth0}
  - {name: rail1, nic: eth1}
switches:
  - name: leaf01
    role: leaf
    os: cumulus
    version: '5.15'
    networks:
      - {rail: rail0, vlan: 100, subnet: 10.0.0.0/24, gateway: 10.0.0.1}
    ports:
      swp1: node01/eth0
      swp2: node02/eth0
      swp51: {peer: spine01/swp1, address: 10.254.0.0/31}
  - name: leaf02
    role: leaf
    os: eos
    platform: strata
    version: 4.33.1F
    networks:
      - {rail: rail1, vlan: 101, subnet: 10.0.1.0/24, gateway: 10.0.1.1}
    ports:
      Ethernet1/1: node01/eth1
      Ethernet2/1: node02/eth1
      Ethernet32/1: {peer: spine01/swp2, address: 10.254.0.2/31}
  - name: spine01
    role: spine
    os: cumulus
    version: 5.12.1
";

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabric-intent.yaml")
}

fn parse(text: &str) -> Result<Intent, IntentError> {
    Intent::parse(text, "test.yaml")
}

fn issues(text: &str) -> Vec<Issue> {
    intent::validate(&parse(text).unwrap_or_else(|e| panic!("{e}")))
}

fn errors(text: &str) -> Vec<String> {
    issues(text)
        .into_iter()
        .filter(Issue::is_error)
        .map(|i| i.to_string())
        .collect()
}

fn the_error(text: &str, needle: &str) -> String {
    let errs = errors(text);
    let matching: Vec<&String> = errs.iter().filter(|e| e.contains(needle)).collect();
    assert_eq!(
        matching.len(),
        1,
        "want one error with {needle:?}, got {errs:#?}"
    );
    matching[0].clone()
}

#[test]
fn the_annotated_example_is_valid_without_warnings() {
    let i = intent::load(&example()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(i.switches.len(), 6);
    let all = intent::validate(&i);
    assert!(all.is_empty(), "{all:#?}");
}

#[test]
fn the_base_used_here_is_valid() {
    assert!(errors(BASE).is_empty(), "{:#?}", errors(BASE));
}

#[test]
fn overlapping_subnets_name_both_fields() {
    let text = BASE.replace(
        "10.0.1.0/24, gateway: 10.0.1.1",
        "10.0.0.128/25, gateway: 10.0.0.129",
    );
    let e = the_error(&text, "overlaps");
    assert!(e.contains("switches[leaf02].networks[rail1].subnet"), "{e}");
    assert!(e.contains("(switch leaf02)"), "{e}");
    assert!(e.contains("switches[leaf01].networks[rail0].subnet"), "{e}");
}

#[test]
fn a_rail_without_a_leaf() {
    let text = BASE.replace(
        "  - {name: rail1, nic: eth1}\n",
        "  - {name: rail1, nic: eth1}\n  - {name: rail2, nic: eth2}\n",
    );
    let e = the_error(&text, "rails[rail2]");
    assert!(e.contains("no leaf serves rail rail2"), "{e}");
}

#[test]
fn pfc_on_more_priorities_than_the_buffer_profile_allows() {
    let text = format!("{BASE}roce:\n  pfc:\n    priorities: [3, 4, 5]\n");
    let e = the_error(&text, "lossless priority group");
    assert!(e.contains("roce.pfc.priorities"), "{e}");
    assert!(e.contains("PFC on 3 priorities (3,4,5)"), "{e}");
}

#[test]
fn a_switch_enabling_pfc_beyond_the_profile_is_named() {
    let text = BASE.replace("    os: eos\n", "    os: eos\n    pfc_priorities: [3, 4]\n");
    let e = the_error(&text, "pfc_priorities");
    assert!(
        e.starts_with("error: switches[leaf02].pfc_priorities (switch leaf02)"),
        "{e}"
    );
    assert!(e.contains("priority 4"), "{e}");
    // ...and the link to the spine then disagrees on PFC.
    the_error(&text, "ends of a link must pause the same priorities");
}

#[test]
fn mtu_below_the_roce_payload_plus_headers() {
    let text = format!("{BASE}roce:\n  mtu:\n    host: 4100\n");
    let e = the_error(&text, "roce.mtu.host");
    assert!(
        e.contains("below the RoCE payload 4096 plus 96 bytes"),
        "{e}"
    );
    assert!(e.contains("use at least 4192"), "{e}");
}

#[test]
fn a_switch_mtu_above_what_its_os_accepts() {
    let text = format!("{BASE}roce:\n  mtu:\n    switch: 9216\n");
    let e = the_error(&text, "9214");
    assert!(e.contains("switches[leaf02].mtu (switch leaf02)"), "{e}");
}

#[test]
fn duplicate_switches() {
    let text = format!("{BASE}  - name: spine01\n    role: spine\n    os: eos\n");
    let e = the_error(&text, "duplicate switch");
    assert!(e.contains("switches[spine01]"), "{e}");
    assert!(e.contains("entries 3 and 4"), "{e}");
}

#[test]
fn a_nic_cabled_twice() {
    let text = BASE.replace("swp2: node02/eth0", "swp2: node01/eth0");
    let e = the_error(&text, "a NIC has one cable");
    assert!(
        e.contains("node01/eth0 is also cabled to leaf01 port swp1"),
        "{e}"
    );
}

#[test]
fn a_typo_in_a_switch_name_is_not_taken_for_a_host() {
    let text = BASE.replace("peer: spine01/swp1", "peer: spine1/swp1");
    let e = the_error(&text, "spine1");
    assert!(e.contains("switches[leaf01].ports.swp51.address"), "{e}");
    assert!(e.contains("spine1 is not a switch in this intent"), "{e}");
}

#[test]
fn a_subnet_too_small_for_the_pods() {
    let text = BASE.replace(
        "10.0.0.0/24, gateway: 10.0.0.1",
        "10.0.0.0/28, gateway: 10.0.0.1",
    );
    let e = the_error(&text, "host addresses");
    assert!(e.contains("10.0.0.0/28 has 14 host addresses"), "{e}");
    assert!(e.contains("2 host(s) × (1 + 16 pods"), "{e}");
}

#[test]
fn link_ends_that_disagree() {
    let text = format!("{BASE}    ports:\n      swp1: leaf02/Ethernet32/1\n");
    let e = the_error(&text, "switches[leaf01].ports.swp51 (switch leaf01): says");
    assert!(e.contains("one of the two cabling entries is wrong"), "{e}");
}

#[test]
fn wrong_types_name_the_field_and_the_switch() {
    let text = BASE.replace("    os: eos\n", "    os: eos\n    speed_gbps: fast\n");
    let e = parse(&text).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("test.yaml: switches[1].speed_gbps (switch leaf02): "),
        "{msg}"
    );
    assert!(msg.contains("line 20 column 17: invalid u32"), "{msg}");
}

#[test]
fn unknown_fields_and_enum_values_are_refused() {
    let msg = parse(&BASE.replace("role: spine", "role: spline"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("switches[2].role (switch spine01)"), "{msg}");
    let msg = parse(&BASE.replace("    os: eos\n", "    os: eos\n    colour: blue\n"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("unknown field `colour`"), "{msg}");
}

#[test]
fn a_port_listed_twice_is_a_duplicate_key() {
    let text = BASE.replace(
        "      swp2: node02/eth0\n",
        "      swp2: node02/eth0\n      swp1: node03/eth0\n",
    );
    let msg = parse(&text).unwrap_err().to_string();
    assert!(msg.contains("the key swp1 appears twice"), "{msg}");
    assert!(msg.starts_with("test.yaml: switches[0].ports"), "{msg}");
}

#[test]
fn another_schema_version_is_refused() {
    let msg = parse(&BASE.replace("/v1", "/v9")).unwrap_err().to_string();
    assert!(
        msg.contains("schema \"spinel.dev/fabric-intent/v9\" is not supported"),
        "{msg}"
    );
}

#[test]
fn huge_input_is_refused_before_parsing() {
    let dir = tempdir("huge");
    let path = dir.join("huge.yaml");
    let mut text = BASE.to_owned();
    text.push_str(&format!("# {}\n", "x".repeat(4096)));
    std::fs::write(&path, &text).unwrap();
    let limits = Limits {
        max_bytes: 2048,
        ..Limits::default()
    };
    let e = intent::load_with_limits(&path, &limits).unwrap_err();
    assert!(
        matches!(e, IntentError::TooLarge { limit: 2048, .. }),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("bytes is more than the 2048-byte limit"),
        "{e}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn deep_nesting_is_refused_quickly() {
    // No field of the schema nests arbitrarily, so deep input fails at its first level; the
    // parser's depth budget (Limits::max_depth) stops it in any case, without recursion.
    for deep in [
        format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("{}1{}", "{a: ".repeat(10_000), "}".repeat(10_000)),
    ] {
        let started = std::time::Instant::now();
        let msg = parse(&format!("{BASE}roce: {deep}\n"))
            .unwrap_err()
            .to_string();
        assert!(started.elapsed().as_secs() < 5);
        assert!(msg.starts_with("test.yaml: roce"), "{msg}");
    }
    let deep_block: String = (0..200)
        .map(|i| format!("{}- \n", "  ".repeat(i)))
        .collect();
    let msg = parse(&format!(
        "schema: spinel.dev/fabric-intent/v1\nfabric:\n{deep_block}"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        msg.contains("fabric: line 3 column 3: expected string scalar"),
        "{msg}"
    );
}

#[test]
fn an_alias_bomb_is_refused() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let prev = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    let started = std::time::Instant::now();
    let msg = parse(&text).unwrap_err().to_string();
    assert!(started.elapsed().as_secs() < 5, "the bomb was expanded");
    assert!(msg.contains("test.yaml"), "{msg}");
}

#[test]
fn an_alias_flood_is_said_in_words() {
    let flood = format!("rails:\n  - &r {{name: rail0}}\n{}", "  - *r\n".repeat(150));
    let text = BASE.replace(
        "rails:\n  - {name: rail0, nic: eth0}\n  - {name: rail1, nic: eth1}\n",
        &flood,
    );
    let msg = parse(&text).unwrap_err().to_string();
    // Which limit, and why it exists; no parser-internal names.
    assert!(
        msg.contains("too big to read: 150 aliases of 1 anchor(s), more than 10 per anchor"),
        "{msg}"
    );
    assert!(msg.contains("alias flood"), "{msg}");
    assert!(
        !msg.contains("AliasAnchorRatio") && !msg.contains("budget"),
        "{msg}"
    );
}

#[test]
fn a_duplicate_key_names_its_field() {
    let text = BASE.replace("fabric: lab\n", "fabric: lab\nfabric: lab2\n");
    let msg = parse(&text).unwrap_err().to_string();
    assert!(msg.starts_with("test.yaml: fabric: "), "{msg}");
    assert!(msg.contains("the key fabric appears twice"), "{msg}");
    assert!(
        !msg.contains('?') && !msg.contains("DuplicateKeyPolicy"),
        "{msg}"
    );
    let text = BASE.replace("    role: spine\n", "    role: spine\n    role: leaf\n");
    let msg = parse(&text).unwrap_err().to_string();
    assert!(
        msg.starts_with("test.yaml: switches[2].role (switch spine01): "),
        "{msg}"
    );
}

#[test]
fn a_huge_name_is_cut_in_every_message() {
    let huge = "x".repeat(10 * 1024 * 1024);
    let text = BASE.replace("name: spine01", &format!("name: '{huge}/'"));
    let all: String = issues(&text).iter().map(|i| format!("{i}\n")).collect();
    assert!(!all.is_empty());
    assert!(all.len() < 64 * 1024, "{} bytes of errors", all.len());
    assert!(
        all.contains("(10485761 bytes)"),
        "{}",
        &all[..all.len().min(2000)]
    );
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tempdir("fifo");
    let fifo = dir.join("intent.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("coreutils' mkfifo");
    assert!(made.success());
    // No writer ever opens it: reading would block forever.
    let e = intent::load(&fifo).unwrap_err();
    assert!(
        matches!(e, IntentError::NotRegular { kind: "a FIFO", .. }),
        "{e}"
    );
    assert!(e.to_string().contains("a FIFO, not a regular file"), "{e}");
    let e = intent::load(&dir).unwrap_err();
    assert!(
        e.to_string().contains("a directory, not a regular file"),
        "{e}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn software_releases_are_known_or_refused_with_the_list() {
    let text = BASE.replace("version: '5.15'", "version: '5.8'");
    let e = the_error(&text, "switches[leaf01].version");
    assert!(
        e.contains("Cumulus Linux \"5.8\" is not a release this renderer knows; known: 5.9, 5.10"),
        "{e}"
    );
    assert!(e.contains("5.18"), "{e}");
    let e = the_error(
        &BASE.replace("    version: 4.33.1F\n", ""),
        "switches[leaf02].version",
    );
    assert!(e.contains("known") || e.contains("one of 4.30"), "{e}");
    let e = the_error(
        &BASE.replace("    platform: strata\n", ""),
        "switches[leaf02].platform",
    );
    assert!(e.contains("strata") && e.contains("sand"), "{e}");
    let e = the_error(
        &BASE.replace(
            "    version: '5.15'\n",
            "    version: '5.15'\n    platform: sand\n",
        ),
        "switches[leaf01].platform",
    );
    assert!(e.contains("EOS switches only"), "{e}");
    let sonic = BASE.replace(
        "os: cumulus\n    version: 5.12.1",
        "os: sonic\n    buffer_bytes: 1000000000\n    version: '202411'",
    );
    let e = the_error(&sonic, "switches[spine01].version");
    assert!(e.contains("remove the version"), "{e}");
    let forward = format!("{BASE}roce:\n  pfc:\n    watchdog: {{action: forward}}\n");
    let e = the_error(&forward, "roce.pfc.watchdog.action (switch leaf02)");
    assert!(e.contains("no forward"), "{e}");
}

#[test]
fn too_many_nodes_are_refused() {
    let limits = Limits {
        max_nodes: 100,
        ..Limits::default()
    };
    let many: String = (0..200)
        .map(|i| format!("      swp{i}: node{i}/eth0\n"))
        .collect();
    let text = BASE.replace("      swp1: node01/eth0\n", &many);
    let msg = Intent::parse_with_limits(&text, "test.yaml", &limits)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("node"), "{msg}");
}

#[test]
fn binary_garbage_is_an_error_not_a_panic() {
    let dir = tempdir("garbage");
    let path = dir.join("garbage.yaml");
    std::fs::write(&path, [0xff, 0xfe, 0x00, 0x41, 0x80]).unwrap();
    let e = intent::load(&path).unwrap_err();
    assert!(matches!(e, IntentError::NotUtf8 { .. }), "{e}");
    for text in ["", "---\n...\n", "[", "schema: [", "\t\t:"] {
        assert!(parse(text).is_err(), "{text:?} parsed");
    }
    std::fs::remove_dir_all(dir).ok();
}

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinel-intent-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
