//! Every policy Spinel ships, tried as an attacker holding each component's token would try
//! it: for each service account, each write it could attempt (on the object and on each
//! subresource), through every verb the API offers (update, merge, JSON and strategic merge
//! patch, server-side apply, and create where it applies), against the real API server with
//! the shipped RBAC and admission policies. Each case says what must happen; allowed cases are
//! tried too, so a policy that refuses everything fails here as surely as one with a hole.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, EvictParams, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use spinel_netns_tests::cluster::{self, NAMESPACE, agent_token, register_node};
use spinel_netns_tests::k8s::{
    ControlPlane, ControlPlaneOptions, client_with_token, merge, service_account_token,
};

/// How a write is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Update,
    Merge,
    Json,
    Strategic,
    Apply,
}

const ALL_VERBS: [Verb; 5] = [
    Verb::Update,
    Verb::Merge,
    Verb::Json,
    Verb::Strategic,
    Verb::Apply,
];

/// Custom resources have no strategic merge patch (the API answers 415).
const CRD_VERBS: [Verb; 4] = [Verb::Update, Verb::Merge, Verb::Json, Verb::Apply];

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn nodes() -> ApiResource {
    resource("", "v1", "Node", "nodes")
}

fn nodefabrics() -> ApiResource {
    resource("fabric.spinel.dev", "v1alpha1", "NodeFabric", "nodefabrics")
}

fn leases() -> ApiResource {
    resource("coordination.k8s.io", "v1", "Lease", "leases")
}

fn pods() -> ApiResource {
    resource("", "v1", "Pod", "pods")
}

/// JSON Patch operations that turn `current` into `current` merged with `patch`.
fn json_ops(current: &Value, patch: &Value, path: &str, ops: &mut Vec<Value>) {
    let Value::Object(p) = patch else { return };
    for (k, v) in p {
        let here = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
        match (current.get(k), v) {
            (Some(Value::Object(_)), Value::Object(_)) => {
                json_ops(&current[k.as_str()], v, &here, ops)
            }
            (Some(_), Value::Null) => ops.push(json!({"op": "remove", "path": here})),
            (None, Value::Null) => {}
            (Some(_), _) => ops.push(json!({"op": "replace", "path": here, "value": v})),
            (None, _) => ops.push(json!({"op": "add", "path": here, "value": v})),
        }
    }
}

/// One attempted write: through `verb`, change object `name` (in `namespace`) of `res`, or its
/// subresource `sub`, by the merge patch `change`, as `client` (whose field manager is
/// `manager`). `Ok` if the API server took it, else its status code.
#[allow(clippy::too_many_arguments)]
async fn attempt(
    client: &kube::Client,
    admin: &kube::Client,
    res: &ApiResource,
    namespace: Option<&str>,
    name: &str,
    sub: Option<&str>,
    verb: Verb,
    change: &Value,
    manager: &str,
) -> Result<(), (u16, String)> {
    let api = |c: &kube::Client| -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(c.clone(), ns, res),
            None => Api::all_with(c.clone(), res),
        }
    };
    let current = match api(admin).get(name).await {
        Ok(o) => serde_json::to_value(o).unwrap(),
        Err(kube::Error::Api(s)) => return Err((s.code, s.message)),
        Err(e) => panic!("get {name}: {e}"),
    };
    let params = PatchParams::apply(manager).force();
    let plain = PatchParams::default();
    let result = match verb {
        Verb::Update => {
            let mut wanted = current.clone();
            merge(&mut wanted, change);
            let obj: DynamicObject = serde_json::from_value(wanted).unwrap();
            match sub {
                Some(s) => api(client)
                    .replace_subresource(s, name, &PostParams::default(), &obj)
                    .await
                    .map(drop),
                None => api(client)
                    .replace(name, &PostParams::default(), &obj)
                    .await
                    .map(drop),
            }
        }
        Verb::Apply => {
            let mut body = json!({"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": name}});
            if let Some(ns) = namespace {
                body["metadata"]["namespace"] = json!(ns);
            }
            merge(&mut body, change);
            let patch = Patch::Apply(body);
            match sub {
                Some(s) => api(client)
                    .patch_subresource(s, name, &params, &patch)
                    .await
                    .map(drop),
                None => api(client).patch(name, &params, &patch).await.map(drop),
            }
        }
        Verb::Merge | Verb::Strategic | Verb::Json => {
            let patch = match verb {
                Verb::Merge => Patch::Merge(change.clone()),
                Verb::Strategic => Patch::Strategic(change.clone()),
                _ => {
                    let mut ops = Vec::new();
                    json_ops(&current, change, "", &mut ops);
                    Patch::Json::<Value>(serde_json::from_value(json!(ops)).unwrap())
                }
            };
            match sub {
                Some(s) => api(client)
                    .patch_subresource(s, name, &plain, &patch)
                    .await
                    .map(drop),
                None => api(client).patch(name, &plain, &patch).await.map(drop),
            }
        }
    };
    match result {
        Ok(()) => Ok(()),
        Err(kube::Error::Api(s)) => Err((s.code, s.message)),
        Err(e) => panic!("{name}: {verb:?}: {e}"),
    }
}

