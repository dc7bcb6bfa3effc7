//! Gratuitous ARP and unsolicited NA: a pod IP reused with a new MAC is corrected at the leaf
//! without waiting for ageing, the burst repeats at the configured spacing in both ARP forms,
//! and IPv6 neighbours are updated too.

#![allow(clippy::unwrap_used)] // test helpers fail loudly

use std::time::{Duration, Instant};

use hostnet::netns::NetNs;
use hostnet::packet::{PacketConfig, PacketSocket};
use serde_json::{Value, json};
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::CniCall;

fn static_conf(node: &SimNode, addresses: Value, garp: Value) -> Value {
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["ipam"] = json!({"type": "static", "addresses": addresses});
    conf["garp"] = garp;
    conf
}

/// A deleted pod's MAC, still in the leaf's neighbour table for the IP the new pod gets.
const OLD_MAC: &str = "0a:58:de:ad:be:ef";

#[test]
fn a_reused_ip_is_corrected_at_the_leaf_right_after_add() {
    let node = SimNode::new("garp_reuse", 1);
    let new_mac = node.vfs[0].mac.clone();
    let netns = node.pod("p");

    // Control: without announcements, the stale entry survives.
    node.plant_stale_leaf_neighbour("10.56.0.50", OLD_MAC);
    let call = CniCall::new("ADD", "quiet", Some(&netns), "net1");
    let conf = static_conf(
        &node,
        json!([{"address": "10.56.0.50/24"}]),
        json!({"count": 0}),
    );
    node.spinel(&call, &conf)
        .expect_ok("ADD without announcements");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        node.leaf_neighbour_mac("10.56.0.50").as_deref(),
        Some(OLD_MAC),
        "nothing corrects it by itself"
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");

    // With announcements (the default), the leaf has the new MAC when ADD returns or just after.
    node.plant_stale_leaf_neighbour("10.56.0.50", OLD_MAC);
    let call = CniCall::new("ADD", "loud", Some(&netns), "net1");
    let conf = static_conf(&node, json!([{"address": "10.56.0.50/24"}]), json!({}));
    node.spinel(&call, &conf).expect_ok("ADD");
    let took = node
        .wait_leaf_neighbour_mac("10.56.0.50", &new_mac, Duration::from_secs(5))
        .expect("the leaf's entry never showed the new MAC");
    println!(
        "time from ADD's return to a correct leaf entry: {} us",
        took.as_micros()
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.assert_all_home();
}

#[test]
fn the_burst_repeats_at_its_spacing_in_both_forms() {
    let node = SimNode::new("garp_burst", 1);
    let leaf = NetNs::open(node.sb.netns_path("leaf")).unwrap();
    let config = PacketConfig {
        protocol: 0x0806,
        ..PacketConfig::default()
    };
    let listener = PacketSocket::open(&leaf, "swp1", &config).unwrap();
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "burst", Some(&netns), "net1");
    let conf = static_conf(
        &node,
        json!([{"address": "10.56.0.60/24"}]),
        json!({"count": 3, "intervalMs": 300}),
    );
    node.spinel(&call, &conf).expect_ok("ADD");
    let mac: Vec<u8> = node.vfs[0]
        .mac
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect();
    let start = Instant::now();
    let mut seen: Vec<(Duration, u8)> = Vec::new();
    let mut buf = [0u8; 2048];
    while start.elapsed() < Duration::from_millis(1500) {
        if let Some(r) = listener
            .recv(&mut buf, Some(Duration::from_millis(100)))
            .unwrap()
        {
            let f = &buf[..r.len];
            // Ours: from the pod's MAC, announcing 10.56.0.60 as sender and target.
            if f.len() >= 42
                && f[6..12] == mac[..]
                && f[28..32] == [10, 56, 0, 60]
                && f[38..42] == [10, 56, 0, 60]
            {
                seen.push((start.elapsed(), f[21]));
            }
        }
    }
    // Two rounds during ADD, two more from the helper, each round a request and a reply.
    assert_eq!(seen.len(), 8, "frames seen: {seen:?}");
    assert_eq!(
        seen.iter().filter(|(_, op)| *op == 1).count(),
        4,
        "requests"
    );
    assert_eq!(seen.iter().filter(|(_, op)| *op == 2).count(), 4, "replies");
    let spread = seen.last().unwrap().0 - seen.first().unwrap().0;
    assert!(
        spread >= Duration::from_millis(550),
        "the later rounds are spaced: {seen:?}"
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
}

#[test]
fn ipv6_neighbours_are_updated_by_unsolicited_na() {
    let node = SimNode::new("garp_v6", 1);
    node.sb.run_in(
        "leaf",
        "ip",
        &["addr", "add", "fd00:56::1/64", "dev", "swp1", "nodad"],
    );
    node.plant_stale_leaf_neighbour("fd00:56::50", OLD_MAC);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "six", Some(&netns), "net1");
    let conf = static_conf(
        &node,
        json!([{"address": "10.56.0.70/24"}, {"address": "fd00:56::50/64"}]),
        json!({"count": 1}),
    );
    node.spinel(&call, &conf).expect_ok("ADD");
    assert!(
        node.wait_leaf_neighbour_mac("fd00:56::50", &node.vfs[0].mac, Duration::from_secs(5))
            .is_some(),
        "the IPv6 entry was never corrected"
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
}
