//! Request bodies recorded from the real kube-scheduler (v1.36, `tests/netns/tests/sched_*.rs`
//! with `SPINEL_RECORD_FIXTURES=1`), replayed against the extender: each scenario's cluster is
//! rebuilt from its recorded Nodes, Pods and PodGroups, the requests are sent in their
//! recorded order (node changes applied where the test made them, each pod bound after its
//! last filter as kube-scheduler did), and every reply must equal the one the live extender
//! gave. Then the same bodies, damaged and blown up, must be refused with a reason or
//! answered within bounds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};
use spinel_scheduler::http::{App, ServerOptions, router};
use spinel_scheduler::publish::{Effect, Recorder};
use spinel_scheduler::state::{Config, State};
use tower::ServiceExt as _;

const SCENARIOS: [&str; 6] = [
    "dp-groups",
    "degraded",
    "three-gangs",
    "pass-through",
    "podgroup",
    "bind-full-nodes",
];

fn dir(scenario: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recorded")
        .join(scenario)
}

fn read(scenario: &str, file: &str) -> Vec<u8> {
    let path = dir(scenario).join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_file(scenario: &str, file: &str) -> Value {
    serde_json::from_slice(&read(scenario, file)).unwrap()
}

fn items<T: serde::de::DeserializeOwned>(list: &Value) -> Vec<T> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| serde_json::from_value(i.clone()).unwrap())
        .collect()
}

struct Replay {
    router: axum::Router,
    recorder: Arc<Recorder>,
    state: Arc<Mutex<State>>,
    nodes: BTreeMap<String, Node>,
    pods: BTreeMap<String, Pod>,
}

async fn call(router: &axum::Router, path: &str, body: Vec<u8>) -> (StatusCode, Vec<u8>) {
    let req = Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let resp = router.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    (
        status,
        resp.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
}

/// The scenario's cluster before its traffic: its nodes, its PodGroups, and the pods that were
/// bound without ever reaching the extender.
fn cluster(scenario: &str, options: ServerOptions) -> Replay {
    let index = json_file(scenario, "exchanges.json");
    let asked: BTreeSet<&str> = index
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pod"].as_str().unwrap())
        .collect();
    let mut state = State::new(Config::default());
    let nodes: BTreeMap<String, Node> = items::<Node>(&json_file(scenario, "nodes.json"))
        .into_iter()
        .map(|n| (n.metadata.name.clone().unwrap(), n))
        .collect();
    for n in nodes.values() {
        state.apply_node(n, 0);
    }
    let groups = json_file(scenario, "podgroups.json");
    if !groups["items"].as_array().unwrap().is_empty() {
        state.watch_pod_groups();
        for g in items(&groups) {
            state.apply_pod_group(&g);
        }
    }
    let pods: BTreeMap<String, Pod> = items::<Pod>(&json_file(scenario, "pods.json"))
        .into_iter()
        .map(|p| (p.metadata.name.clone().unwrap(), p))
        .collect();
    for (name, pod) in &pods {
        if !asked.contains(name.as_str()) {
            state.apply_pod(pod, 0);
        }
    }
    state.set_ready();
    let state = Arc::new(Mutex::new(state));
    let recorder = Arc::new(Recorder::default());
    let router = router(App::new(state.clone(), recorder.clone(), options));
    Replay {
        router,
        recorder,
        state,
        nodes,
        pods,
    }
}

/// A node as it was at some point of the test: with or without the degraded taint.
fn with_degraded(node: &Node, degraded: bool) -> Node {
    let mut node = node.clone();
    let spec = node.spec.get_or_insert_with(Default::default);
    let mut taints = spec.taints.take().unwrap_or_default();
    taints.retain(|t| t.key != "fabric.spinel.dev/degraded");
    if degraded {
        taints.push(
            serde_json::from_value(
                json!({"key": "fabric.spinel.dev/degraded", "effect": "NoSchedule"}),
            )
            .unwrap(),
        );
    }
    spec.taints = Some(taints);
    node
}

async fn replay(scenario: &str) -> Replay {
    let r = cluster(
        scenario,
        ServerOptions {
            bind: true,
            ..ServerOptions::default()
        },
    );
    let index = json_file(scenario, "exchanges.json");
    let index = index.as_array().unwrap();
    let timeline = json_file(scenario, "timeline.json");
    let last_filter: BTreeMap<&str, usize> = index
        .iter()
        .enumerate()
        .filter(|(_, e)| e["path"] == "/filter")
        .map(|(i, e)| (e["pod"].as_str().unwrap(), i))
        .collect();
    assert!(!index.is_empty(), "{scenario}: no traffic recorded");
    for (i, e) in index.iter().enumerate() {
        for change in timeline.as_array().unwrap().iter().filter(|c| c["at"] == i) {
            let node = &r.nodes[change["node"].as_str().unwrap()];
            let changed = with_degraded(node, change["degraded"].as_bool().unwrap());
            r.state.lock().unwrap().apply_node(&changed, 0);
        }
        let path = e["path"].as_str().unwrap();
        let request = read(scenario, e["request"].as_str().unwrap());
        // The pod watch shows the pending pod before kube-scheduler asks about it.
        if path != "/bind"
            && let Ok(args) = serde_json::from_slice::<Value>(&request)
            && let Ok(pod) = serde_json::from_value::<Pod>(args["Pod"].clone())
        {
            r.state.lock().unwrap().apply_pod(&pod, 0);
        }
        let (status, reply) = call(&r.router, path, request).await;
        let want: Value = serde_json::from_slice(&read(scenario, e["reply"].as_str().unwrap()))
            .unwrap_or(Value::Null);
        let got: Value = serde_json::from_slice(&reply).unwrap_or(Value::Null);
        assert_eq!(
            u64::from(status.as_u16()),
            e["status"].as_u64().unwrap(),
            "{scenario} #{i} {path}"
        );
        assert_eq!(got, want, "{scenario} #{i} {path} {}", e["pod"]);
        // kube-scheduler bound the pod after its last filter; the watch would tell the state.
        let pod = e["pod"].as_str().unwrap();
        if last_filter.get(pod) == Some(&i)
            && let Some(p) = r.pods.get(pod)
            && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
        {
            r.state.lock().unwrap().apply_pod(p, 0);
        }
    }
    r
}

#[tokio::test]
async fn recorded_traffic_gets_the_replies_the_live_extender_gave() {
    for scenario in SCENARIOS {
        let r = replay(scenario).await;
        // What the replay published is what the live run left on the pods.
        let mut published: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for effect in r.recorder.effects() {
            if let Effect::Annotate { pod, annotations } = effect {
                let name = pod.split_once('/').unwrap().1.to_owned();
                published.entry(name).or_default().extend(annotations);
            }
        }
        assert!(!published.is_empty(), "{scenario}: nothing published");
        for (name, notes) in &published {
            let live = r.pods[name]
                .metadata
                .annotations
                .clone()
                .unwrap_or_default();
            for (k, v) in notes {
                assert_eq!(live.get(k), Some(v), "{scenario}: {name} {k}");
            }
        }
    }
}

/// A recorded filter request for a gang pod, as bytes and as JSON.
fn a_gang_filter(scenario: &str) -> (Vec<u8>, Value) {
    let index = json_file(scenario, "exchanges.json");
    let e = index
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "/filter" && e["pod"] == "llama-0")
        .unwrap()
        .clone();
    let bytes = read(scenario, e["request"].as_str().unwrap());
    let value = serde_json::from_slice(&bytes).unwrap();
    (bytes, value)
}

