//! Per-pod scheduling latency as the benchmark programs measure it: from issuing a pod's
//! create request to a watch on its namespace showing it bound.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;

/// A pod seen bound: its name, its node, when the watch showed it.
pub type Bound = (String, String, Instant);

/// Sends each pod once, when a watch first shows it bound.
pub fn watch_bindings(client: kube::Client, ns: &str) -> mpsc::UnboundedReceiver<Bound> {
    let (tx, rx) = mpsc::unbounded_channel();
    let api = Api::<Pod>::namespaced(client, ns);
    tokio::spawn(async move {
        let mut seen = HashSet::new();
        // Backed off: once the control plane is gone, a bare watcher retries in a busy loop.
        let mut stream = Box::pin(kube::runtime::WatchStreamExt::default_backoff(
            watcher::watcher(api, watcher::Config::default()),
        ));
        while let Some(event) = stream.next().await {
            let (Ok(Event::Apply(pod)) | Ok(Event::InitApply(pod))) = event else {
                continue;
            };
            let name = pod.metadata.name.clone().unwrap_or_default();
            if let Some(node) = pod.spec.and_then(|s| s.node_name)
                && seen.insert(name.clone())
                && tx.send((name, node, Instant::now())).is_err()
            {
                return;
            }
        }
    });
    rx
}

/// Creates the pods in `namespace` at once and waits until every one is bound: each one's index in `pods`,
/// node and latency.
pub async fn schedule(
    client: &kube::Client,
    namespace: &str,
    bound: &mut mpsc::UnboundedReceiver<Bound>,
    pods: Vec<Pod>,
) -> Vec<(usize, String, Duration)> {
    let api = Api::<Pod>::namespaced(client.clone(), namespace);
    let mut started = HashMap::new();
    let mut creating = tokio::task::JoinSet::new();
    for (i, pod) in pods.into_iter().enumerate() {
        let name = pod.metadata.name.clone().unwrap();
        started.insert(name, (i, Instant::now()));
        let api = api.clone();
        creating.spawn(async move { api.create(&PostParams::default(), &pod).await });
    }
    while let Some(done) = creating.join_next().await {
        done.unwrap().expect("create a pod");
    }
    let mut latencies = Vec::new();
    while !started.is_empty() {
        let Ok(next) = tokio::time::timeout(Duration::from_secs(300), bound.recv()).await else {
            let mut left: Vec<_> = started.keys().collect();
            left.sort();
            panic!("not bound within 5 minutes: {left:?} (see the pods' PodScheduled condition)");
        };
        let (name, node, at) = next.expect("the watch runs");
        // Pods of earlier rounds (the watch's initial list) are not this round's.
        if let Some((i, t0)) = started.remove(&name) {
            latencies.push((i, node, at - t0));
        }
    }
    latencies
}

/// One Markdown row: count, p50, p99, mean and max of `v` in ms.
pub fn summary(what: &str, mut v: Vec<Duration>) {
    if v.is_empty() {
        println!("| {what} | 0 | | | | |");
        return;
    }
    v.sort();
    let at = |q: f64| {
        let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
        v[i].as_secs_f64() * 1e3
    };
    let mean = v.iter().map(Duration::as_secs_f64).sum::<f64>() / v.len() as f64 * 1e3;
    println!(
        "| {what} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
        v.len(),
        at(0.5),
        at(0.99),
        mean,
        v.last().unwrap().as_secs_f64() * 1e3
    );
}

/// The median of `v`.
pub fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or_default()
}
