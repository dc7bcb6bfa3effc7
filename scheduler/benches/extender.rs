//! Extender latency over real HTTP on loopback, and the memory of the cluster cache.
//!
//! `cargo bench -p spinel-scheduler --bench extender [-- NODES...]` (default 1000 10000 50000).
//! For each size: a uniform fabric (32 nodes per leaf, 16 leaves per spine, 8 GPUs per node) is
//! loaded into the scheduler state (resident memory measured before and after), the gang pods
//! are shown to it as its pod watch would, the real router is served on 127.0.0.1, and a client
//! in its own process (this program started again with `client ADDR NODES`, so it never shares
//! the server's threads or allocator) sends over one keep-alive HTTP/1.1 connection, per pod, a
//! filter then a prioritize with every node as candidate, as kube-scheduler does with
//! `percentageOfNodesToScore: 100`:
//! - `plain`: a 1-GPU pod outside any gang (pass-through plus the leaf packing score);
//! - `gang`: the pods of 64-pod gangs (TP in a pod, DP groups of 8 pods per leaf, the pipeline
//!   per spine), the first pod of each gang paying for the plan;
//! - `full`: the plain pod in full-node mode (every Node object in the body), 1k and 10k only.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, NodeSpec as K8sNodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};
use spinel_api::labels::LabelOptions;
use spinel_placement::sim::uniform::UniformFabric;
use spinel_scheduler::http::{App, ServerOptions, router};
use spinel_scheduler::publish::Recorder;
use spinel_scheduler::state::{Config, State};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn fabric(nodes: u32) -> UniformFabric {
    let per_spine = 32 * 16;
    UniformFabric {
        spines: nodes.div_ceil(per_spine),
        leaves_per_spine: 16,
        nodes_per_leaf: 32,
        gpus_per_node: 8,
    }
}

fn node_objects(f: &UniformFabric, count: usize) -> Vec<Node> {
    f.node_specs(&LabelOptions::default())
        .into_iter()
        .take(count)
        .map(|s| Node {
            metadata: ObjectMeta {
                name: Some(s.name),
                labels: Some(s.labels),
                ..ObjectMeta::default()
            },
            spec: Some(K8sNodeSpec::default()),
            status: Some(NodeStatus {
                allocatable: Some(BTreeMap::from([
                    ("nvidia.com/gpu".to_owned(), Quantity("8".to_owned())),
                    ("cpu".to_owned(), Quantity("96".to_owned())),
                ])),
                ..NodeStatus::default()
            }),
        })
        .collect()
}

fn gang_pod(g: usize, r: usize) -> Value {
    let annotations = json!({"sched.spinel.dev/gang-size": "64", "sched.spinel.dev/tp": "8",
        "sched.spinel.dev/dp": "8", "sched.spinel.dev/pp": "8",
        "batch.kubernetes.io/job-completion-index": r.to_string()});
    pod(
        &format!("g{g}-{r}"),
        8,
        annotations,
        json!({"sched.spinel.dev/gang": format!("g{g}")}),
    )
}

fn gangs_for(size: usize) -> usize {
    if size >= 50_000 { 5 } else { 10 }
}

fn pod(name: &str, gpus: u32, annotations: Value, labels: Value) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "bench", "uid": name,
            "labels": labels, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"requests": {"nvidia.com/gpu": gpus.to_string()}}}]}
    })
}

struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    async fn post(&mut self, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        );
        // One write per request: a split write meets Nagle and delayed ACKs (40 ms stalls).
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        self.reader.get_mut().write_all(&request).await.unwrap();
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).await.unwrap();
        let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut buf = vec![0u8; len];
        self.reader.read_exact(&mut buf).await.unwrap();
        (status, buf)
    }

    /// One pod's filter then prioritize; the elapsed time of both.
    async fn pair(&mut self, body: &[u8]) -> Duration {
        let t = Instant::now();
        let (s1, b1) = self.post("/filter", body).await;
        let (s2, _) = self.post("/prioritize", body).await;
        assert_eq!((s1, s2), (200, 200), "{}", String::from_utf8_lossy(&b1));
        t.elapsed()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

fn report(size: usize, mode: &str, mut samples: Vec<Duration>, body: usize) {
    samples.sort();
    println!(
        "| {size} | {mode} | {} | {:.2} | {:.2} | {:.0} KiB |",
        samples.len(),
        percentile(&samples, 0.50),
        percentile(&samples, 0.99),
        body as f64 / 1024.0
    );
}

/// The server side of one size: the state loaded, gang pods shown, the router served; the
/// client started as a process of its own; its report printed.
async fn run_size(size: usize) {
    let f = fabric(size as u32);
    let nodes = node_objects(&f, size);
    let before = rss_kib();
    let state = Arc::new(Mutex::new(State::new(Config::default())));
    {
        let mut s = state.lock().unwrap();
        for n in &nodes {
            s.apply_node(n, 0);
        }
        s.set_ready();
    }
    let cache_kib = rss_kib().saturating_sub(before);
    {
        let mut s = state.lock().unwrap();
        for g in 0..gangs_for(size) {
            for r in 0..64 {
                let p: k8s_openapi::api::core::v1::Pod =
                    serde_json::from_value(gang_pod(g, r)).unwrap();
                s.apply_pod(&p, 0);
            }
        }
    }
    let app = App::new(
        state.clone(),
        Arc::new(Recorder::default()),
        ServerOptions::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router(app)).await });
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["client", &addr.to_string(), &size.to_string()])
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "the client failed: {}", out.status);
    print!("{}", String::from_utf8_lossy(&out.stdout));
    println!(
        "| {size} | cluster cache (RSS growth) | | {:.1} MiB | | |",
        cache_kib as f64 / 1024.0
    );
}

/// The client: every request of one size, timed from its own process.
async fn client(addr: SocketAddr, size: usize) {
    let f = fabric(size as u32);
    let nodes = node_objects(&f, size);
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n.metadata.name.clone().unwrap())
        .collect();
    let stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let mut client = Client {
        reader: BufReader::new(stream),
    };
    let plain = serde_json::to_vec(&json!({
        "Pod": pod("plain", 1, json!({}), json!({})), "NodeNames": names}))
    .unwrap();
    for _ in 0..5 {
        client.pair(&plain).await;
    }
    let rounds = if size >= 50_000 { 100 } else { 300 };
    let mut samples = Vec::new();
    for _ in 0..rounds {
        samples.push(client.pair(&plain).await);
    }
    report(size, "nodeCacheCapable, plain pod", samples, plain.len());

    let mut samples = Vec::new();
    let mut body_len = 0;
    for g in 0..gangs_for(size) {
        for r in 0..64 {
            let body =
                serde_json::to_vec(&json!({"Pod": gang_pod(g, r), "NodeNames": names})).unwrap();
            body_len = body.len();
            samples.push(client.pair(&body).await);
        }
    }
    report(size, "nodeCacheCapable, 64-pod gangs", samples, body_len);

    if size <= 10_000 {
        let list: Vec<Value> = nodes
            .iter()
            .map(|n| serde_json::to_value(n).unwrap())
            .collect();
        let full = serde_json::to_vec(&json!({
            "Pod": pod("plain", 1, json!({}), json!({})), "Nodes": {"items": list}}))
        .unwrap();
        let mut samples = Vec::new();
        for _ in 0..if size >= 10_000 { 20 } else { 100 } {
            samples.push(client.pair(&full).await);
        }
        report(size, "full nodes, plain pod", samples, full.len());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("client") {
        let addr: SocketAddr = args[2].parse().unwrap();
        let size: usize = args[3].parse().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(client(addr, size));
        return;
    }
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1_000, 10_000, 50_000]
    } else {
        sizes
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("| nodes | mode | pods | p50 filter+prioritize (ms) | p99 (ms) | request body |");
    println!("|---|---|---|---|---|---|");
    for size in sizes {
        rt.block_on(run_size(size));
    }
}
