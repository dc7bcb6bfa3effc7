//! The cluster view from the API server: watches on Nodes (labels, allocatable, the degraded
//! taint, readiness) and Pods (usage per node, gang pods bound or gone), a ticker that expires
//! stalled reservations, and the publisher that writes pod annotations, Events and Bindings.
//!
//! A watch that restarts re-lists; objects missing from the new list are dropped, so a node
//! deleted while the watch was down does not linger in the view.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use k8s_openapi::api::scheduling::v1alpha2::PodGroup;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{
    Api, DeleteParams, EvictParams, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event as WatchEvent};
use serde_json::json;
use spinel_kube::events::{EventSpec, Reporter, event_name, pod_ref};
use tokio::sync::oneshot;

use crate::metrics::Metrics;
use crate::publish::{BindError, BindFuture, Publisher};
use crate::state::State;

/// Milliseconds since `start`, the engine's clock.
pub fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn with_state(state: &Mutex<State>, f: impl FnOnce(&mut State)) {
    match state.lock() {
        Ok(mut s) => f(&mut s),
        Err(_) => tracing::error!("state lock poisoned; dropping a watch event"),
    }
}

/// Keeps the node view in step with the API server; `loaded` fires once the first list is in.
pub async fn watch_nodes(
    client: Client,
    state: Arc<Mutex<State>>,
    start: Instant,
    loaded: oneshot::Sender<()>,
) {
    let mut loaded = Some(loaded);
    let api: Api<Node> = Api::all(client);
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut listed: HashSet<String> = HashSet::new();
    let mut known: HashSet<String> = HashSet::new();
    while let Some(event) = stream.next().await {
        let now = elapsed_ms(start);
        match event {
            Ok(WatchEvent::Init) => listed.clear(),
            Ok(WatchEvent::InitApply(n)) | Ok(WatchEvent::Apply(n)) => {
                if let Some(name) = n.metadata.name.clone() {
                    listed.insert(name.clone());
                    known.insert(name);
                }
                with_state(&state, |s| s.apply_node(&n, now));
            }
            Ok(WatchEvent::Delete(n)) => {
                if let Some(name) = n.metadata.name.as_deref() {
                    known.remove(name);
                    with_state(&state, |s| s.delete_node(name, now));
                }
            }
            Ok(WatchEvent::InitDone) => {
                let gone: Vec<String> = known.difference(&listed).cloned().collect();
                with_state(&state, |s| {
                    for name in &gone {
                        s.delete_node(name, now);
                    }
                });
                known = listed.clone();
                tracing::info!(nodes = known.len(), "node list loaded");
                if let Some(tx) = loaded.take() {
                    let _ = tx.send(());
                }
            }
            Err(e) => tracing::warn!(error = %e, "node watch error; retrying"),
        }
    }
}

/// Keeps usage and gang pods in step with the API server. Starts once `nodes_loaded` fires
/// (running pods are adopted onto known nodes); after the first pod list it takes back the
/// reservations a previous scheduler published and marks the state ready.
pub async fn watch_pods(
    client: Client,
    state: Arc<Mutex<State>>,
    start: Instant,
    nodes_loaded: oneshot::Receiver<()>,
) {
    if nodes_loaded.await.is_err() {
        tracing::error!("the node watch ended before its first list; pods are not watched");
        return;
    }
    let mut first = true;
    let api: Api<Pod> = Api::all(client);
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut listed: BTreeMap<String, Pod> = BTreeMap::new();
    let mut known: BTreeMap<String, Pod> = BTreeMap::new();
    while let Some(event) = stream.next().await {
        let now = elapsed_ms(start);
        let uid = |p: &Pod| p.metadata.uid.clone().unwrap_or_default();
        match event {
            Ok(WatchEvent::Init) => listed.clear(),
            Ok(WatchEvent::InitApply(p)) | Ok(WatchEvent::Apply(p)) => {
                with_state(&state, |s| s.apply_pod(&p, now));
                listed.insert(uid(&p), p.clone());
                known.insert(uid(&p), p);
            }
            Ok(WatchEvent::Delete(p)) => {
                known.remove(&uid(&p));
                with_state(&state, |s| s.delete_pod(&p));
            }
            Ok(WatchEvent::InitDone) => {
                let gone: Vec<Pod> = known
                    .iter()
                    .filter(|(u, _)| !listed.contains_key(*u))
                    .map(|(_, p)| p.clone())
                    .collect();
                with_state(&state, |s| {
                    for p in &gone {
                        s.delete_pod(p);
                    }
                    if first {
                        s.resume(listed.values(), now);
                    }
                    s.set_ready();
                });
                first = false;
                known = std::mem::take(&mut listed);
                tracing::info!(pods = known.len(), "pod list loaded; ready");
            }
            Err(e) => tracing::warn!(error = %e, "pod watch error; retrying"),
        }
    }
}

