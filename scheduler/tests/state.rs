//! The state as the watches drive it: pods binding release reservations into usage, a node
//! that degrades under a reservation loses it, deleted pods give their units back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};
use spinel_scheduler::state::{Config, FilterDecision, State};

fn nodes() -> Vec<Node> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/nodes.json"
    ))
    .unwrap();
    let list: Value = serde_json::from_str(&text).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| serde_json::from_value(n.clone()).unwrap())
        .collect()
}

fn gang_pod(rank: u32, node: Option<&str>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": format!("g-{rank}"), "namespace": "ml", "uid": format!("u{rank}"),
            "labels": {"sched.spinel.dev/gang": "g"},
            "annotations": {"sched.spinel.dev/gang-size": "2", "sched.spinel.dev/dp-within": "leaf",
                "batch.kubernetes.io/job-completion-index": rank.to_string()}},
        "spec": {"nodeName": node, "containers": [{"name": "c",
            "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    }))
    .unwrap()
}

fn totals(s: &State) -> (u32, u32) {
    let c = s.engine().cluster();
    c.node_ids()
        .iter()
        .fold((0, 0), |(r, u), n| (r + c.reserved(*n), u + c.used(*n)))
}

#[test]
fn binding_turns_reservations_into_usage_and_deletion_frees_it() {
    let mut s = State::new(Config::default());
    for n in nodes() {
        s.apply_node(&n, 0);
    }
    let mut planned = Vec::new();
    for r in 0..2 {
        let (d, _) = s.filter(&gang_pod(r, None), 0);
        let FilterDecision::Only { node, .. } = d else {
            panic!("{d:?}")
        };
        planned.push(node);
    }
    assert_eq!(totals(&s), (16, 0));
    for r in 0..2 {
        s.apply_pod(&gang_pod(r, Some(&planned[r as usize])), 1);
    }
    assert_eq!(totals(&s), (0, 16));
    s.delete_pod(&gang_pod(0, Some(&planned[0])));
    assert_eq!(totals(&s), (0, 8));
}

#[test]
fn a_node_degrading_under_a_reservation_loses_it() {
    let mut s = State::new(Config::default());
    let all = nodes();
    for n in &all {
        s.apply_node(n, 0);
    }
    let (d, _) = s.filter(&gang_pod(0, None), 0);
    let FilterDecision::Only { node, .. } = d else {
        panic!("{d:?}")
    };
    let mut degraded = all
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(&node))
        .unwrap()
        .clone();
    degraded.spec.get_or_insert_with(Default::default).taints = Some(vec![
        serde_json::from_value(
            json!({"key": "fabric.spinel.dev/degraded", "effect": "NoSchedule"}),
        )
        .unwrap(),
    ]);
    s.apply_node(&degraded, 5);
    let (d, _) = s.filter(&gang_pod(0, None), 6);
    let FilterDecision::Only { node: moved, .. } = d else {
        panic!("{d:?}")
    };
    assert_ne!(moved, node);
    assert_eq!(totals(&s), (16, 0));
}

#[test]
fn after_a_restart_running_ranks_are_kept_and_the_rest_join_them() {
    let mut s = State::new(Config::default());
    for n in nodes() {
        s.apply_node(&n, 0);
    }
    // Rank 0 runs on gpu-s1-l0-02 with its published rank; the scheduler never planned it.
    let mut running = gang_pod(0, Some("gpu-s1-l0-02"));
    running
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("sched.spinel.dev/rank".to_owned(), "0".to_owned());
    s.apply_pod(&running, 0);
    let (d, _) = s.filter(&gang_pod(1, None), 1);
    let FilterDecision::Only { node, rank, .. } = d else {
        panic!("{d:?}")
    };
    assert_eq!(rank, 1);
    assert_ne!(node, "gpu-s1-l0-02");
    assert!(
        node.starts_with("gpu-s1-l0-"),
        "rank 1 joins rank 0's leaf, got {node}"
    );
    assert_eq!(totals(&s), (8, 8));
}
