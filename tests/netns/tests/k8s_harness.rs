//! The Kubernetes test tier's harness against itself: a real kube-apiserver over etcd (and a
//! real kube-scheduler) from `spinel-k8s`, driven with real credentials. Each test proves one
//! property the later tiers build on; most share one control plane, the restart and the
//! scheduler tests have their own.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::core::Status;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use spinel_netns_tests::k8s::{
    ControlPlane, ControlPlaneOptions, client_with_token, pod_bound_token, service_account_token,
};

const NODE_NAME_EXTRA: &str = "authentication.kubernetes.io/node-name";

/// One control plane with the peers' CRDs for the tests that neither restart it nor need the
/// scheduler. It lives until the test process exits (the harness follows its stdin).
fn shared() -> &'static ControlPlane {
    static SHARED: OnceLock<ControlPlane> = OnceLock::new();
    SHARED.get_or_init(|| ControlPlane::start(ControlPlaneOptions::new("k8s-shared").peer_crds()))
}

fn object<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("test object matches its type")
}

/// The API error of a call that must fail, with its HTTP code checked.
fn api_error<T: std::fmt::Debug>(result: kube::Result<T>, code: u16, what: &str) -> Status {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, code, "{what}: {status:?}");
            *status
        }
        other => panic!("{what}: expected API error {code}, got {other:?}"),
    }
}

/// A namespace with the `default` ServiceAccount that kube-controller-manager (not run here)
/// would create; pods need it at admission.
async fn namespace(client: &kube::Client, name: &str) {
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": name}})),
        )
        .await
        .unwrap_or_else(|e| panic!("create namespace {name}: {e}"));
    service_account(client, name, "default").await;
}

async fn service_account(client: &kube::Client, namespace: &str, name: &str) {
    Api::<ServiceAccount>::namespaced(client.clone(), namespace)
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": name}})),
        )
        .await
        .unwrap_or_else(|e| panic!("create serviceaccount {namespace}/{name}: {e}"));
}

/// A Node as a kubelet would register it: capacity, allocatable, Ready.
fn node(name: &str) -> Node {
    let resources = json!({"cpu": "8", "memory": "32Gi", "pods": "110"});
    object(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status"}],
        },
    }))
}

/// Registers a Ready node. Admission (TaintNodesByCondition) taints every new Node
/// not-ready; the node lifecycle controller, which is not run here, lifts that taint once the
/// kubelet reports Ready, so this does it in its place.
async fn create_node(client: &kube::Client, name: &str) -> Node {
    let nodes = Api::<Node>::all(client.clone());
    let created = nodes
        .create(&PostParams::default(), &node(name))
        .await
        .unwrap_or_else(|e| panic!("create node {name}: {e}"));
    let taints = created
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    assert!(
        taints
            .iter()
            .any(|t| t.key == "node.kubernetes.io/not-ready"),
        "admission tainted node {name} not-ready: {taints:?}"
    );
    nodes
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": null}})),
        )
        .await
        .unwrap_or_else(|e| panic!("lift the not-ready taint of node {name}: {e}"))
}

fn pod(name: &str, service_account: &str, node_name: Option<&str>) -> Pod {
    let mut spec = json!({
        "serviceAccountName": service_account,
        "containers": [{"name": "main", "image": "pause",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
    });
    if let Some(node_name) = node_name {
        spec["nodeName"] = json!(node_name);
    }
    object(json!({"metadata": {"name": name}, "spec": spec}))
}

async fn create_pod(client: &kube::Client, namespace: &str, pod: &Pod) -> Pod {
    Api::<Pod>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), pod)
        .await
        .unwrap_or_else(|e| panic!("create pod {namespace}/{:?}: {e}", pod.metadata.name))
}

/// Who the API server says the client is.
async fn whoami(client: &kube::Client) -> (String, BTreeMap<String, Vec<String>>) {
    let review = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("SelfSubjectReview");
    let user = review.status.and_then(|s| s.user_info).expect("user info");
    (
        user.username.unwrap_or_default(),
        user.extra.unwrap_or_default(),
    )
}

/// Polls `check` until it returns `Ok`, for state that reaches the API server's caches
/// asynchronously (RBAC, admission policies, the scheduler's binding); `Err` describes what
/// was seen instead, for the failure message.
async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
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

