//! DEL in every shape the real world produces, CHECK finding drift, and GC.

use serde_json::json;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{CniCall, with_prev_result};

fn add(node: &SimNode, pod: &str, cid: &str, vf: usize) -> (CniCall, serde_json::Value) {
    let netns = node.pod(pod);
    let call = CniCall::new("ADD", cid, Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[vf]));
    // A pod-specific MTU and MAC, so every teardown path must restore them.
    conf["mtu"] = json!(4200);
    conf["runtimeConfig"]["mac"] = json!(format!("0a:58:0a:38:01:{vf:02x}"));
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
    // Later calls carry the result as prevResult, as the runtime sends CHECK and DEL.
    (call, with_prev_result(&conf, &result))
}

#[test]
fn del_twice_succeeds_both_times() {
    let node = SimNode::new("del_twice", 1);
    let (call, conf) = add(&node, "p", "c1", 0);
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("first DEL");
    node.assert_all_home();
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("second DEL");
    node.assert_all_home();
}

#[test]
fn del_after_the_pod_namespace_is_gone() {
    let node = SimNode::new("del_netns_gone", 2);
    let (call, conf) = add(&node, "p", "c1", 0);
    node.kill_pod_like_kernel("p");
    let returned = node.links("node");
    assert!(
        returned.links.iter().any(|l| l.0.starts_with("dev")),
        "the kernel step returns the VF as devN: {returned:?}"
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL with the namespace gone");
    node.assert_all_home();

    // CNI_NETNS left empty, as kubelet sends it once the sandbox is gone.
    let (call, conf) = add(&node, "q", "c2", 1);
    node.kill_pod_like_kernel("q");
    let mut bare = call.with_command("DEL");
    bare.netns = None;
    node.spinel(&bare, &conf).expect_ok("DEL without CNI_NETNS");
    node.assert_all_home();
}

#[test]
fn del_when_the_path_is_not_a_namespace_or_never_existed() {
    let node = SimNode::new("del_not_a_netns", 1);
    let (call, conf) = add(&node, "p", "c1", 0);
    node.kill_pod_like_kernel("p");
    // The bind mount is gone but the mount point file stays behind: not a namespace.
    let path = node.sb.netns_path("p");
    std::fs::write(&path, b"").unwrap();
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL on a non-namespace path");
    node.assert_all_home();

    // A DEL for an attachment that never existed, with a path that never existed.
    let ghost = CniCall::new(
        "DEL",
        "never-added",
        Some(std::path::Path::new("/run/netns/does-not-exist")),
        "net1",
    );
    node.spinel(&ghost, &node.conf("1.1.0", Some(&node.vfs[0])))
        .expect_ok("DEL of an unknown attachment");
    node.assert_all_home();
}

#[test]
fn check_reports_what_drifted() {
    let node = SimNode::new("check_drift", 1);
    let (call, conf) = add(&node, "p", "c1", 0);
    let check = call.with_command("CHECK");
    node.spinel(&check, &conf)
        .expect_ok("CHECK on a fresh attachment");

    node.sb
        .run_in("p", "ip", &["link", "set", "net1", "mtu", "1500"]);
    let msg = node
        .spinel(&check, &conf)
        .expect_code(104, "CHECK after an MTU change")
        .to_owned();
    assert!(msg.contains("MTU of net1 is 1500, expected 4200"), "{msg}");
    node.sb
        .run_in("p", "ip", &["link", "set", "net1", "mtu", "4200"]);

    let addr = node
        .sb
        .run_in("p", "ip", &["-4", "-o", "addr", "show", "dev", "net1"]);
    let cidr = addr.split_whitespace().nth(3).unwrap().to_owned();
    node.sb
        .run_in("p", "ip", &["addr", "del", &cidr, "dev", "net1"]);
    let msg = node
        .spinel(&check, &conf)
        .expect_code(104, "CHECK after an address removal")
        .to_owned();
    assert!(msg.contains(&format!("address {cidr} is missing")), "{msg}");
    assert!(
        msg.contains("route 10.0.0.0/8"),
        "the route went with the address: {msg}"
    );

    node.sb.run_in("p", "ip", &["link", "set", "net1", "down"]);
    node.sb
        .run_in("p", "ip", &["link", "set", "net1", "name", "other9"]);
    let msg = node
        .spinel(&check, &conf)
        .expect_code(104, "CHECK after a rename")
        .to_owned();
    assert!(msg.contains("interface net1 is missing"), "{msg}");

    // DEL still finds the VF by its marker and brings it home.
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL after drift");
    node.assert_all_home();

    let unknown = CniCall::new("CHECK", "nobody", Some(&node.sb.netns_path("p")), "net1");
    node.spinel(&unknown, &conf)
        .expect_code(3, "CHECK of an unknown attachment");
}

#[test]
fn gc_releases_attachments_that_are_not_valid() {
    let node = SimNode::new("gc", 3);
    let (keep, conf) = add(&node, "p0", "keep", 0);
    add(&node, "p1", "stale1", 1);
    add(&node, "p2", "stale2", 2);
    node.kill_pod_like_kernel("p2");
    let mut gc_conf = conf.clone();
    gc_conf.as_object_mut().unwrap().remove("prevResult");
    gc_conf["cni.dev/valid-attachments"] = json!([{"containerID": "keep", "ifname": "net1"}]);
    let gc = CniCall::bare("GC");
    node.spinel(&gc, &gc_conf).expect_ok("GC");
    assert_eq!(
        node.leased_ips().len(),
        1,
        "only the valid attachment keeps its address"
    );
    let links = node.links("node");
    for vf in &node.vfs[1..] {
        assert!(
            links.links.iter().any(|l| l.0 == vf.name),
            "{} must be home: {links:?}",
            vf.name
        );
    }
    assert!(
        !links.links.iter().any(|l| l.0 == node.vfs[0].name),
        "the valid attachment keeps its VF"
    );
    node.spinel(&keep.with_command("CHECK"), &conf)
        .expect_ok("CHECK of the kept attachment");
    node.spinel(&keep.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.assert_all_home();

    let mut old = conf.clone();
    old["cniVersion"] = json!("1.0.0");
    node.spinel(&gc, &old)
        .expect_code(1, "GC with a 1.0.0 configuration");
}

#[test]
fn add_heals_attachments_whose_pod_died_without_a_del() {
    let node = SimNode::new("self_heal", 2);
    add(&node, "p0", "orphan", 0);
    node.kill_pod_like_kernel("p0");
    // The device plugin hands the same VF to a new pod; the old one never got its DEL.
    let (call, conf) = add(&node, "p1", "fresh", 0);
    assert_eq!(
        node.leased_ips().len(),
        1,
        "the orphan's address was released"
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.assert_all_home();

    // An orphan on another VF is healed by any later ADD.
    add(&node, "p2", "orphan2", 1);
    node.kill_pod_like_kernel("p2");
    let (call, conf) = add(&node, "p3", "other", 0);
    assert_eq!(
        node.leased_ips().len(),
        1,
        "the orphan on VF 1 was healed by an ADD on VF 0"
    );
    assert!(
        node.links("node")
            .links
            .iter()
            .any(|l| l.0 == node.vfs[1].name)
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.assert_all_home();
}

#[test]
fn a_vf_in_a_live_pod_is_refused_and_a_repeated_add_too() {
    let node = SimNode::new("vf_busy", 1);
    let (call, conf) = add(&node, "p0", "first", 0);
    let netns = node.pod("p1");
    let second = CniCall::new("ADD", "second", Some(&netns), "net1");
    let msg = node
        .spinel(&second, &conf)
        .expect_code(11, "ADD of a VF held by a live pod")
        .to_owned();
    assert!(msg.contains("first/net1"), "{msg}");
    node.spinel(&call, &conf).expect_code(105, "repeated ADD");
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.spinel(&second, &conf)
        .expect_ok("ADD after the first pod's DEL");
    node.spinel(&second.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.assert_all_home();
}

#[test]
fn del_when_names_are_taken_in_the_host() {
    let node = SimNode::new("del_names_taken", 2);
    // The VF's original name is taken while the pod runs: it comes home under its pod name.
    let (call, conf) = add(&node, "p", "c1", 0);
    node.sb.run_in(
        "node",
        "ip",
        &[
            "link", "add", "pf0v0", "type", "veth", "peer", "name", "blk0",
        ],
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL with the name taken");
    let links = node.links("node");
    let home = links
        .links
        .iter()
        .find(|l| l.1 == node.vfs[0].mac)
        .expect("VF 0 is in the host");
    assert_eq!(home.0, "net1", "{links:?}");
    assert_eq!(home.2, 9000, "MTU restored even without the name");
    assert!(home.3.is_empty(), "alias restored");
    node.assert_nothing_held();

    // Both its pod name and its original name are taken: it leaves under its unique name.
    let (call, conf) = add(&node, "q", "c2", 1);
    node.sb.run_in(
        "node",
        "ip",
        &[
            "link", "add", "pf0v1", "type", "veth", "peer", "name", "blk1",
        ],
    );
    node.sb
        .run_in("node", "ip", &["link", "set", "net1", "down"]);
    let out = node.spinel(&call.with_command("DEL"), &conf);
    out.expect_ok("DEL with both names taken");
    let links = node.links("node");
    let home = links
        .links
        .iter()
        .find(|l| l.1 == node.vfs[1].mac)
        .expect("VF 1 is in the host");
    assert!(
        home.0.starts_with("spl"),
        "left under its unique travel name: {links:?}"
    );
    node.assert_nothing_held();
}

/// Each ADD looks at a bounded window of other attachments (a node may hold hundreds); the
/// window moves, so many orphans are all healed within a few ADDs.
#[test]
fn many_orphans_are_healed_by_successive_adds() {
    let orphans = 20;
    let node = SimNode::new("self_heal_many", orphans + 1);
    // All attached first (each ADD heals the dead), then all their pods die without a DEL.
    for i in 0..orphans {
        add(&node, &format!("o{i}"), &format!("orphan{i}"), i as usize);
    }
    for i in 0..orphans {
        node.kill_pod_like_kernel(&format!("o{i}"));
    }
    assert_eq!(node.leased_ips().len(), orphans as usize);
    let last = orphans as usize;
    let mut adds = 0;
    while !node.leased_ips().is_empty() || adds == 0 {
        let (call, conf) = add(&node, "live", &format!("live{adds}"), last);
        node.spinel(&call.with_command("DEL"), &conf)
            .expect_ok("DEL");
        node.sb.delete_netns("live");
        adds += 1;
        assert!(
            adds <= 30,
            "{} orphans still held after {adds} ADDs",
            node.leased_ips().len()
        );
    }
    node.assert_all_home();
}

/// A DEL whose configuration spinel refuses (a VLAN out of range, an unknown field, a version
/// it does not speak) still finishes: the runtime would retry DEL of that sandbox forever.
#[test]
fn del_finishes_whatever_its_configuration_says() {
    let node = SimNode::new("del_bad_conf", 2);
    let bad_confs = |base: &serde_json::Value| {
        let mut vlan = base.clone();
        vlan["vlan"] = json!(5000);
        let mut unknown = base.clone();
        unknown["vlann"] = json!(3);
        let mut version = base.clone();
        version["cniVersion"] = json!("9.9.9");
        [vlan, unknown, version]
    };
    // Nothing was ever attached: success, and nothing changes. (A full cycle first, so files
    // that legitimately appear on first use, IPAM's lock among them, exist.)
    let (warm, warm_conf) = add(&node, "warm", "warm", 0);
    node.spinel(&warm.with_command("DEL"), &warm_conf)
        .expect_ok("warm-up DEL");
    let netns = node.pod("never");
    let base = node.conf("1.1.0", Some(&node.vfs[0]));
    let before = (node.links("node"), node.files());
    for (i, conf) in bad_confs(&base).iter().enumerate() {
        let call = CniCall::new("DEL", &format!("ghost{i}"), Some(&netns), "net1");
        node.spinel(&call, conf)
            .expect_ok("DEL of nothing with a refused configuration");
    }
    assert_eq!((node.links("node"), node.files()), before);

    // Attached with a good configuration, deleted with one the NAD became: the record decides,
    // so the VF comes home and the address is released.
    for (i, conf) in bad_confs(&base).iter().enumerate() {
        let (call, _) = add(&node, &format!("p{i}"), &format!("c{i}"), 1);
        assert_eq!(node.leased_ips().len(), 1, "ADD {i} leased an address");
        node.spinel(&call.with_command("DEL"), conf)
            .expect_ok("DEL with a configuration refused since ADD");
        node.assert_all_home();
        assert!(node.leased_ips().is_empty(), "DEL {i} released the address");
    }
}

/// A DEL for a container whose ADD never got as far as a record, in a pod namespace where
/// another recorded attachment holds the same interface name: that interface is not this
/// DEL's, so it succeeds and leaves it in place.
#[test]
fn del_of_an_unfinished_add_leaves_another_attachments_interface() {
    let node = SimNode::new("del_other_owner", 2);
    let (owner, conf) = add(&node, "p", "owner", 0);
    let stray = CniCall::new("DEL", "unfinished", owner.netns.as_deref(), "net1");
    node.spinel(&stray, &conf)
        .expect_ok("DEL of an attachment that was never recorded");
    assert!(
        node.links("p").links.iter().any(|l| l.0 == "net1"),
        "the owner's interface stays in the pod: {:?}",
        node.links("p")
    );
    node.spinel(&owner.with_command("CHECK"), &conf)
        .expect_ok("the owner's attachment is intact");
    node.spinel(&owner.with_command("DEL"), &conf)
        .expect_ok("the owner's DEL");
    node.assert_all_home();
}