/// What must happen: the verbs through which the write is allowed (every other is refused,
/// by RBAC when the role does not grant the verb, by admission otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    AllowedVia(&'static [Verb]),
    Denied,
}

/// Patches: what the components use to write Nodes, NodeFabrics and pods.
const PATCHES: &[Verb] = &[Verb::Merge, Verb::Json, Verb::Strategic, Verb::Apply];
/// Patches of custom resources.
const CRD_PATCHES: &[Verb] = &[Verb::Merge, Verb::Json, Verb::Apply];
/// Patches that merge a list by key (node conditions, taints) instead of replacing it.
const KEYED: &[Verb] = &[Verb::Strategic, Verb::Apply];
/// A Lease is replaced whole, with its resourceVersion (the election's rule).
const REPLACE: &[Verb] = &[Verb::Update];

use Expect::{AllowedVia, Denied};

/// A write to try through several verbs.
struct Case {
    what: &'static str,
    res: ApiResource,
    namespace: Option<&'static str>,
    name: &'static str,
    sub: Option<&'static str>,
    change: Value,
    verbs: &'static [Verb],
    expect: Expect,
}

/// Runs `cases` as `client`; returns every verdict that differs from the expectation.
async fn run(
    client: &kube::Client,
    admin: &kube::Client,
    manager: &str,
    cases: &[Case],
) -> Vec<String> {
    let mut wrong = Vec::new();
    for c in cases {
        for &verb in c.verbs {
            let got = attempt(
                client,
                admin,
                &c.res,
                c.namespace,
                c.name,
                c.sub,
                verb,
                &c.change,
                manager,
            )
            .await;
            let allowed = matches!(c.expect, AllowedVia(v) if v.contains(&verb));
            let ok = match got {
                Ok(()) => allowed,
                // Refused by RBAC or admission: 403; by the policy as malformed: 422.
                Err((403 | 422, _)) => !allowed,
                Err(_) => false,
            };
            if !ok {
                wrong.push(format!(
                    "{manager}: {} via {verb:?}: expected {:?}, got {got:?}",
                    c.what, c.expect
                ));
            }
        }
    }
    wrong
}

fn shared() -> &'static ControlPlane {
    static CP: std::sync::OnceLock<ControlPlane> = std::sync::OnceLock::new();
    CP.get_or_init(|| {
        ControlPlane::start(
            ControlPlaneOptions::new("k8s-policies")
                .crd_dir(cluster::workspace_root().join("deploy/crds")),
        )
    })
}

