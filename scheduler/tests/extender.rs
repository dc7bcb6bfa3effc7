//! The extender over HTTP with a static cluster view, fed the recorded request bodies in
//! `tests/fixtures/requests` (valid, malformed) and generated huge and hostile ones.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};
use spinel_scheduler::http::{App, ServerOptions, router};
use spinel_scheduler::publish::{Effect, Recorder};
use spinel_scheduler::state::{Config, State};
use spinel_scheduler::wire::{ExtenderFilterResult, HostPriority};
use tower::ServiceExt as _;

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

struct Harness {
    router: axum::Router,
    recorder: Arc<Recorder>,
    state: Arc<Mutex<State>>,
    leading: Arc<AtomicBool>,
}

fn harness(options: ServerOptions, ready: bool) -> Harness {
    let state = Arc::new(Mutex::new(State::new(Config::default())));
    let list: Value = serde_json::from_slice(&fixture("nodes.json")).unwrap();
    {
        let mut s = state.lock().unwrap();
        for item in list["items"].as_array().unwrap() {
            let node: Node = serde_json::from_value(item.clone()).unwrap();
            s.apply_node(&node, 0);
        }
        if ready {
            s.set_ready();
        }
    }
    let recorder = Arc::new(Recorder::default());
    let leading = Arc::new(AtomicBool::new(true));
    let app = App::new(state.clone(), recorder.clone(), options).with_leadership(leading.clone());
    Harness {
        router: router(app),
        recorder,
        state,
        leading,
    }
}

/// The pod watch shows the pod a request names, as it would in a cluster (the state decides
/// only for pods it watches).
fn watch_sees(h: &Harness, body: &[u8]) {
    let Ok(args) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    if let Ok(pod) = serde_json::from_value::<Pod>(args["Pod"].clone())
        && pod.metadata.uid.is_some()
    {
        h.state.lock().unwrap().apply_pod(&pod, 0);
    }
}

async fn call(h: &Harness, method: &str, path: &str, body: Vec<u8>) -> (StatusCode, Vec<u8>) {
    call_unwatched(h, method, path, body, true).await
}

async fn call_unwatched(
    h: &Harness,
    method: &str,
    path: &str,
    body: Vec<u8>,
    watched: bool,
) -> (StatusCode, Vec<u8>) {
    if watched && path != "/bind" {
        watch_sees(h, &body);
    }
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let resp = h.router.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, bytes)
}

async fn filter(h: &Harness, body: Vec<u8>) -> ExtenderFilterResult {
    let (status, bytes) = call(h, "POST", "/filter", body).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    serde_json::from_slice(&bytes).unwrap()
}

fn leaf(node: &str) -> &str {
    &node[..9]
}

fn spine(node: &str) -> &str {
    &node[..6]
}

