//! The checker and the diffs, on the annotated example with drift planted in each source:
//! each disagreement is reported once, with the right switch, port, host, NIC and fix, and
//! applying the diff makes the switch agree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Map, Value};
use spinel_switch_config::check::{self, Evidence, Finding, Kind, Report, Severity, Source};
use spinel_switch_config::diff;
use spinel_switch_config::host::{HostState, NicState, Reading, STATE_SCHEMA};
use spinel_switch_config::intent::software::EosPlatform;
use spinel_switch_config::intent::{self, Intent, SwitchOs};
use spinel_switch_config::observe::{self, nvue as nvue_observe, sonic as sonic_observe};
use spinel_switch_config::plan::FabricPlan;
use spinel_switch_config::render::{self, Running, nvue, sonic};
use spinel_wire::neighbor::{
    ChassisId, ChassisIdSubtype, Neighbor, NeighborTable, Observer, PfcConfiguration, PortId,
    PortIdSubtype, PortNeighbors, Role, SCHEMA,
};

fn example() -> Intent {
    intent::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabric-intent.yaml"))
        .unwrap()
}

fn running_lanes() -> Running {
    let mut r = Running::default();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/running/leaf01.config_db.json"),
    )
    .unwrap();
    r.sonic.insert(
        "leaf01".into(),
        sonic_observe::parse_config_db(&text).unwrap(),
    );
    r
}

fn only(report: &Report, kind: Kind) -> Vec<&Finding> {
    report.findings.iter().filter(|f| f.kind == kind).collect()
}

fn evidence_for(switch: &str, state: spinel_switch_config::state::SwitchState) -> Evidence {
    let mut e = Evidence::default();
    e.switches.insert(switch.into(), state);
    e
}

#[test]
fn rendered_configurations_agree_with_the_intent() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let running = running_lanes();
    for sp in &plan.switches {
        let r = render::switch(&plan, sp, &running);
        let state = observe::parse(sp.switch.os, &r.files[0].text.replace("nv set ", "")).ok();
        let state = match sp.switch.os {
            SwitchOs::Cumulus => observe::parse(SwitchOs::Cumulus, &r.files[1].text).unwrap(),
            _ => state.unwrap(),
        };
        let report = check::check(&plan, &evidence_for(&sp.switch.name, state));
        assert!(
            report.findings.is_empty(),
            "{}: {:#?}",
            sp.switch.name,
            report.findings
        );
    }
}

/// SONiC's `AZURE` template: DSCP 26 lands in lossy TC 1.
fn azure_map() -> sonic::Fields {
    (0..64)
        .map(|d| {
            let tc = match d {
                3 => 3,
                4 => 4,
                5 => 2,
                8 => 0,
                46 => 5,
                48 => 6,
                _ => 1,
            };
            (d.to_string().into(), tc.to_string())
        })
        .collect()
}

fn drifted_sonic(plan: &FabricPlan<'_>) -> sonic::ConfigDb {
    let sp = plan.switch("leaf01").unwrap();
    let mut db = sonic::render(plan, sp, running_lanes().sonic.get("leaf01")).config_db;
    db.get_mut("DSCP_TO_TC_MAP")
        .unwrap()
        .insert("AZURE".into(), azure_map());
    for entry in db.get_mut("PORT_QOS_MAP").unwrap().values_mut() {
        entry.insert("dscp_to_tc_map".into(), "AZURE".into());
        entry.insert("pfc_enable".into(), "3,4".into());
    }
    db.get_mut("PFC_WD").unwrap().remove("Ethernet8");
    db.get_mut("PORT")
        .unwrap()
        .get_mut("Ethernet0")
        .unwrap()
        .insert("mtu".into(), "9216".into());
    let profile = db
        .get_mut("BUFFER_PROFILE")
        .unwrap()
        .get_mut("pg_lossless_400000_5m_profile")
        .unwrap();
    profile.insert("xoff".into(), "0".into());
    db
}

