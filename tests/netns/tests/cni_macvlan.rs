//! macvlan mode: a macvlan on the PF created inside the pod (the shared-RDMA-device setup),
//! with the same IPAM, sysctls, policy routing and teardown as a VF.

use serde_json::json;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{CniCall, first_ip, with_prev_result};

/// The simulated PF has no RDMA device (this machine's kernel has no RDMA), so these
/// networks say explicitly that a master without one is fine; a test below proves spinel
/// refuses such a master, or a VF's netdev, without that.
fn conf(node: &SimNode) -> serde_json::Value {
    let mut c = node.conf("1.1.0", None);
    c["mode"] = json!("macvlan");
    c["pfName"] = json!("pf0");
    c["allowNonRdmaMaster"] = json!(true);
    c
}

#[test]
fn macvlan_pods_ping_and_leave_nothing_behind() {
    let node = SimNode::new("macvlan", 1);
    let before = node.links("node");
    let mut pods = Vec::new();
    for name in ["m0", "m1"] {
        let netns = node.pod(name);
        let call = CniCall::new("ADD", name, Some(&netns), "net1");
        let result = node.spinel(&call, &conf(&node)).expect_ok("ADD").clone();
        assert!(result["interfaces"][0].get("pciID").is_none());
        let shown = node
            .sb
            .run_in(name, "ip", &["-d", "link", "show", "dev", "net1"]);
        assert!(
            shown.contains("macvlan mode bridge")
                && shown.contains(&format!("alias spinel:macvlan:{name}/net1")),
            "{shown}"
        );
        assert_eq!(
            node.sb
                .run_in(name, "sysctl", &["-n", "net.ipv4.conf.net1.arp_ignore"])
                .trim(),
            "1"
        );
        assert!(node.sb.run_in(name, "ip", &["rule"]).contains("lookup 101"));
        pods.push((
            name,
            call.clone(),
            with_prev_result(&conf(&node), &result),
            result,
        ));
    }
    assert_eq!(node.links("node"), before, "nothing is created in the host");
    let ip1 = first_ip(&pods[1].3);
    node.sb.run_in("m0", "ping", &["-c", "1", "-W", "2", &ip1]);
    node.sb
        .run_in("m0", "ping", &["-c", "1", "-W", "2", "10.56.0.1"]);
    for (_, call, conf, _) in &pods {
        node.spinel(&call.with_command("CHECK"), conf)
            .expect_ok("CHECK");
    }
    // One pod dies without DEL: its macvlan dies with the namespace; DEL releases the address.
    node.sb.delete_netns("m1");
    node.spinel(&pods[1].1.with_command("DEL"), &pods[1].2)
        .expect_ok("DEL with the pod gone");
    node.spinel(&pods[0].1.with_command("DEL"), &pods[0].2)
        .expect_ok("DEL");
    assert!(
        node.sb
            .run_in("m0", "ip", &["-br", "link"])
            .lines()
            .all(|l| l.starts_with("lo")),
        "macvlan deleted"
    );
    assert!(
        !node.sb.run_in("m0", "ip", &["rule"]).contains("lookup 101"),
        "rules removed"
    );
    node.spinel(&pods[0].1.with_command("DEL"), &pods[0].2)
        .expect_ok("second DEL");
    // The VF was never touched in macvlan mode: it must be exactly as it was.
    node.assert_all_home();
}

#[test]
fn macvlan_mode_refuses_vf_settings_and_a_missing_pf() {
    let node = SimNode::new("macvlan_bad", 1);
    let netns = node.pod("m");
    let call = CniCall::new("ADD", "m", Some(&netns), "net1");
    for (field, value, code) in [
        ("vlan", json!(100), 7u64),
        ("vfIndex", json!(0), 7),
        ("pfName", json!("nope0"), 100),
    ] {
        let mut c = conf(&node);
        c[field] = value;
        node.spinel(&call, &c).expect_code(code, field);
    }
    let mut c = conf(&node);
    c.as_object_mut().unwrap().remove("pfName");
    node.spinel(&call, &c).expect_code(7, "no pfName");
    // The name is taken in the pod: refused, nothing left behind.
    node.sb.run_in(
        "m",
        "ip",
        &[
            "link", "add", "net1", "type", "veth", "peer", "name", "other",
        ],
    );
    node.spinel(&call, &conf(&node))
        .expect_code(4, "CNI_IFNAME taken");
    node.assert_all_home();
}

#[test]
fn macvlan_needs_a_pf_with_an_rdma_device_unless_told_otherwise() {
    let node = SimNode::new("macvlan_master", 1);
    let netns = node.pod("m");
    let call = CniCall::new("ADD", "m", Some(&netns), "net1");
    // The explicit allowance takes the PF; the cycle also warms IPAM's version cache.
    node.spinel(&call, &conf(&node)).expect_ok("allowed");
    node.spinel(&call.with_command("DEL"), &conf(&node))
        .expect_ok("DEL");
    let before = (node.links("node"), node.files());
    let mut plain = conf(&node);
    plain.as_object_mut().unwrap().remove("allowNonRdmaMaster");
    let msg = node
        .spinel(&call, &plain)
        .expect_code(7, "a PF without an RDMA device")
        .to_owned();
    assert!(msg.contains("pf0 has no RDMA device"), "{msg}");
    assert!(msg.contains("allowNonRdmaMaster"), "{msg}");
    // Another VF's netdev as the master: refused even more plainly.
    let mut on_vf = plain.clone();
    on_vf["pfName"] = json!(node.vfs[0].name);
    let msg = node
        .spinel(&call, &on_vf)
        .expect_code(7, "a VF's netdev as the master")
        .to_owned();
    assert!(msg.contains("is a VF's interface, not a PF"), "{msg}");
    assert_eq!(
        (node.links("node"), node.files()),
        before,
        "nothing changed"
    );
    assert!(node.links("m").links.iter().all(|l| l.0 == "lo"));
    node.assert_all_home();
}
