//! Kubernetes objects for the scheduler tests: GPU Nodes labelled as the fabric controller
//! labels them (the labels come from `topo-discovery`'s own inference over a synthetic
//! rail-optimised fabric), gang and plain Pods, the shipped manifests applied, and cleanup
//! between tests that share a control plane.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::discovery::{Scope, pinned_kind};
use serde_json::{Value, json};
use spinel_api::labels::LabelOptions;
use topo_discovery::fabric::synthetic::SyntheticSpec;
use topo_discovery::fabric::{FabricBuilder, InferOptions, labels};

/// Label on every Node and Pod a scheduler test creates, so cleanup finds them.
pub const TEST_LABEL: &str = "spinel-test";

/// The labels the fabric controller computes for each host of a synthetic rail-optimised
/// fabric: `(node name, labels)`, in host order. Tier 1 is the leaf group, tier 2 the pod of
/// leaf groups under its spines.
pub fn fabric_labels(spec: SyntheticSpec) -> Vec<(String, BTreeMap<String, String>)> {
    let mut builder = FabricBuilder::new();
    for table in spec.tables() {
        builder.add_table(&table);
    }
    let fabric = builder.infer(&InferOptions::default());
    labels::node_labels(&fabric, &LabelOptions::default())
        .into_iter()
        .map(|n| (n.node, n.labels))
        .collect()
}

/// A two-tier rail-optimised fabric: `groups` leaf groups of `hosts_per_group` hosts,
/// `groups_per_pod` groups under each pod's spines, 2 rails.
pub fn small_fabric(groups: usize, hosts_per_group: usize, groups_per_pod: usize) -> SyntheticSpec {
    SyntheticSpec {
        hosts: groups * hosts_per_group,
        rails: 2,
        hosts_per_group,
        groups_per_pod,
        spines_per_pod: 2,
        super_spines: 0,
    }
}

/// A Node as a kubelet with `gpus` GPUs registers it (Ready), carrying `labels`.
pub fn gpu_node(name: &str, labels: &BTreeMap<String, String>, gpus: u32) -> Node {
    let mut all = labels.clone();
    all.insert("kubernetes.io/hostname".to_owned(), name.to_owned());
    all.insert(TEST_LABEL.to_owned(), "true".to_owned());
    let resources = json!({"cpu": "64", "memory": "512Gi", "pods": "110",
                           "nvidia.com/gpu": gpus.to_string()});
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": all},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status"}],
        },
    }))
    .expect("a Node")
}

/// Creates `node` and lifts the not-ready taint admission put on it, as the node lifecycle
/// controller (not run here) would once the kubelet reports Ready; other taints stay.
pub async fn create_ready_node(client: &kube::Client, node: &Node) {
    let nodes = Api::<Node>::all(client.clone());
    let name = node.metadata.name.clone().unwrap_or_default();
    let created = nodes
        .create(&PostParams::default(), node)
        .await
        .unwrap_or_else(|e| panic!("create node {name}: {e}"));
    let taints: Vec<Value> = created
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != "node.kubernetes.io/not-ready")
        .map(|t| serde_json::to_value(t).expect("a taint"))
        .collect();
    nodes
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": taints}})),
        )
        .await
        .unwrap_or_else(|e| panic!("lift the not-ready taint of node {name}: {e}"));
}

/// Creates every node, `parallel` requests at a time.
pub async fn create_ready_nodes(client: &kube::Client, nodes: Vec<Node>, parallel: usize) {
    let mut set = tokio::task::JoinSet::new();
    for node in nodes {
        if set.len() >= parallel {
            set.join_next()
                .await
                .expect("a task")
                .expect("node creation");
        }
        let client = client.clone();
        set.spawn(async move { create_ready_node(&client, &node).await });
    }
    while let Some(done) = set.join_next().await {
        done.expect("node creation");
    }
}

/// Sets the taint the fabric agent puts on a node whose fabric is unhealthy
/// (`fabric.spinel.dev/degraded:NoSchedule`), or removes it.
pub async fn set_degraded(client: &kube::Client, node: &str, degraded: bool) {
    let nodes = Api::<Node>::all(client.clone());
    let current = nodes.get(node).await.expect("get node");
    let key = spinel_api::scheduling::DEGRADED_TAINT_KEY;
    let mut taints: Vec<Value> = current
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != key)
        .map(|t| serde_json::to_value(t).expect("a taint"))
        .collect();
    if degraded {
        taints.push(json!({"key": key, "effect": spinel_api::scheduling::DEGRADED_TAINT_EFFECT}));
    }
    nodes
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": taints}})),
        )
        .await
        .unwrap_or_else(|e| panic!("taint node {node}: {e}"));
}

/// A training pod asking for `gpus` GPUs, with gang labels and annotations when `gang` is set:
/// `(name, size)` and the extra annotations (degrees, tiers, an index).
pub fn gpu_pod(
    name: &str,
    gpus: u32,
    gang: Option<(&str, u32)>,
    annotations: &[(&str, &str)],
) -> Pod {
    let mut labels = json!({TEST_LABEL: "true"});
    let mut notes = serde_json::Map::new();
    if let Some((gang, size)) = gang {
        labels[spinel_api::scheduling::GANG] = json!(gang);
        notes.insert(
            spinel_api::scheduling::GANG_SIZE.to_owned(),
            json!(size.to_string()),
        );
    }
    for (k, v) in annotations {
        notes.insert((*k).to_owned(), json!(v));
    }
    let mut resources = json!({"cpu": "1", "memory": "1Gi"});
    if gpus > 0 {
        resources["nvidia.com/gpu"] = json!(gpus.to_string());
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "annotations": notes},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "trainer", "image": "registry.example/train:1",
                            "resources": {"requests": resources.clone(), "limits": resources}}],
        },
    }))
    .expect("a Pod")
}

