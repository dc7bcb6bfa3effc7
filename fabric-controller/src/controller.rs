//! The controller's state and loop: watch messages update the inputs and the observed view;
//! when every watch has listed once, the reports that changed go into the live model, and
//! while this replica leads, what differs from the desired state is written, looking at the
//! nodes and HyperNodes a change touched (or the server changed) only; an iteration without
//! any change compares everything. Messages that arrive together are taken together, so a
//! burst of changes costs one model update.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Resource as _;
use kube::runtime::watcher::Event;
use spinel_kube::backoff::Backoff;
use tokio::sync::{mpsc, watch};
use tracing::Instrument as _;

use crate::desired::{Desired, Dirty, Model, Settings};
use crate::inputs::{Inputs, NodeReport, SwitchEntry};
use crate::metrics::Metrics;
use crate::observed::rv_of;
use crate::publish::{self, Observed, Write, Writer};
use crate::watch::Msg;

/// The key of the switch-table directory among the inputs' sources.
const DIR_SOURCE: &str = "dir";
/// The key of the switch-table ConfigMap among the inputs' sources.
const CONFIG_MAP_SOURCE: &str = "configmap";

/// Everything the controller knows.
pub struct Controller {
    settings: Settings,
    fabric_name: String,
    inputs: Inputs,
    observed: Observed,
    emitted: HashSet<String>,
    model: Model,
    /// What to compare at the next plan: touched by a model update or changed on the server.
    dirty: Dirty,
    /// Compare everything at the next plan (a relist, a model inferred again).
    compare_all: bool,
    stale: bool,
    node_list: Option<Vec<(String, NodeReport)>>,
    nodes_listed: bool,
    /// Switch-table sources that have not been read once yet.
    pending_sources: HashSet<&'static str>,
    config_map_list: Option<BTreeMap<String, SwitchEntry>>,
}

impl Controller {
    /// A controller over `inputs` (empty), waiting for the ConfigMap and the directory when
    /// they are configured.
    pub fn new(
        settings: Settings,
        fabric_name: String,
        inputs: Inputs,
        config_map: bool,
        dir: bool,
    ) -> Self {
        let mut pending_sources = HashSet::new();
        if config_map {
            pending_sources.insert(CONFIG_MAP_SOURCE);
        }
        if dir {
            pending_sources.insert(DIR_SOURCE);
        }
        Self {
            settings,
            fabric_name,
            model: Model::new(&inputs),
            inputs,
            observed: Observed::default(),
            emitted: HashSet::new(),
            dirty: Dirty::default(),
            compare_all: true,
            stale: true,
            node_list: None,
            nodes_listed: false,
            pending_sources,
            config_map_list: None,
        }
    }