/// The shipped manifests, two Ready nodes and a workload pod.
async fn install(admin: &kube::Client) {
    cluster::apply_files(
        admin,
        &[
            "deploy/namespace.yaml",
            "deploy/agent/rbac.yaml",
            "deploy/agent/admission-policy.yaml",
            "deploy/controller/rbac.yaml",
            "deploy/controller/admission-policy.yaml",
            "deploy/scheduler/rbac.yaml",
            "deploy/scheduler/rbac-bind.yaml",
            "deploy/scheduler/admission-policy.yaml",
        ],
    )
    .await;
    for node in ["node-a", "node-b"] {
        register_node(admin, node).await;
    }
    // No controller manager runs here to make it; admission needs it for the workload pod.
    let sa: k8s_openapi::api::core::v1::ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &sa)
        .await
        .unwrap();
}

/// Waits until the admission policies are in force (they are loaded asynchronously).
async fn policies_in_force(agent: &kube::Client, admin: &kube::Client) {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    for round in 0.. {
        // A new value each round: a write let through before the policy was loaded must not
        // make the next one a no-op.
        let probe = json!({"metadata": {"annotations": {"probe": round.to_string()}}});
        match attempt(
            agent,
            admin,
            &nodes(),
            None,
            "node-a",
            None,
            Verb::Merge,
            &probe,
            "spinel-agent",
        )
        .await
        {
            Err((403, _)) => return,
            got => assert!(
                std::time::Instant::now() < deadline,
                "the agent policy is not in force: {got:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn node_case(
    what: &'static str,
    name: &'static str,
    sub: Option<&'static str>,
    change: Value,
    expect: Expect,
) -> Case {
    Case {
        what,
        res: nodes(),
        namespace: None,
        name,
        sub,
        change,
        verbs: &ALL_VERBS,
        expect,
    }
}

fn agent_node_cases() -> Vec<Case> {
    let label = |k: &str, v: &str| json!({"metadata": {"labels": {k: v}}});
    let taint =
        |key: &str, effect: &str| json!({"spec": {"taints": [{"key": key, "effect": effect}]}});
    vec![
        node_case(
            "a label under the prefix",
            "node-a",
            None,
            label("fabric.spinel.dev/tier-1", "leaf9"),
            AllowedVia(PATCHES),
        ),
        node_case(
            "the degraded taint, NoSchedule",
            "node-a",
            None,
            taint("fabric.spinel.dev/degraded", "NoSchedule"),
            AllowedVia(PATCHES),
        ),
        node_case(
            "a control-plane role label",
            "node-a",
            None,
            label("node-role.kubernetes.io/control-plane", ""),
            Denied,
        ),
        node_case(
            "another node's hostname label",
            "node-a",
            None,
            label("kubernetes.io/hostname", "node-b"),
            Denied,
        ),
        node_case(
            "an annotation",
            "node-a",
            None,
            json!({"metadata": {"annotations": {"x": "y"}}}),
            Denied,
        ),
        node_case(
            "a finalizer",
            "node-a",
            None,
            json!({"metadata": {"finalizers": ["example.com/hold"]}}),
            Denied,
        ),
        node_case(
            "an owner reference",
            "node-a",
            None,
            json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "00000000-0000-0000-0000-000000000001"}]}}),
            Denied,
        ),
        node_case(
            "the degraded taint, NoExecute",
            "node-a",
            None,
            taint("fabric.spinel.dev/degraded", "NoExecute"),
            Denied,
        ),
        node_case(
            "another taint",
            "node-a",
            None,
            taint("example.com/x", "NoSchedule"),
            Denied,
        ),
        node_case(
            "a cordon",
            "node-a",
            None,
            json!({"spec": {"unschedulable": true}}),
            Denied,
        ),
        node_case(
            "a label through the status",
            "node-a",
            Some("status"),
            label("node-role.kubernetes.io/control-plane", ""),
            Denied,
        ),
        node_case(
            "a prefix label through the status",
            "node-a",
            Some("status"),
            label("fabric.spinel.dev/tier-1", "x"),
            Denied,
        ),
        node_case(
            "an annotation through the status",
            "node-a",
            Some("status"),
            json!({"metadata": {"annotations": {"x": "y"}}}),
            Denied,
        ),
        node_case(
            "a finalizer through the status",
            "node-a",
            Some("status"),
            json!({"metadata": {"finalizers": ["example.com/hold"]}}),
            Denied,
        ),
        node_case(
            "allocatable GPUs",
            "node-a",
            Some("status"),
            json!({"status": {"allocatable": {"nvidia.com/gpu": "1000"}}}),
            Denied,
        ),
        node_case(
            "addresses",
            "node-a",
            Some("status"),
            json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.9.9.9"}]}}),
            Denied,
        ),
        // Merged by type: only the agent's condition changes. A merge or JSON patch, or an
        // update, replaces the whole list and drops the kubelet's conditions: refused.
        node_case(
            "its RoCEFabricReady condition",
            "node-a",
            Some("status"),
            json!({"status": {"conditions": [{"type": "RoCEFabricReady", "status": "True", "reason": "Healthy", "message": "ok"}]}}),
            AllowedVia(KEYED),
        ),
        node_case(
            "another node's prefix label",
            "node-b",
            None,
            label("fabric.spinel.dev/tier-1", "x"),
            Denied,
        ),
        node_case(
            "another node's condition",
            "node-b",
            Some("status"),
            json!({"status": {"conditions": [{"type": "RoCEFabricReady", "status": "False", "reason": "X", "message": "x"}]}}),
            Denied,
        ),
    ]
}

