//! A gang is planned only where kube-scheduler itself can put its pods, and never stays
//! partly bound where the rest cannot join: the real kube-scheduler with the shipped
//! configuration, RBAC and admission policy, the real `spinel-scheduler` binary, real Nodes and
//! Pods. Taints, node affinity and DRA VF claims the engine does not model, a node cordoned or
//! deleted while the gang binds, and a bound pod of a gang deleted and replaced.
//!
//! No kubelet runs here: where a kubelet would confirm a pod's termination (after an eviction),
//! the test deletes it with grace period 0, and where a Job controller would recreate an
//! evicted or deleted pod, the test creates it again with the same name and index.
//!
//! Releasing a stranded gang evicts its bound pods (`pods/eviction`, create), which the shipped
//! `rbac.yaml` does not grant yet: [`grant_eviction`] adds exactly that for the scheduler's
//! ServiceAccount.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use spinel_api::{dra, scheduling as keys};
use spinel_netns_tests::cluster;
use spinel_netns_tests::sched::objects::{
    create_pods, create_ready_nodes, delete_test_objects, eventually, fabric_labels, gpu_node,
    gpu_pod, namespace, small_fabric, wait_bound,
};
use spinel_netns_tests::sched::{NAMESPACE, RigOptions, SERVICE_ACCOUNT, SchedulerRig};

const TIER1: &str = "fabric.spinel.dev/tier-1";
const TIMEOUT: Duration = Duration::from_secs(60);
/// The stranded grace (30 s by default) plus room for the release to reach the API server.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(90);

fn rig() -> &'static SchedulerRig {
    static RIG: OnceLock<SchedulerRig> = OnceLock::new();
    RIG.get_or_init(|| {
        let rig = SchedulerRig::start(
            RigOptions::new("sched-feasible").extender_args(&["--reservation-timeout=300"]),
        );
        std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(async { grant_eviction(&rig.cp.admin_client().await).await })
            });
        });
        rig
    })
}

/// `pods/eviction` create for the scheduler's ServiceAccount: what releasing a stranded gang
/// needs beyond the shipped `rbac.yaml`.
async fn grant_eviction(admin: &kube::Client) {
    let pp = PostParams::default();
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "spinel-scheduler-evict"},
        "rules": [{"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}],
    }))
    .unwrap();
    Api::<ClusterRole>::all(admin.clone())
        .create(&pp, &role)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "spinel-scheduler-evict"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "spinel-scheduler-evict"},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT,
                      "namespace": NAMESPACE}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&pp, &binding)
        .await
        .unwrap();
}

/// One test at a time on the shared cluster.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct World {
    admin: kube::Client,
    ns: String,
    nodes: BTreeMap<String, BTreeMap<String, String>>,
}

impl World {
    fn leaf(&self, node: &str) -> &str {
        &self.nodes[node][TIER1]
    }

    /// Nodes by leaf group, in name order.
    fn by_leaf(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (n, labels) in &self.nodes {
            out.entry(labels[TIER1].clone())
                .or_default()
                .push(n.clone());
        }
        out
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), &self.ns)
    }
}