// (a) The API server is up, and the admin (a client certificate in system:masters) writes.
#[tokio::test]
async fn admin_creates_node_and_pod() {
    let cp = shared();
    let admin = cp.admin_client().await;
    let (user, _) = whoami(&admin).await;
    assert_eq!(user, "spinel-admin");
    let version = admin.apiserver_version().await.unwrap();
    assert!(version.git_version.starts_with("v1.36."), "{version:?}");

    let created = create_node(&admin, "a-node").await;
    let fetched = Api::<Node>::all(admin.clone()).get("a-node").await.unwrap();
    assert_eq!(fetched.metadata.uid, created.metadata.uid);
    let allocatable = fetched.status.and_then(|s| s.allocatable).unwrap();
    assert_eq!(allocatable["pods"].0, "110");

    namespace(&admin, "t-a").await;
    let pod = create_pod(&admin, "t-a", &pod("web", "default", None)).await;
    assert!(pod.metadata.uid.is_some());
    // Real admission ran: the ServiceAccount plugin mounted the projected API token volume.
    let volumes = pod.spec.and_then(|s| s.volumes).unwrap_or_default();
    assert!(
        volumes
            .iter()
            .any(|v| v.name.starts_with("kube-api-access-") && v.projected.is_some()),
        "no projected token volume in {volumes:?}"
    );
    let listed = Api::<Pod>::namespaced(admin, "t-a")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
}

// (b) The peers' CRDs are served, and the API server enforces their schemas and CEL rules.
#[tokio::test]
async fn peer_crds_validate_objects() {
    let cp = shared();
    let admin = cp.admin_client().await;
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    for name in [
        "hypernodes.topology.volcano.sh",
        "topologies.kueue.x-k8s.io",
    ] {
        let crd = crds.get(name).await.unwrap();
        let established = crd
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        assert!(established, "{name} is not Established");
    }

    let gvk = GroupVersionKind::gvk("topology.volcano.sh", "v1alpha1", "HyperNode");
    let hypernodes = Api::<DynamicObject>::all_with(
        admin.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "hypernodes"),
    );
    let hypernode = |name: &str, tier: i64, selector: Value| -> DynamicObject {
        object(json!({
            "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": "Node", "selector": selector}]},
        }))
    };
    let pp = PostParams::default();
    // CEL (x-kubernetes-validations): at most one kind of selector.
    let both = json!({"exactMatch": {"name": "n1"}, "regexMatch": {"pattern": "n.*"}});
    let status = api_error(
        hypernodes
            .create(&pp, &hypernode("leaf-bad", 1, both))
            .await,
        422,
        "HyperNode with two selectors",
    );
    assert!(
        status
            .message
            .contains("Only one of ExactMatch, RegexMatch, or LabelMatch can be specified"),
        "{}",
        status.message
    );
    // OpenAPI schema: tier has minimum 0.
    let status = api_error(
        hypernodes
            .create(
                &pp,
                &hypernode("leaf-neg", -1, json!({"exactMatch": {"name": "n1"}})),
            )
            .await,
        422,
        "HyperNode with tier -1",
    );
    assert!(status.message.contains("spec.tier"), "{}", status.message);
    let valid = hypernodes
        .create(
            &pp,
            &hypernode("leaf-ok", 1, json!({"exactMatch": {"name": "n1"}})),
        )
        .await
        .expect("a valid HyperNode is accepted");
    assert_eq!(valid.data["spec"]["tier"], 1);

    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Topology");
    let topologies = Api::<DynamicObject>::all_with(
        admin,
        &ApiResource::from_gvk_with_plural(&gvk, "topologies"),
    );
    let topology = |name: &str, labels: &[&str]| -> DynamicObject {
        let levels: Vec<Value> = labels.iter().map(|l| json!({"nodeLabel": l})).collect();
        object(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
            "metadata": {"name": name}, "spec": {"levels": levels},
        }))
    };
    let status = api_error(
        topologies
            .create(
                &pp,
                &topology(
                    "bad",
                    &["kubernetes.io/hostname", "fabric.spinel.dev/tier-1"],
                ),
            )
            .await,
        422,
        "Topology with hostname above a leaf level",
    );
    assert!(
        status.message.contains(
            "the kubernetes.io/hostname label can only be used at the lowest level of topology"
        ),
        "{}",
        status.message
    );
    let status = api_error(
        topologies
            .create(
                &pp,
                &topology(
                    "dup",
                    &["fabric.spinel.dev/tier-1", "fabric.spinel.dev/tier-1"],
                ),
            )
            .await,
        422,
        "Topology with a repeated level",
    );
    assert!(
        status.message.contains("must be unique"),
        "{}",
        status.message
    );
    let valid = topologies
        .create(
            &pp,
            &topology(
                "fabric",
                &[
                    "fabric.spinel.dev/tier-2",
                    "fabric.spinel.dev/tier-1",
                    "kubernetes.io/hostname",
                ],
            ),
        )
        .await
        .expect("a valid Topology is accepted");
    assert_eq!(valid.data["spec"]["levels"].as_array().unwrap().len(), 3);
}