/// Keeps the upstream PodGroups (scheduling.k8s.io/v1alpha2) in view, so pods naming one get
/// its gang policy. When the API server does not serve them (the GenericWorkload feature and
/// the v1alpha2 API are off by default in 1.36), says so once and returns: gangs then need
/// their size on the pods.
pub async fn watch_pod_groups(client: Client, state: Arc<Mutex<State>>) {
    let api: Api<PodGroup> = Api::all(client);
    match api.list(&ListParams::default().limit(1)).await {
        Ok(_) => with_state(&state, State::watch_pod_groups),
        Err(e) => {
            tracing::info!(error = %e, "PodGroups (scheduling.k8s.io/v1alpha2) not readable; \
                gangs naming one need sched.spinel.dev/gang-size");
            return;
        }
    }
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = stream.next().await {
        match event {
            Ok(WatchEvent::InitApply(g)) | Ok(WatchEvent::Apply(g)) => {
                with_state(&state, |s| s.apply_pod_group(&g));
            }
            Ok(WatchEvent::Delete(g)) => with_state(&state, |s| {
                s.delete_pod_group(
                    g.metadata.namespace.as_deref().unwrap_or_default(),
                    g.metadata.name.as_deref().unwrap_or_default(),
                )
            }),
            Ok(WatchEvent::Init) | Ok(WatchEvent::InitDone) => {}
            Err(e) => tracing::warn!(error = %e, "PodGroup watch error; retrying"),
        }
    }
}

/// Releases reservations of gangs that stop making progress.
pub async fn expire_loop(
    state: Arc<Mutex<State>>,
    metrics: Arc<Metrics>,
    start: Instant,
    every: Duration,
) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let now = elapsed_ms(start);
        with_state(&state, |s| {
            let expired = s.expire(now);
            for gang in &expired {
                tracing::info!(%gang, "reservation expired before every pod was bound");
            }
            metrics.expired(expired.len());
        });
    }
}

/// Writes to the API server: pod annotations (merge patch), Events (events.k8s.io, each told
/// once: the same reason and note for the same pod is one Event, also across replicas),
/// Bindings.
pub struct KubePublisher {
    client: Client,
    reporter: Reporter,
}

impl KubePublisher {
    /// A publisher reporting Events as `spinel-scheduler` (instance: this pod's name).
    pub fn new(client: Client, instance: Option<String>) -> KubePublisher {
        let reporter = Reporter {
            controller: "spinel-scheduler".to_owned(),
            instance: instance.unwrap_or_else(|| "spinel-scheduler".to_owned()),
        };
        KubePublisher { client, reporter }
    }
}

impl Publisher for KubePublisher {
    fn annotate(&self, namespace: &str, pod: &str, annotations: BTreeMap<String, String>) {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let (ns, name) = (namespace.to_owned(), pod.to_owned());
        tokio::spawn(async move {
            let patch = json!({"metadata": {"annotations": annotations}});
            if let Err(e) = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                tracing::warn!(pod = %format!("{ns}/{name}"), error = %e, "annotating failed");
            }
        });
    }

    fn event(&self, namespace: &str, pod: &str, reason: &str, message: &str) {
        let spec = EventSpec {
            name: event_name(pod, &format!("{reason}\u{1f}{message}")),
            regarding: pod_ref(namespace, pod, None),
            warning: true,
            reason: reason.to_owned(),
            action: "Scheduling".to_owned(),
            note: message.to_owned(),
        };
        let (client, reporter) = (self.client.clone(), self.reporter.clone());
        tokio::spawn(async move {
            if let Err(e) = reporter.tell(&client, &spec).await {
                tracing::warn!(error = %e, "recording an event failed");
            }
        });
    }

    fn evict(&self, namespace: &str, pod: &str, uid: &str) {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let (ns, name) = (namespace.to_owned(), pod.to_owned());
        let params = EvictParams {
            delete_options: Some(DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid.to_owned()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            }),
            ..EvictParams::default()
        };
        tokio::spawn(async move {
            if let Err(e) = api.evict(&name, &params).await {
                tracing::warn!(pod = %format!("{ns}/{name}"), error = %e, "evicting failed");
            }
        });
    }

    fn bind<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        uid: &'a str,
        node: &'a str,
    ) -> BindFuture<'a> {
        Box::pin(async move {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
            let binding = Binding {
                metadata: ObjectMeta {
                    name: Some(pod.to_owned()),
                    uid: Some(uid.to_owned()),
                    ..ObjectMeta::default()
                },
                target: ObjectReference {
                    api_version: Some("v1".to_owned()),
                    kind: Some("Node".to_owned()),
                    name: Some(node.to_owned()),
                    ..ObjectReference::default()
                },
            };
            api.create_subresource::<_, serde_json::Value>(
                "binding",
                pod,
                &PostParams::default(),
                &binding,
            )
            .await
            .map(|_| ())
            .map_err(|e| BindError {
                pod: format!("{namespace}/{pod}"),
                node: node.to_owned(),
                source: Box::new(e),
            })
        })
    }
}
