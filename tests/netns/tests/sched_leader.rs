//! Two `spinel-scheduler` replicas with `--leader-elect` behind one Service, the real
//! kube-scheduler calling them: only the Lease holder watches, holds reservations and writes;
//! when it is killed the standby takes the Lease over, takes back the plan the dead leader
//! published, and no node of a half-bound gang is promised to another gang.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use spinel_api::scheduling as keys;
use spinel_netns_tests::sched::objects::{
    create_pods, create_ready_nodes, eventually, fabric_labels, gpu_node, gpu_pod, namespace,
    small_fabric, wait_bound,
};
use spinel_netns_tests::sched::{Extender, NAMESPACE, RigOptions, SchedulerRig, http};

const TIER1: &str = "fabric.spinel.dev/tier-1";
const TIMEOUT: Duration = Duration::from_secs(60);
const ARGS: [&str; 5] = [
    "--leader-elect",
    "--lease-duration=4",
    "--renew-deadline=3",
    "--retry-period=1",
    "--reservation-timeout=120",
];

fn gang_pods(gang: &str, size: u32, dp: &str, indices: std::ops::Range<u32>) -> Vec<Pod> {
    indices
        .map(|i| {
            let index = i.to_string();
            gpu_pod(
                &format!("{gang}-{i}"),
                8,
                Some((gang, size)),
                &[
                    (keys::TP, "8"),
                    (keys::DP, dp),
                    (keys::JOB_COMPLETION_INDEX, &index),
                ],
            )
        })
        .collect()
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

fn ready(r: &Extender) -> bool {
    r.get("/readyz").is_some_and(|(s, _)| s == 200)
}

/// Waits until exactly one replica is ready; its index.
async fn leader(rig: &SchedulerRig) -> usize {
    eventually("one replica leads", TIMEOUT, || async {
        let ready: Vec<usize> = (0..rig.replicas.len())
            .filter(|i| ready(&rig.replicas[*i]))
            .collect();
        match ready[..] {
            [one] => Ok(one),
            _ => Err(format!("ready replicas: {ready:?}")),
        }
    })
    .await
}

async fn holder(admin: &kube::Client) -> (String, i32) {
    let lease = Api::<Lease>::namespaced(admin.clone(), NAMESPACE)
        .get("spinel-scheduler")
        .await
        .unwrap();
    let spec = lease.spec.unwrap();
    (
        spec.holder_identity.unwrap_or_default(),
        spec.lease_transitions.unwrap_or(0),
    )
}

fn metric(r: &Extender, sample: &str) -> f64 {
    r.metric(sample)
        .unwrap_or_else(|| panic!("{sample} on {}", r.pod_name()))
}

#[tokio::test]
async fn the_standby_takes_over_without_promising_a_node_twice() {
    let mut rig = SchedulerRig::start(
        RigOptions::new("sched-leader")
            .replicas(2)
            .extender_args(&ARGS),
    );
    let admin = rig.cp.admin_client().await;
    let first = leader(&rig).await;
    let standby = 1 - first;
    let (identity, _) = holder(&admin).await;
    assert!(
        identity.starts_with(&format!("{}_", rig.replicas[first].pod_name())),
        "the Lease names the ready replica: {identity}"
    );

    let labelled = fabric_labels(small_fabric(2, 4, 2));
    let leaf: BTreeMap<String, String> = labelled
        .iter()
        .map(|(n, l)| (n.clone(), l[TIER1].clone()))
        .collect();
    let nodes: Vec<Node> = labelled.iter().map(|(n, l)| gpu_node(n, l, 8)).collect();
    create_ready_nodes(&admin, nodes, 8).await;
    let lead = &rig.replicas[first];
    eventually("the leader sees the nodes", TIMEOUT, || async {
        match lead.metric("spinel_scheduler_nodes") {
            Some(8.0) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    namespace(&admin, "t-lead").await;

    // Half of gang a (one DP group of 4 pods in a leaf group) arrives: the leader plans all
    // four ranks, two bind, two stay reserved.
    let a_first = gang_pods("a", 4, "4", 0..2);
    create_pods(&admin, "t-lead", a_first.clone()).await;
    wait_bound(&admin, "t-lead", &names(&a_first), TIMEOUT).await;
    let pods = Api::<Pod>::namespaced(admin.clone(), "t-lead");
    let plan: Vec<String> = eventually("rank 0's rank list", TIMEOUT, || {
        let pods = pods.clone();
        async move {
            let a0 = pods.get("a-0").await.map_err(|e| e.to_string())?;
            a0.metadata
                .annotations
                .and_then(|a| a.get(keys::RANK_NODES).cloned())
                .map(|l| l.split(',').map(str::to_owned).collect())
                .ok_or_else(|| "no list yet".to_owned())
        }
    })
    .await;
    assert_eq!(plan.len(), 4);
    let plan_leaf = &leaf[&plan[0]];
    // Only the leader holds anything; the standby watches nothing and refuses to decide.
    let sb = &rig.replicas[standby];
    assert_eq!(metric(lead, "spinel_scheduler_reserved_ranks"), 2.0);
    assert_eq!(metric(lead, "spinel_scheduler_leader"), 1.0);
    assert_eq!(metric(sb, "spinel_scheduler_leader"), 0.0);
    assert_eq!(metric(sb, "spinel_scheduler_reserved_ranks"), 0.0);
    assert_eq!(metric(sb, "spinel_scheduler_nodes"), 0.0);
    let (status, reply) = http(sb.addr(), "POST", "/filter", b"{}").unwrap();
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&reply));
    assert!(
        rig.service
            .exchanges()
            .iter()
            .all(|e| e.backend == Some(lead.addr())),
        "kube-scheduler's requests reached the standby"
    );

    // The leader dies. The standby waits out the Lease, takes it, and takes back a's plan.
    let killed = Instant::now();
    rig.replicas[first].kill();
    let sb = &rig.replicas[standby];
    eventually("the standby leads", TIMEOUT, || async {
        if ready(sb) {
            Ok(())
        } else {
            Err(format!("{:?}", sb.get("/readyz")))
        }
    })
    .await;
    let takeover = killed.elapsed();
    let (identity, transitions) = holder(&admin).await;
    assert!(
        identity.starts_with(&format!("{}_", sb.pod_name())),
        "{identity}"
    );
    assert!(transitions >= 1, "{transitions}");
    assert!(
        takeover >= Duration::from_secs(3),
        "the Lease was taken {takeover:?} after the leader died, before it could expire"
    );
    assert_eq!(metric(sb, "spinel_scheduler_reserved_ranks"), 2.0);

    // Gang b (one DP group of 2 pods in a leaf group) arrives before the rest of gang a.
    // Best-fit alone would give b a's two held nodes, the tightest fit.
    let b = gang_pods("b", 2, "2", 0..2);
    create_pods(&admin, "t-lead", b.clone()).await;
    let mut bound = wait_bound(&admin, "t-lead", &names(&b), TIMEOUT).await;
    let a_rest = gang_pods("a", 4, "4", 2..4);
    create_pods(&admin, "t-lead", a_rest.clone()).await;
    bound.extend(wait_bound(&admin, "t-lead", &names(&a_rest), TIMEOUT).await);
    assert_eq!(bound["a-2"], plan[2], "rank 2 kept its published node");
    assert_eq!(bound["a-3"], plan[3], "rank 3 kept its published node");
    let b_leaves: BTreeSet<&String> = names(&b).iter().map(|n| &leaf[&bound[n]]).collect();
    assert_eq!(b_leaves.len(), 1);
    assert_ne!(b_leaves.first().copied(), Some(plan_leaf));
    let mut used: BTreeSet<String> = bound.values().cloned().collect();
    used.extend(plan[..2].iter().cloned());
    assert_eq!(
        used.len(),
        6,
        "a node was promised twice: {bound:?} {plan:?}"
    );

    // The old leader comes back (as its Deployment would restart it) and stays a standby.
    let args: Vec<String> = ARGS.iter().map(|a| (*a).to_owned()).collect();
    rig.respawn(first, &args);
    let back = &rig.replicas[first];
    back.wait_for("/healthz", TIMEOUT);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        back.get("/readyz").map(|(s, _)| s),
        Some(503),
        "the restarted replica took the Lease from a live leader"
    );
    assert_eq!(metric(back, "spinel_scheduler_leader"), 0.0);
    assert_eq!(
        metric(&rig.replicas[standby], "spinel_scheduler_leader"),
        1.0
    );
}
