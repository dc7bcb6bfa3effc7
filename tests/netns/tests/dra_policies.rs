//! The DRA driver's policy (`deploy/dra`: RBAC and the ValidatingAdmissionPolicy), tried as an
//! attacker holding an agent's token would try it: every write to ResourceSlices (create,
//! update, merge, JSON and strategic merge patch, server-side apply, delete, delete
//! collection), on its own node's slices and another node's, with every field the policy
//! guards. Allowed cases are tried too, so a policy that refuses everything fails here.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::ResourceSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use spinel_netns_tests::cluster::{self, NAMESPACE, agent_token, register_node};
use spinel_netns_tests::k8s::{
    ControlPlane, ControlPlaneOptions, client_with_token, merge, pod_bound_token,
};
use spinel_netns_tests::require_root;

fn slice(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {"driver": "roce.spinel.dev", "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "vf-0000-3b-00-2"}]},
    })
}

fn code<T>(r: kube::Result<T>) -> Result<(), u16> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) => Err(s.code),
        Err(e) => panic!("{e}"),
    }
}

async fn create(api: &Api<ResourceSlice>, obj: Value) -> Result<(), u16> {
    code(
        api.create(
            &PostParams::default(),
            &serde_json::from_value(obj).unwrap(),
        )
        .await,
    )
}

/// Changes slice `name` by the merge patch `change` through `verb`, as `client`.
async fn write(
    client: &kube::Client,
    admin: &kube::Client,
    name: &str,
    verb: &str,
    change: &Value,
) -> Result<(), u16> {
    let api = Api::<ResourceSlice>::all(client.clone());
    let current = serde_json::to_value(
        Api::<ResourceSlice>::all(admin.clone())
            .get(name)
            .await
            .unwrap(),
    )
    .unwrap();
    match verb {
        "update" => {
            let mut obj = current.clone();
            merge(&mut obj, change);
            code(
                api.replace(
                    name,
                    &PostParams::default(),
                    &serde_json::from_value(obj).unwrap(),
                )
                .await,
            )
        }
        "merge" => code(
            api.patch(name, &PatchParams::default(), &Patch::Merge(change))
                .await,
        ),
        "strategic" => code(
            api.patch(name, &PatchParams::default(), &Patch::Strategic(change))
                .await,
        ),
        "json" => {
            let mut obj = current.clone();
            merge(&mut obj, change);
            let ops = json!([{"op": "replace", "path": "/spec", "value": obj["spec"]},
                             {"op": "add", "path": "/metadata/labels", "value": obj["metadata"].get("labels").cloned().unwrap_or(json!({}))}]);
            let mut ops: Vec<Value> = serde_json::from_value(ops).unwrap();
            if let Some(f) = obj["metadata"].get("finalizers") {
                ops.push(json!({"op": "add", "path": "/metadata/finalizers", "value": f}));
            }
            if let Some(o) = obj["metadata"].get("ownerReferences") {
                ops.push(json!({"op": "add", "path": "/metadata/ownerReferences", "value": o}));
            }
            let patch = Patch::Json::<Value>(serde_json::from_value(json!(ops)).unwrap());
            code(api.patch(name, &PatchParams::default(), &patch).await)
        }
        "apply" => {
            let mut obj = current.clone();
            merge(&mut obj, change);
            let body = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                              "metadata": {"name": name, "finalizers": obj["metadata"].get("finalizers"),
                                           "ownerReferences": obj["metadata"].get("ownerReferences")},
                              "spec": obj["spec"]});
            code(
                api.patch(
                    name,
                    &PatchParams::apply("spinel-agent").force(),
                    &Patch::Apply(strip_nulls(body)),
                )
                .await,
            )
        }
        other => panic!("verb {other}"),
    }
}

fn strip_nulls(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.retain(|_, x| !x.is_null());
        for x in m.values_mut() {
            *x = strip_nulls(x.take());
        }
    }
    v
}

