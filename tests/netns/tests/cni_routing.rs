//! Multi-NIC pods: per-interface sysctls and per-NIC policy routing, on two routed L3 rails
//! (one subnet per leaf per rail), as NCCL needs them.

#![allow(clippy::unwrap_used)] // test helpers fail loudly

use serde_json::json;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{CniCall, first_ip, with_prev_result};
use spinel_netns_tests::node::SimVf;

/// Adds rail 1 to a simulated node: PF `pf1` (0000:3c:00.0) with one VF, uplinked to `leaf1`
/// (gateway 10.57.0.1), and a far host 10.67.0.1 reachable only through leaf1. Returns the VF.
fn add_rail1(node: &SimNode) -> SimVf {
    let vf = SimVf {
        pci: "0000:3c:00.2".into(),
        name: "pf1v0".into(),
        mac: "02:5f:01:00:00:00".into(),
    };
    let sb = &node.sb;
    sb.netns("leaf1");
    sb.run_in(
        "node",
        "ip",
        &[
            "link",
            "add",
            "pf1",
            "mtu",
            "9000",
            "type",
            "veth",
            "peer",
            "name",
            "up1",
            "netns",
            node.sb.netns_path("leaf1").to_str().unwrap(),
        ],
    );
    sb.run_in("node", "ip", &["link", "set", "pf1", "up"]);
    sb.run_in("leaf1", "ip", &["link", "set", "up1", "up"]);
    sb.run_in(
        "leaf1",
        "ip",
        &["addr", "add", "10.57.0.1/24", "dev", "up1"],
    );
    sb.run_in("leaf1", "ip", &["addr", "add", "10.67.0.1/32", "dev", "lo"]);
    sb.run_in(
        "node",
        "ip",
        &[
            "link", "add", "link", "pf1", "name", &vf.name, "address", &vf.mac, "type", "macvlan",
            "mode", "bridge",
        ],
    );
    node.sysfs.add_pf("0000:3c:00.0", "pf1", 1, 8);
    node.sysfs
        .add_vf("0000:3c:00.0", 0, &vf.pci, Some(&vf.name), "mlx5_core");
    vf
}

fn rail_conf(node: &SimNode, rail: u8, pci: &str) -> serde_json::Value {
    json!({
        "cniVersion": "1.1.0", "name": format!("rail{rail}"), "type": "spinel",
        "deviceID": pci,
        "ipam": {"type": "host-local", "dataDir": node.ipam_dir,
                 "ranges": [[{"subnet": format!("10.{}.0.0/24", 56 + rail), "gateway": format!("10.{}.0.1", 56 + rail)}]],
                 // Both rails route the whole far network: only policy routing keeps rail 1's
                 // traffic on rail 1.
                 "routes": [{"dst": "10.64.0.0/10"}]},
    })
}