/// A clean cluster of `groups` leaf groups of `hosts` 8-GPU hosts under one spine domain.
async fn fresh(ns: &str, groups: usize, hosts: usize) -> World {
    let admin = rig().cp.admin_client().await;
    delete_test_objects(&admin).await;
    let ext = &rig().replicas[0];
    eventually("the extender forgets the last test", TIMEOUT, || async {
        let seen = (
            ext.metric("spinel_scheduler_nodes"),
            ext.metric("spinel_scheduler_gangs"),
        );
        if seen == (Some(0.0), Some(0.0)) {
            Ok(())
        } else {
            Err(format!("(nodes, gangs) = {seen:?}"))
        }
    })
    .await;
    let labelled = fabric_labels(small_fabric(groups, hosts, groups));
    let nodes: Vec<Node> = labelled.iter().map(|(n, l)| gpu_node(n, l, 8)).collect();
    create_ready_nodes(&admin, nodes, 8).await;
    let want = labelled.len() as f64;
    eventually("the extender sees the nodes", TIMEOUT, || async {
        match ext.metric("spinel_scheduler_nodes") {
            Some(n) if n == want => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    namespace(&admin, ns).await;
    World {
        admin,
        ns: ns.to_owned(),
        nodes: labelled.into_iter().collect(),
    }
}

/// Pod `i` of a gang of `size` 8-GPU pods, all of it one DP group hard within a leaf group.
fn member(gang: &str, size: u32, i: u32) -> Pod {
    let index = i.to_string();
    gpu_pod(
        &format!("{gang}-{i}"),
        8,
        Some((gang, size)),
        &[
            (keys::TP, "8"),
            (keys::DP, &size.to_string()),
            (keys::JOB_COMPLETION_INDEX, &index),
        ],
    )
}

fn members(gang: &str, size: u32, which: impl IntoIterator<Item = u32>) -> Vec<Pod> {
    which.into_iter().map(|i| member(gang, size, i)).collect()
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

/// A pod outside gangs holding a whole node.
async fn occupy(w: &World, name: &str, node: &str) {
    let mut p = gpu_pod(name, 8, None, &[]);
    p.spec.as_mut().unwrap().node_name = Some(node.to_owned());
    create_pods(&w.admin, &w.ns, vec![p]).await;
}

async fn set_taint(admin: &kube::Client, node: &str, key: &str) {
    Api::<Node>::all(admin.clone())
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": [{"key": key, "effect": "NoSchedule"}]}})),
        )
        .await
        .unwrap();
}

/// The rank-to-node list published on rank 0 of `gang`.
async fn rank_nodes(w: &World, gang: &str) -> Vec<String> {
    eventually("the rank list on rank 0", TIMEOUT, || async {
        let pod = w
            .pods()
            .get(&format!("{gang}-0"))
            .await
            .map_err(|e| e.to_string())?;
        let list = pod
            .metadata
            .annotations
            .unwrap_or_default()
            .get(keys::RANK_NODES)
            .cloned()
            .ok_or("no rank list yet")?;
        Ok(list.split(',').map(str::to_owned).collect())
    })
    .await
}

fn leaves_of<'a>(w: &'a World, bound: &BTreeMap<String, String>) -> BTreeSet<&'a str> {
    bound.values().map(|n| w.leaf(n)).collect()
}

// Issue 19: one node of the best-fit leaf group carries a taint the engine does not know while
// another group has room. The plan must not pick it: the gang binds whole in the other group at
// once (before, every pod said "cannot replace lost ranks" and the gang waited minutes, part of
// it bound in the tainted group).
#[tokio::test]
async fn a_taint_the_engine_does_not_know_keeps_the_gang_off_its_leaf() {
    let _serial = SERIAL.lock().await;
    let w = fresh("t-taint", 2, 5).await;
    let leaves = w.by_leaf();
    let (best, other) = (
        &leaves.values().next().unwrap(),
        &leaves.values().nth(1).unwrap(),
    );
    // The first group has 4 free nodes (best fit for 4 pods), one of them under maintenance.
    occupy(&w, "busy", &best[0]).await;
    set_taint(&w.admin, &best[1], "example.com/maintenance").await;
    let pods = members("job", 4, 0..4);
    let names = names(&pods);
    create_pods(&w.admin, &w.ns, pods).await;
    let bound = wait_bound(&w.admin, &w.ns, &names, Duration::from_secs(30)).await;
    assert_eq!(
        leaves_of(&w, &bound),
        BTreeSet::from([w.leaf(&other[0])]),
        "{bound:?}"
    );
    assert!(!bound.values().any(|n| *n == best[1]));
}

// The same with node affinity: the gang's pods require a GPU model that one node of the
// best-fit group does not have.
#[tokio::test]
async fn node_affinity_the_engine_does_not_know_keeps_the_gang_off_its_leaf() {
    let _serial = SERIAL.lock().await;
    let w = fresh("t-affinity", 2, 5).await;
    let leaves = w.by_leaf();
    let best = leaves.values().next().unwrap();
    let other = leaves.values().nth(1).unwrap();
    // Every node is an h100 node but one free node of the best-fit group.
    for n in w.nodes.keys() {
        let model = if *n == best[1] { "a100" } else { "h100" };
        Api::<Node>::all(w.admin.clone())
            .patch(
                n,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"example.com/gpu-model": model}}})),
            )
            .await
            .unwrap();
    }
    occupy(&w, "busy", &best[0]).await;
    let mut pods = members("job", 4, 0..4);
    for p in &mut pods {
        p.spec.as_mut().unwrap().affinity = Some(
            serde_json::from_value(json!({"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "example.com/gpu-model",
                                           "operator": "In", "values": ["h100"]}]}]}}}))
            .unwrap(),
        );
    }
    let names = names(&pods);
    create_pods(&w.admin, &w.ns, pods).await;
    let bound = wait_bound(&w.admin, &w.ns, &names, Duration::from_secs(30)).await;
    assert_eq!(
        leaves_of(&w, &bound),
        BTreeSet::from([w.leaf(&other[0])]),
        "{bound:?}"
    );
}

