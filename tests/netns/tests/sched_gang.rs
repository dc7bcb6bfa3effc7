//! `spinel-scheduler` against the real kube-scheduler: one control plane with kube-scheduler
//! configured by the shipped `deploy/scheduler/kube-scheduler-config.yaml`, the shipped RBAC and
//! admission policy applied, and the real binary running with a pod-bound token of the shipped
//! ServiceAccount. Nodes carry the labels the fabric controller computes (from
//! `topo-discovery`'s inference over a synthetic rail-optimised fabric); Pods are real and the
//! assertions read what kube-scheduler did (`spec.nodeName`) and what the extender published.
//!
//! The tests share the control plane and run one at a time (each starts from an empty set of
//! Nodes); `SPINEL_RECORD_FIXTURES=1` also keeps each test's extender traffic as fixtures in
//! `scheduler/tests/fixtures/recorded/`.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::scheduling::v1alpha2::PodGroup;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use spinel_api::scheduling as keys;
use spinel_netns_tests::k8s::client_with_token;
use spinel_netns_tests::sched::fixtures::record_fixtures;
use spinel_netns_tests::sched::objects::{
    create_pods, create_ready_nodes, delete_test_objects, eventually, fabric_labels, gpu_node,
    gpu_pod, namespace, scheduled_condition, set_degraded, small_fabric, wait_bound,
};
use spinel_netns_tests::sched::{Exchange, RigOptions, SchedulerRig};

const TIER1: &str = "fabric.spinel.dev/tier-1";
const TIER2: &str = "fabric.spinel.dev/tier-2";
const BIND_TIMEOUT: Duration = Duration::from_secs(60);

fn rig() -> &'static SchedulerRig {
    static RIG: OnceLock<SchedulerRig> = OnceLock::new();
    RIG.get_or_init(|| {
        SchedulerRig::start(
            RigOptions::new("sched-gang")
                .extender_args(&["--reservation-timeout=60"])
                // Upstream gangs: PodGroup (scheduling.k8s.io/v1alpha2) is off by default in
                // 1.36. The gates are process-wide, so kube-scheduler runs with them too; not
                // TopologyAwareWorkloadScheduling, whose placement plugins would choose the
                // group's domain a second time (docs/scheduling.md).
                .apiserver_arg("--feature-gates=GenericWorkload=true")
                .apiserver_arg("--runtime-config=scheduling.k8s.io/v1alpha2=true"),
        )
    })
}

/// One test at a time on the shared cluster.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The test's world: an admin client, the nodes by name with their labels, and where the
/// extender's traffic for this test starts.
struct World {
    admin: kube::Client,
    nodes: BTreeMap<String, BTreeMap<String, String>>,
    mark: usize,
    /// Node changes made during the test, by exchange index (kept with the fixtures).
    timeline: Vec<Value>,
}

impl World {
    fn leaf(&self, node: &str) -> &str {
        &self.nodes[node][TIER1]
    }

    fn spine(&self, node: &str) -> &str {
        &self.nodes[node][TIER2]
    }