fn nodefabric(name: &str, node_name: &str) -> Value {
    json!({
        "apiVersion": "fabric.spinel.dev/v1alpha1",
        "kind": "NodeFabric",
        "metadata": {"name": name},
        "spec": {"nodeName": node_name, "nics": [], "lldp": {}},
    })
}

/// Creates `object` as `client`: `Ok` or the status code.
async fn create(
    client: &kube::Client,
    res: &ApiResource,
    namespace: Option<&str>,
    object: Value,
) -> Result<(), (u16, String)> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, res),
        None => Api::all_with(client.clone(), res),
    };
    let obj: DynamicObject = serde_json::from_value(object).unwrap();
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) => Err((s.code, s.message)),
        Err(e) => panic!("create: {e}"),
    }
}

async fn agent_creates(agent: &kube::Client, ghost: &kube::Client) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut check = |what: &str, got: Result<(), (u16, String)>, allowed: bool| {
        if got.is_ok() != allowed || matches!(&got, Err((c, _)) if *c != 403 && *c != 422) {
            wrong.push(format!("agent: create {what}: got {got:?}"));
        }
    };
    let fab = nodefabrics();
    let mut with_finalizer = nodefabric("node-a", "node-a");
    with_finalizer["metadata"]["finalizers"] = json!(["example.com/hold"]);
    check(
        "its NodeFabric with a finalizer",
        create(agent, &fab, None, with_finalizer).await,
        false,
    );
    let mut owned = nodefabric("node-a", "node-a");
    owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "00000000-0000-0000-0000-000000000001"}]);
    check(
        "its NodeFabric with an owner",
        create(agent, &fab, None, owned).await,
        false,
    );
    check(
        "another node's NodeFabric",
        create(agent, &fab, None, nodefabric("node-b", "node-b")).await,
        false,
    );
    check(
        "a NodeFabric naming another node",
        create(agent, &fab, None, nodefabric("node-a", "node-b")).await,
        false,
    );
    check(
        "a Node",
        create(
            agent,
            &nodes(),
            None,
            json!({"metadata": {"name": "node-a2"}}),
        )
        .await,
        false,
    );
    check(
        "its NodeFabric",
        create(agent, &fab, None, nodefabric("node-a", "node-a")).await,
        true,
    );
    // A token bound to a pod on a node that does not exist carries no node UID.
    check(
        "a NodeFabric for a node that does not exist",
        create(ghost, &fab, None, nodefabric("ghost", "ghost")).await,
        false,
    );
    wrong
}