/// One `vf.roce.spinel.dev` device on each of `nodes`, as the agent's DRA driver publishes
/// a VF (driver, pool per node, the kind the DeviceClass selects on).
async fn publish_vfs(admin: &kube::Client, nodes: &[&String]) {
    let api = Api::<ResourceSlice>::all(admin.clone());
    for node in nodes {
        let slice: ResourceSlice = serde_json::from_value(json!({
            "metadata": {"name": format!("t-dra-{node}"), "labels": {TEST_SLICE: "true"}},
            "spec": {
                "driver": dra::DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "pf0-vf0", "attributes": {
                    dra::ATTR_KIND: {"string": "vf"},
                    dra::ATTR_RAIL: {"int": 0},
                }}],
            },
        }))
        .unwrap();
        api.create(&PostParams::default(), &slice).await.unwrap();
    }
}

async fn delete_test_slices(admin: &kube::Client) {
    Api::<ResourceSlice>::all(admin.clone())
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&format!("{TEST_SLICE}=true")),
        )
        .await
        .unwrap();
}

const TEST_SLICE: &str = "sched-feasible.spinel.dev/slice";

// Issue 23: the gang scheduler knows about NICs. Each pod of the gang claims one VF through
// DRA; one free node of the best-fit group publishes none (its NIC shielded or its VFs used).
// kube-scheduler's own DRA filter drops that node before the extender is asked, so the plan is
// made where every pod's claim can be allocated: the gang binds whole in the other group and
// each claim is allocated on its pod's node.
#[tokio::test]
async fn a_node_whose_vf_claims_cannot_be_allocated_keeps_the_gang_off_its_leaf() {
    let _serial = SERIAL.lock().await;
    let w = fresh("t-dra", 2, 5).await;
    delete_test_slices(&w.admin).await;
    cluster::apply_files(&w.admin, &["deploy/dra/device-classes.yaml"]).await;
    let leaves = w.by_leaf();
    let best = leaves.values().next().unwrap();
    let other = leaves.values().nth(1).unwrap();
    let with_vf: Vec<&String> = w.nodes.keys().filter(|n| **n != best[1]).collect();
    publish_vfs(&w.admin, &with_vf).await;
    occupy(&w, "busy", &best[0]).await;
    let claims = Api::<ResourceClaim>::namespaced(w.admin.clone(), &w.ns);
    let mut pods = members("job", 4, 0..4);
    for p in &mut pods {
        let claim = format!("{}-vf", p.metadata.name.as_deref().unwrap());
        let rc: ResourceClaim = serde_json::from_value(json!({
            "metadata": {"name": claim},
            "spec": {"devices": {"requests": [{"name": "vf",
                "exactly": {"deviceClassName": "vf.roce.spinel.dev"}}]}},
        }))
        .unwrap();
        claims.create(&PostParams::default(), &rc).await.unwrap();
        let spec = p.spec.as_mut().unwrap();
        spec.resource_claims = Some(vec![
            serde_json::from_value(json!({"name": "vf", "resourceClaimName": claim})).unwrap(),
        ]);
        spec.containers[0]
            .resources
            .get_or_insert_with(Default::default)
            .claims = Some(vec![serde_json::from_value(json!({"name": "vf"})).unwrap()]);
    }
    let names = names(&pods);
    create_pods(&w.admin, &w.ns, pods).await;
    let bound = wait_bound(&w.admin, &w.ns, &names, Duration::from_secs(30)).await;
    assert_eq!(
        leaves_of(&w, &bound),
        BTreeSet::from([w.leaf(&other[0])]),
        "{bound:?}"
    );
    for (pod, node) in &bound {
        let rc = claims.get(&format!("{pod}-vf")).await.unwrap();
        let results = rc
            .status
            .and_then(|s| s.allocation)
            .and_then(|a| a.devices)
            .and_then(|d| d.results)
            .unwrap_or_default();
        assert_eq!(results.len(), 1, "{pod}: {results:?}");
        assert_eq!(
            (results[0].driver.as_str(), results[0].pool.as_str()),
            (dra::DRIVER, node.as_str()),
            "{pod}'s VF is on its node"
        );
    }
    for n in names {
        w.pods()
            .delete(
                &n,
                &DeleteParams {
                    grace_period_seconds: Some(0),
                    ..DeleteParams::default()
                },
            )
            .await
            .unwrap();
    }
    claims
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    delete_test_slices(&w.admin).await;
}

