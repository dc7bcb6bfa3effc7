//! Many attachments at once: nothing handed out twice, nothing lost.

use std::collections::BTreeSet;
use std::sync::Arc;

use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::CniCall;

#[test]
fn thirty_two_concurrent_adds_then_thirty_two_concurrent_dels() {
    const N: usize = 32;
    let node = Arc::new(SimNode::new("concurrent_32", N as u32));
    let pods: Vec<_> = (0..N).map(|i| node.pod(&format!("p{i}"))).collect();
    let results: Vec<serde_json::Value> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..N)
            .map(|i| {
                let node = Arc::clone(&node);
                let netns = pods[i].clone();
                s.spawn(move || {
                    let call = CniCall::new("ADD", &format!("c{i}"), Some(&netns), "net1");
                    node.spinel(&call, &node.conf("1.1.0", Some(&node.vfs[i])))
                        .expect_ok("concurrent ADD")
                        .clone()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ips: BTreeSet<String> = results
        .iter()
        .map(|r| r["ips"][0]["address"].as_str().unwrap().to_owned())
        .collect();
    let vfs: BTreeSet<String> = results
        .iter()
        .map(|r| r["interfaces"][0]["pciID"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ips.len(), N, "every pod got its own address");
    assert_eq!(vfs.len(), N, "every pod got its own VF");
    assert_eq!(node.leased_ips().len(), N);
    for (i, r) in results.iter().enumerate() {
        let ip = r["ips"][0]["address"].as_str().unwrap();
        let shown = node.sb.run_in(
            &format!("p{i}"),
            "ip",
            &["-br", "addr", "show", "dev", "net1"],
        );
        assert!(shown.contains(ip), "pod {i}: {shown}");
    }

    std::thread::scope(|s| {
        for (i, netns) in pods.iter().enumerate() {
            let node = Arc::clone(&node);
            s.spawn(move || {
                let call = CniCall::new("DEL", &format!("c{i}"), Some(netns), "net1");
                node.spinel(&call, &node.conf("1.1.0", Some(&node.vfs[i])))
                    .expect_ok("concurrent DEL");
            });
        }
    });
    node.assert_all_home();
}

#[test]
fn racing_adds_for_one_vf_give_it_to_exactly_one_pod() {
    const N: usize = 8;
    let node = Arc::new(SimNode::new("race_one_vf", 1));
    let pods: Vec<_> = (0..N).map(|i| node.pod(&format!("p{i}"))).collect();
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..N)
            .map(|i| {
                let node = Arc::clone(&node);
                let netns = pods[i].clone();
                s.spawn(move || {
                    let call = CniCall::new("ADD", &format!("r{i}"), Some(&netns), "net1");
                    (
                        i,
                        node.spinel(&call, &node.conf("1.1.0", Some(&node.vfs[0]))),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let winners: Vec<usize> = outcomes
        .iter()
        .filter(|(_, o)| o.ok())
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one ADD may win: {outcomes:#?}");
    for (i, o) in &outcomes {
        if !o.ok() {
            o.expect_code(11, &format!("losing ADD {i}"));
        }
    }
    assert_eq!(
        node.leased_ips().len(),
        1,
        "losers must not keep an address"
    );
    let w = winners[0];
    node.sb
        .run_in(&format!("p{w}"), "ip", &["link", "show", "dev", "net1"]);
    // Every loser's DEL (the runtime sends one after a failed ADD) must leave the winner alone.
    for i in (0..N).filter(|i| *i != w) {
        let call = CniCall::new("DEL", &format!("r{i}"), Some(&pods[i]), "net1");
        node.spinel(&call, &node.conf("1.1.0", Some(&node.vfs[0])))
            .expect_ok("loser DEL");
    }
    node.sb
        .run_in(&format!("p{w}"), "ip", &["link", "show", "dev", "net1"]);
    assert_eq!(node.leased_ips().len(), 1);
    let call = CniCall::new("DEL", &format!("r{w}"), Some(&pods[w]), "net1");
    node.spinel(&call, &node.conf("1.1.0", Some(&node.vfs[0])))
        .expect_ok("winner DEL");
    node.assert_all_home();
}
