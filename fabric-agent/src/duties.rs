//! Starts the node duties beside the report and the labels: host routing, announcements after
//! carrier up, RoCE health (report findings, condition, taint), metrics and probes. Kernel
//! work runs on plain threads (announcements, health readings); the runtime carries the
//! rtnetlink sockets, the API server and HTTP. Stopping aborts the tasks and leaves the host's
//! routes, rules and sysctls in place.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use hostnet::netns::NetNs;
use hostnet::rtnl::{Events, Rtnl};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use spinel_api::crd::NodeFabricStatus;
use spinel_kube::shutdown::Shutdown;
use spinel_node::lldp::Event;
use spinel_wire::lldp::RemoteTable;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::announcements::{self, Bursts};
use crate::config::AgentConfig;
use crate::host_routing::{self, Router};
use crate::kernel_events;
use crate::metrics::Metrics;
use crate::probes::{AgentHealth, Probes};
use crate::readings::Reader;
use crate::report::Observation;
use crate::shielding::Shielding;

/// The running duties.
pub struct Running {
    tasks: Vec<JoinHandle<()>>,
}

impl Running {
    /// Stops the tasks (the threads end when their channels close); host state stays.
    pub fn stop(self) {
        for t in self.tasks {
            t.abort();
        }
    }
}

/// The kernel side, opened before the runtime serves (from the main thread).
pub struct Kernel {
    /// The NICs' namespace.
    pub ns: Arc<NetNs>,
    /// Whether that is not the agent's own namespace.
    pub foreign: bool,
    /// rtnetlink requests.
    pub rtnl: Rtnl,
    /// rtnetlink events.
    pub events: Events,
}

/// Starts every duty. `observation` is the report's source (health findings go in).
pub fn start(
    config: &AgentConfig,
    kernel: Kernel,
    client: kube::Client,
    observation: Arc<watch::Sender<Observation>>,
    metrics: Metrics,
    status: watch::Receiver<Option<NodeFabricStatus>>,
    shutdown: Shutdown,
) -> Running {
    let d = &config.duties;
    let mut tasks = Vec::new();
    let probes = Arc::new(Probes::default());

    let bursts: Option<Bursts> = d.garp.enabled.then(|| {
        let (bursts, _thread) =
            announcements::spawn(Arc::clone(&kernel.ns), d.garp.clone(), metrics.clone());
        if d.garp.on_start {
            for nic in observation.borrow().nics.iter().filter(|n| n.carrier) {
                bursts.start(&nic.name);
            }
        }
        bursts
    });

    let routes_changed = Arc::new(Notify::new());
    tasks.push(tokio::spawn(kernel_events::run(
        kernel.events,
        observation.subscribe(),
        Arc::clone(&routes_changed),
        bursts,
    )));
    if d.routing.enabled {
        let router = Router {
            rtnl: kernel.rtnl,
            settings: d.routing.clone(),
            netns: kernel.foreign.then(|| Arc::clone(&kernel.ns)),
            metrics: metrics.clone(),
        };
        tasks.push(tokio::spawn(host_routing::run(
            router,
            observation.subscribe(),
            routes_changed,
            Arc::clone(&probes.routes),
        )));
    } else {
        probes.routes.store(true, Ordering::Relaxed);
    }

    let shielding = Shielding {
        settings: d.health.clone(),
        node: config.node_name.clone(),
        nodes: Api::<Node>::all(client),
        observation: Arc::clone(&observation),
        status,
        reader: Reader::spawn(
            Arc::clone(&kernel.ns),
            config.sysfs_root.clone(),
            d.health.dcb_replay_dir.clone(),
        ),
        metrics: metrics.clone(),
        probes: Arc::clone(&probes),
        node_wide_only: config.dra.is_some(),
    };
    tasks.push(tokio::spawn(shielding.run()));
    tasks.push(tokio::spawn(nic_metrics(
        observation.subscribe(),
        metrics.clone(),
    )));

    if let Some(address) = d.metrics.address {
        let health = AgentHealth {
            metrics,
            probes,
            stale: d.health.period * 10 + std::time::Duration::from_secs(30),
        };
        let router = spinel_kube::probes::router(Arc::new(health));
        tasks.push(tokio::spawn(async move {
            match spinel_kube::probes::serve(address, router, shutdown).await {
                Ok(server) => match server.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::error!(%address, "serving metrics and probes: {e}"),
                    Err(e) => tracing::error!(%address, "the probe server: {e}"),
                },
                Err(e) => tracing::error!(%address, "cannot serve metrics and probes: {e}"),
            }
        }));
    }
    Running { tasks }
}

/// Keeps the NIC and neighbour-count metrics equal to the observation.
async fn nic_metrics(mut observations: watch::Receiver<Observation>, metrics: Metrics) {
    loop {
        {
            let o = observations.borrow_and_update();
            metrics.set_nics(&o.nics);
            if let Some(table) = &o.table {
                for port in &table.ports {
                    metrics
                        .lldp()
                        .set_neighbors(&port.port, port.neighbors.len());
                }
            }
        }
        if observations.changed().await.is_err() {
            return;
        }
    }
}

/// Wraps the LLDP event handler so every event also updates the LLDP metrics.
pub fn counting_lldp<'h>(
    metrics: Metrics,
    mut inner: impl FnMut(Event<'_>, &RemoteTable) -> ControlFlow<()> + 'h,
) -> impl FnMut(Event<'_>, &RemoteTable) -> ControlFlow<()> + 'h {
    let mut ports: Vec<String> = Vec::new();
    move |event, table| {
        match &event {
            Event::Received { port, .. } => {
                if !ports.iter().any(|p| p == port) {
                    ports.push((*port).to_owned());
                }
                if let Some(c) = table.counters(port) {
                    metrics.lldp().set_counters(port, c);
                }
            }
            // Ageouts count on the ports that had neighbours.
            Event::Expired { .. } => {
                for port in &ports {
                    if let Some(c) = table.counters(port) {
                        metrics.lldp().set_counters(port, c);
                    }
                }
            }
            Event::Ignored { .. } => {
                metrics.lldp_ignored.inc();
            }
            Event::Sent { .. } => {}
        }
        inner(event, table)
    }
}