#[test]
fn sonic_drift_is_reported_once_per_fault() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let report = check::check(
        &plan,
        &evidence_for("leaf01", sonic_observe::state(&drifted_sonic(&plan))),
    );
    let dscp = only(&report, Kind::DscpMap);
    assert_eq!(dscp.len(), 1, "{report:#?}");
    assert_eq!(dscp[0].severity, Severity::Error);
    assert_eq!(
        dscp[0].ports,
        ["Ethernet0", "Ethernet8", "Ethernet256", "Ethernet264"]
    );
    assert!(dscp[0].found.contains("26→1"), "{}", dscp[0].found);
    let pfc = only(&report, Kind::Pfc);
    assert_eq!(pfc.len(), 1);
    assert_eq!(
        (pfc[0].expected.as_str(), pfc[0].found.as_str()),
        ("3", "3,4")
    );
    assert!(
        pfc[0]
            .fix
            .iter()
            .any(|l| l.contains("config interface pfc priority $p 4 off")),
        "{:?}",
        pfc[0].fix
    );
    let wd = only(&report, Kind::Watchdog);
    assert_eq!(
        (wd.len(), wd[0].ports.as_slice()),
        (1, &["Ethernet8".to_owned()][..])
    );
    let mtu = only(&report, Kind::Mtu);
    assert_eq!(
        (mtu.len(), mtu[0].ports.as_slice()),
        (1, &["Ethernet0".to_owned()][..])
    );
    assert_eq!(
        mtu[0].fix,
        ["for p in Ethernet0; do config interface mtu $p 9100; done"]
    );
    let headroom = only(&report, Kind::Headroom);
    assert_eq!(
        (headroom.len(), headroom[0].found.as_str()),
        (1, "priority 3: 0")
    );
    assert_eq!(report.findings.len(), 5, "{report:#?}");
    assert_eq!(report.errors(), 5);
}

/// RFC 6902 for config_db, enough for the patches the diff makes.
fn apply_patch(db: &mut Value, ops: &[diff::sonic::PatchOp]) {
    for op in ops {
        let parts: Vec<String> = op.path[1..]
            .split('/')
            .map(|p| p.replace("~1", "/").replace("~0", "~"))
            .collect();
        let (last, parents) = parts.split_last().unwrap();
        let mut node = &mut *db;
        for p in parents {
            node = node
                .get_mut(p)
                .unwrap_or_else(|| panic!("{}: no parent {p}", op.path));
        }
        let obj = node.as_object_mut().unwrap();
        match op.op {
            "add" => assert!(
                obj.insert(last.clone(), op.value.clone().unwrap())
                    .is_none(),
                "add over {}",
                op.path
            ),
            "replace" => assert!(
                obj.insert(last.clone(), op.value.clone().unwrap())
                    .is_some(),
                "replace of nothing: {}",
                op.path
            ),
            "remove" => assert!(obj.remove(last).is_some(), "remove of nothing: {}", op.path),
            other => panic!("{other}"),
        }
    }
}

#[test]
fn the_sonic_patch_fixes_exactly_the_drift() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let sp = plan.switch("leaf01").unwrap();
    let running = drifted_sonic(&plan);
    let rendered = sonic::render(&plan, sp, Some(&running)).config_db;
    let ops = diff::sonic::patch(&rendered, &running);
    let paths: Vec<String> = ops.iter().map(|o| format!("{} {}", o.op, o.path)).collect();
    assert!(
        paths.contains(&"replace /PORT_QOS_MAP/Ethernet0/dscp_to_tc_map".to_owned()),
        "{paths:#?}"
    );
    assert!(
        paths.contains(&"add /PFC_WD/Ethernet8".to_owned()),
        "{paths:#?}"
    );
    assert!(
        paths.contains(&"replace /PORT/Ethernet0/mtu".to_owned()),
        "{paths:#?}"
    );
    assert!(
        !paths.iter().any(|p| p.contains("AZURE")),
        "another map is not ours: {paths:#?}"
    );
    assert_eq!(ops.len(), 4 * 2 + 1 + 1 + 1, "{paths:#?}");
    let mut value = serde_json::to_value(&running).unwrap();
    apply_patch(&mut value, &ops);
    let fixed = sonic_observe::parse_config_db(&value.to_string()).unwrap();
    let report = check::check(&plan, &evidence_for("leaf01", sonic_observe::state(&fixed)));
    assert!(report.findings.is_empty(), "{report:#?}");
    assert!(diff::sonic::patch(&rendered, &fixed).is_empty());
}