#[test]
fn each_rail_leaves_through_its_own_nic() {
    let node = SimNode::new("routing_rails", 1);
    let rail1_vf = add_rail1(&node);
    // 10.67.0.1 sits behind leaf1 only; rail 0's leaf has no route to it, so the ping from
    // rail 1's address below is answered only if it leaves through net2.
    let netns = node.pod("p");
    let mut done = Vec::new();
    for (rail, ifname, pci) in [
        (0u8, "net1", node.vfs[0].pci.clone()),
        (1, "net2", rail1_vf.pci.clone()),
    ] {
        let call = CniCall::new("ADD", "ranks", Some(&netns), ifname);
        let conf = rail_conf(&node, rail, &pci);
        let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
        done.push((call, with_prev_result(&conf, &result), result));
    }
    let (ip1, ip2) = (first_ip(&done[0].2), first_ip(&done[1].2));
    // Each rail's address is in its own host-local store (what the checks after DEL read).
    assert_eq!(node.leased_ips_in("rail0"), [ip1.as_str()]);
    assert_eq!(node.leased_ips_in("rail1"), [ip2.as_str()]);

    for ifname in ["net1", "net2"] {
        for (key, want) in [
            ("arp_ignore", "1"),
            ("arp_announce", "2"),
            ("rp_filter", "2"),
            ("arp_notify", "1"),
        ] {
            let got = node.sb.run_in(
                "p",
                "sysctl",
                &["-n", &format!("net.ipv4.conf.{ifname}.{key}")],
            );
            assert_eq!(got.trim(), want, "{ifname} {key}");
        }
    }
    let rules = node.sb.run_in("p", "ip", &["rule"]);
    assert!(
        rules.contains(&format!("1000:\tfrom {ip1} lookup 101")),
        "{rules}"
    );
    assert!(
        rules.contains(&format!("1000:\tfrom {ip2} lookup 102")),
        "{rules}"
    );
    let t102 = node
        .sb
        .run_in("p", "ip", &["route", "show", "table", "102"]);
    assert!(t102.contains("default via 10.57.0.1 dev net2"), "{t102}");
    assert!(
        t102.contains(&format!(
            "10.57.0.0/24 dev net2 proto static scope link src {ip2}"
        )),
        "{t102}"
    );
    assert!(
        t102.contains("10.64.0.0/10 via 10.57.0.1 dev net2"),
        "{t102}"
    );

    // The main table alone would send rail 1's traffic out of net1.
    let main = node.sb.run_in("p", "ip", &["route", "get", "10.67.0.1"]);
    assert!(main.contains("dev net1"), "{main}");
    let routed = node
        .sb
        .run_in("p", "ip", &["route", "get", "10.67.0.1", "from", &ip2]);
    assert!(routed.contains("via 10.57.0.1 dev net2"), "{routed}");
    node.sb.run_in(
        "p",
        "ping",
        &["-c", "1", "-W", "2", "-I", &ip2, "10.67.0.1"],
    );

    for (call, conf, _) in &done {
        node.spinel(&call.with_command("CHECK"), conf)
            .expect_ok("CHECK");
    }
    // CHECK notices a rule or a sysctl that went away.
    node.sb
        .run_in("p", "ip", &["rule", "del", "from", &ip2, "lookup", "102"]);
    node.sb
        .run_in("p", "sysctl", &["-qw", "net.ipv4.conf.net2.arp_ignore=0"]);
    let msg = node
        .spinel(&done[1].0.with_command("CHECK"), &done[1].1)
        .expect_code(104, "CHECK")
        .to_owned();
    assert!(
        msg.contains(&format!(
            "rule from {ip2}/32 lookup 102 pref 1000 is missing"
        )),
        "{msg}"
    );
    assert!(
        msg.contains("net.ipv4.conf.net2.arp_ignore is 0, expected 1"),
        "{msg}"
    );

    for (call, conf, _) in &done {
        node.spinel(&call.with_command("DEL"), conf)
            .expect_ok("DEL");
    }
    let rules = node.sb.run_in("p", "ip", &["rule"]);
    assert!(
        !rules.contains("lookup 101") && !rules.contains("lookup 102"),
        "DEL removes the rules: {rules}"
    );
    // Both VFs home, no journal entry, and neither rail's IPAM store holds an address.
    node.assert_all_home();
    node.assert_vf_home(&rail1_vf);
    let rail1_leases = node.leased_ips_in("rail1");
    assert!(
        rail1_leases.is_empty(),
        "rail 1's IPAM still holds {rail1_leases:?}"
    );
}

#[test]
fn routing_and_sysctls_are_configurable() {
    let node = SimNode::new("routing_conf", 1);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "custom", Some(&netns), "roce");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["routing"] = json!({"table": 4000, "rulePriority": 32000, "defaultRoute": false});
    conf["sysctls"] = json!({"arpIgnore": 2, "rpFilter": 0});
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
    let ip = first_ip(&result);
    let rules = node.sb.run_in("p", "ip", &["rule"]);
    assert!(
        rules.contains(&format!("32000:\tfrom {ip} lookup 4000")),
        "{rules}"
    );
    let table = node
        .sb
        .run_in("p", "ip", &["route", "show", "table", "4000"]);
    assert!(!table.contains("default"), "{table}");
    assert_eq!(
        node.sb
            .run_in("p", "sysctl", &["-n", "net.ipv4.conf.roce.arp_ignore"])
            .trim(),
        "2"
    );
    assert_eq!(
        node.sb
            .run_in("p", "sysctl", &["-n", "net.ipv4.conf.roce.rp_filter"])
            .trim(),
        "0"
    );

    let mut off = node.conf("1.1.0", Some(&node.vfs[0]));
    off["routing"] = json!({"enabled": false});
    node.spinel(&call.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("DEL");
    let call = CniCall::new("ADD", "plain", Some(&netns), "net1");
    node.spinel(&call, &off)
        .expect_ok("ADD without policy routing");
    let rules = node.sb.run_in("p", "ip", &["rule"]);
    assert!(!rules.contains("lookup 101"), "{rules}");
    node.spinel(&call.with_command("DEL"), &off)
        .expect_ok("DEL");
    node.assert_all_home();
}
