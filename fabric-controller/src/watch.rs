//! The watches that feed the controller, each a task sending what it sees into one channel:
//! every `NodeFabric` (reports in, statuses observed), every HyperNode, the Topology and the
//! `Fabric` object by name, the switch-table ConfigMap, and the switch-table directory (read
//! again every few seconds). A watch that expires (410 Gone) or loses the API server lists
//! again, with back-off; the controller replaces its view when the new list is complete.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use futures::{Stream, StreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt as _, watcher::watcher};
use serde::de::DeserializeOwned;
use spinel_api::crd::{Fabric, NodeFabric};
use spinel_api::kueue::Topology;
use spinel_api::volcano::HyperNode;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::inputs::SwitchEntry;
use crate::inputs::switches;

/// Something a watch saw.
#[derive(Debug)]
pub enum Msg {
    /// A `NodeFabric` event.
    NodeFabric(Event<NodeFabric>),
    /// A HyperNode event.
    HyperNode(Event<HyperNode>),
    /// A Topology event (the one by name).
    Topology(Event<Topology>),
    /// A `Fabric` event (the one by name).
    Fabric(Event<Fabric>),
    /// A switch-table ConfigMap event.
    SwitchConfigMap(Event<ConfigMap>),
    /// The switch-table directory, read again (sent when it changed, and once at start).
    SwitchDir(Result<BTreeMap<String, SwitchEntry>, String>),
}

/// What to watch.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The controller's namespace (the ConfigMap's).
    pub namespace: String,
    /// The switch-table ConfigMap, if any.
    pub config_map: Option<String>,
    /// The switch-table directory, if any, and how often to read it.
    pub dir: Option<(PathBuf, Duration)>,
    /// The Topology's name.
    pub topology: String,
    /// The `Fabric` object's name.
    pub fabric: String,
}

fn forward<K, S>(
    stream: S,
    tx: mpsc::UnboundedSender<Msg>,
    wrap: fn(Event<K>) -> Msg,
    what: &'static str,
) -> JoinHandle<()>
where
    K: Send + 'static,
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
{
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(e) => {
                    if tx.send(wrap(e)).is_err() {
                        return;
                    }
                }
                // The watcher lists again after errors, with back-off (410 Gone included).
                Err(e) => tracing::warn!("watching {what}: {e}"),
            }
        }
    })
}

fn watch_all<K>(
    client: &kube::Client,
    config: watcher::Config,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    watcher(Api::<K>::all(client.clone()), config).default_backoff()
}

/// Starts every watch of `sources`.
pub fn spawn(
    client: &kube::Client,
    sources: &Sources,
    tx: &mpsc::UnboundedSender<Msg>,
) -> Vec<JoinHandle<()>> {
    let by_name = |name: &str| watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut tasks = vec![
        forward(
            watch_all::<NodeFabric>(client, watcher::Config::default()),
            tx.clone(),
            Msg::NodeFabric,
            "NodeFabrics",
        ),
        forward(
            watch_all::<HyperNode>(client, watcher::Config::default()),
            tx.clone(),
            Msg::HyperNode,
            "HyperNodes",
        ),
        forward(
            watch_all::<Topology>(client, by_name(&sources.topology)),
            tx.clone(),
            Msg::Topology,
            "the Topology",
        ),
        forward(
            watch_all::<Fabric>(client, by_name(&sources.fabric)),
            tx.clone(),
            Msg::Fabric,
            "the Fabric",
        ),
    ];
    if let Some(name) = &sources.config_map {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &sources.namespace);
        let stream = watcher(api, by_name(name)).default_backoff();
        tasks.push(forward(
            stream,
            tx.clone(),
            Msg::SwitchConfigMap,
            "the switch-table ConfigMap",
        ));
    }
    if let Some((dir, every)) = sources.dir.clone() {
        tasks.push(tokio::spawn(poll_dir(dir, every, tx.clone())));
    }
    tasks
}

/// Reads `dir` every `every` and sends it when its contents changed.
async fn poll_dir(dir: PathBuf, every: Duration, tx: mpsc::UnboundedSender<Msg>) {
    let mut last: Option<Result<BTreeMap<String, SwitchEntry>, String>> = None;
    loop {
        let shown = dir.display().to_string();
        let read = {
            let dir = dir.clone();
            tokio::task::spawn_blocking(move || switches::read_dir(&dir))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| format!("{shown}: {e}")))
        };
        if last.as_ref() != Some(&read) {
            if let Err(e) = &read {
                tracing::warn!("cannot read the switch tables: {e}");
            }
            last = Some(read.clone());
            if tx.send(Msg::SwitchDir(read)).is_err() {
                return;
            }
        }
        tokio::time::sleep(every).await;
    }
}