#[test]
fn a_fresh_sonic_switch_gets_the_whole_fragment_without_losing_its_lanes() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let sp = plan.switch("leaf01").unwrap();
    let running = running_lanes().sonic.remove("leaf01").unwrap();
    let rendered = sonic::render(&plan, sp, Some(&running)).config_db;
    let ops = diff::sonic::patch(&rendered, &running);
    assert!(!ops.iter().any(|o| o.path.contains("lanes")));
    let mut value = serde_json::to_value(&running).unwrap();
    apply_patch(&mut value, &ops);
    let merged = sonic_observe::parse_config_db(&value.to_string()).unwrap();
    // Every rendered field is there; the platform's fields (hwsku, lanes, ...) survive.
    for (table, entries) in &rendered {
        for (key, fields) in entries {
            for (f, v) in fields {
                assert_eq!(merged[table][key].get(f), Some(v), "{table}|{key} {f}");
            }
        }
    }
    assert_eq!(
        merged["DEVICE_METADATA"]["localhost"]["hwsku"],
        "Mellanox-SN5600-O128"
    );
    assert!(diff::sonic::patch(&rendered, &merged).is_empty());
}

/// `nv set` / `nv unset` on a tree, enough for the commands the diff makes.
fn apply_nv(tree: &mut Value, lines: &[String], rendered: &[nvue::NvSet]) {
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
        } else {
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
            let one = nvue::to_tree(std::slice::from_ref(cmd));
            merge(tree, &one);
        }
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
fn nvue_drift_is_reported_and_the_diff_fixes_it() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let sp = plan.switch("leaf02").unwrap();
    let commands = nvue::commands(&plan, sp, nvue::syntax(sp).unwrap());
    let mut tree = nvue::to_tree(&commands);
    tree["qos"]["pfc"]["default-global"]["switch-priority"] = Value::Object(Map::from_iter([(
        "4".to_owned(),
        Value::Object(Map::new()),
    )]));
    tree["interface"]["swp1"]["lldp"]
        .as_object_mut()
        .unwrap()
        .remove("dcbx-pfc-tlv");
    // What `nv config show -o json` prints: a header item, then the tree under "set".
    let shown = serde_json::json!([{"header": {"model": "SN5600", "version": "cumulus-linux-5.12"}}, {"set": tree}]);
    let parsed = nvue_observe::parse_tree(&shown.to_string()).unwrap();
    let report = check::check(&plan, &evidence_for("leaf02", nvue_observe::state(&parsed)));
    let pfc = only(&report, Kind::Pfc);
    assert_eq!(pfc.len(), 1, "{report:#?}");
    assert_eq!(
        pfc[0].ports,
        ["swp1", "swp2"],
        "uplinks use their own PFC profile"
    );
    assert!(
        pfc[0]
            .fix
            .contains(&"nv set qos pfc default-global switch-priority 3".to_owned()),
        "{:?}",
        pfc[0].fix
    );
    assert_eq!(
        pfc[0].fix.last().map(String::as_str),
        Some("nv config apply")
    );
    let tlv = only(&report, Kind::DcbxTlvs);
    assert_eq!(
        (tlv.len(), tlv[0].ports.as_slice(), tlv[0].severity),
        (1, &["swp1".to_owned()][..], Severity::Warning)
    );
    assert_eq!(report.findings.len(), 2, "{report:#?}");

    let lines = diff::nvue::commands(&commands, &parsed);
    assert_eq!(
        lines,
        [
            "nv unset qos pfc default-global switch-priority 4",
            "nv set qos pfc default-global switch-priority 3",
            "nv set interface swp1 lldp dcbx-pfc-tlv on",
            "nv config apply",
        ]
    );
    let mut fixed = parsed.clone();
    apply_nv(&mut fixed, &lines, &commands);
    assert!(
        check::check(&plan, &evidence_for("leaf02", nvue_observe::state(&fixed)))
            .findings
            .is_empty()
    );
    assert!(diff::nvue::commands(&commands, &fixed).is_empty());
}

