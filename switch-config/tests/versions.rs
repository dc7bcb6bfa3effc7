//! What each switch software release accepts: NVUE syntax before and after Cumulus Linux 5.15,
//! EOS queue commands per platform family, and PFC moved off NVIDIA's RoCE default priority on
//! Cumulus (the unsets, proven on a running configuration that has NVIDIA's defaults).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Value, json};
use spinel_switch_config::check::{self, Evidence};
use spinel_switch_config::diff;
use spinel_switch_config::intent::software::{CUMULUS_RELEASES, EosPlatform};
use spinel_switch_config::intent::{self, Intent, SwitchOs};
use spinel_switch_config::observe;
use spinel_switch_config::plan::FabricPlan;
use spinel_switch_config::render::{self, Running, nvue};
use spinel_switch_config::state;

fn example() -> Intent {
    intent::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabric-intent.yaml"))
        .unwrap()
}

fn with_release(mut i: Intent, switch: &str, version: &str) -> Intent {
    let s = i.switches.iter_mut().find(|s| s.name == switch).unwrap();
    s.version = Some(version.into());
    i
}

fn nvue_script(i: &Intent) -> String {
    let plan = FabricPlan::new(i);
    let r = render::switch(&plan, plan.switch("leaf02").unwrap(), &Running::default());
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    r.files[0].text.clone()
}

#[test]
fn nvue_syntax_follows_the_release() {
    let old = nvue_script(&with_release(example(), "leaf02", "5.14"));
    let new = nvue_script(&with_release(example(), "leaf02", "5.15.0"));
    for (script, present, absent) in [
        (
            &old,
            [
                "nv set service lldp application-tlv udp-port 4791 priority 3\n",
                "nv set interface swp1 lldp dcbx-pfc-tlv on\n",
                "nv set interface swp51 ip address 10.254.0.4/31\n",
            ],
            ["system lldp", "enabled\n", "ipv4"],
        ),
        (
            &new,
            [
                "nv set system lldp application-tlv udp-port 4791 priority 3\n",
                "nv set interface swp1 lldp dcbx-pfc-tlv enabled\n",
                "nv set interface swp51 ipv4 address 10.254.0.4/31\n",
            ],
            ["service lldp", "tlv on\n", " ip address"],
        ),
    ] {
        for p in present {
            assert!(script.contains(p), "want {p:?} in\n{script}");
        }
        for a in absent {
            assert!(!script.contains(a), "{a:?} must not be in\n{script}");
        }
    }
}

#[test]
fn every_known_cumulus_release_reads_back_as_the_intent() {
    for release in CUMULUS_RELEASES {
        let i = with_release(example(), "leaf02", release);
        let plan = FabricPlan::new(&i);
        let sp = plan.switch("leaf02").unwrap();
        let r = render::switch(&plan, sp, &Running::default());
        let got = observe::parse(SwitchOs::Cumulus, &r.files[1].text).unwrap();
        assert_eq!(got, state::expected(&plan, sp), "{release}");
        let tree = observe::nvue::parse_tree(&r.files[1].text).unwrap();
        let rendered = nvue::commands(&plan, sp, nvue::syntax(sp).unwrap());
        assert!(
            diff::nvue::commands(&rendered, &tree).is_empty(),
            "{release}"
        );
    }
}

#[test]
fn eos_queues_follow_the_platform_family() {
    let i = example();
    let plan = FabricPlan::new(&i);
    for (switch, platform, queue) in [
        ("leaf03", EosPlatform::Strata, "   uc-tx-queue 3\n"),
        ("leaf04", EosPlatform::Sand, "   tx-queue 3\n"),
    ] {
        let sp = plan.switch(switch).unwrap();
        assert_eq!(sp.software.and_then(|s| s.eos_platform()), Some(platform));
        let text = &render::switch(&plan, sp, &Running::default()).files[0].text;
        assert!(text.contains(queue), "{switch}: {text}");
        if platform == EosPlatform::Sand {
            assert!(!text.contains("uc-tx-queue"), "{text}");
        }
        // Either spelling reads back as the intent.
        assert_eq!(
            observe::parse(SwitchOs::Eos, text).unwrap(),
            state::expected(&plan, sp),
            "{switch}"
        );
    }
}

/// The example with RoCE data and PFC on priority 5 (traffic class 5).
fn priority_five() -> Intent {
    let mut i = example();
    i.roce.data.priority = 5;
    i.roce.pfc.priorities = vec![5];
    i
}

#[test]
fn pfc_moved_off_priority_3_unsets_what_roce_mode_lossless_sets() {
    let i = priority_five();
    assert!(intent::validate(&i).iter().all(|x| !x.is_error()));
    let script = nvue_script(&i);
    for line in [
        "nv set qos pfc default-global switch-priority 5\n",
        "nv set qos traffic-pool roce-lossless switch-priority 5\n",
        "nv unset qos pfc default-global switch-priority 3\n",
        "nv unset qos traffic-pool roce-lossless switch-priority 3\n",
        "nv unset qos congestion-control default-global traffic-class 0\n",
        "nv unset qos congestion-control default-global traffic-class 3\n",
    ] {
        assert!(script.contains(line), "want {line:?} in\n{script}");
    }
    assert!(script.ends_with("nv config apply\n"));
    // With the default priority nothing of NVIDIA's lossless defaults is unset but TC 0's ECN.
    let default = nvue_script(&example());
    assert!(!default.contains("unset qos pfc"), "{default}");
    assert!(default.contains("nv unset qos congestion-control default-global traffic-class 0\n"));
}

