//! Applies the labels the fabric controller computed (in `NodeFabric/<node>.status`) to this
//! node's own Node object, by server-side apply as field manager `spinel-agent`, keys under
//! Spinel's prefix only. Server-side apply removes a key the agent applied before and no
//! longer applies, and never touches a key another manager owns. Until the controller has
//! looked at the report (no status yet), the Node keeps the labels it has. The Node is
//! watched too: a label under the prefix that someone else changed is put back.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use spinel_api::crd::NodeFabric;
use spinel_api::labels::LabelOptions;
use spinel_kube::apply::apply_retrying;
use spinel_kube::backoff::Backoff;
use tokio::sync::Notify;

use crate::report_publisher::FIELD_MANAGER;

/// Watches `NodeFabric/<node>` and keeps the Node's labels equal to its status; asks for the
/// report to be published again when the object is deleted.
pub async fn run(
    fabrics: Api<NodeFabric>,
    nodes: Api<Node>,
    node: String,
    options: LabelOptions,
    republish: Arc<Notify>,
) {
    let config = watcher::Config::default().fields(&format!("metadata.name={node}"));
    let reports = watcher(fabrics, config.clone()).default_backoff();
    let own = watcher(nodes.clone(), config).default_backoff();
    futures::pin_mut!(reports, own);
    let mut applied: Option<BTreeMap<String, String>> = None;
    let mut wanted: Option<BTreeMap<String, String>> = None;
    let mut on_node: Option<BTreeMap<String, String>> = None;
    // Whether the current (re)list has shown the object: a list that ends without it means it
    // was deleted while the watch was away (an expired resourceVersion), with no Delete event.
    let mut listed = false;
    loop {
        tokio::select! {
            event = reports.next() => match event {
                Some(Ok(watcher::Event::Apply(nf))) => {
                    if let Some(w) = desired(&nf, &options) {
                        wanted = Some(w);
                    }
                }
                Some(Ok(watcher::Event::InitApply(nf))) => {
                    listed = true;
                    if let Some(w) = desired(&nf, &options) {
                        wanted = Some(w);
                    }
                }
                Some(Ok(watcher::Event::Delete(_))) => {
                    tracing::warn!(node, "the node's NodeFabric was deleted; publishing it again");
                    republish.notify_one();
                }
                Some(Ok(watcher::Event::Init)) => listed = false,
                Some(Ok(watcher::Event::InitDone)) => {
                    if !listed {
                        tracing::warn!(node, "the node's NodeFabric is gone (found missing on a relist); publishing it again");
                        republish.notify_one();
                    }
                }
                // The watcher re-lists after errors, with back-off (a 410 Gone included).
                Some(Err(e)) => tracing::warn!(node, "watching the node's NodeFabric: {e}"),
                None => return,
            },
            event = own.next() => match event {
                Some(Ok(watcher::Event::Apply(n) | watcher::Event::InitApply(n))) => {
                    on_node = Some(n.metadata.labels.unwrap_or_default());
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => tracing::warn!(node, "watching the node: {e}"),
                None => return,
            },
        }
        let Some(w) = &wanted else { continue };
        let drifted = on_node
            .as_ref()
            .is_some_and(|labels| w.iter().any(|(k, v)| labels.get(k) != Some(v)));
        if (applied.as_ref() != Some(w) || drifted) && apply(&nodes, &node, w).await {
            applied = Some(w.clone());
        }
    }
}

/// The labels the status asks for, keys under the prefix only; `None` until the controller
/// has processed the report.
pub fn desired(nf: &NodeFabric, options: &LabelOptions) -> Option<BTreeMap<String, String>> {
    let status = nf.status.as_ref().filter(|s| s.observed_generation > 0)?;
    Some(
        status
            .labels
            .iter()
            .filter(|(k, _)| options.is_managed_key(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Applies `labels` to the Node (a few attempts; the next event or resync tries again).
#[tracing::instrument(name = "node_labels", skip(nodes, labels), fields(labels = labels.len()))]
async fn apply(nodes: &Api<Node>, node: &str, labels: &BTreeMap<String, String>) -> bool {
    let patch = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node, "labels": labels},
    });
    let what = format!("the fabric labels of Node/{node}");
    let mut backoff = Backoff::default();
    let done = apply_retrying(
        nodes,
        node,
        FIELD_MANAGER,
        &patch,
        &mut backoff,
        Some(5),
        &what,
    )
    .await
    .is_some();
    if done {
        tracing::info!(
            node,
            labels = labels.len(),
            "applied the fabric labels to the node"
        );
    }
    done
}

#[cfg(test)]
mod tests {
    use spinel_api::crd::{NodeFabricSpec, NodeFabricStatus};

    use super::*;

    #[test]
    fn only_processed_status_and_keys_under_the_prefix_count() {
        let mut nf = NodeFabric::new("n1", NodeFabricSpec::default());
        let options = LabelOptions::default();
        assert_eq!(
            desired(&nf, &options),
            None,
            "no status yet: leave the Node alone"
        );
        let mut labels = BTreeMap::new();
        labels.insert("fabric.spinel.dev/tier-1".to_owned(), "leaf01".to_owned());
        labels.insert("kubernetes.io/hostname".to_owned(), "evil".to_owned());
        nf.status = Some(NodeFabricStatus {
            labels,
            observed_generation: 0,
            ..NodeFabricStatus::default()
        });
        assert_eq!(desired(&nf, &options), None, "not processed yet");
        nf.status.as_mut().unwrap().observed_generation = 3;
        let got = desired(&nf, &options).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got["fabric.spinel.dev/tier-1"], "leaf01");
    }
}
