//! Publishes the node's report (`NodeFabric.spec`) by server-side apply, as field manager
//! `spinel-agent`: after a short quiet time when the observation changes, again when the
//! object disappears, and at least every resync period (someone may have edited it). An
//! unchanged report is not sent: a stable fabric costs the API server nothing.

use std::sync::Arc;
use std::time::Duration;

use kube::Api;
use spinel_api::crd::{LISTENING_SINCE_ANNOTATION, NodeFabric, NodeFabricSpec};
use spinel_kube::apply::apply_retrying;
use spinel_kube::backoff::Backoff;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::report::{Observation, spec};

/// The field manager of everything the agent writes.
pub const FIELD_MANAGER: &str = "spinel-agent";

/// Keeps `NodeFabric/<node>` equal to the latest observation until `observations` closes.
pub async fn run(
    api: Api<NodeFabric>,
    node: String,
    mut observations: watch::Receiver<Observation>,
    republish: Arc<Notify>,
    debounce: Duration,
    resync: Duration,
) {
    let mut last: Option<NodeFabricSpec> = None;
    let mut next_resync = Instant::now() + resync;
    loop {
        // A carried-over neighbour leaves the report when its TTL ends, as an aged-out one does.
        let carried_ends = observations
            .borrow()
            .carried
            .as_ref()
            .and_then(|c| c.next_deadline(std::time::Instant::now()))
            .map(Instant::from_std);
        if last.is_some() {
            let carry_over = async {
                match carried_ends {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = observations.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    // Changes that arrive together (a link flap and its LLDP) go at once.
                    tokio::time::sleep(debounce).await;
                }
                () = republish.notified() => last = None,
                () = tokio::time::sleep_until(next_resync) => last = None,
                () = carry_over => {}
            }
        }
        let (current, since) = {
            let o = observations.borrow_and_update();
            (spec(&node, &o), o.listening_since.clone())
        };
        if last.as_ref() == Some(&current) {
            continue;
        }
        apply_until_done(&api, &node, current.clone(), since).await;
        tracing::info!(
            nics = current.nics.len(),
            "published the node's fabric report"
        );
        last = Some(current);
        next_resync = Instant::now() + resync;
    }
}

/// Applies `spec`, retrying with back-off until the API server takes it.
#[tracing::instrument(name = "publish_report", skip(api, spec), fields(nics = spec.nics.len()))]
async fn apply_until_done(
    api: &Api<NodeFabric>,
    node: &str,
    spec: NodeFabricSpec,
    listening_since: Option<String>,
) {
    let mut object = NodeFabric::new(node, spec);
    if let Some(since) = listening_since {
        object.metadata.annotations = Some(
            [(LISTENING_SINCE_ANNOTATION.to_owned(), since)]
                .into_iter()
                .collect(),
        );
    }
    let what = format!("NodeFabric/{node} (the node's fabric report)");
    let mut backoff = Backoff::default();
    apply_retrying(api, node, FIELD_MANAGER, &object, &mut backoff, None, &what).await;
}