#[tokio::test]
async fn damaged_recorded_bodies_are_refused_with_the_reason() {
    let r = cluster("dp-groups", ServerOptions::default());
    let (bytes, value) = a_gang_filter("dp-groups");
    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated",
            bytes[..bytes.len() / 2].to_vec(),
            "invalid ExtenderArgs",
        ),
        (
            "not UTF-8",
            [&bytes[..40], &[0xff, 0xfe], &bytes[40..]].concat(),
            "invalid ExtenderArgs",
        ),
    ];
    let mut no_pod = value.clone();
    no_pod.as_object_mut().unwrap().remove("Pod");
    cases.push((
        "no Pod",
        serde_json::to_vec(&no_pod).unwrap(),
        "Pod is missing",
    ));
    let mut names_as_numbers = value.clone();
    names_as_numbers["NodeNames"] = json!([1, 2, 3]);
    cases.push((
        "numbers for names",
        serde_json::to_vec(&names_as_numbers).unwrap(),
        "invalid ExtenderArgs",
    ));
    let mut no_candidates = value.clone();
    no_candidates["NodeNames"] = Value::Null;
    cases.push((
        "no candidates",
        serde_json::to_vec(&no_candidates).unwrap(),
        "neither Nodes nor NodeNames",
    ));
    let mut pod_spec_wrong = value.clone();
    pod_spec_wrong["Pod"]["spec"]["containers"] = json!("trainer");
    cases.push((
        "containers a string",
        serde_json::to_vec(&pod_spec_wrong).unwrap(),
        "invalid ExtenderArgs",
    ));
    for (what, body, reason) in cases {
        for path in ["/filter", "/prioritize"] {
            let (status, reply) = call(&r.router, path, body.clone()).await;
            let text = String::from_utf8_lossy(&reply);
            assert_eq!(status, StatusCode::BAD_REQUEST, "{what} {path}: {text}");
            assert!(text.contains(reason), "{what} {path}: {text}");
        }
    }
    assert!(
        r.recorder.effects().is_empty(),
        "a damaged body published something"
    );
}

#[tokio::test]
async fn recorded_bodies_blown_up_stay_within_bounds() {
    // 10,000 more candidate names than the cluster has: the gang pod still gets its planned
    // node, and the answer names nothing else.
    let r = cluster("dp-groups", ServerOptions::default());
    let (_, value) = a_gang_filter("dp-groups");
    let pod: Pod = serde_json::from_value(value["Pod"].clone()).unwrap();
    r.state.lock().unwrap().apply_pod(&pod, 0);
    let mut huge = value.clone();
    let names = huge["NodeNames"].as_array_mut().unwrap();
    let real = names.len();
    names.extend((0..10_000).map(|i| json!(format!("ghost-{i:05}"))));
    let (status, reply) = call(&r.router, "/filter", serde_json::to_vec(&huge).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(reply.len() < 1024, "{} bytes", reply.len());
    let reply: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(reply["NodeNames"].as_array().unwrap().len(), 1);
    assert!(real > 1);
    assert_eq!(reply["FailedAndUnresolvableNodes"], json!({}));
    // Above the body limit: 413 before any parsing.
    let small = cluster(
        "dp-groups",
        ServerOptions {
            max_body_bytes: 64 << 10,
            bind: false,
        },
    );
    let (status, _) = call(&small.router, "/filter", serde_json::to_vec(&huge).unwrap()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    // Annotations piled onto the recorded pod (1 MiB of them) are read, not choked on.
    let mut heavy = value;
    let notes = heavy["Pod"]["metadata"]["annotations"]
        .as_object_mut()
        .unwrap();
    for i in 0..1024 {
        notes.insert(format!("example.com/a{i}"), json!("x".repeat(1024)));
    }
    let (status, reply) = call(&r.router, "/filter", serde_json::to_vec(&heavy).unwrap()).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&reply)
    );
}