    /// Takes in one message.
    pub fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::NodeFabric(e) => self.node_fabric(e),
            Msg::HyperNode(e) => {
                match touched(&e) {
                    Some(name) => {
                        self.dirty.hypernodes.insert(name);
                    }
                    None => self.compare_all = true,
                }
                observe(&mut self.observed.hypernodes, e, Clone::clone);
            }
            Msg::Topology(e) => observe(&mut self.observed.topologies, e, Clone::clone),
            Msg::Fabric(e) => observe(&mut self.observed.fabrics, e, |f| f.status.clone()),
            Msg::SwitchConfigMap(e) => self.config_map(e),
            Msg::SwitchDir(Ok(entries)) => {
                self.pending_sources.remove(DIR_SOURCE);
                self.stale |= self.inputs.set_switch_source(DIR_SOURCE, entries);
            }
            // Keep the tables last read: a passing error must not drop the spines.
            Msg::SwitchDir(Err(_)) => {}
        }
    }

    fn node_fabric(&mut self, e: Event<spinel_api::crd::NodeFabric>) {
        match e {
            Event::Init => {
                self.node_list = Some(Vec::new());
                self.observed.statuses.begin_list();
                self.compare_all = true;
            }
            Event::InitApply(nf) => {
                let rv = rv_of(&nf);
                if let Some((name, report)) = NodeReport::from_object(&nf) {
                    self.observed.statuses.apply(name.clone(), rv, nf.status);
                    self.node_list
                        .get_or_insert_with(Vec::new)
                        .push((name, report));
                }
            }
            Event::InitDone => {
                let all = self.node_list.take().unwrap_or_default();
                self.stale |= self.inputs.replace_nodes(all);
                self.observed.statuses.end_list();
                self.nodes_listed = true;
            }
            Event::Apply(nf) => {
                let rv = rv_of(&nf);
                if let Some((name, report)) = NodeReport::from_object(&nf) {
                    self.dirty.nodes.insert(name.clone());
                    self.observed.statuses.apply(name.clone(), rv, nf.status);
                    self.stale |= self.inputs.upsert_node(name, report);
                }
            }
            Event::Delete(nf) => {
                if let Some(name) = nf.meta().name.as_deref() {
                    self.dirty.nodes.insert(name.to_owned());
                    self.observed.statuses.delete(name);
                    self.stale |= self.inputs.remove_node(name);
                }
            }
        }
    }

    fn config_map(&mut self, e: Event<k8s_openapi::api::core::v1::ConfigMap>) {
        use crate::inputs::switches::from_config_map;
        match e {
            Event::Init => self.config_map_list = Some(BTreeMap::new()),
            Event::InitApply(cm) => self
                .config_map_list
                .get_or_insert_with(BTreeMap::new)
                .extend(from_config_map(&cm)),
            Event::InitDone => {
                let entries = self.config_map_list.take().unwrap_or_default();
                self.pending_sources.remove(CONFIG_MAP_SOURCE);
                self.stale |= self.inputs.set_switch_source(CONFIG_MAP_SOURCE, entries);
            }
            Event::Apply(cm) => {
                self.stale |= self
                    .inputs
                    .set_switch_source(CONFIG_MAP_SOURCE, from_config_map(&cm));
            }
            Event::Delete(_) => {
                self.stale |= self
                    .inputs
                    .set_switch_source(CONFIG_MAP_SOURCE, BTreeMap::new());
            }
        }
    }

    /// Whether every watch has listed once: before that, inputs are partial and absence
    /// proves nothing, so nothing is computed or written.
    pub fn ready(&self) -> bool {
        self.nodes_listed && self.pending_sources.is_empty() && self.observed.listed()
    }

    /// Takes the changed reports into the model if the inputs changed; true when it did.
    pub fn recompute(&mut self) -> bool {
        if !self.stale && self.model.desired().is_some() {
            return false;
        }
        let start = Instant::now();
        let before = self.model.desired().map(|d| d.fabric.clone());
        match self.model.update(&mut self.inputs, &self.settings) {
            Some(d) => {
                self.dirty.nodes.extend(d.nodes);
                self.dirty.hypernodes.extend(d.hypernodes);
            }
            None => self.compare_all = true,
        }
        let (fast, full) = self.model.stats();
        tracing::debug!(
            nodes = self.inputs.reports().len(),
            ms = start.elapsed().as_secs_f64() * 1e3,
            fast,
            full,
            "model updated"
        );
        if let Some(desired) = self.model.desired()
            && before.as_ref() != Some(&desired.fabric)
        {
            let f = &desired.fabric;
            tracing::info!(
                hosts = f.hosts,
                switches = f.switches,
                tiers = f.tiers,
                errors = f.errors,
                warnings = f.warnings,
                unusable = f.unusable_reports.len(),
                "fabric inferred"
            );
        }
        self.stale = false;
        true
    }

    /// The writes that would bring the cluster to the desired state: for what changed since
    /// the last publication, or for everything when nothing did.
    pub fn plan(&self) -> Vec<Write> {
        let Some(d) = self.model.desired() else {
            return Vec::new();
        };
        let empty = self.dirty.nodes.is_empty() && self.dirty.hypernodes.is_empty();
        let dirty = (!self.compare_all && !empty).then_some(&self.dirty);
        publish::plan_changes(d, &self.observed, &self.fabric_name, &self.emitted, dirty)
    }

    /// The desired state, once computed.
    pub fn desired(&self) -> Option<&Desired> {
        self.model.desired()
    }

    /// Reports and switch tables in the inputs.
    pub fn input_counts(&self) -> (usize, usize) {
        (
            self.inputs.reports().len(),
            self.inputs.switch_entries().count(),
        )
    }

    /// Writes the plan with `writer`.
    pub async fn publish(&mut self, writer: &Writer) -> publish::Outcome {
        let writes = self.plan();
        // What was touched is planned now; a failed write shows again in the next plan,
        // which compares everything when nothing else changed.
        self.dirty = Dirty::default();
        self.compare_all = false;
        if writes.is_empty() {
            return publish::Outcome::default();
        }
        let n = writes.len();
        let start = Instant::now();
        let outcome = writer
            .execute(writes, &mut self.observed, &mut self.emitted)
            .await;
        tracing::info!(
            writes = n,
            done = outcome.done,
            failed = outcome.failed,
            not_leading = outcome.not_leading,
            ms = start.elapsed().as_secs_f64() * 1e3,
            "published"
        );
        outcome
    }
}

