//! VF attributes set through the PF: each attribute that differs from what the PF reports is a
//! request of its own, byte-for-byte what iproute2 sends for the same `ip link set PF vf N
//! <attribute>`; every attribute is brought to the configuration's value (or the default) on
//! every ADD; a PF that refuses one, or does not take it, fails the ADD; DEL restores what was
//! there, and a PF refusing the restore does not wedge it.
//!
//! No kernel here implements VF attributes, so only that one call goes to the recording double
//! (selected by the node settings); its requests come from spinel's real encoder.

use serde_json::json;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{CniCall, with_prev_result};
use spinel_netns_tests::iproute2::{link_set_request, without_sequence};

#[test]
fn requests_equal_iproute2s_and_are_read_back() {
    let node = SimNode::new("vf_attrs", 4);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "attrs", Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[2]));
    for (k, v) in [
        ("vlan", json!(100)),
        ("vlanQoS", json!(5)),
        ("vlanProto", json!("802.1ad")),
        ("spoofchk", json!("off")),
        ("trust", json!("on")),
        ("linkState", json!("enable")),
        ("minTxRate", json!(100)),
        ("maxTxRate", json!(2000)),
    ] {
        conf[k] = v;
    }
    conf["runtimeConfig"]["mac"] = json!("0a:58:0a:38:00:42");
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();

    let requests = node.vf_requests();
    let args: Vec<&str> = requests.iter().map(|(_, a)| a.as_str()).collect();
    assert_eq!(
        args,
        [
            "vf 2 mac 0a:58:0a:38:00:42",
            "vf 2 vlan 100 qos 5 proto 802.1ad",
            "vf 2 min_tx_rate 100 max_tx_rate 2000",
            "vf 2 spoofchk off",
            "vf 2 state enable",
            "vf 2 trust on",
        ],
        "one request per attribute, in the kernel's order"
    );
    // iproute2, asked for the same on the same PF in the same namespace.
    for (ours, args) in &requests {
        let mut ip_args = vec!["pf0"];
        ip_args.extend(args.split_whitespace());
        let theirs = link_set_request(&node.sb, "node", &ip_args);
        assert_eq!(
            without_sequence(ours.clone()),
            without_sequence(theirs),
            "spinel's request for {args:?} differs from iproute2's"
        );
    }

    let state = node.vf_state(2).expect("VF 2 state");
    assert_eq!(state["vlan"], 100);
    assert_eq!(state["proto"], "802.1ad");
    assert_eq!(state["trust"], true);
    assert_eq!(state["mac"], "0a:58:0a:38:00:42");

    node.spinel(&call.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("DEL");
    let state = node.vf_state(2).unwrap();
    assert_eq!(
        (state["vlan"].clone(), state["trust"].clone()),
        (json!(0), json!(false)),
        "DEL restores the original"
    );
    node.assert_all_home();
}

