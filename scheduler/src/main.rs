//! `spinel-scheduler`: the kube-scheduler extender. The cluster view comes from watches on the
//! API server (or, for tests and benchmarks, from a `kubectl get nodes -o json` file); the
//! extender listens on `--listen` and stops cleanly on SIGTERM or SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::core::v1::Node;
use spinel_api::labels::{KeyMode, LabelOptions};
use spinel_placement::annotations::ParseOptions;
use spinel_placement::{ClusterOptions, EngineOptions, PlanOptions};
use spinel_scheduler::http::{App, ServerOptions, router};
use spinel_scheduler::metrics::Metrics;
use spinel_scheduler::publish::{Publisher, Recorder};
use spinel_scheduler::state::{Config, State};
use spinel_scheduler::watch;

/// Topology-aware gang placement as a kube-scheduler extender.
#[derive(Parser)]
#[command(name = "spinel-scheduler", version, about)]
struct Args {
    /// Address to listen on.
    #[arg(long, env = "SPINEL_SCHEDULER_LISTEN", default_value = "0.0.0.0:8888")]
    listen: SocketAddr,
    /// The extended resource gangs are counted in.
    #[arg(long, default_value = "nvidia.com/gpu")]
    resource: String,
    /// Prefix of the fabric label keys.
    #[arg(long, default_value = spinel_api::labels::DEFAULT_PREFIX)]
    label_prefix: String,
    /// Read tier labels with Topograph's keys (fabric.topograph.run/tier-0 = closest).
    #[arg(long)]
    topograph: bool,
    /// Seconds a gang may go without progress before its reservation is released.
    #[arg(long, default_value_t = 120)]
    reservation_timeout: u64,
    /// Largest gang accepted, in pods.
    #[arg(long, default_value_t = 65_536)]
    max_gang_size: u32,
    /// Largest request body, in MiB.
    #[arg(long, default_value_t = 64)]
    max_body_mib: usize,
    /// Serve the bind verb (create Bindings); only one extender in a cluster may.
    #[arg(long)]
    bind: bool,
    /// No bin-packing score for pods outside gangs.
    #[arg(long)]
    no_binpack: bool,
    /// Take nodes from this file (`kubectl get nodes -o json`) instead of the API server;
    /// nothing is written anywhere. For tests and benchmarks.
    #[arg(long, value_name = "FILE")]
    nodes_file: Option<PathBuf>,
}

fn config(args: &Args) -> anyhow::Result<Config> {
    let labels = LabelOptions {
        prefix: args.label_prefix.clone(),
        keys: if args.topograph {
            KeyMode::Topograph
        } else {
            KeyMode::Spinel
        },
    };
    labels.validate()?;
    Ok(Config {
        parse: ParseOptions {
            labels: labels.clone(),
            resource: args.resource.clone(),
            max_gang_size: args.max_gang_size,
        },
        cluster: ClusterOptions {
            labels,
            ..ClusterOptions::default()
        },
        engine: EngineOptions {
            plan: PlanOptions::default(),
            reservation_timeout_ms: args.reservation_timeout.saturating_mul(1000),
        },
        binpack_non_gang: !args.no_binpack,
    })
}

fn load_nodes_file(state: &Mutex<State>, path: &PathBuf) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let list: serde_json::Value = serde_json::from_str(&text).context("nodes file is not JSON")?;
    let items = list
        .get("items")
        .and_then(|i| i.as_array())
        .context("nodes file has no items (expected kubectl get nodes -o json)")?;
    let mut s = state
        .lock()
        .map_err(|_| anyhow::anyhow!("state lock poisoned"))?;
    for item in items {
        let node: Node = serde_json::from_value(item.clone()).context("a node does not parse")?;
        s.apply_node(&node, 0);
    }
    s.set_ready();
    tracing::info!(nodes = items.len(), "nodes loaded from file");
    Ok(())
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let state = Arc::new(Mutex::new(State::new(config(&args)?)));
    let start = Instant::now();
    let publisher: Arc<dyn Publisher> = match &args.nodes_file {
        Some(path) => {
            load_nodes_file(&state, path)?;
            Arc::new(Recorder::default())
        }
        None => {
            let client = kube::Client::try_default()
                .await
                .context("no Kubernetes client configuration (in-cluster or kubeconfig)")?;
            let (nodes_loaded, on_nodes_loaded) = tokio::sync::oneshot::channel();
            tokio::spawn(watch::watch_nodes(
                client.clone(),
                state.clone(),
                start,
                nodes_loaded,
            ));
            tokio::spawn(watch::watch_pods(
                client.clone(),
                state.clone(),
                start,
                on_nodes_loaded,
            ));
            Arc::new(watch::KubePublisher::new(
                client,
                std::env::var("POD_NAME").ok(),
            ))
        }
    };
    let metrics = Arc::new(Metrics::new());
    tokio::spawn(watch::expire_loop(
        state.clone(),
        metrics.clone(),
        start,
        Duration::from_secs(1),
    ));
    let app = App::new(
        state,
        publisher,
        ServerOptions {
            max_body_bytes: args.max_body_mib.saturating_mul(1 << 20),
            bind: args.bind,
        },
    )
    .with_metrics(metrics);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    tracing::info!(listen = %args.listen, "serving the extender");
    axum::serve(listener, router(app))
        .with_graceful_shutdown(shutdown())
        .await
        .context("serving")?;
    Ok(())
}
