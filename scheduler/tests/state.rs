//! The state as the watches drive it: pods binding release reservations into usage, a node
//! that degrades under a reservation loses it, deleted pods give their units back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};
use spinel_scheduler::state::{Config, FilterDecision, Publication, State};

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

/// The filter decision for `pod` once the pod watch has shown it (the state decides only for
/// pods it watches), without kube-scheduler's candidates.
fn seen(s: &mut State, pod: &Pod, now: u64) -> (FilterDecision, Publication) {
    s.apply_pod(pod, now);
    s.filter(pod, None, now)
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
        let (d, _) = seen(&mut s, &gang_pod(r, None), 0);
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
    let (d, _) = seen(&mut s, &gang_pod(0, None), 0);
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
    let (d, _) = seen(&mut s, &gang_pod(0, None), 6);
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
    let (d, _) = seen(&mut s, &gang_pod(1, None), 1);
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

fn with_annotations(mut pod: Pod, notes: &[(&str, &str)]) -> Pod {
    let a = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    for (k, v) in notes {
        a.insert((*k).to_owned(), (*v).to_owned());
    }
    pod
}

fn four_pod_pod(rank: u32, node: Option<&str>) -> Pod {
    let mut pod = gang_pod(rank, node);
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("sched.spinel.dev/gang-size".to_owned(), "4".to_owned());
    pod
}

#[test]
fn a_new_leader_takes_back_the_published_plan() {
    // The previous leader planned the 4-pod gang, published it on rank 0, and ranks 0-1 run.
    let mut old = State::new(Config::default());
    for n in nodes() {
        old.apply_node(&n, 0);
    }
    let mut planned = Vec::new();
    let mut rank0 = None;
    for r in 0..4 {
        let (d, p) = seen(&mut old, &four_pod_pod(r, None), 0);
        let FilterDecision::Only { node, .. } = d else {
            panic!("{d:?}")
        };
        planned.push(node);
        if r == 0 {
            rank0 = Some(p.annotations);
        }
    }
    let list = rank0.unwrap()["sched.spinel.dev/rank-nodes"].clone();
    assert_eq!(list, planned.join(","));
    // What the new leader lists: every pod with what the old one published.
    let pods: Vec<Pod> = (0..4u32)
        .map(|r| {
            let rank = r.to_string();
            let mut notes = vec![("sched.spinel.dev/rank", rank.as_str())];
            if r == 0 {
                notes.push(("sched.spinel.dev/rank-nodes", &list));
            }
            let node = (r < 2).then(|| planned[r as usize].as_str());
            with_annotations(four_pod_pod(r, node), &notes)
        })
        .collect();
    let mut new = State::new(Config::default());
    for n in nodes() {
        new.apply_node(&n, 0);
    }
    for p in &pods {
        new.apply_pod(p, 0);
    }
    assert_eq!(new.resume(&pods, 0), 2, "ranks 2 and 3 reserved again");
    assert_eq!(totals(&new), (16, 16));
    // Another gang cannot get the held nodes; the waiting pods get theirs.
    let other: Pod = serde_json::from_value(json!({
        "metadata": {"name": "o-0", "namespace": "ml", "uid": "o0",
            "labels": {"sched.spinel.dev/gang": "o"},
            "annotations": {"sched.spinel.dev/gang-size": "1"}},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    }))
    .unwrap();
    let (d, _) = seen(&mut new, &other, 1);
    let FilterDecision::Only { node, .. } = d else {
        panic!("{d:?}")
    };
    assert!(!planned.contains(&node), "{node} promised twice");
    for r in 2..4 {
        let (d, _) = seen(&mut new, &pods[r], 2);
        assert!(
            matches!(&d, FilterDecision::Only { node, rank, .. } if *node == planned[r] && *rank == r as u32),
            "{d:?}"
        );
    }
}

#[test]
fn rank_zero_gets_the_list_again_when_a_rank_moves() {
    let mut s = State::new(Config::default());
    for n in nodes() {
        s.apply_node(&n, 0);
    }
    let (_, first) = seen(&mut s, &gang_pod(0, None), 0);
    let before = first.annotations["sched.spinel.dev/rank-nodes"].clone();
    // kube-scheduler's own filters drop rank 1's planned node: it is placed again.
    let (d, _) = seen(&mut s, &gang_pod(1, None), 1);
    let FilterDecision::Only { node: dropped, .. } = d else {
        panic!("{d:?}")
    };
    let without: Vec<String> = nodes()
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .filter(|n| *n != dropped)
        .collect();
    let without = s.candidates(None, &without);
    let (d, p) = s.filter(&gang_pod(1, None), Some(&without), 2);
    let FilterDecision::Only { node: moved, .. } = d else {
        panic!("{d:?}")
    };
    assert_ne!(moved, dropped);
    assert_eq!(p.others.len(), 1, "{p:?}");
    let other = &p.others[0];
    assert_eq!(
        (other.namespace.as_str(), other.name.as_str()),
        ("ml", "g-0")
    );
    let after = &other.annotations["sched.spinel.dev/rank-nodes"];
    assert_ne!(after, &before);
    assert_eq!(after.split(',').nth(1), Some(moved.as_str()));
    // Nothing moved since: asking about rank 1 again republishes nothing on rank 0.
    let (_, p) = seen(&mut s, &gang_pod(1, None), 3);
    assert!(p.others.is_empty(), "{p:?}");
}

#[test]
fn a_pod_naming_an_upstream_pod_group_gets_its_size_from_it() {
    let mut s = State::new(Config::default());
    for n in nodes() {
        s.apply_node(&n, 0);
    }
    let pod = |i: u32| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": format!("w-{i}"), "namespace": "ml", "uid": format!("w{i}")},
            "spec": {"schedulingGroup": {"podGroupName": "pg"}, "containers": [{"name": "c",
                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
        }))
        .unwrap()
    };
    // The API is not watched: the pod must carry its size.
    let (d, _) = seen(&mut s, &pod(0), 0);
    assert!(
        matches!(&d, FilterDecision::Reject { resolvable: false, reason } if reason.contains("gang-size")),
        "{d:?}"
    );
    // Watched but not seen yet: the pod waits for it.
    s.watch_pod_groups();
    let (d, _) = seen(&mut s, &pod(0), 1);
    assert!(
        matches!(&d, FilterDecision::Reject { resolvable: true, reason } if reason.contains("waiting to see PodGroup ml/pg")),
        "{d:?}"
    );
    let group = serde_json::from_value(json!({
        "metadata": {"name": "pg", "namespace": "ml"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                 "schedulingConstraints": {"topology": [{"key": "fabric.spinel.dev/tier-1"}]}}
    }))
    .unwrap();
    s.apply_pod_group(&group);
    let mut leaves = Vec::new();
    for i in 0..2 {
        let (d, _) = seen(&mut s, &pod(i), 2);
        let FilterDecision::Only { node, .. } = d else {
            panic!("{d:?}")
        };
        leaves.push(node[..9].to_owned());
    }
    assert_eq!(
        leaves[0], leaves[1],
        "the PodGroup's topology key holds it in one leaf"
    );
    assert_eq!(s.engine().stats().reserved_ranks, 2, "a gang of minCount 2");
    s.delete_pod_group("ml", "pg");
    let (d, _) = seen(&mut s, &pod(9), 3);
    assert!(
        matches!(
            d,
            FilterDecision::Reject {
                resolvable: true,
                ..
            }
        ),
        "{d:?}"
    );
}

// The candidate list kube-scheduler repeats is resolved once; a node added or removed (names
// may then map to other ids) resolves it again.
#[test]
fn a_repeated_candidate_list_is_resolved_once_until_the_nodes_change() {
    let mut s = State::new(Config::default());
    let all = nodes();
    for n in &all[1..] {
        s.apply_node(n, 0);
    }
    let names: Vec<String> = all.iter().filter_map(|n| n.metadata.name.clone()).collect();
    let raw = serde_json::to_string(&names).unwrap();
    let a = s.candidates(Some(&raw), &names);
    let b = s.candidates(Some(&raw), &names);
    assert!(std::ptr::eq(a.ids(), b.ids()), "resolved again");
    assert_eq!(a.ids()[0], None, "{} is not in the view yet", names[0]);
    s.apply_node(&all[0], 1);
    let c = s.candidates(Some(&raw), &names);
    assert!(c.ids()[0].is_some());
    assert_eq!(c.ids()[1..], a.ids()[1..]);
}