#[tokio::test]
async fn a_gang_gets_one_node_per_rank_under_its_leaf_and_spine() {
    let h = harness(ServerOptions::default(), true);
    let mut chosen = Vec::new();
    for r in 0..4 {
        let out = filter(
            &h,
            fixture(&format!("requests/filter-gang-rank{r}-names.json")),
        )
        .await;
        let names = out.node_names.unwrap();
        assert_eq!(names.len(), 1, "rank {r}");
        assert!(out.nodes.is_none());
        assert!(out.error.is_empty());
        // The other candidates are dropped unlisted: kube-scheduler reads them as
        // unresolvable, and the answer stays a few bytes.
        assert!(out.failed_and_unresolvable_nodes.is_empty(), "rank {r}");
        chosen.push(names[0].clone());
    }
    assert!(
        !chosen.contains(&"gpu-s0-l0-00".to_owned()),
        "degraded node chosen"
    );
    assert_eq!(chosen.iter().collect::<BTreeSet<_>>().len(), 4);
    // DP groups (one pipeline stage = 2 pods) under one leaf, the pipeline under one spine.
    assert_eq!(leaf(&chosen[0]), leaf(&chosen[1]));
    assert_eq!(leaf(&chosen[2]), leaf(&chosen[3]));
    assert!(chosen.iter().all(|n| spine(n) == spine(&chosen[0])));
    // Asking again gives the same answer.
    let again = filter(&h, fixture("requests/filter-gang-rank2-names.json")).await;
    assert_eq!(again.node_names.unwrap(), [chosen[2].clone()]);
    // Rank annotations on every pod, the rank list on rank 0.
    let effects = h.recorder.effects();
    let rank0 = effects
        .iter()
        .find_map(|e| match e {
            Effect::Annotate { pod, annotations } if pod == "ml/llama-0" => Some(annotations),
            _ => None,
        })
        .unwrap();
    assert_eq!(rank0["sched.spinel.dev/rank"], "0");
    assert_eq!(rank0["sched.spinel.dev/rank-nodes"], chosen.join(","));
    // The gang fits one leaf: the smallest domain, best-fit among the three whole leaves.
    assert!(rank0["sched.spinel.dev/placement"].contains("\"domain\":\"leaf s0-l1\""));
    assert!(chosen.iter().all(|n| leaf(n) == "gpu-s0-l1"));
    let annotated: BTreeSet<&str> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Annotate { pod, .. } => Some(pod.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(annotated.len(), 4);
}

#[tokio::test]
async fn full_node_mode_echoes_the_planned_node_object() {
    let h = harness(ServerOptions::default(), true);
    let out = filter(&h, fixture("requests/filter-gang-rank0-nodes.json")).await;
    assert!(out.node_names.is_none());
    let list = out.nodes.unwrap();
    assert_eq!(list.items.len(), 1);
    let name = list.items[0]["metadata"]["name"].as_str().unwrap();
    let input: Value = serde_json::from_slice(&fixture("nodes.json")).unwrap();
    let original = input["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["metadata"]["name"] == name)
        .unwrap();
    assert_eq!(&list.items[0], original);
    assert_eq!(list.rest["kind"], "NodeList");
}

#[tokio::test]
async fn prioritize_scores_the_planned_node_highest() {
    let h = harness(ServerOptions::default(), true);
    let planned = filter(&h, fixture("requests/filter-gang-rank1-names.json"))
        .await
        .node_names
        .unwrap()[0]
        .clone();
    let (status, bytes) = call(
        &h,
        "POST",
        "/prioritize",
        fixture("requests/prioritize-gang-rank1-names.json"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let scores: Vec<HostPriority> = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(scores.len(), 16);
    for s in &scores {
        assert_eq!(s.score, if s.host == planned { 10 } else { 0 }, "{s:?}");
    }
}

#[tokio::test]
async fn pods_outside_gangs_pass_through_with_a_leaf_packing_score() {
    let h = harness(ServerOptions::default(), true);
    let out = filter(&h, fixture("requests/filter-plain-pod-names.json")).await;
    assert_eq!(out.node_names.unwrap().len(), 16);
    assert!(out.failed_nodes.is_empty() && out.failed_and_unresolvable_nodes.is_empty());
    // Fill leaf s1-l1 partly: its nodes score higher than empty leaves'.
    {
        let mut s = h.state.lock().unwrap();
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "busy", "namespace": "x", "uid": "busy"},
            "spec": {"nodeName": "gpu-s1-l1-00", "containers": [{"name": "c",
                "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}
        }))
        .unwrap();
        s.apply_pod(&pod, 0);
    }
    let (_, bytes) = call(
        &h,
        "POST",
        "/prioritize",
        fixture("requests/prioritize-plain-pod-names.json"),
    )
    .await;
    let scores: Vec<HostPriority> = serde_json::from_slice(&bytes).unwrap();
    let of = |n: &str| scores.iter().find(|s| s.host == n).unwrap().score;
    assert!(of("gpu-s1-l1-01") > of("gpu-s1-l0-01"), "{scores:?}");
    assert!(scores.iter().all(|s| (0..=10).contains(&s.score)));
}

#[tokio::test]
async fn kueue_dialect_pods_are_placed_too() {
    let h = harness(ServerOptions::default(), true);
    let out = filter(&h, fixture("requests/filter-kueue-pod-names.json")).await;
    assert_eq!(out.node_names.unwrap().len(), 1);
}

#[tokio::test]
async fn invalid_and_impossible_gangs_are_unresolvable_with_the_reason() {
    let h = harness(ServerOptions::default(), true);
    let out = filter(&h, fixture("requests/filter-invalid-gang-names.json")).await;
    assert!(out.node_names.unwrap().is_empty());
    assert_eq!(out.failed_and_unresolvable_nodes.len(), 16);
    let reason = out.failed_and_unresolvable_nodes.values().next().unwrap();
    assert!(reason.contains("tp × dp × pp = 8 × 3 × 1"), "{reason}");
    let out = filter(&h, fixture("requests/filter-too-big-gang-names.json")).await;
    let reason = out.failed_and_unresolvable_nodes.values().next().unwrap();
    assert!(reason.contains("can never fit"), "{reason}");
    assert!(reason.contains("has 4 of 8 nodes in all"), "{reason}");
    let events: Vec<Effect> = h
        .recorder
        .effects()
        .into_iter()
        .filter(|e| matches!(e, Effect::Event { .. }))
        .collect();
    assert_eq!(events.len(), 2, "{events:?}");
    // The same reason again records no second Event.
    filter(&h, fixture("requests/filter-invalid-gang-names.json")).await;
    let again = h
        .recorder
        .effects()
        .iter()
        .filter(|e| matches!(e, Effect::Event { .. }))
        .count();
    assert_eq!(again, 2);
}

#[tokio::test]
async fn two_gangs_at_once_never_share_a_node() {
    let h = harness(ServerOptions::default(), true);
    let mut first = BTreeSet::new();
    for r in 0..4 {
        let out = filter(
            &h,
            fixture(&format!("requests/filter-gang-rank{r}-names.json")),
        )
        .await;
        first.extend(out.node_names.unwrap());
    }
    let other = String::from_utf8(fixture("requests/filter-gang-rank0-names.json"))
        .unwrap()
        .replace("llama", "mistral");
    for r in 0..4 {
        let body = other
            .replace("\"uid-mistral-0\"", &format!("\"uid-mistral-{r}\""))
            .replace(
                "\"batch.kubernetes.io/job-completion-index\": \"0\"",
                &format!("\"batch.kubernetes.io/job-completion-index\": \"{r}\""),
            );
        let out = filter(&h, body.into_bytes()).await;
        let n = out.node_names.unwrap();
        assert_eq!(n.len(), 1);
        assert!(!first.contains(&n[0]), "{} promised twice", n[0]);
    }
}

#[tokio::test]
async fn bind_binds_only_when_enabled() {
    let off = harness(ServerOptions::default(), true);
    let (status, _) = call(&off, "POST", "/bind", fixture("requests/bind-rank0.json")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let on = harness(
        ServerOptions {
            bind: true,
            ..ServerOptions::default()
        },
        true,
    );
    filter(&on, fixture("requests/filter-gang-rank0-names.json")).await;
    let (status, bytes) = call(&on, "POST", "/bind", fixture("requests/bind-rank0.json")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(String::from_utf8(bytes).unwrap(), r#"{"Error":""}"#);
    assert!(on.recorder.effects().contains(&Effect::Bind {
        pod: "ml/llama-0".to_owned(),
        node: "gpu-s0-l0-01".to_owned()
    }));
    let (status, bytes) = call(
        &on,
        "POST",
        "/bind",
        fixture("requests/malformed-bind-missing-node.json"),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
}

#[tokio::test]
async fn malformed_requests_get_400_with_a_reason() {
    let h = harness(ServerOptions::default(), true);
    let cases = [
        ("malformed-not-json.txt", "invalid ExtenderArgs"),
        ("malformed-no-pod.json", "Pod is missing"),
        (
            "malformed-no-candidates.json",
            "neither Nodes nor NodeNames",
        ),
        ("malformed-pod-is-a-string.json", "invalid ExtenderArgs"),
        ("malformed-node-without-name.json", "has no metadata.name"),
        ("malformed-names-not-strings.json", "invalid ExtenderArgs"),
    ];
    for (file, reason) in cases {
        for verb in ["/filter", "/prioritize"] {
            let (status, bytes) =
                call(&h, "POST", verb, fixture(&format!("requests/{file}"))).await;
            let text = String::from_utf8_lossy(&bytes);
            assert_eq!(status, StatusCode::BAD_REQUEST, "{file} {verb}: {text}");
            assert!(text.contains(reason), "{file} {verb}: {text}");
        }
    }
}

#[tokio::test]
async fn hostile_and_huge_bodies_are_bounded() {
    let h = harness(
        ServerOptions {
            max_body_bytes: 2 << 20,
            bind: false,
        },
        true,
    );
    // Deep nesting never reaches the stack: typed fields stop at serde_json's recursion limit,
    // skipped and raw values are scanned without recursion.
    let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let deep_items = format!(
        "{{\"Pod\":{{}},\"Nodes\":{{\"items\":[{}]}}}}",
        nest(900_000)
    );
    let (status, bytes) = call(&h, "POST", "/filter", deep_items.into_bytes()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&bytes).contains("has no metadata.name"));
    let deep_ignored = format!(
        "{{\"Pod\":{{\"metadata\":{{\"name\":\"p\"}},\"x\":{}}},\"NodeNames\":[\"a\"]}}",
        nest(900_000)
    );
    let (status, _) = call(&h, "POST", "/filter", deep_ignored.into_bytes()).await;
    assert_eq!(status, StatusCode::OK);
    // managedFields[].fieldsV1 is free-form JSON, parsed into a tree: the recursion limit stops it.
    let deep_typed = format!(
        "{{\"Pod\":{{\"metadata\":{{\"name\":\"p\",\"managedFields\":[{{\"fieldsV1\":{}}}]}}}},\"NodeNames\":[\"a\"]}}",
        "{\"a\":".repeat(200_000) + "1" + &"}".repeat(200_000)
    );
    let (status, bytes) = call(&h, "POST", "/filter", deep_typed.into_bytes()).await;
    let reason: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
    assert_eq!(status, StatusCode::BAD_REQUEST, "{reason}");
    assert!(reason.contains("recursion limit"), "{reason}");
    // Over the size limit.
    let big = vec![b' '; 3 << 20];
    let (status, _) = call(&h, "POST", "/filter", big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    // 50,000 candidate names (1.4 MB) within the limit: answered in full.
    let mut body: Value =
        serde_json::from_slice(&fixture("requests/filter-plain-pod-names.json")).unwrap();
    body["NodeNames"] = (0..50_000)
        .map(|i| Value::from(format!("node-{i:05}")))
        .collect();
    let out = filter(&h, serde_json::to_vec(&body).unwrap()).await;
    assert_eq!(out.node_names.unwrap().len(), 50_000);
}

#[tokio::test]
async fn readiness_follows_the_cluster_view() {
    let h = harness(ServerOptions::default(), false);
    assert_eq!(call(&h, "GET", "/healthz", vec![]).await.0, StatusCode::OK);
    assert_eq!(
        call(&h, "GET", "/readyz", vec![]).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    // An empty view would call every gang impossible: nothing is decided before it loads.
    let body = fixture("requests/filter-gang-rank0-names.json");
    let (status, bytes) = call(&h, "POST", "/filter", body).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(String::from_utf8_lossy(&bytes).contains("not loaded yet"));
    assert!(h.recorder.effects().is_empty());
    h.state.lock().unwrap().set_ready();
    assert_eq!(call(&h, "GET", "/readyz", vec![]).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_planned_node_kube_scheduler_dropped_is_replaced_or_explained() {
    let h = harness(ServerOptions::default(), true);
    filter(&h, fixture("requests/filter-gang-rank0-names.json")).await;
    let plan = h
        .recorder
        .effects()
        .into_iter()
        .find_map(|e| match e {
            Effect::Annotate { annotations, .. } => {
                annotations.get("sched.spinel.dev/rank-nodes").cloned()
            }
            _ => None,
        })
        .unwrap();
    let planned: Vec<&str> = plan.split(',').collect();
    // Rank 1's planned node did not pass kube-scheduler's own filters.
    let mut body: Value =
        serde_json::from_slice(&fixture("requests/filter-gang-rank1-names.json")).unwrap();
    let names: Vec<Value> = body["NodeNames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n.as_str() != Some(planned[1]))
        .cloned()
        .collect();
    body["NodeNames"] = Value::from(names);
    let out = filter(&h, serde_json::to_vec(&body).unwrap()).await;
    // Its DP group's leaf is full (the other ranks hold it): the hard level keeps it waiting,
    // with the reason, instead of a silent move to another leaf.
    assert!(out.node_names.unwrap().is_empty());
    let reason = out.failed_nodes.values().next().unwrap();
    assert!(
        reason.contains("rank 1 must rejoin its dp group within leaf s0-l1"),
        "{reason}"
    );
}

#[tokio::test]
async fn pods_outside_gangs_keep_off_reserved_nodes() {
    let h = harness(ServerOptions::default(), true);
    let planned = filter(&h, fixture("requests/filter-gang-rank0-names.json"))
        .await
        .node_names
        .unwrap();
    let out = filter(&h, fixture("requests/filter-plain-pod-names.json")).await;
    let passing = out.node_names.unwrap();
    // The gang holds its whole leaf (4 ranks): those nodes are refused to the 1-GPU pod.
    assert_eq!(passing.len(), 12);
    assert!(!passing.contains(&planned[0]));
    assert_eq!(out.failed_nodes.len(), 4);
    assert!(out.failed_nodes.keys().all(|n| n.starts_with("gpu-s0-l1-")));
    assert!(out.failed_and_unresolvable_nodes.is_empty());
}

/// The value of the sample `line` (name and labels) in the OpenMetrics text.
fn sample(text: &str, line: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(line)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn metrics_count_requests_decisions_and_reservations() {
    let h = harness(
        ServerOptions {
            max_body_bytes: 1 << 20,
            bind: false,
        },
        true,
    );
    filter(&h, fixture("requests/filter-gang-rank0-names.json")).await;
    filter(&h, fixture("requests/filter-plain-pod-names.json")).await;
    filter(&h, fixture("requests/filter-invalid-gang-names.json")).await;
    call(
        &h,
        "POST",
        "/filter",
        fixture("requests/malformed-no-pod.json"),
    )
    .await;
    call(&h, "POST", "/prioritize", vec![b' '; 2 << 20]).await;
    let (status, bytes) = call(&h, "GET", "/metrics", vec![]).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8(bytes).unwrap();
    let at = |line: &str| sample(&text, line).unwrap_or_else(|| panic!("{line} in\n{text}"));
    assert_eq!(
        at(r#"spinel_scheduler_decisions_total{decision="placed"}"#),
        1.0
    );
    assert_eq!(
        at(r#"spinel_scheduler_decisions_total{decision="pass_through"}"#),
        1.0
    );
    assert_eq!(
        at(r#"spinel_scheduler_decisions_total{decision="unschedulable"}"#),
        1.0
    );
    assert_eq!(
        at(r#"spinel_scheduler_rejected_requests_total{verb="filter",code="400"}"#),
        1.0
    );
    assert_eq!(
        at(r#"spinel_scheduler_rejected_requests_total{verb="prioritize",code="413"}"#),
        1.0
    );
    assert_eq!(
        at(r#"spinel_scheduler_request_duration_seconds_count{verb="filter"}"#),
        4.0
    );
    // The gang holds its four ranks (8 GPUs each) and the invalid one waits for nothing.
    assert_eq!(at("spinel_scheduler_reserved_ranks"), 4.0);
    assert_eq!(at("spinel_scheduler_reserved_units"), 32.0);
    assert_eq!(at("spinel_scheduler_gangs"), 1.0);
    assert_eq!(at("spinel_scheduler_nodes"), 16.0);
    // gpu-s0-l0-00 carries the degraded taint.
    assert_eq!(at("spinel_scheduler_unusable_nodes"), 1.0);
    assert_eq!(at("spinel_scheduler_leader"), 1.0);
}

#[tokio::test]
async fn a_standby_replica_decides_nothing() {
    let h = harness(ServerOptions::default(), true);
    h.leading.store(false, Ordering::Release);
    for (method, path, body) in [
        (
            "POST",
            "/filter",
            fixture("requests/filter-gang-rank0-names.json"),
        ),
        (
            "POST",
            "/prioritize",
            fixture("requests/prioritize-gang-rank1-names.json"),
        ),
        ("POST", "/bind", fixture("requests/bind-rank0.json")),
        ("GET", "/readyz", vec![]),
    ] {
        let (status, bytes) = call(&h, method, path, body).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert!(
            String::from_utf8_lossy(&bytes).contains("standby"),
            "{path}"
        );
    }
    assert_eq!(call(&h, "GET", "/healthz", vec![]).await.0, StatusCode::OK);
    assert!(h.recorder.effects().is_empty(), "a standby published");
    assert_eq!(h.state.lock().unwrap().engine().stats().gangs, 0);
    // Leading again: the same request is decided.
    h.leading.store(true, Ordering::Release);
    let out = filter(&h, fixture("requests/filter-gang-rank0-names.json")).await;
    assert_eq!(out.node_names.unwrap().len(), 1);
}

fn names_of(h: &Harness) -> Vec<String> {
    let s = h.state.lock().unwrap();
    let c = s.engine().cluster();
    c.node_ids()
        .into_iter()
        .map(|n| c.node_name(n).to_owned())
        .collect()
}

fn gang_pod_json(name: &str, uid: &str, gang: &str, size: u32, extra: Value) -> Value {
    let mut annotations = serde_json::json!({"sched.spinel.dev/gang-size": size.to_string()});
    if let (Some(a), Some(e)) = (annotations.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    serde_json::json!({
        "metadata": {"name": name, "namespace": "ml", "uid": uid,
            "labels": {"sched.spinel.dev/gang": gang}, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    })
}

// Issue 19: one unauthenticated 1 KiB request for a fake 5,000-pod gang cut a real pod's
// candidates from 9,304 to 4,304 (the fake gang's plan was reserved). A gang pod the pod watch
// never showed decides nothing: no plan, no reservation, no Event, no state kept.
#[tokio::test]
async fn a_gang_pod_the_api_server_does_not_have_decides_nothing() {
    let h = harness(ServerOptions::default(), true);
    let names = names_of(&h);
    let fake = gang_pod_json("fake-0", "not-a-real-uid", "fake", 5_000, json!({}));
    let body = serde_json::to_vec(&json!({"Pod": fake, "NodeNames": names})).unwrap();
    assert!(body.len() < 2048, "{} bytes", body.len());
    let (status, bytes) = call_unwatched(&h, "POST", "/filter", body, false).await;
    assert_eq!(status, StatusCode::OK);
    let out: ExtenderFilterResult = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(out.node_names, Some(Vec::new()));
    assert!(
        out.failed_nodes
            .values()
            .all(|r| r.contains("not a pending pod the API server shows")),
        "{out:?}"
    );
    {
        let s = h.state.lock().unwrap();
        let stats = s.engine().stats();
        assert_eq!((stats.gangs, stats.reserved_units), (0, 0), "{stats:?}");
    }
    assert!(
        h.recorder.effects().is_empty(),
        "{:?}",
        h.recorder.effects()
    );
    // A real pod outside gangs keeps every candidate.
    let plain = filter(&h, fixture("requests/filter-plain-pod-names.json")).await;
    let asked: Value =
        serde_json::from_slice(&fixture("requests/filter-plain-pod-names.json")).unwrap();
    assert_eq!(
        plain.node_names.unwrap().len(),
        asked["NodeNames"].as_array().unwrap().len()
    );
    // A real pod's UID with a gang the pod does not carry: read from the watched pod, which
    // names none, so it passes through and nothing is held.
    let real = json!({"metadata": {"name": "web", "namespace": "ml", "uid": "web-uid"},
        "spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}});
    let pod: Pod = serde_json::from_value(real).unwrap();
    h.state.lock().unwrap().apply_pod(&pod, 0);
    let forged = gang_pod_json("web", "web-uid", "forged", 5_000, json!({}));
    let body = serde_json::to_vec(&json!({"Pod": forged, "NodeNames": names})).unwrap();
    let (_, bytes) = call_unwatched(&h, "POST", "/filter", body, false).await;
    let out: ExtenderFilterResult = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(out.node_names.unwrap().len(), names.len());
    assert_eq!(h.state.lock().unwrap().engine().stats().gangs, 0);
}

// Issue 19: 150 requests of about 1 KiB, each a never-fitting 65,536-pod gang, kept 187 gangs
// and grew the extender from 35 to 406 MiB. A gang that can never fit keeps no state; the
// ranks held have a limit, a metric and a refusal with the reason past it.
#[tokio::test]
async fn gangs_that_never_fit_are_not_kept_and_held_ranks_are_limited() {
    let h = harness(ServerOptions::default(), true);
    let names = names_of(&h);
    for g in 0..150 {
        let pod = gang_pod_json(
            &format!("huge-{g}"),
            &format!("huge-uid-{g}"),
            &format!("huge-{g}"),
            65_536,
            json!({}),
        );
        let body = serde_json::to_vec(&json!({"Pod": pod, "NodeNames": names})).unwrap();
        let out = filter(&h, body).await;
        assert!(
            out.failed_and_unresolvable_nodes
                .values()
                .all(|r| r.contains("can never fit")),
            "{out:?}"
        );
    }
    let stats = h.state.lock().unwrap().engine().stats();
    assert_eq!((stats.gangs, stats.held_ranks, stats.held_bytes), (0, 0, 0));
    // Gangs that could fit hold ranks up to the limit; past it, a gang waits with the reason.
    h.state
        .lock()
        .unwrap()
        .set_limits(spinel_placement::HoldLimits {
            max_held_ranks: 6,
            ..spinel_placement::HoldLimits::default()
        });
    let first = gang_pod_json("a-0", "a-uid-0", "a", 4, json!({}));
    let out = filter(
        &h,
        serde_json::to_vec(&json!({"Pod": first, "NodeNames": names})).unwrap(),
    )
    .await;
    assert_eq!(out.node_names.unwrap().len(), 1);
    let second = gang_pod_json("b-0", "b-uid-0", "b", 4, json!({}));
    let out = filter(
        &h,
        serde_json::to_vec(&json!({"Pod": second, "NodeNames": names})).unwrap(),
    )
    .await;
    let reason = out.failed_nodes.values().next().unwrap();
    assert!(
        reason.contains("already holds 4 ranks of other gangs and its limit is 6"),
        "{reason}"
    );
    let (_, text) = call(&h, "GET", "/metrics", Vec::new()).await;
    let text = String::from_utf8(text).unwrap();
    for line in [
        "spinel_scheduler_held_ranks 4",
        "spinel_scheduler_held_ranks_limit 6",
        "spinel_scheduler_decisions_total{decision=\"over_limit\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
    assert!(sample(&text, "spinel_scheduler_held_bytes").unwrap() > 0.0);
}

// Issue 19: a 970 KiB request produced a 395 MiB answer (every candidate listed with a
// reason quoting the pod's annotation). Each listed reason is cut to a bound and only nodes
// the cluster view knows are listed, so the answer stays within a constant of the cluster.
#[tokio::test]
async fn the_answer_is_bounded_whatever_the_request_carries() {
    let h = harness(ServerOptions::default(), true);
    let known = names_of(&h).len();
    let long = "9".repeat(4096);
    let pod = gang_pod_json(
        "big-0",
        "big-uid",
        "big",
        4,
        json!({"sched.spinel.dev/tp": long}),
    );
    let mut names: Vec<String> = names_of(&h);
    names.extend((0..100_000).map(|i| format!("n{i:06}")));
    let body = serde_json::to_vec(&json!({"Pod": pod, "NodeNames": names})).unwrap();
    assert!(body.len() > 900 << 10, "{} bytes", body.len());
    let (status, bytes) = call(&h, "POST", "/filter", body).await;
    assert_eq!(status, StatusCode::OK);
    let per_node = spinel_scheduler::http::MAX_REASON_BYTES + 64;
    assert!(
        bytes.len() <= known * per_node + 1024,
        "{} bytes for {known} known nodes",
        bytes.len()
    );
    let out: ExtenderFilterResult = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(out.failed_and_unresolvable_nodes.len(), known);
    // The Event carries the whole reason.
    let event = h
        .recorder
        .effects()
        .into_iter()
        .find_map(|e| match e {
            Effect::Event { message, .. } => Some(message),
            _ => None,
        })
        .unwrap();
    assert!(event.len() > 4096, "{} bytes", event.len());
}
