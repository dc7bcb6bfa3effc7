//! `spinel-agent`: Spinel's node agent (a DaemonSet, one per node), as a library; the binary
//! only parses its flags and calls [`run`].
//!
//! It finds the node's RoCE NICs, listens (and optionally advertises) LLDP on them, publishes
//! what it sees as the node's `NodeFabric` report, and applies the labels the fabric
//! controller computed back to its own Node. Kernel state is read from ordinary threads; the
//! async runtime only waits on sockets and the API server. SIGTERM stops it cleanly (sending the
//! shutdown LLDPDU when advertising); labels, routes and rules stay where they are.
//!
//! What it keeps right, one module each:
//! - [`report`], [`report_publisher`]: the node's report (`NodeFabric.spec`) equal to what its
//!   NICs and LLDP show ([`observe`] watches both);
//! - [`node_labels`]: the Node's fabric labels equal to the controller's answer;
//! - [`host_routing`]: per-NIC policy routing on the host ([`kernel_events`] wakes it);
//! - [`announcements`]: gratuitous ARP / unsolicited NA after carrier up, for the host and
//!   every pod the CNI attached on that NIC;
//! - [`roce_health`], [`shielding`], [`node_condition`]: RoCE health per NIC (from
//!   [`readings`]) as report findings, the `RoCEFabricReady` condition and the degraded taint;
//! - [`dra`]: the node's RoCE devices as a Dynamic Resource Allocation driver's
//!   ResourceSlices, with per-NIC health as device taints;
//! - [`metrics`], [`probes`]: Prometheus metrics and what `/healthz`, `/readyz` answer;
//! - [`cni_install`]: the `install-cni` init container (the `spinel` plugin and its node
//!   settings onto the node);
//! - [`device_plugin`]: the rails' VFs as extended resources for the kubelet (on the gRPC
//!   plumbing of [`kubelet_plugin`]);
//! - [`duties`]: starts the node duties; [`config`], [`settings`], [`config_error`]: flags and
//!   the file, and what is wrong with them.

pub mod announcements;
pub mod cni_install;
pub mod config;
pub mod config_error;
pub mod device_plugin;
pub mod dra;
pub mod duties;
pub mod host_routing;
pub mod kernel_events;
pub mod kubelet_plugin;
pub mod metrics;
pub mod node_condition;
pub mod node_labels;
pub mod observe;
pub mod own_status;
pub mod probes;
pub mod readings;
pub mod report;
pub mod report_publisher;
pub mod roce_health;
pub mod settings;
pub mod shielding;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::packet::PacketSocket;
use hostnet::sriov::Sysfs;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use spinel_api::crd::NodeFabric;
use spinel_kube::shutdown::Shutdown;
use spinel_node::cni_settings;
use spinel_node::lldp::{LldpPorts, open_ports};
use spinel_node::nics::{self, RoceNic};
use tokio::sync::{Notify, watch};

use crate::config::AgentConfig;
use crate::report::Observation;

/// How often the NICs are looked at again (carrier, MTU, addresses).
const NIC_PERIOD: Duration = Duration::from_secs(2);