fn agent_nodefabric_cases() -> Vec<Case> {
    use Expect::*;
    let case = |what, name, sub, change, expect| Case {
        what,
        res: nodefabrics(),
        namespace: None,
        name,
        sub,
        change,
        verbs: &CRD_VERBS,
        expect,
    };
    vec![
        case(
            "its NodeFabric's report",
            "node-a",
            None,
            json!({"spec": {"agentVersion": "9.9.9"}}),
            AllowedVia(CRD_PATCHES),
        ),
        case(
            "its NodeFabric's status",
            "node-a",
            Some("status"),
            json!({"status": {"labels": {"fabric.spinel.dev/tier-1": "x"}}}),
            Denied,
        ),
        case(
            "a finalizer on its NodeFabric",
            "node-a",
            None,
            json!({"metadata": {"finalizers": ["example.com/hold"]}}),
            Denied,
        ),
        case(
            "its NodeFabric naming another node",
            "node-a",
            None,
            json!({"spec": {"nodeName": "node-b"}}),
            Denied,
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_and_subresource_against_every_policy() {
    let cp = shared();
    let admin = cp.admin_client().await;
    install(&admin).await;
    let token = agent_token(&admin, "node-a").await;
    let agent = client_with_token(cp.server(), cp.ca_file(), &token);
    let ghost_token = ghost_node_token(&admin).await;
    let ghost = client_with_token(cp.server(), cp.ca_file(), &ghost_token);
    policies_in_force(&agent, &admin).await;

    let mut wrong = agent_creates(&agent, &ghost).await;
    wrong.extend(run(&agent, &admin, "spinel-agent", &agent_node_cases()).await);
    wrong.extend(run(&agent, &admin, "spinel-agent", &agent_nodefabric_cases()).await);
    wrong.extend(lease_and_pod_cases(cp, &admin).await);
    assert!(
        wrong.is_empty(),
        "policy verdicts that differ:\n{}",
        wrong.join("\n")
    );
}

/// A token of spinel-agent bound to a pod on a node that does not exist.
async fn ghost_node_token(admin: &kube::Client) -> String {
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "spinel-agent-ghost"},
        "spec": {"serviceAccountName": "spinel-agent", "nodeName": "ghost", "containers": [{"name": "agent", "image": "spinel"}]},
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(admin.clone(), NAMESPACE)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    spinel_netns_tests::k8s::pod_bound_token(admin, NAMESPACE, "spinel-agent", "spinel-agent-ghost")
        .await
}

/// The controller and the scheduler: Leases by name, the scheduler's pod writes.
async fn lease_and_pod_cases(cp: &ControlPlane, admin: &kube::Client) -> Vec<String> {
    let controller = client_with_token(
        cp.server(),
        cp.ca_file(),
        &service_account_token(admin, NAMESPACE, "spinel-fabric-controller").await,
    );
    let scheduler = client_with_token(
        cp.server(),
        cp.ca_file(),
        &service_account_token(admin, NAMESPACE, "spinel-scheduler").await,
    );
    let lease = |name: &str, holder: &str| {
        json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
        })
    };
    let mut wrong = Vec::new();
    let mut check = |what: &str, got: Result<(), (u16, String)>, allowed: bool| {
        if got.is_ok() != allowed || matches!(&got, Err((c, _)) if *c != 403 && *c != 422) {
            wrong.push(format!("{what}: got {got:?}"));
        }
    };
    check(
        "controller creates the scheduler's Lease",
        create(
            &controller,
            &leases(),
            Some(NAMESPACE),
            lease("spinel-scheduler", "squatter"),
        )
        .await,
        false,
    );
    check(
        "controller creates another Lease",
        create(
            &controller,
            &leases(),
            Some(NAMESPACE),
            lease("anything", "squatter"),
        )
        .await,
        false,
    );
    check(
        "controller creates its Lease",
        create(
            &controller,
            &leases(),
            Some(NAMESPACE),
            lease("spinel-fabric-controller", "ctrl-a"),
        )
        .await,
        true,
    );
    check(
        "scheduler creates the controller's Lease",
        create(
            &scheduler,
            &leases(),
            Some(NAMESPACE),
            lease("spinel-fabric-controller", "x"),
        )
        .await,
        false,
    );
    check(
        "scheduler creates its Lease",
        create(
            &scheduler,
            &leases(),
            Some(NAMESPACE),
            lease("spinel-scheduler", "sched-a"),
        )
        .await,
        true,
    );
    let workload = json!({"metadata": {"name": "trainer-0", "namespace": "default"}, "spec": {"containers": [{"name": "c", "image": "trainer"}]}});
    create(admin, &pods(), Some("default"), workload)
        .await
        .unwrap();

    let lease_case = |what, name, change, expect| Case {
        what,
        res: leases(),
        namespace: Some(NAMESPACE),
        name,
        sub: None,
        change,
        verbs: &ALL_VERBS,
        expect,
    };
    let pod_case = |what, change, expect| Case {
        what,
        res: pods(),
        namespace: Some("default"),
        name: "trainer-0",
        sub: None,
        change,
        verbs: &ALL_VERBS,
        expect,
    };
    let hijack = json!({"spec": {"holderIdentity": "hijack"}});
    wrong.extend(run(&scheduler, admin, "spinel-scheduler", &[
        lease_case("scheduler takes the controller's Lease", "spinel-fabric-controller", hijack.clone(), Denied),
        lease_case("scheduler renews its Lease", "spinel-scheduler", json!({"spec": {"holderIdentity": "sched-a"}}), AllowedVia(REPLACE)),
        pod_case("scheduler annotates a rank", json!({"metadata": {"annotations": {"sched.spinel.dev/rank": "0"}}}), AllowedVia(PATCHES)),
        pod_case("scheduler sets a pod finalizer", json!({"metadata": {"finalizers": ["example.com/hold"]}}), Denied),
        pod_case(
            "scheduler sets a pod owner",
            json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "00000000-0000-0000-0000-000000000001"}]}}),
            Denied,
        ),
        pod_case("scheduler labels a pod", json!({"metadata": {"labels": {"x": "y"}}}), Denied),
        pod_case("scheduler annotates outside its prefix", json!({"metadata": {"annotations": {"x": "y"}}}), Denied),
        pod_case("scheduler changes a pod's spec", json!({"spec": {"activeDeadlineSeconds": 5}}), Denied),
    ]).await);
    wrong.extend(
        run(
            &controller,
            admin,
            "spinel-fabric-controller",
            &[
                lease_case(
                    "controller takes the scheduler's Lease",
                    "spinel-scheduler",
                    hijack,
                    Denied,
                ),
                lease_case(
                    "controller renews its Lease",
                    "spinel-fabric-controller",
                    json!({"spec": {"holderIdentity": "ctrl-a"}}),
                    AllowedVia(REPLACE),
                ),
                node_case(
                    "controller labels a Node",
                    "node-b",
                    None,
                    json!({"metadata": {"labels": {"fabric.spinel.dev/tier-1": "x"}}}),
                    Denied,
                ),
            ],
        )
        .await,
    );
    for (who, client) in [("controller", &controller), ("scheduler", &scheduler)] {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &leases());
        match api
            .delete("spinel-fabric-controller", &DeleteParams::default())
            .await
        {
            Err(kube::Error::Api(s)) if s.code == 403 => {}
            other => wrong.push(format!("{who} deletes a Lease: got {:?}", other.map(drop))),
        }
    }
    // Evictions: the scheduler evicts the bound pods of a stranded gang; nobody else may.
    for (who, client, allowed) in [
        ("controller", &controller, false),
        ("scheduler", &scheduler, true),
    ] {
        let name = format!("evictee-{who}");
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "example.com/c:1"}]},
        }))
        .unwrap();
        Api::<Pod>::namespaced(admin.clone(), "default")
            .create(&PostParams::default(), &pod)
            .await
            .unwrap();
        let got = Api::<Pod>::namespaced(client.clone(), "default")
            .evict(&name, &EvictParams::default())
            .await;
        match (&got, allowed) {
            (Ok(_), true) => {}
            (Err(kube::Error::Api(s)), false) if s.code == 403 => {}
            _ => wrong.push(format!("{who} evicts a pod: got {:?}", got.map(drop))),
        }
    }
    wrong
}
