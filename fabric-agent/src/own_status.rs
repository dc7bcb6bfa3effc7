//! The node's own `NodeFabric` status as the fabric controller writes it (the node's labels,
//! the cabling findings about it), from one watch for every duty that reads it: the health
//! pass (cabling findings) and the DRA driver (labels). `node_labels` keeps its own watch: it
//! also reacts to the object's deletion and to relists.

use futures::StreamExt as _;
use kube::Api;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher;
use spinel_api::crd::{NodeFabric, NodeFabricStatus};
use tokio::sync::watch;

/// Keeps the status of `NodeFabric/<node>` current in `out` (`None` while it has none).
pub async fn watch(
    fabrics: Api<NodeFabric>,
    node: String,
    out: watch::Sender<Option<NodeFabricStatus>>,
) {
    let config = watcher::Config::default().fields(&format!("metadata.name={node}"));
    let stream = watcher(fabrics, config).default_backoff().applied_objects();
    futures::pin_mut!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(nf) => {
                out.send_if_modified(|s| {
                    let changed = *s != nf.status;
                    *s = nf.status;
                    changed
                });
            }
            Err(e) => tracing::warn!(node, "watching the node's NodeFabric status: {e}"),
        }
    }
}