const VERBS: [&str; 5] = ["update", "merge", "strategic", "json", "apply"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_writes_only_its_own_node_s_slices_of_its_own_driver() {
    require_root();
    let cp = ControlPlane::start(
        ControlPlaneOptions::new("dra-policies")
            .crd_dir(cluster::workspace_root().join("deploy/crds")),
    );
    let admin = cp.admin_client().await;
    cluster::apply_files(
        &admin,
        &[
            "deploy/namespace.yaml",
            "deploy/agent/rbac.yaml",
            "deploy/dra/rbac.yaml",
            "deploy/dra/admission-policy.yaml",
        ],
    )
    .await;
    for node in ["node-a", "node-b"] {
        register_node(&admin, node).await;
    }
    let sa = serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(admin.clone(), NAMESPACE)
        .create(&PostParams::default(), &sa)
        .await
        .unwrap();
    let agent = client_with_token(
        cp.server(),
        cp.ca_file(),
        &agent_token(&admin, "node-a").await,
    );
    let ghost_pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "spinel-agent-ghost"},
        "spec": {"serviceAccountName": "spinel-agent", "nodeName": "ghost", "containers": [{"name": "a", "image": "spinel"}]},
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(admin.clone(), NAMESPACE)
        .create(&PostParams::default(), &ghost_pod)
        .await
        .unwrap();
    let ghost = client_with_token(
        cp.server(),
        cp.ca_file(),
        &pod_bound_token(&admin, NAMESPACE, "spinel-agent", "spinel-agent-ghost").await,
    );
    let node_a_uid = Api::<Node>::all(admin.clone())
        .get("node-a")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let slices = Api::<ResourceSlice>::all(agent.clone());
    let own = "node-a-roce.spinel.dev-0";

    // The policy is loaded asynchronously: wait until a foreign slice is refused.
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        match create(&slices, slice("node-b-roce.spinel.dev-9", "node-b")).await {
            Err(403) => break,
            Ok(()) => {
                Api::<ResourceSlice>::all(admin.clone())
                    .delete("node-b-roce.spinel.dev-9", &DeleteParams::default())
                    .await
                    .unwrap();
            }
            other => panic!("{other:?}"),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the DRA policy is not in force"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    let mut wrong = Vec::new();
    let mut check = |what: &str, got: Result<(), u16>, allowed: bool| {
        let ok = match got {
            Ok(()) => allowed,
            Err(403 | 422) => !allowed,
            Err(_) => false,
        };
        if !ok {
            wrong.push(format!("{what}: got {got:?}, expected allowed={allowed}"));
        }
    };
    let with = |mut v: Value, patch: Value| {
        merge(&mut v, &patch);
        v
    };
    check(
        "create another node's slice",
        create(&slices, slice("node-b-roce.spinel.dev-0", "node-b")).await,
        false,
    );
    check(
        "create a slice named for another node",
        create(&slices, slice("node-b-roce.spinel.dev-1", "node-a")).await,
        false,
    );
    check(
        "create a slice of another driver",
        create(
            &slices,
            with(
                slice(own, "node-a"),
                json!({"spec": {"driver": "gpu.nvidia.com"}}),
            ),
        )
        .await,
        false,
    );
    check(
        "create a slice of another pool",
        create(
            &slices,
            with(
                slice(own, "node-a"),
                json!({"spec": {"pool": {"name": "node-b"}}}),
            ),
        )
        .await,
        false,
    );
    check(
        "create a slice for all nodes",
        create(
            &slices,
            with(
                slice(own, "node-a"),
                json!({"spec": {"nodeName": null, "allNodes": true}}),
            ),
        )
        .await,
        false,
    );
    check(
        "create a slice with a finalizer",
        create(
            &slices,
            with(
                slice(own, "node-a"),
                json!({"metadata": {"finalizers": ["example.com/hold"]}}),
            ),
        )
        .await,
        false,
    );
    check(
        "create a slice owned by another Node",
        create(&slices, with(slice(own, "node-a"), json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-b", "uid": "00000000-0000-0000-0000-000000000001"}]}}))).await,
        false,
    );
    check(
        "create a slice from a token of a node that does not exist",
        create(
            &Api::all(ghost.clone()),
            slice("ghost-roce.spinel.dev-0", "ghost"),
        )
        .await,
        false,
    );
    check(
        "create its own slice, owned by its Node",
        create(&slices, with(slice(own, "node-a"), json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": node_a_uid, "controller": true}]}}))).await,
        true,
    );
    create(
        &Api::all(admin.clone()),
        slice("node-b-roce.spinel.dev-0", "node-b"),
    )
    .await
    .unwrap();

    for verb in VERBS {
        let devices = json!({"spec": {"devices": [{"name": format!("vf-{verb}")}]}});
        check(
            &format!("{verb}: its own slice's devices"),
            write(&agent, &admin, own, verb, &devices).await,
            true,
        );
        check(
            &format!("{verb}: another node's slice"),
            write(&agent, &admin, "node-b-roce.spinel.dev-0", verb, &devices).await,
            false,
        );
        check(
            &format!("{verb}: its own slice moved to another node's pool"),
            write(
                &agent,
                &admin,
                own,
                verb,
                &json!({"spec": {"pool": {"name": "node-b"}}}),
            )
            .await,
            false,
        );
        check(
            &format!("{verb}: a finalizer on its own slice"),
            write(
                &agent,
                &admin,
                own,
                verb,
                &json!({"metadata": {"finalizers": ["example.com/hold"]}}),
            )
            .await,
            false,
        );
        check(
            &format!("{verb}: another owner on its own slice"),
            write(&agent, &admin, own, verb, &json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "00000000-0000-0000-0000-000000000002"}]}})).await,
            false,
        );
    }
    check(
        "delete another node's slice",
        code(
            slices
                .delete("node-b-roce.spinel.dev-0", &DeleteParams::default())
                .await,
        ),
        false,
    );
    check(
        "delete every slice at once",
        code(
            slices
                .delete_collection(&DeleteParams::default(), &ListParams::default())
                .await,
        ),
        false,
    );
    check(
        "delete its own slice",
        code(slices.delete(own, &DeleteParams::default()).await),
        true,
    );
    assert!(
        wrong.is_empty(),
        "policy verdicts that differ:\n{}",
        wrong.join("\n")
    );
}
