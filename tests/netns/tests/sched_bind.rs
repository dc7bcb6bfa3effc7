//! The extender's bind verb and full-node mode under the real kube-scheduler: the shipped
//! configuration with `bindVerb: bind` and `nodeCacheCapable: false`, `spinel-scheduler
//! --bind` with the shipped `rbac-bind.yaml`. kube-scheduler sends whole Node objects, keeps
//! the one node the extender returns, and hands the binding to the extender, which creates it
//! with its own token.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;
use spinel_api::scheduling as keys;
use spinel_netns_tests::sched::fixtures::record_fixtures;
use spinel_netns_tests::sched::objects::{
    create_pods, create_ready_nodes, eventually, fabric_labels, gpu_node, gpu_pod, namespace,
    small_fabric, wait_bound,
};
use spinel_netns_tests::sched::{RigOptions, SchedulerRig};

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn the_extender_binds_gang_pods_it_was_sent_whole_nodes_for() {
    let rig = SchedulerRig::start(
        RigOptions::new("sched-bind")
            .extender_args(&["--bind"])
            .manifest("rbac-bind.yaml")
            .edit_config(|cfg| {
                cfg["extenders"][0]["bindVerb"] = json!("bind");
                cfg["extenders"][0]["nodeCacheCapable"] = json!(false);
            }),
    );
    let admin = rig.cp.admin_client().await;
    let labelled = fabric_labels(small_fabric(2, 4, 2));
    let nodes: Vec<Node> = labelled.iter().map(|(n, l)| gpu_node(n, l, 8)).collect();
    create_ready_nodes(&admin, nodes, 8).await;
    let ext = &rig.replicas[0];
    eventually("the extender sees the nodes", TIMEOUT, || async {
        match ext.metric("spinel_scheduler_nodes") {
            Some(8.0) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    namespace(&admin, "t-bind").await;
    let pods: Vec<Pod> = (0..4)
        .map(|i| {
            let index = i.to_string();
            gpu_pod(
                &format!("g-{i}"),
                8,
                Some(("g", 4)),
                &[
                    (keys::TP, "8"),
                    (keys::DP, "4"),
                    (keys::JOB_COMPLETION_INDEX, &index),
                ],
            )
        })
        .collect();
    let names: Vec<String> = (0..4).map(|i| format!("g-{i}")).collect();
    // A pod without GPUs is bound by kube-scheduler itself (managedResources).
    create_pods(&admin, "t-bind", vec![gpu_pod("web", 0, None, &[])]).await;
    create_pods(&admin, "t-bind", pods).await;
    let bound = wait_bound(&admin, "t-bind", &names, TIMEOUT).await;
    wait_bound(&admin, "t-bind", &["web".to_owned()], TIMEOUT).await;
    let leaf = |n: &str| {
        labelled
            .iter()
            .find(|(name, _)| name == n)
            .map(|(_, l)| l["fabric.spinel.dev/tier-1"].clone())
            .unwrap()
    };
    let leaves: BTreeSet<String> = bound.values().map(|n| leaf(n)).collect();
    assert_eq!(leaves.len(), 1, "{bound:?}");

    let traffic = rig.service.exchanges();
    record_fixtures(&admin, "bind-full-nodes", &traffic, &[]).await;
    for name in &names {
        let binds: Vec<_> = traffic
            .iter()
            .filter(|e| e.path == "/bind" && e.pod_name() == *name)
            .collect();
        assert_eq!(binds.len(), 1, "{name} was bound by the extender once");
        let bind = binds[0];
        assert_eq!(bind.status, 200);
        assert_eq!(bind.reply_json(), json!({"Error": ""}));
        assert_eq!(bind.request_json()["Node"], json!(bound[name]));
        // Full-node mode: the last filter got whole Node objects and kept the planned one.
        let filter = traffic
            .iter()
            .rfind(|e| e.path == "/filter" && e.pod_name() == *name)
            .unwrap();
        let request = filter.request_json();
        assert!(
            request["NodeNames"].is_null(),
            "names only in full-node mode"
        );
        let offered: Vec<&str> = request["Nodes"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["metadata"]["name"].as_str().unwrap())
            .collect();
        // Nodes the gang already filled fail kube-scheduler's own fit before the extender.
        assert!(
            offered.len() > 1 && offered.contains(&bound[name].as_str()),
            "{name}: {offered:?}"
        );
        let kept = filter.reply_json()["Nodes"]["items"].clone();
        assert_eq!(kept.as_array().unwrap().len(), 1);
        assert_eq!(kept[0]["metadata"]["name"], json!(bound[name]));
        assert!(
            kept[0]["status"]["allocatable"]["nvidia.com/gpu"] == json!("8"),
            "the node is echoed whole"
        );
    }
    assert!(
        traffic.iter().all(|e| e.pod_name() != "web"),
        "a pod without GPUs reached the extender"
    );
    assert_eq!(
        ext.metric(r#"spinel_scheduler_request_duration_seconds_count{verb="bind"}"#),
        Some(4.0)
    );
    // Rank 0's list names where the extender bound each rank.
    let rank0 = eventually("rank 0's list", TIMEOUT, || async {
        let pod = kube::Api::<Pod>::namespaced(admin.clone(), "t-bind")
            .get("g-0")
            .await
            .map_err(|e| e.to_string())?;
        pod.metadata
            .annotations
            .and_then(|a| a.get(keys::RANK_NODES).cloned())
            .ok_or_else(|| "no list yet".to_owned())
    })
    .await;
    let expected: Vec<&str> = names.iter().map(|n| bound[n].as_str()).collect();
    assert_eq!(rank0, expected.join(","));
}