// (c) RBAC is enforced: a ServiceAccount without a role is authenticated but forbidden, and
// allowed once a role is bound.
#[tokio::test]
async fn rbac_forbids_serviceaccount_without_role() {
    let cp = shared();
    let admin = cp.admin_client().await;
    namespace(&admin, "t-c").await;
    service_account(&admin, "t-c", "nobody").await;
    let token = service_account_token(&admin, "t-c", "nobody").await;
    let nobody = client_with_token(cp.server(), cp.ca_file(), &token);

    let (user, _) = whoami(&nobody).await;
    assert_eq!(user, "system:serviceaccount:t-c:nobody");
    let status = api_error(
        Api::<Node>::all(nobody.clone())
            .list(&ListParams::default())
            .await,
        403,
        "listing nodes without a role",
    );
    assert_eq!(status.reason, "Forbidden");
    assert!(
        status
            .message
            .contains("User \"system:serviceaccount:t-c:nobody\" cannot list resource \"nodes\""),
        "{}",
        status.message
    );

    // The control: the same token may list nodes once RBAC says so.
    let pp = PostParams::default();
    Api::<ClusterRole>::all(admin.clone())
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "t-c-node-reader"},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}],
            })),
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(admin)
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "t-c-node-reader"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "t-c-node-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "nobody", "namespace": "t-c"}],
            })),
        )
        .await
        .unwrap();
    eventually("RBAC grant takes effect", Duration::from_secs(30), || {
        let nodes = Api::<Node>::all(nobody.clone());
        async move {
            nodes
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())
        }
    })
    .await;
}