/// Waits for the extender's Events saying the gang was released, on `pod`.
async fn released_event(w: &World, pod: &str) -> String {
    eventually(
        &format!("a GangReleased Event on {pod}"),
        RELEASE_TIMEOUT,
        || async {
            let events = Api::<Event>::namespaced(w.admin.clone(), &w.ns)
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            events
                .items
                .into_iter()
                .find(|e| {
                    e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(pod)
                        && e.reason.as_deref() == Some("GangReleased")
                })
                .and_then(|e| e.note)
                .ok_or_else(|| "none yet".to_owned())
        },
    )
    .await
}

/// What a kubelet and a Job controller do after an eviction: the evicted pod ends (deleted with
/// grace 0 once it carries a deletion timestamp) and comes back under the same name and index.
async fn evicted_and_recreated(w: &World, gang: &str, size: u32, evicted: &[u32]) {
    for i in evicted {
        let name = format!("{gang}-{i}");
        let pods = w.pods();
        eventually(&format!("{name} is being evicted"), RELEASE_TIMEOUT, || {
            let pods = pods.clone();
            let name = name.clone();
            async move {
                let pod = pods.get(&name).await.map_err(|e| e.to_string())?;
                pod.metadata
                    .deletion_timestamp
                    .map(|_| ())
                    .ok_or_else(|| "no deletion timestamp".to_owned())
            }
        })
        .await;
        let now = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        };
        let _ = w.pods().delete(&name, &now).await;
        eventually(&format!("{name} is gone"), TIMEOUT, || {
            let pods = pods.clone();
            let name = name.clone();
            async move {
                match pods.get_opt(&name).await.map_err(|e| e.to_string())? {
                    None => Ok(()),
                    Some(_) => Err("still there".to_owned()),
                }
            }
        })
        .await;
    }
    create_pods(
        &w.admin,
        &w.ns,
        members(gang, size, evicted.iter().copied()),
    )
    .await;
}

