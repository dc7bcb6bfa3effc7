//! `spinel-scheduler`: the kube-scheduler extender. Wiring only: flags, the runtime shell from
//! `spinel-kube` (logging, client, signals, election), the watches and the server. The cluster
//! view comes from watches on the API server (or, for tests and benchmarks, from a
//! `kubectl get nodes -o json` file); the extender listens on `--listen` and stops cleanly on
//! SIGTERM or SIGINT. With `--leader-elect` several replicas run; the one holding the Lease
//! watches and decides, the others only wait for it (and a leader that loses the Lease exits,
//! to come back as one).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::core::v1::Node;
use spinel_api::labels::{KeyMode, LabelOptions};
use spinel_kube::lease::{Election, LeaseArgs, LeaseConfig, unique_identity};
use spinel_kube::logging::LogArgs;
use spinel_kube::shutdown::Shutdown;
use spinel_placement::annotations::ParseOptions;
use spinel_placement::{ClusterOptions, EngineOptions, HoldLimits, PlanOptions};
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
    /// Seconds part of a gang may stay bound where the rest of it cannot join before the gang
    /// is released whole (its bound pods evicted) and planned again.
    #[arg(long, default_value_t = 30)]
    stranded_grace: u64,
    /// Most ranks held over all gangs at once; a gang past it is refused with the reason.
    #[arg(long, default_value_t = 1 << 20)]
    max_held_ranks: u64,
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
    /// Lease timing.
    #[command(flatten)]
    lease: LeaseArgs,
    /// kubeconfig to use instead of the in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Logging.
    #[command(flatten)]
    log: LogArgs,
}

fn lease_config(args: &Args) -> anyhow::Result<LeaseConfig> {
    let pod = std::env::var("POD_NAME").unwrap_or_else(|_| "spinel-scheduler".to_owned());
    Ok(args.lease.config(
        &args.lease_namespace,
        &args.lease_name,
        unique_identity(&pod),
    )?)
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
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    tracing::info!(identity = %config.identity, lease = %config.name, "standing by for the lease");
    let election = Election::start(client.clone(), config);
    let mut changes = election.leading();
    tokio::select! {
        _ = changes.wait_for(|l| *l) => {},
        () = shutdown.wait() => {
            election.stop().await;
            return Ok(());
        }
    }
    start_watches(&client, state, start);
    leading.store(true, Ordering::Release);
    let outcome = tokio::select! {
        _ = changes.wait_for(|l| !*l) => Err(anyhow::anyhow!("stepped down: the lease is lost")),
        () = shutdown.wait() => Ok(()),
    };
    leading.store(false, Ordering::Release);
    election.stop().await;
    outcome
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    spinel_kube::logging::init(&args.log);
    let shutdown = Shutdown::register()?;
    let mut state = State::new(config(&args)?);
    state.set_limits(HoldLimits {
        stranded_grace_ms: args.stranded_grace.saturating_mul(1000),
        max_held_ranks: args.max_held_ranks,
    });
    let state = Arc::new(Mutex::new(state));
    let lease = args.leader_elect.then(|| lease_config(&args)).transpose()?;
    let start = Instant::now();
    let (client, publisher): (_, Arc<dyn Publisher>) = match &args.nodes_file {
        Some(path) => {
            load_nodes_file(&state, path)?;
            (None, Arc::new(Recorder::default()))
        }
        None => {
            let client = spinel_kube::client::client(args.kubeconfig.as_deref()).await?;
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
    let stopped = shutdown.clone();
    let server = tokio::spawn(
        axum::serve(listener, router(app))
            .with_graceful_shutdown(async move { stopped.wait().await })
            .into_future(),
    );
    let outcome = match (client, lease) {
        (Some(client), Some(lease)) => {
            lead(client, lease, &state, &leading, start, &shutdown).await
        }
        (Some(client), None) => {
            start_watches(&client, &state, start);
            shutdown.wait().await;
            Ok(())
        }
        (None, _) => {
            shutdown.wait().await;
            Ok(())
        }
    };
    shutdown.trigger();
    server
        .await
        .context("the server task")?
        .context("serving")?;
    outcome
}
