//! The agent as a Dynamic Resource Allocation driver (`roce.spinel.dev`): it publishes the
//! node's RoCE VFs (and PFs, for shared-RDMA setups) as devices in ResourceSlices, each with
//! its PCIe root, NUMA node and place in the fabric, and taints the devices of a NIC it finds
//! unhealthy. kube-scheduler allocates them to claims; nothing here chooses a device.
//!
//! - [`settings`]: the `dra:` section of the file;
//! - [`inventory`]: PFs and VFs from sysfs (a plain thread);
//! - [`devices`]: each NIC's place and the devices (pure);
//! - [`taints`]: per-NIC hysteresis, and which findings still shield the node;
//! - [`slices`]: the pool cut into slices, and the writes that get there (pure);
//! - [`publisher`]: the loop that keeps the API server's slices equal to the devices;
//! - [`kubelet_plugin`], [`kubelet_api`], [`prepared`]: the kubelet plugin (registration,
//!   `NodePrepareResources`/`NodeUnprepareResources`), its journal and CDI specs;
//! - [`claim_status`]: prepared claims' `status.devices` (KEP-4817) from the CNI's records.

pub mod claim_status;
pub mod devices;
pub mod inventory;
pub mod kubelet_api;
pub mod kubelet_plugin;
pub mod prepared;
pub mod publisher;
pub mod settings;
pub mod slices;
pub mod taints;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use hostnet::sriov::Sysfs;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::ResourceSlice;
use kube::Api;
use spinel_api::crd::NodeFabricStatus;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::AgentConfig;
use crate::report::Observation;
use devices::NicTaints;
use settings::Dra;
use taints::NicShields;

/// Every period of the health checks, the NICs' findings through their shields into `out`.
async fn shield_nics(
    observation: watch::Receiver<Observation>,
    health: crate::settings::Health,
    settings: Dra,
    out: watch::Sender<NicTaints>,
) {
    let mut shields = NicShields::default();
    let mut tick = tokio::time::interval(health.period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let taints = {
            let o = observation.borrow();
            shields.update(
                Instant::now(),
                &o.nics,
                &o.health,
                &health,
                &settings.evict_on,
            )
        };
        out.send_if_modified(|t| {
            let changed = *t != taints;
            if changed {
                tracing::info!(tainted = ?taints.keys().collect::<Vec<_>>(), "NIC device taints changed");
                *t = taints;
            }
            changed
        });
    }
}

/// The running driver: its tasks and its inventory thread.
pub struct Driver {
    tasks: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Driver {
    /// Stops it; the slices stay (a restarted agent takes them over, the kubelet wipes them
    /// when the driver stays away).
    pub fn stop(self) {
        for t in self.tasks {
            t.abort();
        }
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread {
            let _ = thread.join();
        }
    }
}

/// Starts publishing, when `config.dra` says so.
pub fn start(
    config: &AgentConfig,
    client: &kube::Client,
    observation: &Arc<watch::Sender<Observation>>,
    status: watch::Receiver<Option<NodeFabricStatus>>,
) -> Option<Driver> {
    let settings = config.dra.clone()?;
    let settings_plugin = settings.kubelet_plugin.clone();
    let status_period = settings.inventory_period;
    let node = config.node_name.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let (inventory_tx, inventory_rx) = watch::channel(inventory::Inventory::new());
    let thread = inventory::watch(
        Sysfs::new(&config.sysfs_root),
        Arc::clone(observation),
        inventory_tx,
        settings.inventory_period,
        Arc::clone(&stop),
    )
    .inspect_err(|e| tracing::error!("cannot start the DRA inventory thread: {e}"))
    .ok();
    let (taints_tx, taints_rx) = watch::channel(NicTaints::new());
    let (published_tx, published_rx) = watch::channel(Vec::new());
    let mut tasks = vec![
        tokio::spawn(shield_nics(
            observation.subscribe(),
            config.duties.health.clone(),
            settings.clone(),
            taints_tx,
        )),
        tokio::spawn(publisher::run(
            Api::<ResourceSlice>::all(client.clone()),
            Api::<Node>::all(client.clone()),
            node,
            config.labels.clone(),
            settings,
            publisher::Sources {
                observation: observation.subscribe(),
                inventory: inventory_rx,
                status,
                taints: taints_rx,
            },
            published_tx,
        )),
    ];
    if let Some(plugin) = settings_plugin {
        let journal = prepared::Journal {
            state_dir: plugin.state_dir.clone(),
            cdi_dir: plugin.cdi_dir.clone(),
        };
        tasks.push(tokio::spawn(claim_status::run(
            client.clone(),
            journal.clone(),
            config.duties.garp.records_dir(),
            status_period,
        )));
        let serving = kubelet_plugin::Plugin {
            node: config.node_name.clone(),
            client: client.clone(),
            devices: published_rx,
            journal,
            sysfs_root: config.sysfs_root.clone(),
        };
        tasks.push(tokio::spawn(async move {
            if let Err(e) = kubelet_plugin::serve(serving, plugin).await {
                tracing::error!("the DRA kubelet plugin cannot serve: {e}");
            }
        }));
    }
    Some(Driver {
        tasks,
        stop,
        thread,
    })
}