/// Half a gang of 4 binds in one group of exactly 4 nodes; then `lose` takes away the node
/// planned for rank 3. The gang cannot complete there: it is released whole (Event, bound pods
/// evicted) and binds whole in the other group.
async fn lose_a_node_mid_gang(ns: &str, lose: impl AsyncFnOnce(&World, &str)) {
    let w = fresh(ns, 2, 4).await;
    let first = members("job", 4, 0..2);
    create_pods(&w.admin, &w.ns, first.clone()).await;
    let half = wait_bound(&w.admin, &w.ns, &names(&first), TIMEOUT).await;
    let plan = rank_nodes(&w, "job").await;
    let stranded_leaf = w.leaf(&plan[0]).to_owned();
    lose(&w, &plan[3]).await;
    create_pods(&w.admin, &w.ns, members("job", 4, 2..4)).await;
    let note = released_event(&w, "job-0").await;
    assert!(note.contains("released whole"), "{note}");
    assert!(note.contains("rejoin its dp group"), "{note}");
    released_event(&w, "job-3").await;
    evicted_and_recreated(&w, "job", 4, &[0, 1]).await;
    let all: Vec<String> = (0..4).map(|i| format!("job-{i}")).collect();
    let bound = wait_bound(&w.admin, &w.ns, &all, TIMEOUT).await;
    let leaves = leaves_of(&w, &bound);
    assert_eq!(leaves.len(), 1, "{bound:?}");
    assert_ne!(
        leaves.first().copied(),
        Some(stranded_leaf.as_str()),
        "{bound:?} {half:?}"
    );
    let ext = &rig().replicas[0];
    assert!(ext.metric("spinel_scheduler_released_gangs").unwrap_or(0.0) >= 1.0);
}

// Issue 19: a node of the gang's leaf group is cordoned while the gang binds, and the group has
// no spare node. Before, two pods stayed bound there and the other two waited for ever.
#[tokio::test]
async fn a_node_cordoned_mid_gang_releases_and_replans_it() {
    let _serial = SERIAL.lock().await;
    lose_a_node_mid_gang("t-cordon", async |w, node| {
        Api::<Node>::all(w.admin.clone())
            .patch(
                node,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"unschedulable": true}})),
            )
            .await
            .unwrap();
    })
    .await;
}

// The same with the node deleted.
#[tokio::test]
async fn a_node_deleted_mid_gang_releases_and_replans_it() {
    let _serial = SERIAL.lock().await;
    lose_a_node_mid_gang("t-delete", async |w, node| {
        Api::<Node>::all(w.admin.clone())
            .delete(node, &DeleteParams::default())
            .await
            .unwrap();
    })
    .await;
}

// A whole gang is bound (the extender forgets it), then one of its pods is deleted and comes
// back. It rejoins its DP group on the node it left, though no leaf group has room for the whole
// gang (before, it was planned as a new 4-pod gang and waited for ever).
#[tokio::test]
async fn a_bound_pod_deleted_and_replaced_rejoins_its_group() {
    let _serial = SERIAL.lock().await;
    let w = fresh("t-replace", 2, 4).await;
    let pods = members("job", 4, 0..4);
    let all = names(&pods);
    create_pods(&w.admin, &w.ns, pods).await;
    let bound = wait_bound(&w.admin, &w.ns, &all, TIMEOUT).await;
    let leaf = w.leaf(&bound["job-0"]).to_owned();
    // The other group is taken by pods outside the gang.
    for (i, n) in w
        .by_leaf()
        .iter()
        .filter(|(l, _)| **l != leaf)
        .flat_map(|(_, n)| n)
        .enumerate()
    {
        occupy(&w, &format!("other-{i}"), n).await;
    }
    let ext = &rig().replicas[0];
    eventually("the extender forgets the bound gang", TIMEOUT, || async {
        match ext.metric("spinel_scheduler_gangs") {
            Some(0.0) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    w.pods().delete("job-2", &now).await.unwrap();
    eventually("job-2 is gone", TIMEOUT, || async {
        match w.pods().get_opt("job-2").await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(_) => Err("still there".to_owned()),
        }
    })
    .await;
    create_pods(&w.admin, &w.ns, members("job", 4, [2])).await;
    let again = wait_bound(&w.admin, &w.ns, &["job-2".to_owned()], TIMEOUT).await;
    assert_eq!(
        again["job-2"], bound["job-2"],
        "rank 2 rejoins its group on its node"
    );
    let annotations = w
        .pods()
        .get("job-2")
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap();
    assert_eq!(annotations.get(keys::RANK).map(String::as_str), Some("2"));
}