/// A Cumulus 5.12 running configuration carrying what `nv set qos roce mode lossless` sets
/// (NVIDIA's "Default RoCE Configuration"): PFC and the lossless pool on priority 3, ECN on
/// traffic classes 0 and 3, DSCP 26 → 3 and 48 → 6, UDP 4791 advertised on priority 3.
fn running_with_roce_defaults() -> Value {
    let ecn = json!({"ecn": "enable", "min-threshold": 150000, "max-threshold": 1500000,
                     "probability": 100, "red": "disable"});
    let mut tree = json!({
        "qos": {
            "roce": {"mode": "lossless"},
            "mapping": {"default-global": {"trust": "l3", "dscp": {
                "26": {"switch-priority": 3}, "48": {"switch-priority": 6}}}},
            "egress-queue-mapping": {"default-global": {"switch-priority": {
                "3": {"traffic-class": 3}, "6": {"traffic-class": 6}}}},
            "egress-scheduler": {"default-global": {"traffic-class": {
                "0": {"mode": "dwrr", "bw-percent": 50}, "3": {"mode": "dwrr", "bw-percent": 50},
                "6": {"mode": "strict"}}}},
            "pfc": {"default-global": {"switch-priority": {"3": {}}, "rx": "enable",
                                       "tx": "enable", "cable-length": 100}},
            "traffic-pool": {"roce-lossless": {"switch-priority": {"3": {}}}},
            "congestion-control": {"default-global": {"traffic-class": {"0": ecn, "3": ecn}}}
        },
        "service": {"lldp": {"application-tlv": {"udp-port": {"4791": {"priority": 3}}}}},
        "interface": {}
    });
    for port in ["swp1", "swp2", "swp51", "swp52"] {
        tree["interface"][port] = json!({"type": "swp"});
    }
    tree
}

/// Applies `nv set` / `nv unset` lines to a tree as NVUE's pending configuration would; a set
/// must be one of the rendered commands.
fn apply(tree: &mut Value, lines: &[String], rendered: &[nvue::NvSet]) {
    for line in lines {
        if line == "nv config apply" {
            continue;
        }
        if let Some(path) = line.strip_prefix("nv unset ") {
            let parts: Vec<&str> = path.split(' ').collect();
            let (last, parents) = parts.split_last().unwrap();
            let mut node = &mut *tree;
            for p in parents {
                node = node.get_mut(*p).unwrap();
            }
            node.as_object_mut().unwrap().remove(*last).unwrap();
            continue;
        }
        let words = line.strip_prefix("nv set ").unwrap();
        let cmd = rendered
            .iter()
            .find(|c| {
                let mut w = c.path.join(" ");
                if let Some(v) = &c.value {
                    w = format!("{w} {v}");
                }
                w == words
            })
            .unwrap_or_else(|| panic!("not a rendered command: {line}"));
        merge(tree, &nvue::to_tree(std::slice::from_ref(cmd)));
    }
}

fn merge(into: &mut Value, from: &Value) {
    if let (Value::Object(a), Value::Object(b)) = (&mut *into, from) {
        for (k, v) in b {
            match a.get_mut(k) {
                Some(existing) if existing.is_object() && v.is_object() => merge(existing, v),
                _ => {
                    a.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

#[test]
fn on_a_switch_with_nvidias_defaults_pfc_ends_exactly_where_the_intent_says() {
    let i = priority_five();
    let plan = FabricPlan::new(&i);
    let sp = plan.switch("leaf02").unwrap();
    let rendered = nvue::commands(&plan, sp, nvue::syntax(sp).unwrap());
    let mut running = running_with_roce_defaults();
    // Before: the checker sees priority 3 lossless where the intent says 5.
    let before = observe::nvue::state(&running);
    assert_eq!(before.ports["swp1"].pfc, [3]);
    let lines = diff::nvue::commands(&rendered, &running);
    for unset in [
        "nv unset qos pfc default-global switch-priority 3",
        "nv unset qos traffic-pool roce-lossless switch-priority 3",
        "nv unset qos congestion-control default-global traffic-class 0",
        "nv unset qos congestion-control default-global traffic-class 3",
    ] {
        assert!(
            lines.iter().any(|l| l == unset),
            "want {unset:?} in {lines:#?}"
        );
    }
    apply(&mut running, &lines, &rendered);
    let after = observe::nvue::state(&running);
    for port in ["swp1", "swp2"] {
        assert_eq!(after.ports[port].pfc, [5], "{port}");
    }
    let ecn: Vec<u8> = after.ports["swp1"]
        .queues
        .iter()
        .filter(|(_, q)| q.ecn.is_some())
        .map(|(tc, _)| *tc)
        .collect();
    assert_eq!(ecn, [5], "ECN exactly on the lossless class");
    assert!(diff::nvue::commands(&rendered, &running).is_empty());
    let mut e = Evidence::default();
    e.switches.insert("leaf02".into(), after);
    let report = check::check(&plan, &e);
    assert!(report.findings.is_empty(), "{report:#?}");
}