// (d) A token bound to a pod on node n1 carries the node-name claim, and a
// ValidatingAdmissionPolicy on it lets the agent update its own Node only.
#[tokio::test]
async fn pod_bound_token_limits_agent_to_its_node() {
    let cp = shared();
    let admin = cp.admin_client().await;
    create_node(&admin, "n1").await;
    create_node(&admin, "n2").await;
    namespace(&admin, "t-d").await;
    service_account(&admin, "t-d", "agent").await;
    let pp = PostParams::default();
    // RBAC alone allows the agent to patch every Node; the policy narrows it.
    Api::<ClusterRole>::all(admin.clone())
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "t-d-agent"},
                "rules": [{"apiGroups": [""], "resources": ["nodes"],
                           "verbs": ["get", "patch", "update"]}],
            })),
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "t-d-agent"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "t-d-agent"},
                "subjects": [{"kind": "ServiceAccount", "name": "agent", "namespace": "t-d"}],
            })),
        )
        .await
        .unwrap();
    Api::<ValidatingAdmissionPolicy>::all(admin.clone())
        .create(&pp, &object(json!({
            "metadata": {"name": "t-d-own-node"},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["UPDATE"], "resources": ["nodes"],
                }]},
                "matchConditions": [{
                    "name": "agent",
                    "expression": "request.userInfo.username == 'system:serviceaccount:t-d:agent'",
                }],
                "validations": [{
                    "expression": format!(
                        "'{NODE_NAME_EXTRA}' in request.userInfo.extra && \
                         request.userInfo.extra['{NODE_NAME_EXTRA}'][0] == request.name"),
                    "message": "the agent may update only the Node its pod runs on",
                    // The default, Invalid, would answer 422 as for a malformed object.
                    "reason": "Forbidden",
                }],
            },
        })))
        .await
        .unwrap();
    Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone())
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "t-d-own-node"},
                "spec": {"policyName": "t-d-own-node", "validationActions": ["Deny"]},
            })),
        )
        .await
        .unwrap();

    create_pod(&admin, "t-d", &pod("agent-n1", "agent", Some("n1"))).await;
    let token = pod_bound_token(&admin, "t-d", "agent", "agent-n1").await;
    let agent = client_with_token(cp.server(), cp.ca_file(), &token);
    let (user, extra) = whoami(&agent).await;
    assert_eq!(user, "system:serviceaccount:t-d:agent");
    assert_eq!(
        extra.get(NODE_NAME_EXTRA),
        Some(&vec!["n1".to_owned()]),
        "{extra:?}"
    );
    assert_eq!(
        extra.get("authentication.kubernetes.io/pod-name"),
        Some(&vec!["agent-n1".to_owned()])
    );

    let label = |value: &str| {
        Patch::Merge(json!({"metadata": {"labels": {"fabric.spinel.dev/tier-1": value}}}))
    };
    let nodes = Api::<Node>::all(agent.clone());
    // The policy reaches the admission plugin asynchronously: wait until it denies n2.
    let denied = eventually("the policy denies node n2", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        let patch = label("leaf-2");
        async move {
            match nodes.patch("n2", &PatchParams::default(), &patch).await {
                Err(kube::Error::Api(status)) if status.code == 403 => Ok(status),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    assert!(
        denied
            .message
            .contains("the agent may update only the Node its pod runs on"),
        "{}",
        denied.message
    );
    let n1 = nodes
        .patch("n1", &PatchParams::default(), &label("leaf-1"))
        .await
        .expect("the agent updates its own node");
    assert_eq!(
        n1.metadata.labels.unwrap()["fabric.spinel.dev/tier-1"],
        "leaf-1"
    );

    // The claim is what allows it: the same ServiceAccount with a token bound to no pod is
    // denied on n1 too.
    let unbound = service_account_token(&admin, "t-d", "agent").await;
    let unbound = Api::<Node>::all(client_with_token(cp.server(), cp.ca_file(), &unbound));
    let status = api_error(
        unbound
            .patch("n1", &PatchParams::default(), &label("leaf-x"))
            .await,
        403,
        "an unbound token updating n1",
    );
    assert!(
        status.message.contains("the agent may update only"),
        "{}",
        status.message
    );
}

// (e) Server-side apply: field managers own fields, and a conflicting apply is a 409.
#[tokio::test]
async fn server_side_apply_reports_conflicts() {
    let cp = shared();
    let admin = cp.admin_client().await;
    create_node(&admin, "e-node").await;
    let nodes = Api::<Node>::all(admin);
    let apply = |value: &str| {
        Patch::Apply(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "e-node", "labels": {"fabric.spinel.dev/tier-1": value}},
        }))
    };
    let node = nodes
        .patch(
            "e-node",
            &PatchParams::apply("spinel-agent"),
            &apply("leaf-1"),
        )
        .await
        .unwrap();
    assert_eq!(
        node.metadata.labels.as_ref().unwrap()["fabric.spinel.dev/tier-1"],
        "leaf-1"
    );
    let managers: Vec<String> = node
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.operation.as_deref() == Some("Apply"))
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, ["spinel-agent"]);

    // Re-applying the same intent is a no-op, not a conflict.
    nodes
        .patch(
            "e-node",
            &PatchParams::apply("spinel-agent"),
            &apply("leaf-1"),
        )
        .await
        .unwrap();
    let status = api_error(
        nodes
            .patch("e-node", &PatchParams::apply("operator"), &apply("leaf-9"))
            .await,
        409,
        "a second manager applying the same label",
    );
    assert_eq!(status.reason, "Conflict");
    assert!(
        status.message.contains("spinel-agent"),
        "{}",
        status.message
    );
    let forced = nodes
        .patch(
            "e-node",
            &PatchParams::apply("operator").force(),
            &apply("leaf-9"),
        )
        .await
        .unwrap();
    assert_eq!(
        forced.metadata.labels.unwrap()["fabric.spinel.dev/tier-1"],
        "leaf-9"
    );
}