/// The object a watch event is about; `None` for the events of a (re)list.
fn touched<K: kube::Resource>(e: &Event<K>) -> Option<String> {
    match e {
        Event::Apply(o) | Event::Delete(o) => o.meta().name.clone(),
        Event::Init | Event::InitApply(_) | Event::InitDone => None,
    }
}

/// Applies a watch event to a store of what `value` extracts from each object.
fn observe<K, T>(store: &mut crate::observed::Store<T>, e: Event<K>, value: impl Fn(&K) -> T)
where
    K: kube::Resource,
{
    match e {
        Event::Init => store.begin_list(),
        Event::InitDone => store.end_list(),
        Event::Apply(o) | Event::InitApply(o) => {
            if let Some(name) = o.meta().name.clone() {
                store.apply(name, rv_of(&o), value(&o));
            }
        }
        Event::Delete(o) => {
            if let Some(name) = o.meta().name.as_deref() {
                store.delete(name);
            }
        }
    }
}

/// Loop timing.
#[derive(Debug, Clone, Copy)]
pub struct LoopTiming {
    /// How often the desired state is compared with the server's even without a change.
    pub resync: Duration,
    /// Longest wait before failed writes are tried again.
    pub max_backoff: Duration,
}

/// Runs the controller until `stop` turns true or the watches end.
pub async fn run(
    mut ctrl: Controller,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    writer: Writer,
    mut leading: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
    timing: LoopTiming,
    metrics: Arc<Metrics>,
) {
    let mut backoff = Backoff::new(Duration::from_millis(200), timing.max_backoff);
    let mut retry_at: Option<tokio::time::Instant> = None;
    let mut resync = tokio::time::interval(timing.resync);
    loop {
        let retry = async {
            match retry_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(m) => {
                    ctrl.handle(m);
                    while let Ok(m) = rx.try_recv() {
                        ctrl.handle(m);
                    }
                }
                None => break,
            },
            changed = leading.changed() => if changed.is_err() { break },
            () = retry => retry_at = None,
            _ = resync.tick() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        metrics.set_leader(*leading.borrow());
        metrics.set_listed(ctrl.ready());
        if !ctrl.ready() {
            continue;
        }
        reconcile(&mut ctrl, &metrics);
        if !*leading.borrow() {
            continue;
        }
        let start = Instant::now();
        let outcome = ctrl
            .publish(&writer)
            .instrument(tracing::info_span!("publish"))
            .await;
        if outcome != publish::Outcome::default() {
            metrics.published(start.elapsed(), &outcome);
        }
        if outcome.failed > 0 {
            retry_at = Some(tokio::time::Instant::now() + backoff.next_delay());
        } else {
            backoff.reset();
        }
    }
    metrics.set_ended();
}

/// Infers again if the inputs changed, in a span that says how many there were.
fn reconcile(ctrl: &mut Controller, metrics: &Metrics) {
    let (reports, switch_tables) = ctrl.input_counts();
    let span = tracing::info_span!("reconcile", reports, switch_tables);
    let _enter = span.enter();
    let start = Instant::now();
    if tokio::task::block_in_place(|| ctrl.recompute())
        && let Some(desired) = ctrl.desired()
    {
        metrics.reconciled(start.elapsed(), reports, switch_tables, desired);
    }
}