    /// Sets or lifts the fabric's degraded taint on `node` and waits until the extender has
    /// seen it; notes from which exchange on its answers reflect it (for the replay).
    async fn degrade(&mut self, node: &str, degraded: bool) {
        set_degraded(&self.admin, node, degraded).await;
        let ext = &rig().replicas[0];
        let want = if degraded { 1.0 } else { 0.0 };
        eventually(
            "the extender sees the taint change",
            BIND_TIMEOUT,
            || async {
                match ext.metric("spinel_scheduler_unusable_nodes") {
                    Some(n) if n == want => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
        let at = rig().service.count() - self.mark;
        self.timeline
            .push(json!({"at": at, "node": node, "degraded": degraded}));
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

    /// The extender traffic of this test; kept as fixtures under `name` when asked to.
    async fn traffic(&self, name: &str) -> Vec<Exchange> {
        let exchanges = rig().service.since(self.mark);
        record_fixtures(&self.admin, name, &exchanges, &self.timeline).await;
        exchanges
    }
}

/// Empties the cluster of test objects, creates the nodes of `groups` leaf groups of
/// `hosts` hosts (`groups_per_spine` under each tier-2 domain, 8 GPUs each) and waits until
/// the extender sees exactly them.
async fn fresh(ns: &str, groups: usize, hosts: usize, groups_per_spine: usize) -> World {
    let admin = rig().cp.admin_client().await;
    delete_test_objects(&admin).await;
    let ext = &rig().replicas[0];
    eventually(
        "the extender forgets the last test",
        BIND_TIMEOUT,
        || async {
            let seen = (
                ext.metric("spinel_scheduler_nodes"),
                ext.metric("spinel_scheduler_gangs"),
            );
            if seen == (Some(0.0), Some(0.0)) {
                Ok(())
            } else {
                Err(format!("(nodes, gangs) = {seen:?}"))
            }
        },
    )
    .await;
    let labelled = fabric_labels(small_fabric(groups, hosts, groups_per_spine));
    let nodes: Vec<Node> = labelled.iter().map(|(n, l)| gpu_node(n, l, 8)).collect();
    create_ready_nodes(&admin, nodes, 8).await;
    let want = labelled.len() as f64;
    eventually("the extender sees the nodes", BIND_TIMEOUT, || async {
        match ext.metric("spinel_scheduler_nodes") {
            Some(n) if n == want => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    namespace(&admin, ns).await;
    World {
        admin,
        nodes: labelled.into_iter().collect(),
        mark: rig().service.count(),
        timeline: Vec::new(),
    }
}

fn indexed(i: u32, extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> =
        extra.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    out.push((keys::JOB_COMPLETION_INDEX, i.to_string()));
    out
}

/// `size` pods of gang `gang`, 8 GPUs each, with `extra` annotations and the Indexed Job index.
fn gang(gang: &str, size: u32, extra: &[(&'static str, &'static str)]) -> Vec<Pod> {
    (0..size)
        .map(|i| {
            let notes = indexed(i, extra);
            let refs: Vec<(&str, &str)> = notes.iter().map(|(k, v)| (*k, v.as_str())).collect();
            gpu_pod(&format!("{gang}-{i}"), 8, Some((gang, size)), &refs)
        })
        .collect()
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

async fn annotations(admin: &kube::Client, ns: &str, pod: &str) -> BTreeMap<String, String> {
    Api::<Pod>::namespaced(admin.clone(), ns)
        .get(pod)
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap_or_default()
}

/// The rank annotations, once the extender's patches have landed: rank per pod, and the
/// rank-to-node list on rank 0.
async fn published_ranks(
    admin: &kube::Client,
    ns: &str,
    pods: &[String],
) -> (BTreeMap<String, u32>, Vec<String>) {
    eventually("the rank annotations", BIND_TIMEOUT, || async {
        let mut ranks = BTreeMap::new();
        let mut list = None;
        for p in pods {
            let a = annotations(admin, ns, p).await;
            let rank: u32 = a
                .get(keys::RANK)
                .ok_or(format!("{p} has no rank yet"))?
                .parse()
                .map_err(|e| format!("{p}: {e}"))?;
            if rank == 0 {
                list = a.get(keys::RANK_NODES).cloned();
            }
            ranks.insert(p.clone(), rank);
        }
        let list = list.ok_or("no rank list on rank 0")?;
        Ok((ranks, list.split(',').map(str::to_owned).collect()))
    })
    .await
}

fn filter_replies(traffic: &[Exchange], pod: &str) -> Vec<Value> {
    traffic
        .iter()
        .filter(|e| e.path == "/filter" && e.pod_name() == pod)
        .map(Exchange::reply_json)
        .collect()
}

// A 64-GPU job (8 pods, TP 8 in each pod, DP 4, PP 2) lands with each DP group (one pipeline
// stage of 4 pods) under one leaf group and the pipeline under one spine domain; the
// published ranks and rank list agree with where kube-scheduler bound the pods.
#[tokio::test]
async fn every_dp_group_lands_under_one_leaf() {
    let _serial = SERIAL.lock().await;
    let w = fresh("t-dp", 4, 4, 2).await;
    let leaves = w.by_leaf();
    // One GPU already used on a node of the first leaf group: that group cannot hold a whole
    // stage of 8-GPU pods, so neither can its spine domain hold the pipeline.
    let first_leaf = leaves.values().next().unwrap();
    let busy = first_leaf[0].clone();
    let mut blocker = gpu_pod("blocker", 1, None, &[]);
    blocker.spec.as_mut().unwrap().node_name = Some(busy.clone());
    create_pods(&w.admin, "t-dp", vec![blocker]).await;

    let pods = gang(
        "llama",
        8,
        &[(keys::TP, "8"), (keys::DP, "4"), (keys::PP, "2")],
    );
    let names = names(&pods);
    create_pods(&w.admin, "t-dp", pods).await;
    let bound = wait_bound(&w.admin, "t-dp", &names, BIND_TIMEOUT).await;
    let (ranks, list) = published_ranks(&w.admin, "t-dp", &names).await;

    let node_of_rank: Vec<&String> = (0..8).map(|r| &bound[&format!("llama-{r}")]).collect();
    assert_eq!(
        list.iter().collect::<Vec<_>>(),
        node_of_rank,
        "the rank list names where each rank was bound"
    );
    for (pod, rank) in &ranks {
        assert_eq!(
            pod,
            &format!("llama-{rank}"),
            "the Indexed Job index is the rank"
        );
    }
    for stage in node_of_rank.chunks(4) {
        let leaves: BTreeSet<&str> = stage.iter().map(|n| w.leaf(n)).collect();
        assert_eq!(leaves.len(), 1, "a DP group spans {leaves:?}");
    }
    let spines: BTreeSet<&str> = node_of_rank.iter().map(|n| w.spine(n)).collect();
    assert_eq!(spines.len(), 1, "the pipeline spans {spines:?}");
    assert_ne!(
        spines.first().copied(),
        Some(w.spine(&busy)),
        "the pipeline took the spine domain whose leaf group has a busy node"
    );
    assert_eq!(node_of_rank.iter().collect::<BTreeSet<_>>().len(), 8);
    let placement: Value =
        serde_json::from_str(&annotations(&w.admin, "t-dp", "llama-0").await[keys::PLACEMENT])
            .unwrap();
    assert_eq!(placement["spread"]["max"], 1, "{placement}");
    assert_eq!(placement["fallbacks"], json!([]), "{placement}");

    // kube-scheduler asked the extender about every gang pod and was told one node each.
    let traffic = w.traffic("dp-groups").await;
    for name in &names {
        let replies = filter_replies(&traffic, name);
        assert!(!replies.is_empty(), "{name} never reached the extender");
        let last = replies.last().unwrap();
        assert_eq!(last["NodeNames"], json!([bound[name]]), "{name}: {last}");
    }
}

async fn gang_events(admin: &kube::Client, ns: &str, pod: &str) -> Vec<Event> {
    Api::<Event>::namespaced(admin.clone(), ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(pod)
                && e.reporting_controller.as_deref() == Some("spinel-scheduler")
        })
        .collect()
}

// A node with the fabric's degraded taint is never planned; a gang that then fits nowhere is
// told why (Event through events.k8s.io, the PodScheduled condition), and placed as soon as
// the node recovers.
#[tokio::test]
async fn a_degraded_node_is_never_chosen_and_a_gang_that_cannot_fit_is_told_why() {
    let _serial = SERIAL.lock().await;
    let mut w = fresh("t-deg", 2, 4, 2).await;
    let leaves = w.by_leaf();
    let sick = leaves.values().next().unwrap()[1].clone();
    w.degrade(&sick, true).await;
    let ext = &rig().replicas[0];
    // Each gang is one DP group of 4 pods that must share a leaf group.
    let shape = [(keys::TP, "8"), (keys::DP, "4")];
    let a = gang("a", 4, &shape);
    let a_names = names(&a);
    create_pods(&w.admin, "t-deg", a).await;
    let bound = wait_bound(&w.admin, "t-deg", &a_names, BIND_TIMEOUT).await;
    let (_, list) = published_ranks(&w.admin, "t-deg", &a_names).await;
    assert!(
        !list.contains(&sick),
        "the degraded node was planned: {list:?}"
    );
    let a_leaves: BTreeSet<&str> = bound.values().map(|n| w.leaf(n)).collect();
    assert_eq!(a_leaves.len(), 1);
    assert_ne!(a_leaves.first().copied(), Some(w.leaf(&sick)));

    // The other leaf group has 3 healthy nodes of the 4 the next gang needs.
    let b = gang("b", 4, &shape);
    let b_names = names(&b);
    create_pods(&w.admin, "t-deg", b).await;
    let pods = Api::<Pod>::namespaced(w.admin.clone(), "t-deg");
    let condition = eventually("b-0 is unschedulable with the reason", BIND_TIMEOUT, || {
        let pods = pods.clone();
        async move {
            let pod = pods.get("b-0").await.map_err(|e| e.to_string())?;
            match scheduled_condition(&pod) {
                Some((status, message)) if status == "False" && message.contains("3 of 4") => {
                    Ok(message)
                }
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    assert!(
        condition.contains("each dp group needs 4 nodes within one leaf"),
        "{condition}"
    );
    let events = eventually("the extender's Event on b-0", BIND_TIMEOUT, || async {
        let events = gang_events(&w.admin, "t-deg", "b-0").await;
        if events
            .iter()
            .any(|e| e.reason.as_deref() == Some("GangPending"))
        {
            Ok(events)
        } else {
            Err(format!("{events:?}"))
        }
    })
    .await;
    let event = events
        .iter()
        .find(|e| e.reason.as_deref() == Some("GangPending"))
        .unwrap();
    let note = event.note.clone().unwrap_or_default();
    assert!(note.contains("has 3 of 4 nodes free"), "{note}");
    assert_eq!(
        event.reporting_instance.as_deref(),
        Some("spinel-scheduler-0")
    );
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.action.as_deref(), Some("Scheduling"));

    // The fabric recovers: the gang is placed in the leaf group that now has room.
    w.degrade(&sick, false).await;
    let b_bound = wait_bound(&w.admin, "t-deg", &b_names, BIND_TIMEOUT).await;
    let b_leaves: BTreeSet<&str> = b_bound.values().map(|n| w.leaf(n)).collect();
    assert_eq!(b_leaves, BTreeSet::from([w.leaf(&sick)]));

    // Before it recovered, the extender never offered the degraded node to anyone.
    let traffic = w.traffic("degraded").await;
    assert!(
        traffic
            .iter()
            .filter(|e| e.path == "/filter")
            .all(|e| !e.reply_json()["NodeNames"]
                .as_array()
                .is_some_and(|n| n.iter().any(|n| n == &json!(sick)))
                || b_names.contains(&e.pod_name())),
        "the degraded node was offered while degraded"
    );
    assert_eq!(
        ext.metric(r#"spinel_scheduler_decisions_total{decision="planned_node_dropped"}"#)
            .unwrap_or(0.0),
        0.0,
        "kube-scheduler never had to drop a planned node"
    );
}

// Three gangs submitted at once, each needing a whole leaf group, on a cluster of exactly three
// leaf groups: each gets its own, none waits, no node is promised twice.
#[tokio::test]
async fn gangs_submitted_at_once_never_share_a_node() {
    let _serial = SERIAL.lock().await;
    let w = fresh("t-two", 3, 4, 3).await;
    let shape = [(keys::TP, "8"), (keys::DP, "4")];
    let gangs: Vec<Vec<Pod>> = ["x", "y", "z"].iter().map(|g| gang(g, 4, &shape)).collect();
    // Interleaved: x-0, y-0, z-0, x-1, ...
    let mut all = Vec::new();
    for i in 0..4 {
        for g in &gangs {
            all.push(g[i].clone());
        }
    }
    let all_names = names(&all);
    create_pods(&w.admin, "t-two", all).await;
    let bound = wait_bound(&w.admin, "t-two", &all_names, BIND_TIMEOUT).await;
    let distinct: BTreeSet<&String> = bound.values().collect();
    assert_eq!(distinct.len(), 12, "a node holds two pods: {bound:?}");
    let mut leaves_taken = BTreeSet::new();
    for g in ["x", "y", "z"] {
        let leaves: BTreeSet<&str> = (0..4)
            .map(|i| w.leaf(&bound[&format!("{g}-{i}")]))
            .collect();
        assert_eq!(leaves.len(), 1, "gang {g} spans {leaves:?}");
        assert!(leaves_taken.insert(leaves.into_iter().next().unwrap()));
    }
    w.traffic("three-gangs").await;
}

// Pods outside gangs pass through the extender (those without GPUs never reach it), but a
// GPU pod is kept off nodes a planned gang holds until the gang's remaining pods arrive.
#[tokio::test]
async fn pods_outside_gangs_pass_through_and_keep_off_reserved_nodes() {
    let _serial = SERIAL.lock().await;
    let w = fresh("t-plain", 1, 6, 1).await;
    let web = gpu_pod("web", 0, None, &[]);
    let notebook = gpu_pod("notebook", 2, None, &[]);
    create_pods(&w.admin, "t-plain", vec![web, notebook]).await;
    let plain = ["web".to_owned(), "notebook".to_owned()];
    let bound = wait_bound(&w.admin, "t-plain", &plain, BIND_TIMEOUT).await;

    // Half a gang: the extender plans and holds all four nodes, two pods bind.
    let mut half = gang("half", 4, &[(keys::TP, "8"), (keys::DP, "4")]);
    let rest = half.split_off(2);
    let half_names = names(&half);
    create_pods(&w.admin, "t-plain", half).await;
    wait_bound(&w.admin, "t-plain", &half_names, BIND_TIMEOUT).await;
    let (_, list) = published_ranks(&w.admin, "t-plain", &half_names[..1]).await;
    assert!(!list.contains(&bound["notebook"]), "{list:?}");

    // Two whole-node pods outside the gang: one free node is left for them.
    let big = vec![
        gpu_pod("big-0", 8, None, &[]),
        gpu_pod("big-1", 8, None, &[]),
    ];
    create_pods(&w.admin, "t-plain", big).await;
    let pods = Api::<Pod>::namespaced(w.admin.clone(), "t-plain");
    let (placed, waiting) = eventually("one big pod bound, one told why not", BIND_TIMEOUT, || {
        let pods = pods.clone();
        async move {
            let mut placed = None;
            let mut waiting = None;
            for name in ["big-0", "big-1"] {
                let pod = pods.get(name).await.map_err(|e| e.to_string())?;
                match (
                    pod.spec.as_ref().and_then(|s| s.node_name.clone()),
                    scheduled_condition(&pod),
                ) {
                    (Some(node), _) => placed = Some(node),
                    (None, Some((s, m)))
                        if s == "False" && m.contains("reserved for a planned gang") =>
                    {
                        waiting = Some(m)
                    }
                    _ => {}
                }
            }
            match (placed, waiting) {
                (Some(p), Some(w)) => Ok((p, w)),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    assert!(
        !list.contains(&placed),
        "{placed} is held for the gang: {list:?}"
    );
    assert_ne!(placed, bound["notebook"]);
    assert!(waiting.contains("reserved for a planned gang"), "{waiting}");

    // The gang's other pods get the nodes held for them.
    let rest_names = names(&rest);
    create_pods(&w.admin, "t-plain", rest).await;
    let rest_bound = wait_bound(&w.admin, "t-plain", &rest_names, BIND_TIMEOUT).await;
    assert_eq!(rest_bound["half-2"], list[2]);
    assert_eq!(rest_bound["half-3"], list[3]);

    let traffic = w.traffic("pass-through").await;
    assert!(
        traffic.iter().all(|e| e.pod_name() != "web"),
        "a pod without GPUs reached the extender (managedResources)"
    );
    let notebook_filter = filter_replies(&traffic, "notebook");
    assert_eq!(notebook_filter.len(), 1);
    assert_eq!(
        notebook_filter[0]["NodeNames"].as_array().unwrap().len(),
        6,
        "every candidate passes for a pod outside gangs: {}",
        notebook_filter[0]
    );
}

// The scheduler's own token is held to what it publishes: annotations under sched.spinel.dev/
// (the admission policy), Events through events.k8s.io only, no Node writes (RBAC).
#[tokio::test]
async fn the_scheduler_token_writes_only_what_it_publishes() {
    let _serial = SERIAL.lock().await;
    let admin = rig().cp.admin_client().await;
    namespace(&admin, "t-adm").await;
    create_pods(&admin, "t-adm", vec![gpu_pod("victim", 0, None, &[])]).await;
    let token = rig().token(0);
    let sched = client_with_token(rig().cp.server(), rig().cp.ca_file(), token);
    let pods = Api::<Pod>::namespaced(sched.clone(), "t-adm");
    let pp = PatchParams::default();
    let annotate = |key: &str| Patch::Merge(json!({"metadata": {"annotations": {key: "1"}}}));
    let denied = eventually(
        "the policy denies a foreign annotation",
        BIND_TIMEOUT,
        || {
            let pods = pods.clone();
            let patch = annotate("example.com/owner");
            async move {
                match pods.patch("victim", &PatchParams::default(), &patch).await {
                    Err(kube::Error::Api(s)) if s.code == 403 => Ok(s),
                    other => Err(format!("{other:?}")),
                }
            }
        },
    )
    .await;
    assert!(
        denied
            .message
            .contains("spinel-scheduler may only change annotations under sched.spinel.dev/"),
        "{}",
        denied.message
    );
    pods.patch("victim", &pp, &annotate(keys::RANK))
        .await
        .expect("its own annotation is allowed");
    let label = Patch::Merge(json!({"metadata": {"labels": {"team": "x"}}}));
    match pods.patch("victim", &pp, &label).await {
        Err(kube::Error::Api(s)) if s.code == 403 => {
            assert!(
                s.message.contains("may not change a pod's labels"),
                "{}",
                s.message
            )
        }
        other => panic!("a label change by the scheduler: {other:?}"),
    }
    // RBAC: no Node writes, no core/v1 Events; events.k8s.io is the way.
    let nodes = Api::<Node>::all(sched.clone());
    match nodes.patch("any", &pp, &label).await {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => panic!("a node patch by the scheduler: {other:?}"),
    }
    let regarding =
        json!({"apiVersion": "v1", "kind": "Pod", "namespace": "t-adm", "name": "victim"});
    let core: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"generateName": "victim."}, "involvedObject": regarding,
        "reason": "Test", "message": "m", "type": "Normal"}))
    .unwrap();
    match Api::<k8s_openapi::api::core::v1::Event>::namespaced(sched.clone(), "t-adm")
        .create(&PostParams::default(), &core)
        .await
    {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => panic!("a core/v1 Event by the scheduler: {other:?}"),
    }
    let modern: Event = serde_json::from_value(json!({
        "metadata": {"name": "victim.by-the-scheduler"}, "regarding": regarding,
        "reason": "Test", "note": "m", "type": "Normal", "action": "Scheduling",
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "spinel-scheduler", "reportingInstance": "spinel-scheduler-0"}))
    .unwrap();
    Api::<Event>::namespaced(sched, "t-adm")
        .create(&PostParams::default(), &modern)
        .await
        .expect("an events.k8s.io Event by the scheduler");
}

// A gang named by an upstream PodGroup: its size is the PodGroup's gang minCount (the pods say
// only how their groups nest), and kube-scheduler, which schedules such pods in pod-group
// cycles with GenericWorkload on, still gets each DP group under one leaf from the extender.
#[tokio::test]
async fn a_gang_of_an_upstream_pod_group_takes_its_size_from_it() {
    let _serial = SERIAL.lock().await;
    let w = fresh("t-pg", 2, 4, 2).await;
    let leaves = w.by_leaf();
    let busy = leaves.values().next().unwrap()[0].clone();
    let mut blocker = gpu_pod("blocker", 1, None, &[]);
    blocker.spec.as_mut().unwrap().node_name = Some(busy.clone());
    create_pods(&w.admin, "t-pg", vec![blocker]).await;
    let group: PodGroup = serde_json::from_value(json!({
        "metadata": {"name": "pg-train"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}},
    }))
    .unwrap();
    Api::<PodGroup>::namespaced(w.admin.clone(), "t-pg")
        .create(&PostParams::default(), &group)
        .await
        .expect("the API server serves PodGroup v1alpha2 with GenericWorkload on");
    let pods: Vec<Pod> = (0..4)
        .map(|i| {
            let index = i.to_string();
            let mut p = gpu_pod(
                &format!("w-{i}"),
                8,
                None,
                &[
                    (keys::TP, "8"),
                    (keys::DP, "4"),
                    (keys::JOB_COMPLETION_INDEX, &index),
                ],
            );
            p.spec.as_mut().unwrap().scheduling_group =
                Some(serde_json::from_value(json!({"podGroupName": "pg-train"})).unwrap());
            p
        })
        .collect();
    let names = names(&pods);
    create_pods(&w.admin, "t-pg", pods).await;
    let bound = wait_bound(&w.admin, "t-pg", &names, BIND_TIMEOUT).await;
    let used: BTreeSet<&str> = bound.values().map(|n| w.leaf(n)).collect();
    assert_eq!(used.len(), 1, "{bound:?}");
    assert_ne!(used.first().copied(), Some(w.leaf(&busy)));
    let (ranks, list) = published_ranks(&w.admin, "t-pg", &names).await;
    assert_eq!(list.len(), 4, "a gang of minCount 4: {list:?}");
    for (pod, rank) in &ranks {
        assert_eq!(pod, &format!("w-{rank}"));
    }
    w.traffic("podgroup").await;
}
