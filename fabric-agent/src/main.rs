//! `spinel-agent`: Spinel's node agent (a DaemonSet, one per node).
//!
//! It finds the node's RoCE NICs, listens (and optionally advertises) LLDP on them, publishes
//! what it sees as the node's `NodeFabric` report, and applies the labels the fabric
//! controller computed back to its own Node. Its node duties (see `duties`): host policy
//! routing kept right, announcements after carrier up, RoCE health as a condition and taint,
//! Prometheus metrics and probes. Kernel state is read from ordinary threads; the async
//! runtime only waits on sockets and the API server. SIGTERM stops it cleanly (sending the
//! shutdown LLDPDU when advertising); labels, routes and rules stay where they are.

mod config;
mod duties;
mod garp;
mod health;
mod http;
mod kernel_events;
mod labeler;
mod metrics;
mod node_status;
mod observe;
mod publisher;
mod readings;
mod report;
mod routes;
mod settings;
mod shield;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::packet::PacketSocket;
use hostnet::sriov::Sysfs;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use spinel_api::crd::NodeFabric;
use spinel_node::lldp::{LldpPorts, open_ports};
use spinel_node::nics::{self, RoceNic};
use tokio::sync::{Notify, watch};

use crate::config::{AgentConfig, Flags, LogFormat};
use crate::report::Observation;

/// How often the NICs are looked at again (carrier, MTU, addresses).
const NIC_PERIOD: Duration = Duration::from_secs(2);

fn main() -> ExitCode {
    let flags = Flags::parse();
    init_logging(&flags);
    let config = match AgentConfig::load(&flags) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("invalid configuration: {e:#}");
            return ExitCode::from(2);
        }
    };
    match run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(flags: &Flags) {
    let filter = tracing_subscriber::EnvFilter::try_new(&flags.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match flags.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.with_ansi(false).init(),
    }
}

/// Opens everything that lives in a namespace (from this plain thread), then serves.
fn run(config: AgentConfig) -> anyhow::Result<()> {
    let ns = match &config.netns {
        Some(path) => NetNs::open(path).with_context(|| format!("--netns {}", path.display()))?,
        None => NetNs::current().context("cannot open the agent's network namespace")?,
    };
    let foreign = config.netns.is_some();
    let sysfs = Sysfs::new(&config.sysfs_root);
    let mut host = RouteSocket::open_in(&ns).context("cannot open a netlink socket")?;
    let (found, refused) =
        nics::discover(&sysfs, &mut host, &config.nics).context("cannot list the NICs")?;
    for r in &refused {
        tracing::warn!(nic = %r.name, reason = %r.reason, "not a RoCE NIC; not listening there");
    }
    if found.is_empty() {
        tracing::warn!("no RoCE NIC found; the node is reported without any");
    }
    let names: Vec<String> = found.iter().map(|n| n.name.clone()).collect();
    let sockets = open_ports(&ns, &names).context("cannot open the LLDP sockets")?;
    tracing::info!(node = %config.node_name, nics = ?names, "starting");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let (rtnl, events) = hostnet::rtnl::open_in(&ns, runtime.handle())?;
    // Pause counters are a metric, not a duty: without the socket the rest still runs.
    let ethtool = hostnet::ethtool::EthtoolSocket::open_in(&ns)
        .inspect_err(|e| tracing::warn!("no driver statistics (pause counters): {e}"))
        .ok();
    let kernel = duties::Kernel {
        ns: Arc::new(ns),
        foreign,
        rtnl,
        events,
    };
    runtime.block_on(serve(config, sysfs, host, found, sockets, kernel, ethtool))
}

async fn client(config: &AgentConfig) -> anyhow::Result<kube::Client> {
    let cfg = match &config.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::incluster().context("not in a cluster: pass --kubeconfig")?,
    };
    Ok(kube::Client::try_from(cfg)?)
}

async fn serve(
    config: AgentConfig,
    sysfs: Sysfs,
    host: RouteSocket,
    found: Vec<RoceNic>,
    sockets: Vec<PacketSocket>,
    kernel: duties::Kernel,
    ethtool: Option<hostnet::ethtool::EthtoolSocket>,
) -> anyhow::Result<()> {
    let terminated = termination()?;
    let client = client(&config).await?;
    let node = config.node_name.clone();
    let mut ports = LldpPorts::new(sockets, config.max_neighbors)?;
    if let Some(timing) = config.transmit {
        for nic in &found {
            let advert = observe::advert(&node, nic, timing).map_err(anyhow::Error::msg)?;
            ports
                .advertise(&nic.name, advert, Instant::now())
                .map_err(anyhow::Error::msg)?;
        }
    }
    let (tx, rx) = watch::channel(Observation {
        nics: found,
        ..Observation::default()
    });
    let tx = Arc::new(tx);
    let stop = Arc::new(AtomicBool::new(false));
    let nic_watch = observe::watch_nics(
        sysfs,
        host,
        config.nics.clone(),
        NIC_PERIOD,
        Arc::clone(&tx),
        ports.own_sources(),
        Arc::clone(&stop),
    );
    let republish = Arc::new(Notify::new());
    let fabrics: Api<NodeFabric> = Api::all(client.clone());
    let publisher = tokio::spawn(publisher::run(
        fabrics.clone(),
        node.clone(),
        rx,
        Arc::clone(&republish),
        config.debounce,
        config.resync,
    ));
    let labeler = tokio::spawn(labeler::run(
        fabrics,
        Api::<Node>::all(client.clone()),
        node.clone(),
        config.labels.clone(),
        republish,
    ));
    let metrics = metrics::Metrics::new(config.sysfs_root.clone(), ethtool);
    let running = duties::start(&config, kernel, client, Arc::clone(&tx), metrics.clone());
    let on_event = duties::counting_lldp(metrics, observe::on_lldp_event(&node, &tx));
    let result = ports.run(terminated, on_event).await;
    tracing::info!("stopping; host routes, rules and labels stay in place");
    stop.store(true, Ordering::Relaxed);
    running.stop();
    publisher.abort();
    labeler.abort();
    let _ = nic_watch.join();
    Ok(result?)
}

/// Registers SIGTERM and SIGINT handlers now (a signal arriving before would kill the agent
/// without its shutdown LLDPDU) and returns what completes on either.
fn termination() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