#[test]
fn eos_drift_is_reported_once_per_fault() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let sp = plan.switch("leaf03").unwrap();
    let text = render::eos::render(&plan, sp, EosPlatform::Strata, "")
        .replace(
            "interface Ethernet2/1\n   description node04/ens1f0np0\n   mtu 9100",
            "interface Ethernet2/1\n   description node04/ens1f0np0\n   mtu 1500",
        )
        .lines()
        .filter(|l| !l.contains("random-detect ecn"))
        .map(|l| {
            if l == "qos map dscp 26 to traffic-class 3" {
                "qos map dscp 26 to traffic-class 1"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let report = check::check(
        &plan,
        &evidence_for("leaf03", observe::parse(SwitchOs::Eos, &text).unwrap()),
    );
    let kinds: Vec<(Kind, usize)> = report
        .findings
        .iter()
        .map(|f| (f.kind, f.ports.len()))
        .collect();
    assert_eq!(kinds.len(), 3, "{report:#?}");
    assert!(kinds.contains(&(Kind::Mtu, 1)));
    assert!(kinds.contains(&(Kind::Ecn, 4)));
    assert!(kinds.contains(&(Kind::DscpMap, 4)));
    let ecn = only(&report, Kind::Ecn)[0];
    assert!(
        ecn.fix
            .iter()
            .any(|l| l.contains("random-detect ecn minimum-threshold 150000 bytes")),
        "{:?}",
        ecn.fix
    );
    assert_eq!(ecn.fix.first().map(String::as_str), Some("configure"));
}

fn neighbor(system: &str, port: &str, pfc: Option<Vec<u8>>) -> Neighbor {
    let mut n = Neighbor::new(
        ChassisId {
            subtype: ChassisIdSubtype::MacAddress,
            value: "02:00:00:00:00:01".into(),
        },
        PortId {
            subtype: PortIdSubtype::InterfaceName,
            value: port.into(),
        },
        120,
    );
    n.system_name = Some(system.into());
    n.dcbx.pfc = pfc.map(|p| PfcConfiguration {
        willing: false,
        mbc: false,
        capability: 8,
        enabled_priorities: p,
    });
    n
}

fn host_table(host: &str, ports: Vec<(&str, Neighbor)>) -> NeighborTable {
    NeighborTable {
        schema: SCHEMA.into(),
        observer: Observer {
            name: host.into(),
            chassis_id: None,
            role: Some(Role::Host),
        },
        ports: ports
            .into_iter()
            .map(|(p, n)| PortNeighbors {
                port: p.into(),
                neighbors: vec![n],
                counters: None,
            })
            .collect(),
    }
}

fn veth_nic(nic: &str, mtu: u32) -> NicState {
    fn cannot<T>(nic: &str) -> Reading<T> {
        Reading::CannotRead(format!("the driver of {nic} has no DCB netlink operations"))
    }
    NicState {
        nic: nic.into(),
        mtu: Reading::Value(mtu),
        pfc: cannot(nic),
        dscp_priority: cannot(nic),
        trust: None,
        dcbx: cannot(nic),
        willing: cannot(nic),
        roce_tos: Reading::CannotRead(format!("{nic} has no RDMA device")),
        ecn: Reading::CannotRead(format!("{nic} has no ECN files")),
    }
}

#[test]
fn advertised_pfc_and_host_mtu_are_each_reported_once() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let table = host_table(
        "node01",
        vec![
            ("ens1f0np0", neighbor("leaf01", "Ethernet0", Some(vec![4]))),
            ("ens1f1np1", neighbor("leaf02", "swp1", Some(vec![3]))),
        ],
    );
    let state = HostState {
        schema: STATE_SCHEMA.into(),
        host: "node01".into(),
        nics: vec![veth_nic("ens1f0np0", 1500), veth_nic("ens1f1np1", 9000)],
    };
    let report = check::check_host(&plan, &state, Some(&table));
    let errors: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 2, "{report:#?}");
    let pfc = only(&report, Kind::Pfc);
    assert_eq!(pfc.len(), 1);
    assert_eq!(
        (
            pfc[0].source,
            pfc[0].switch.as_deref(),
            pfc[0].ports.as_slice(),
            pfc[0].host.as_deref(),
            pfc[0].nic.as_deref()
        ),
        (
            Source::Advertised,
            Some("leaf01"),
            &["Ethernet0".to_owned()][..],
            Some("node01"),
            Some("ens1f0np0")
        )
    );
    assert!(
        pfc[0]
            .fix
            .iter()
            .any(|l| l.contains("config interface pfc priority $p 3 on")),
        "{:?}",
        pfc[0].fix
    );
    let mtu = only(&report, Kind::Mtu);
    assert_eq!(mtu.len(), 1);
    assert_eq!(
        (mtu[0].source, mtu[0].nic.as_deref()),
        (Source::Host, Some("ens1f0np0"))
    );
    assert_eq!(mtu[0].fix, ["ip link set dev ens1f0np0 mtu 9000"]);
    let cannot = only(&report, Kind::CannotRead);
    assert_eq!(cannot.len(), 2, "one per NIC");
    assert!(
        cannot
            .iter()
            .all(|f| f.severity == Severity::Warning && f.found.contains("PFC"))
    );
    assert!(
        cannot[0].message.contains("has no DCB netlink operations"),
        "{}",
        cannot[0].message
    );
}

