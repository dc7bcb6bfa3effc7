//! Keeps the node's ResourceSlices equal to its devices: after a short quiet time when any
//! input changes (NICs, VFs, LLDP, labels, taints), when someone else changes or deletes one
//! of them (the kubelet wipes a node's slices when it starts), and at least every resync
//! period. Each pass lists the node's slices of the driver (field selectors) and writes only
//! what [`super::slices::plan`] says, so a stable node costs the API server one list per
//! resync.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{Device, ResourceSlice};
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use spinel_api::crd::NodeFabricStatus;
use spinel_api::dra;
use spinel_api::labels::LabelOptions;
use spinel_kube::backoff::Backoff;
use tokio::sync::watch;
use tokio::time::Instant;

use super::devices::{self, Inputs, NicTaints};
use super::inventory::Inventory;
use super::settings::Dra;
use super::slices::{self, Owner, Write};
use crate::report::Observation;
use crate::report_publisher::FIELD_MANAGER;

/// Quiet time after a change before the slices are written (changes arriving together, such
/// as a link flap's carrier, LLDP and health, go in one write).
const DEBOUNCE: Duration = Duration::from_millis(200);

/// Why a pass did not complete.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The API server refused or failed a request.
    #[error("cannot {what}")]
    Api {
        /// What was attempted.
        what: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

/// The inputs of the devices.
pub struct Sources {
    /// The agent's observation (NICs, LLDP, findings).
    pub observation: watch::Receiver<Observation>,
    /// The PCI functions.
    pub inventory: watch::Receiver<Inventory>,
    /// The node's `NodeFabric` status: its labels as the controller computed them.
    pub status: watch::Receiver<Option<NodeFabricStatus>>,
    /// The NICs' taints.
    pub taints: watch::Receiver<NicTaints>,
}

/// The devices for the current inputs.
pub fn desired(
    sources: &Sources,
    node: &str,
    options: &LabelOptions,
    settings: &Dra,
) -> Vec<Device> {
    let observation = sources.observation.borrow();
    let table = observation.table_at(node, std::time::Instant::now());
    let labels = sources
        .status
        .borrow()
        .as_ref()
        // Labels only once the controller has processed a report.
        .filter(|s| s.observed_generation > 0)
        .map(|s| s.labels.clone())
        .unwrap_or_default();
    let positions = devices::positions(
        &observation.nics,
        table.as_ref(),
        &labels,
        options,
        &observation.health,
    );
    let inventory = sources.inventory.borrow();
    let taints = sources.taints.borrow();
    devices::devices(&Inputs {
        nics: &observation.nics,
        inventory: &inventory,
        positions: &positions,
        taints: &taints,
        vfs: settings.vfs,
        pfs: settings.pfs,
    })
}

/// One pass: lists the node's slices and writes what differs. Returns the writes made.
pub async fn reconcile(
    api: &Api<ResourceSlice>,
    owner: &Owner,
    desired: Vec<Device>,
) -> Result<usize, PublishError> {
    let selector = format!("spec.nodeName={},spec.driver={}", owner.node, dra::DRIVER);
    let current = api
        .list(&ListParams::default().fields(&selector))
        .await
        .map_err(|source| PublishError::Api {
            what: format!("list the ResourceSlices of {}", owner.node),
            source,
        })?;
    let writes = slices::plan(owner, desired, &current.items);
    for w in &writes {
        match w {
            Write::Delete(name) => match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(source) => {
                    return Err(PublishError::Api {
                        what: format!("delete ResourceSlice {name}"),
                        source,
                    });
                }
            },
            Write::Apply(slice) => {
                let name = slice.metadata.name.clone().unwrap_or_default();
                spinel_kube::apply::apply(api, &name, FIELD_MANAGER, slice.as_ref())
                    .await
                    .map_err(|source| PublishError::Api {
                        what: format!("apply ResourceSlice {name}"),
                        source,
                    })?;
            }
        }
    }
    Ok(writes.len())
}

/// The Node's UID (the slices' owner), retried until the API server answers.
async fn owner(nodes: &Api<Node>, node: &str) -> Owner {
    let mut backoff = Backoff::default();
    loop {
        match nodes.get(node).await {
            Ok(n) => {
                if let Some(uid) = n.metadata.uid {
                    return Owner {
                        node: node.to_owned(),
                        uid,
                    };
                }
            }
            Err(e) => tracing::warn!(node, "cannot read the Node (the slices' owner): {e}"),
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

/// Runs until the task is aborted.
pub async fn run(
    api: Api<ResourceSlice>,
    nodes: Api<Node>,
    node: String,
    options: LabelOptions,
    settings: Dra,
    mut sources: Sources,
    published: watch::Sender<Vec<Device>>,
) {
    let owner = owner(&nodes, &node).await;
    // The node's fabric position comes from its NodeFabric status: after a restart, publish
    // only once its watch has listed it (or found none), never devices without a position
    // the node has.
    if sources.status.changed().await.is_err() {
        return;
    }
    let selector = format!("spec.nodeName={node},spec.driver={}", dra::DRIVER);
    let events = watcher(api.clone(), watcher::Config::default().fields(&selector))
        .default_backoff()
        .touched_objects();
    futures::pin_mut!(events);
    let mut last: Option<Vec<Device>> = None;
    let mut backoff = Backoff::default();
    let mut next_resync = Instant::now();
    loop {
        let current = desired(&sources, &node, &options, &settings);
        published.send_if_modified(|p| {
            let changed = *p != current;
            if changed {
                p.clone_from(&current);
            }
            changed
        });
        let due = Instant::now() >= next_resync;
        if due || last.as_ref() != Some(&current) {
            let count = current.len();
            match reconcile(&api, &owner, current.clone()).await {
                Ok(writes) => {
                    if writes > 0 {
                        tracing::info!(
                            node,
                            devices = count,
                            writes,
                            "published the node's ResourceSlices"
                        );
                    }
                    last = Some(current);
                    backoff.reset();
                    next_resync = Instant::now() + settings.resync;
                }
                Err(e) => {
                    let delay = backoff.next_delay();
                    let PublishError::Api { what, source } = e;
                    tracing::warn!(node, "cannot {what}: {source}; retrying in {delay:?}");
                    last = None;
                    next_resync = Instant::now() + delay;
                }
            }
        }
        tokio::select! {
            r = sources.observation.changed() => if r.is_err() { return },
            r = sources.inventory.changed() => if r.is_err() { return },
            r = sources.status.changed() => if r.is_err() { return },
            r = sources.taints.changed() => if r.is_err() { return },
            event = events.next() => match event {
                // Someone (we, or another) wrote or deleted one of the node's slices: compare.
                Some(Ok(_)) => next_resync = Instant::now() + DEBOUNCE,
                Some(Err(e)) => tracing::warn!(node, "watching the node's ResourceSlices: {e}"),
                None => return,
            },
            () = tokio::time::sleep_until(next_resync) => {}
        }
        tokio::time::sleep(DEBOUNCE).await;
    }
}