/// Creates a namespace and its `default` ServiceAccount (kube-controller-manager, not run
/// here, would); both may exist already.
pub async fn namespace(client: &kube::Client, name: &str) {
    let pp = PostParams::default();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("ns");
    ignore_exists(
        Api::<Namespace>::all(client.clone()).create(&pp, &ns).await,
        name,
    );
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).expect("sa");
    ignore_exists(
        Api::<ServiceAccount>::namespaced(client.clone(), name)
            .create(&pp, &sa)
            .await,
        name,
    );
}

fn ignore_exists<T>(result: kube::Result<T>, what: &str) {
    match result {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create {what}: {e}"),
    }
}

/// Creates `pods` in `namespace`, all at once.
pub async fn create_pods(client: &kube::Client, namespace: &str, pods: Vec<Pod>) {
    let mut set = tokio::task::JoinSet::new();
    for pod in pods {
        let api = Api::<Pod>::namespaced(client.clone(), namespace);
        set.spawn(async move {
            api.create(&PostParams::default(), &pod)
                .await
                .unwrap_or_else(|e| panic!("create pod {:?}: {e}", pod.metadata.name))
        });
    }
    while let Some(done) = set.join_next().await {
        done.expect("pod creation");
    }
}

/// Deletes every Pod and Node carrying [`TEST_LABEL`], pods at once (grace period 0: no
/// kubelet will confirm a graceful stop).
pub async fn delete_test_objects(client: &kube::Client) {
    let lp = ListParams::default().labels(&format!("{TEST_LABEL}=true"));
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    let pods = Api::<Pod>::all(client.clone())
        .list(&lp)
        .await
        .expect("list test pods");
    for pod in pods {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        match Api::<Pod>::namespaced(client.clone(), &ns)
            .delete(&name, &now)
            .await
        {
            Ok(_) | Err(kube::Error::Api(_)) => {}
            Err(e) => panic!("delete pod {ns}/{name}: {e}"),
        }
    }
    Api::<Node>::all(client.clone())
        .delete_collection(&DeleteParams::default(), &lp)
        .await
        .expect("delete test nodes");
}

/// Polls `check` until it returns `Ok`, for state that reaches the API server and the
/// schedulers asynchronously; `Err` says what was seen instead, for the failure message.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                Instant::now() < deadline,
                "{what}: not within {timeout:?}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until every pod in `names` is bound; their nodes, by pod name.
pub async fn wait_bound(
    client: &kube::Client,
    namespace: &str,
    names: &[String],
    timeout: Duration,
) -> BTreeMap<String, String> {
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    eventually(
        &format!("{} pods in {namespace} bound", names.len()),
        timeout,
        || {
            let pods = pods.clone();
            async move {
                let mut bound = BTreeMap::new();
                let mut waiting = Vec::new();
                for name in names {
                    let pod = pods.get(name).await.map_err(|e| e.to_string())?;
                    match pod.spec.as_ref().and_then(|s| s.node_name.clone()) {
                        Some(node) => {
                            bound.insert(name.clone(), node);
                        }
                        None => waiting.push(format!("{name}: {:?}", scheduled_condition(&pod))),
                    }
                }
                if waiting.is_empty() {
                    Ok(bound)
                } else {
                    Err(waiting.join("; "))
                }
            }
        },
    )
    .await
}

/// The message of a pod's `PodScheduled` condition, if it has one.
pub fn scheduled_condition(pod: &Pod) -> Option<(String, String)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")
        .map(|c| (c.status.clone(), c.message.clone().unwrap_or_default()))
}

/// Server-side applies every document of a manifest file (any kind the server serves), as
/// `kubectl apply --server-side` would.
pub async fn apply_manifest(client: &kube::Client, path: &Path) {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    for doc in text.split("\n---\n") {
        if !doc
            .lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        {
            continue;
        }
        let value: Value = serde_saphyr::from_str(doc)
            .unwrap_or_else(|e| panic!("{}: a document does not parse: {e}", path.display()));
        let (group, version) = match value["apiVersion"].as_str().unwrap_or_default() {
            av if av.contains('/') => av.split_once('/').expect("group/version"),
            av => ("", av),
        };
        let gvk = GroupVersionKind::gvk(group, version, value["kind"].as_str().unwrap_or_default());
        let (resource, caps) = pinned_kind(client, &gvk)
            .await
            .unwrap_or_else(|e| panic!("{}: {gvk:?} is not served: {e}", path.display()));
        let name = value["metadata"]["name"].as_str().expect("metadata.name");
        let api = match (caps.scope, value["metadata"]["namespace"].as_str()) {
            (Scope::Namespaced, Some(ns)) => {
                Api::<DynamicObject>::namespaced_with(client.clone(), ns, &resource)
            }
            _ => Api::<DynamicObject>::all_with(client.clone(), &resource),
        };
        api.patch(
            name,
            &PatchParams::apply("spinel-tests").force(),
            &Patch::Apply(&value),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: apply {} {name}: {e}", path.display(), gvk.kind));
    }
}