#[test]
fn a_willing_host_copying_its_switch_is_the_switchs_fault_once() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let table = host_table(
        "node01",
        vec![("ens1f0np0", neighbor("leaf01", "Ethernet0", Some(vec![4])))],
    );
    let mut nic = veth_nic("ens1f0np0", 9000);
    nic.pfc = Reading::Value(vec![4]);
    nic.willing = Reading::Value(true);
    nic.dscp_priority = Reading::Value(vec![(26, 3), (48, 6)]);
    let state = HostState {
        schema: STATE_SCHEMA.into(),
        host: "node01".into(),
        nics: vec![nic],
    };
    let report = check::check_host(&plan, &state, Some(&table));
    let pfc = only(&report, Kind::Pfc);
    assert_eq!(pfc.len(), 1, "{report:#?}");
    assert_eq!(pfc[0].source, Source::Advertised);
    assert!(
        pfc[0]
            .message
            .contains("the willing host node01 ens1f0np0 copied it"),
        "{}",
        pfc[0].message
    );
    assert_eq!(only(&report, Kind::Willing).len(), 1);
}

#[test]
fn a_switch_fault_seen_in_its_configuration_is_not_repeated_from_lldp() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let mut e = evidence_for("leaf01", sonic_observe::state(&drifted_sonic(&plan)));
    e.lldp.push(host_table(
        "node01",
        vec![(
            "ens1f0np0",
            neighbor("leaf01", "Ethernet0", Some(vec![3, 4])),
        )],
    ));
    let report = check::check(&plan, &e);
    let pfc = only(&report, Kind::Pfc);
    assert_eq!(pfc.len(), 1, "{report:#?}");
    assert_eq!(pfc[0].source, Source::SwitchConfig);
}

#[test]
fn a_host_nic_on_the_wrong_leaf_is_a_cabling_error() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let table = host_table(
        "node02",
        vec![(
            "ens1f0np0",
            neighbor("leaf03", "Ethernet1/1", Some(vec![3])),
        )],
    );
    let state = HostState {
        schema: STATE_SCHEMA.into(),
        host: "node02".into(),
        nics: Vec::new(),
    };
    let report = check::check_host(&plan, &state, Some(&table));
    let c = only(&report, Kind::Cabling);
    assert_eq!(c.len(), 1, "{report:#?}");
    assert!(
        c[0].message
            .contains("hears leaf03 Ethernet1/1 where the intent cables leaf01 Ethernet8"),
        "{}",
        c[0].message
    );
}