/// Why the agent could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// `--netns` or the agent's own namespace cannot be opened.
    #[error("cannot open network namespace {what}")]
    Netns {
        /// Which.
        what: String,
        /// Why.
        #[source]
        source: hostnet::netns::NetNsError,
    },
    /// A kernel socket or listing failed.
    #[error("cannot {what}")]
    Kernel {
        /// What failed.
        what: &'static str,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The API client.
    #[error(transparent)]
    Client(#[from] spinel_kube::client::ClientError),
    /// The LLDP advertisement of a NIC cannot be built.
    #[error("cannot advertise LLDP on {nic}")]
    Advert {
        /// The NIC.
        nic: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

fn kernel_err(
    what: &'static str,
) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> AgentError {
    move |source| AgentError::Kernel { what, source }
}

/// Runs the agent until SIGTERM or SIGINT: opens everything that lives in a namespace (from
/// this plain thread, never a runtime worker), then serves.
pub fn run(config: AgentConfig) -> Result<(), AgentError> {
    let ns = match &config.netns {
        Some(path) => NetNs::open(path).map_err(|source| AgentError::Netns {
            what: path.display().to_string(),
            source,
        })?,
        None => NetNs::current().map_err(|source| AgentError::Netns {
            what: "of the agent".into(),
            source,
        })?,
    };
    let foreign = config.netns.is_some();
    let sysfs = Sysfs::new(&config.sysfs_root);
    let mut host =
        RouteSocket::open_in(&ns).map_err(|e| kernel_err("open a netlink socket")(e.into()))?;
    let (found, refused) = nics::discover(&sysfs, &mut host, &config.nics)
        .map_err(|e| kernel_err("list the NICs")(e.into()))?;
    for r in &refused {
        tracing::warn!(nic = %r.name, reason = %r.reason, "not a RoCE NIC; not listening there");
    }
    if found.is_empty() {
        tracing::warn!("no RoCE NIC found; the node is reported without any");
    }
    let names: Vec<String> = found.iter().map(|n| n.name.to_string()).collect();
    let sockets =
        open_ports(&ns, &names).map_err(|e| kernel_err("open the LLDP sockets")(e.into()))?;
    tracing::info!(node = %config.node_name, nics = ?names, "starting");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| kernel_err("start the runtime")(e.into()))?;
    let (rtnl, events) = hostnet::rtnl::open_in(&ns, runtime.handle())
        .map_err(|e| kernel_err("open rtnetlink")(e.into()))?;
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

async fn serve(
    mut config: AgentConfig,
    sysfs: Sysfs,
    host: RouteSocket,
    found: Vec<RoceNic>,
    sockets: Vec<PacketSocket>,
    kernel: duties::Kernel,
    ethtool: Option<hostnet::ethtool::EthtoolSocket>,
) -> Result<(), AgentError> {
    // Handlers first: a signal arriving later must bring the shutdown LLDPDU, not kill us.
    let shutdown =
        Shutdown::register().map_err(|e| kernel_err("handle SIGTERM and SIGINT")(e.into()))?;
    // The device plugin needs neither the API server nor LLDP: it starts first.
    let device_plugin = config.device_plugin.clone().map(|dp| {
        tokio::spawn(device_plugin::run(
            dp,
            config.sysfs_root.clone(),
            shutdown.clone(),
        ))
    });
    let client = spinel_kube::client::client(config.kubeconfig.as_deref()).await?;
    let node = config.node_name.clone();
    let mut ports = LldpPorts::new(sockets, config.max_neighbors)
        .map_err(|e| kernel_err("listen for LLDP")(e.into()))?;
    if let Some(timing) = config.transmit {
        for nic in &found {
            let advert = |source: Box<dyn std::error::Error + Send + Sync>| AgentError::Advert {
                nic: nic.name.to_string(),
                source,
            };
            let frame = observe::advert(&node, nic, timing).map_err(|e| advert(e.into()))?;
            ports
                .advertise(&nic.name, frame, Instant::now())
                .map_err(|e| advert(e.into()))?;
        }
    }
    let fabrics: Api<NodeFabric> = Api::all(client.clone());
    // What the previous agent published, so a restart does not publish less than it knew.
    let (carried, health) = report::published(&fabrics, &node).await;
    let (tx, rx) = watch::channel(Observation {
        nics: found,
        carried,
        health,
        listening_since: Some(k8s_openapi::jiff::Timestamp::now().to_string()),
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
    let publisher = tokio::spawn(report_publisher::run(
        fabrics.clone(),
        node.clone(),
        rx,
        Arc::clone(&republish),
        config.debounce,
        config.resync,
    ));
    let labeler = tokio::spawn(node_labels::run(
        fabrics,
        Api::<Node>::all(client.clone()),
        node.clone(),
        config.labels.clone(),
        republish,
    ));
    // The node's NodeFabric status, for the health pass and the DRA driver: one watch.
    let (status_tx, status) = watch::channel(None);
    let own_status = tokio::spawn(own_status::watch(
        Api::<NodeFabric>::all(client.clone()),
        node.clone(),
        status_tx,
    ));
    // The CNI's journal and records, where its own node settings put them (read as the CNI
    // reads them), unless the agent's configuration names the records' directory.
    let settings_path = std::env::var(cni_settings::PATH_ENV).ok();
    let cni = cni_settings::Settings::load(settings_path.as_deref())
        .inspect_err(|e| tracing::warn!("no VF claim or IPAM release metrics: {e}"))
        .ok();
    if config.duties.garp.records_dir.is_none() {
        config.duties.garp.records_dir = cni.as_ref().map(|s| s.roce_info_dir.clone());
    }
    let driver = dra::start(&config, &client, &tx, status.clone());
    let metrics = metrics::Metrics::new(config.sysfs_root.clone(), ethtool);
    if let Some(cni) = &cni {
        metrics.watch_cni_journal(cni.state_dir.clone());
    }
    let running = duties::start(
        &config,
        kernel,
        client,
        Arc::clone(&tx),
        metrics.clone(),
        status,
        shutdown.clone(),
    );
    let on_event = duties::counting_lldp(metrics, observe::on_lldp_event(&node, &tx));
    let result = ports.run(shutdown.wait(), on_event).await;
    tracing::info!("stopping; host routes, rules and labels stay in place");
    // LLDP can also end without a signal (no NIC to listen on): the device plugin stops too.
    shutdown.trigger();
    stop.store(true, Ordering::Relaxed);
    running.stop();
    if let Some(driver) = driver {
        driver.stop();
    }
    publisher.abort();
    labeler.abort();
    own_status.abort();
    let _ = nic_watch.join();
    if let Some(plugin) = device_plugin {
        // It stops on the same shutdown, removing its sockets.
        match plugin.await {
            Ok(Err(e)) => tracing::error!("{:#}", anyhow::Error::new(e)),
            Err(e) => tracing::error!("device plugin task: {e}"),
            Ok(Ok(())) => {}
        }
    }
    result.map_err(|e| kernel_err("run LLDP")(e.into()))
}