// (f) etcd's data, the CA and the token signing key survive a crash (SIGKILL) and a clean
// stop (SIGTERM) of the harness: objects, the admin kubeconfig and issued tokens stay valid.
#[tokio::test]
async fn data_survives_restart() {
    let mut cp = ControlPlane::start(ControlPlaneOptions::new("k8s-restart"));
    let admin = cp.admin_client().await;
    namespace(&admin, "t-f").await;
    let configmaps = Api::<ConfigMap>::namespaced(admin.clone(), "t-f");
    let created = configmaps
        .create(
            &PostParams::default(),
            &object(json!({
                "metadata": {"name": "fabric"}, "data": {"leaf": "leaf01"},
            })),
        )
        .await
        .unwrap();
    create_node(&admin, "f-node").await;
    create_pod(&admin, "t-f", &pod("agent", "default", Some("f-node"))).await;
    let token = pod_bound_token(&admin, "t-f", "default", "agent").await;
    let server = cp.server().to_owned();
    let ca = std::fs::read(cp.ca_file()).unwrap();
    let first_pid = cp.pid();
    drop(admin);

    cp.restart();
    assert_ne!(cp.pid(), first_pid, "a new process");
    assert_eq!(cp.server(), server, "same address after a restart");
    assert_eq!(
        std::fs::read(cp.ca_file()).unwrap(),
        ca,
        "same CA after a restart"
    );
    let admin = cp.admin_client().await;
    let fetched = Api::<ConfigMap>::namespaced(admin.clone(), "t-f")
        .get("fabric")
        .await
        .unwrap();
    assert_eq!(fetched.metadata.uid, created.metadata.uid);
    assert_eq!(fetched.data.unwrap()["leaf"], "leaf01");
    // A token issued before the crash still authenticates, with its node claim.
    let agent = client_with_token(cp.server(), cp.ca_file(), &token);
    let (user, extra) = whoami(&agent).await;
    assert_eq!(user, "system:serviceaccount:t-f:default");
    assert_eq!(extra.get(NODE_NAME_EXTRA), Some(&vec!["f-node".to_owned()]));
    Api::<ConfigMap>::namespaced(admin.clone(), "t-f")
        .patch(
            "fabric",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"spine": "s1"}})),
        )
        .await
        .unwrap();
    drop((admin, agent));

    let status = cp.terminate();
    assert!(status.success(), "spinel-k8s exits 0 on SIGTERM: {status}");
    cp.start_again();
    let admin = cp.admin_client().await;
    let data = Api::<ConfigMap>::namespaced(admin, "t-f")
        .get("fabric")
        .await
        .unwrap()
        .data
        .unwrap();
    assert_eq!(data["leaf"], "leaf01");
    assert_eq!(data["spine"], "s1");
}

/// A scheduler extender that admits only nodes whose name ends in `-b` and records the pods
/// it was asked about: HTTP/1.1, one thread per connection.
fn start_extender() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let record = record.clone();
            std::thread::spawn(move || serve_extender(stream, &record));
        }
    });
    (port, seen)
}

fn serve_extender(stream: TcpStream, seen: &Mutex<Vec<String>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let args: Value = serde_json::from_slice(&body).unwrap();
        assert!(
            request_line.starts_with("POST /scheduler/filter "),
            "{request_line}"
        );
        seen.lock().unwrap().push(
            args["Pod"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        let names: Vec<String> = args["NodeNames"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect();
        let (fit, failed): (Vec<String>, Vec<String>) =
            names.into_iter().partition(|n| n.ends_with("-b"));
        let failed: BTreeMap<String, String> = failed
            .into_iter()
            .map(|n| (n, "not under the chosen leaf".to_owned()))
            .collect();
        let result = json!({"NodeNames": fit, "FailedNodes": failed, "Error": ""}).to_string();
        write!(
            writer,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{result}",
            result.len()
        )
        .unwrap();
    }
}

// (g) kube-scheduler binds a pod to a node, and consults an HTTP extender configured in its
// KubeSchedulerConfiguration.
#[tokio::test]
async fn scheduler_binds_pod_through_extender() {
    let (port, seen) = start_extender();
    let config = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\n\
         kind: KubeSchedulerConfiguration\n\
         extenders:\n\
         - urlPrefix: http://127.0.0.1:{port}/scheduler\n\
        \x20 filterVerb: filter\n\
        \x20 nodeCacheCapable: true\n\
        \x20 weight: 1\n"
    );
    let cp = ControlPlane::start(ControlPlaneOptions::new("k8s-scheduler").scheduler(&config));
    let admin = cp.admin_client().await;
    create_node(&admin, "g-a").await;
    create_node(&admin, "g-b").await;
    namespace(&admin, "t-g").await;
    create_pod(&admin, "t-g", &pod("trainer", "default", None)).await;

    let pods = Api::<Pod>::namespaced(admin, "t-g");
    let node = eventually(
        "the scheduler binds the pod",
        Duration::from_secs(60),
        || {
            let pods = pods.clone();
            async move {
                let pod = pods.get("trainer").await.map_err(|e| e.to_string())?;
                pod.spec
                    .and_then(|s| s.node_name)
                    .ok_or_else(|| format!("{:?}", pod.status))
            }
        },
    )
    .await;
    assert_eq!(node, "g-b", "the extender filtered out g-a");
    assert!(
        seen.lock().unwrap().iter().any(|p| p == "trainer"),
        "the extender was asked about the pod"
    );
    let scheduled = pods
        .get("trainer")
        .await
        .unwrap()
        .status
        .unwrap()
        .conditions
        .unwrap();
    assert!(
        scheduled
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True"),
        "{scheduled:?}"
    );
}