#[test]
fn headroom_is_checked_on_the_priorities_the_intent_makes_lossless() {
    // The intent: RoCE lossless on priority 5. The switch runs the rendered fragment but
    // pfc_enable says 4: one PFC error, and no headroom error (priority 5's group has its
    // headroom; priority 4 is not the intent's to have headroom on).
    let mut i = example();
    i.roce.data.priority = 5;
    i.roce.pfc.priorities = vec![5];
    let plan = FabricPlan::new(&i);
    let sp = plan.switch("leaf01").unwrap();
    let mut db = sonic::render(&plan, sp, running_lanes().sonic.get("leaf01")).config_db;
    for entry in db.get_mut("PORT_QOS_MAP").unwrap().values_mut() {
        entry.insert("pfc_enable".into(), "4".into());
    }
    let report = check::check(&plan, &evidence_for("leaf01", sonic_observe::state(&db)));
    let kinds: Vec<Kind> = report.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [Kind::Pfc], "{report:#?}");
    // And a lossless group without headroom on the intent's priority is found.
    db.get_mut("BUFFER_PROFILE")
        .unwrap()
        .values_mut()
        .filter(|p| p.contains_key("xoff"))
        .for_each(|p| {
            p.insert("xoff".into(), "1024".into());
        });
    let report = check::check(&plan, &evidence_for("leaf01", sonic_observe::state(&db)));
    // Host ports (5 m) and uplinks (40 m) need different headroom: one finding each.
    let headroom = only(&report, Kind::Headroom);
    assert_eq!(headroom.len(), 2, "{report:#?}");
    assert!(headroom.iter().all(|f| f.found == "priority 5: 1024"));
    assert_eq!(headroom.iter().map(|f| f.ports.len()).sum::<usize>(), 4);
}

#[test]
fn a_leaf_advertising_wrong_pfc_to_many_hosts_is_one_finding() {
    let mut i = example();
    let leaf04 = i.switches.iter_mut().find(|s| s.name == "leaf04").unwrap();
    for (port, host) in [("Ethernet3/1", "node05"), ("Ethernet4/1", "node06")] {
        leaf04.ports.0.push(intent::Port {
            name: port.into(),
            peer: intent::Peer {
                system: host.into(),
                interface: "ens1f1np1".into(),
            },
            speed_gbps: None,
            address: None,
        });
    }
    let plan = FabricPlan::new(&i);
    let mut evidence = Evidence::default();
    for (host, port) in [
        ("node03", "Ethernet1/1"),
        ("node04", "Ethernet2/1"),
        ("node05", "Ethernet3/1"),
        ("node06", "Ethernet4/1"),
    ] {
        evidence.lldp.push(host_table(
            host,
            vec![("ens1f1np1", neighbor("leaf04", port, Some(vec![4])))],
        ));
    }
    let report = check::check(&plan, &evidence);
    let pfc = only(&report, Kind::Pfc);
    assert_eq!(pfc.len(), 1, "{report:#?}");
    let f = pfc[0];
    assert_eq!(f.source, Source::Advertised);
    assert_eq!(
        f.ports,
        ["Ethernet1/1", "Ethernet2/1", "Ethernet3/1", "Ethernet4/1"]
    );
    assert_eq!(
        f.heard_by,
        [
            "node03 ens1f1np1",
            "node04 ens1f1np1",
            "node05 ens1f1np1",
            "node06 ens1f1np1"
        ]
    );
    assert_eq!((f.host.as_deref(), f.nic.as_deref()), (None, None));
    let shown = f.to_string();
    assert!(
        shown.starts_with(
            "error[pfc] leaf04 Ethernet1/1,Ethernet2/1,Ethernet3/1,Ethernet4/1 / heard by node03 \
             ens1f1np1, node04 ens1f1np1, node05 ens1f1np1, node06 ens1f1np1: leaf04 advertises \
             PFC on 4 over DCBX, the intent says 3"
        ),
        "{shown}"
    );
}

#[test]
fn interface_trust_on_eos_overrides_the_profile() {
    let i = example();
    let plan = FabricPlan::new(&i);
    let sp = plan.switch("leaf03").unwrap();
    let text = render::eos::render(&plan, sp, EosPlatform::Strata, "").replace(
        "interface Ethernet2/1\n   description node04/ens1f0np0\n",
        "interface Ethernet2/1\n   description node04/ens1f0np0\n   qos trust cos\n",
    );
    let report = check::check(
        &plan,
        &evidence_for("leaf03", observe::parse(SwitchOs::Eos, &text).unwrap()),
    );
    let trust = only(&report, Kind::Trust);
    assert_eq!(trust.len(), 1, "{report:#?}");
    assert_eq!(trust[0].ports, ["Ethernet2/1"]);
    assert_eq!(report.findings.len(), 1, "{report:#?}");
}
