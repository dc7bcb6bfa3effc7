//! VF attributes set through the PF: what spinel asks the PF for is byte-for-byte what iproute2
//! sends for the same `ip link set PF vf N ...`, every attribute is set on every ADD, a PF that
//! does not take one fails the ADD, and DEL restores what was there.
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
    assert_eq!(requests.len(), 1, "one request on ADD: {requests:?}");
    let (ours, args) = &requests[0];
    assert_eq!(
        args,
        "vf 2 mac 0a:58:0a:38:00:42 vlan 100 qos 5 proto 802.1ad spoofchk off trust on state enable min_tx_rate 100 max_tx_rate 2000"
    );
    // iproute2, asked for the same on the same PF in the same namespace.
    let mut ip_args = vec!["pf0"];
    ip_args.extend(args.split_whitespace());
    let theirs = link_set_request(&node.sb, "node", &ip_args);
    assert_eq!(
        without_sequence(ours.clone()),
        without_sequence(theirs),
        "spinel's VF request differs from iproute2's"
    );

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
    let (_, args) = node.vf_requests().pop().unwrap();
    assert_eq!(
        args,
        format!(
            "vf 0 mac {} vlan 0 qos 0 proto 802.1Q spoofchk on trust off state auto min_tx_rate 0 max_tx_rate 0",
            node.vfs[0].mac
        ),
        "every attribute is set explicitly; the admin MAC is the VF's own"
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
    // The rollback put the PF-side attributes back too.
    let (_, last) = node.vf_requests().pop().unwrap();
    assert!(last.contains("trust off"), "{last}");
}
