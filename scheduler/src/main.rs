//! `spinel-scheduler`: the kube-scheduler extender. The cluster view comes from watches on the
//! API server (or, for tests and benchmarks, from a `kubectl get nodes -o json` file); the
//! extender listens on `--listen` and stops cleanly on SIGTERM or SIGINT. With
//! `--leader-elect` several replicas run; the one holding the Lease watches and decides, the
//! others only wait for it (and a leader that loses the Lease exits, to come back as one).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::core::v1::Node;
use spinel_api::labels::{KeyMode, LabelOptions};
use spinel_placement::annotations::ParseOptions;
use spinel_placement::{ClusterOptions, EngineOptions, PlanOptions};
use spinel_scheduler::http::{App, ServerOptions, router};
use spinel_scheduler::lease::{Elector, LeaseConfig};
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
    /// Run as one of several replicas: decide only while holding a coordination.k8s.io Lease.
    #[arg(long)]
    leader_elect: bool,
    /// Name of the Lease.
    #[arg(long, default_value = "spinel-scheduler")]
    lease_name: String,
    /// Namespace of the Lease (the pod's own, from the downward API).
    #[arg(long, env = "POD_NAMESPACE", default_value = "spinel-system")]
    lease_namespace: String,
    /// Seconds a Lease not renewed stays its holder's.
    #[arg(long, default_value_t = 15)]
    lease_duration: u64,
    /// Seconds the leader keeps deciding without a successful renewal (below the duration).
    #[arg(long, default_value_t = 10)]
    renew_deadline: u64,
    /// Seconds between tries to acquire or renew.
    #[arg(long, default_value_t = 2)]
    retry_period: u64,
}

fn lease_config(args: &Args) -> anyhow::Result<LeaseConfig> {
    // Unique per process: a restarted container waits for its old Lease like anyone else.
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ u64::from(std::process::id());
    let pod = std::env::var("POD_NAME").unwrap_or_else(|_| "spinel-scheduler".to_owned());
    let config = LeaseConfig {
        name: args.lease_name.clone(),
        namespace: args.lease_namespace.clone(),
        identity: format!("{pod}_{nonce:016x}"),
        duration: Duration::from_secs(args.lease_duration),
        renew_deadline: Duration::from_secs(args.renew_deadline),
        retry_period: Duration::from_secs(args.retry_period),
    };
    config.validate()?;
    Ok(config)
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

/// Starts the watches that feed the state (pods only once the nodes are listed).
fn start_watches(client: &kube::Client, state: &Arc<Mutex<State>>, start: Instant) {
    tokio::spawn(watch::watch_pod_groups(client.clone(), state.clone()));
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
}

/// Waits for the Lease, then watches and decides until shutdown (releasing the Lease) or
/// until the Lease is lost (an error: the process exits and comes back as a standby, with
/// nothing of the old state).
async fn lead(
    client: kube::Client,
    config: LeaseConfig,
    state: &Arc<Mutex<State>>,
    leading: &AtomicBool,
    start: Instant,
) -> anyhow::Result<()> {
    let mut elector = Elector::new(client.clone(), config.clone());
    tracing::info!(identity = %config.identity, lease = %config.name, "standing by for the lease");
    tokio::select! {
        () = elector.acquire() => {},
        () = shutdown() => return Ok(()),
    }
    tracing::info!(identity = %config.identity, "leading");
    start_watches(&client, state, start);
    leading.store(true, Ordering::Release);
    tokio::select! {
        lost = elector.hold() => {
            leading.store(false, Ordering::Release);
            Err(anyhow::Error::new(lost).context("stepped down"))
        }
        () = shutdown() => {
            leading.store(false, Ordering::Release);
            elector.release().await;
            Ok(())
        }
    }
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
    let lease = args.leader_elect.then(|| lease_config(&args)).transpose()?;
    let start = Instant::now();
    let (client, publisher): (_, Arc<dyn Publisher>) = match &args.nodes_file {
        Some(path) => {
            load_nodes_file(&state, path)?;
            (None, Arc::new(Recorder::default()))
        }
        None => {
            let client = kube::Client::try_default()
                .await
                .context("no Kubernetes client configuration (in-cluster or kubeconfig)")?;
            let publisher =
                watch::KubePublisher::new(client.clone(), std::env::var("POD_NAME").ok());
            (Some(client), Arc::new(publisher))
        }
    };
    let metrics = Arc::new(Metrics::new());
    tokio::spawn(watch::expire_loop(
        state.clone(),
        metrics.clone(),
        start,
        Duration::from_secs(1),
    ));
    let leading = Arc::new(AtomicBool::new(lease.is_none()));
    let app = App::new(
        state.clone(),
        publisher,
        ServerOptions {
            max_body_bytes: args.max_body_mib.saturating_mul(1 << 20),
            bind: args.bind,
        },
    )
    .with_metrics(metrics)
    .with_leadership(leading.clone());
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    tracing::info!(listen = %args.listen, "serving the extender");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(
        axum::serve(listener, router(app))
            .with_graceful_shutdown(async move {
                let mut stopped = stopped;
                let _ = stopped.wait_for(|s| *s).await;
            })
            .into_future(),
    );
    let outcome = match (client, lease) {
        (Some(client), Some(lease)) => lead(client, lease, &state, &leading, start).await,
        (Some(client), None) => {
            start_watches(&client, &state, start);
            shutdown().await;
            Ok(())
        }
        (None, _) => {
            shutdown().await;
            Ok(())
        }
    };
    let _ = stop.send(true);
    server
        .await
        .context("the server task")?
        .context("serving")?;
    outcome
}