#[test]
fn every_add_resets_what_a_missed_del_left_behind() {
    let node = SimNode::new("vf_leftovers", 1);
    // A pod whose DEL never ran left VLAN 999, trust, rate limits and its MAC on VF 0.
    let leftover = json!({"0": {
        "index": 0, "mac": "0a:58:de:ad:be:ef", "vlan": 999, "qos": 3, "proto": "802.1Q",
        "spoofchk": false, "trust": true, "linkState": "disable", "minTxRate": 50, "maxTxRate": 500
    }});
    std::fs::create_dir_all(&node.vf_requests).unwrap();
    std::fs::write(
        node.vf_requests.join("pf0.state.json"),
        leftover.to_string(),
    )
    .unwrap();

    let netns = node.pod("p");
    let call = CniCall::new("ADD", "fresh", Some(&netns), "net1");
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
    let args: Vec<String> = node.vf_requests().into_iter().map(|(_, a)| a).collect();
    assert_eq!(
        args,
        [
            format!("vf 0 mac {}", node.vfs[0].mac),
            "vf 0 vlan 0 qos 0".into(),
            "vf 0 min_tx_rate 0 max_tx_rate 0".into(),
            "vf 0 spoofchk on".into(),
            "vf 0 state auto".into(),
            "vf 0 trust off".into(),
        ],
        "every leftover attribute is reset; the admin MAC is the VF's own"
    );
    assert_eq!(node.vf_state(0).unwrap()["vlan"], 0);

    node.spinel(&call.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("DEL");
    assert_eq!(
        node.vf_state(0).unwrap(),
        leftover["0"],
        "DEL puts back what ADD found"
    );
    node.assert_all_home();
}

#[test]
fn a_pf_that_does_not_take_an_attribute_fails_the_add_and_changes_nothing() {
    let node = SimNode::new("vf_refused", 1);
    std::fs::create_dir_all(&node.vf_requests).unwrap();
    std::fs::write(node.vf_requests.join("pf0.ignore"), "trust\n").unwrap();
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "refused", Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["trust"] = json!("on");
    let before = node.links("node");
    let msg = node
        .spinel(&call, &conf)
        .expect_code(100, "ADD on a PF without trust")
        .to_owned();
    assert!(
        msg.contains("trust (asked true, PF reports false)"),
        "{msg}"
    );
    assert_eq!(node.links("node"), before, "the VF never left");
    assert!(node.links("p").links.iter().all(|l| l.0 == "lo"));
    node.assert_all_home();
    // The rollback put the PF-side attributes back too (the admin MAC ADD had set).
    assert_eq!(
        node.vf_state(0).unwrap()["mac"],
        "00:00:00:00:00:00",
        "{:?}",
        node.vf_requests()
    );
}

/// igb's answer: a driver without link state refuses every `state` request, even `auto`.
/// Asking for a link state there fails the ADD with 100, naming the attribute, and changes
/// nothing; a network that leaves it out works, since nothing is sent for an attribute the PF
/// already reports as wanted.
#[test]
fn a_pf_that_refuses_an_attribute_fails_only_the_networks_that_ask_for_it() {
    let node = SimNode::new("vf_no_link_state", 1);
    std::fs::create_dir_all(&node.vf_requests).unwrap();
    std::fs::write(node.vf_requests.join("pf0.refuse"), "linkState\n").unwrap();
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "state", Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["linkState"] = json!("enable");
    conf["vlan"] = json!(10);
    let before = node.links("node");
    let out = node.spinel(&call, &conf);
    let msg = out
        .expect_code(100, "ADD asking for a link state")
        .to_owned();
    assert!(msg.contains("PF pf0 refuses VF 0 linkState"), "{msg}");
    assert!(
        out.json["details"]
            .as_str()
            .is_some_and(|d| d.contains("Operation not supported")),
        "{}",
        out.json
    );
    assert_eq!(node.links("node"), before, "the VF never left");
    assert_eq!(
        node.vf_state(0).unwrap()["vlan"],
        0,
        "the VLAN was rolled back"
    );
    node.assert_all_home();

    conf.as_object_mut().unwrap().remove("linkState");
    let result = node
        .spinel(&call, &conf)
        .expect_ok("ADD without a link state")
        .clone();
    assert!(
        node.vf_requests()
            .iter()
            .all(|(_, a)| !a.contains("state auto")),
        "no link state request when the PF already reports auto"
    );
    node.spinel(&call.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("DEL");
    node.assert_all_home();
}

/// A PF that refuses to restore an attribute on DEL (igb refuses every rate while its link is
/// down) must not keep the pod in Terminating: the refusal is logged, the VF comes home, and
/// the next ADD sets and reads back every attribute anyway.
#[test]
fn a_refused_restore_does_not_wedge_del() {
    let node = SimNode::new("vf_refused_restore", 1);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "rate", Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["maxTxRate"] = json!(100);
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
    std::fs::write(node.vf_requests.join("pf0.refuse"), "rate\n").unwrap();
    node.spinel(&call.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("DEL with a refused restore");
    node.assert_all_home();
    assert_eq!(
        node.vf_state(0).unwrap()["maxTxRate"],
        100,
        "the PF kept it"
    );

    std::fs::remove_file(node.vf_requests.join("pf0.refuse")).unwrap();
    let call = CniCall::new("ADD", "next", Some(&netns), "net1");
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    let result = node.spinel(&call, &conf).expect_ok("next ADD").clone();
    assert_eq!(
        node.vf_state(0).unwrap()["maxTxRate"],
        0,
        "reset for the next pod"
    );
    node.spinel(&call.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("DEL");
    node.assert_all_home();
}
