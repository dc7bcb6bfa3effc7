//! The scheduler's memory: the placement engine, what it knows of pods (usage per node, gang
//! membership) and the decisions the extender verbs return. Fed by watches (or a file), read by
//! the HTTP handlers; no I/O here.

use std::collections::BTreeMap;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1alpha2::PodGroup;
use rustc_hash::FxHashMap;
use serde_json::json;
use spinel_api::scheduling as keys;
use spinel_placement::annotations::{ParseOptions, PodGroupPolicy, PodMeta, parse_gang, pod_index};
use spinel_placement::{
    AssignError, Assignment, Cluster, ClusterOptions, Engine, EngineOptions, Feasible, GangId,
    GangRequest, NodeId, PlanError, Released, publish,
};

use crate::objects::{bound_node, is_terminal, node_spec, pod_group_policy, pod_meta, pod_units};
use crate::publish::Publisher;

/// Scheduler settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// How gang requests are read (label keys, resource, size limit).
    pub parse: ParseOptions,
    /// Cluster view settings.
    pub cluster: ClusterOptions,
    /// Reservations and planning.
    pub engine: EngineOptions,
    /// Score nodes of fuller leaves higher for pods outside gangs.
    pub binpack_non_gang: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            parse: ParseOptions::default(),
            cluster: ClusterOptions::default(),
            engine: EngineOptions::default(),
            binpack_non_gang: true,
        }
    }
}

/// What the filter verb answers for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterDecision {
    /// Not a gang pod: every candidate passes.
    PassThrough,
    /// A gang pod: only its planned node passes.
    Only {
        /// The planned node.
        node: String,
        /// The pod's rank.
        rank: u32,
        /// Why the others fail.
        others: String,
    },
    /// No node for this pod now (`resolvable`) or ever, with the reason.
    Reject {
        /// Whether preemption or time could change it.
        resolvable: bool,
        /// Why.
        reason: String,
    },
    /// A gang pod the pod watch has not shown (no pod with this UID, name and namespace, or
    /// one already bound or ending): nothing is decided or kept for it.
    NotSeen {
        /// Why.
        reason: String,
    },
    /// Holding a new gang would pass the limit on ranks held: it waits.
    OverLimit {
        /// Why.
        reason: String,
    },
}

/// Annotations to merge into a pod, and an Event to record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Publication {
    /// Annotations (empty: nothing new).
    pub annotations: BTreeMap<String, String>,
    /// `(reason, message)` of an Event, when the pod's situation changed.
    pub event: Option<(String, String)>,
    /// Annotations for other pods of the gang: rank 0's rank list when a rank moved.
    pub others: Vec<OtherPod>,
}

/// Annotations to merge into another pod than the one asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherPod {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The annotations.
    pub annotations: BTreeMap<String, String>,
}

/// What a gang pod's request is read from: its scheduling labels and annotations (only the
/// keys of the dialects the scheduler reads), its PodGroup and its units of the resource it
/// names, as the pod watch showed them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SchedMeta {
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    pod_group: Option<String>,
    /// Units of the resource the pod names (or the scheduler's), or why they do not parse.
    units: Result<u64, String>,
}

/// Key prefixes of the dialects a gang request is read from.
const SCHED_PREFIXES: [&str; 5] = [
    keys::PREFIX,
    "kueue.x-k8s.io/",
    "volcano.sh/",
    "scheduling.k8s.io/",
    keys::JOB_COMPLETION_INDEX,
];

fn sched_keys(map: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    map.iter()
        .filter(|(k, _)| SCHED_PREFIXES.iter().any(|p| k.starts_with(p)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl SchedMeta {
    /// `None` for a pod that names no gang in any dialect.
    fn of(pod: &Pod, default_resource: &str) -> Option<SchedMeta> {
        let (labels, annotations, group) = pod_meta(pod);
        let (labels, annotations) = (sched_keys(labels), sched_keys(annotations));
        if labels.is_empty() && annotations.is_empty() && group.is_none() {
            return None;
        }
        let resource = annotations
            .get(keys::RESOURCE)
            .map_or(default_resource, |r| r.trim());
        let units = pod_units(pod, resource).map_err(|e| e.to_string());
        Some(SchedMeta {
            labels,
            annotations,
            pod_group: group.map(str::to_owned),
            units,
        })
    }
}

#[derive(Debug, Clone, Default)]
struct PodRecord {
    /// Namespace and name, for publishing to it while another pod is asked about.
    name: Option<(String, String)>,
    node: Option<String>,
    units: u32,
    gang: Option<GangId>,
    published: Option<String>,
    last_reason: Option<String>,
    /// The pod watch showed it (requests about pods it never showed decide nothing).
    seen: bool,
    /// Ending (a deletion timestamp, or an eviction the scheduler asked for).
    terminating: bool,
    /// Its published rank.
    rank: Option<u32>,
    /// What its gang request is read from, while it waits to be bound.
    meta: Option<Box<SchedMeta>>,
}

/// A request's candidate nodes resolved to the cluster view's ids, position by position
/// (`None`: a name the view does not know).
#[derive(Debug, Clone)]
pub struct Candidates {
    ids: Arc<[Option<NodeId>]>,
}

impl Candidates {
    /// The ids, in the request's order.
    pub fn ids(&self) -> &[Option<NodeId>] {
        &self.ids
    }
}

/// The last candidate list resolved: kube-scheduler sends the same list, in the same order,
/// for pod after pod, so comparing its bytes spares a name lookup per node.
#[derive(Debug, Default)]
struct CandidateCache {
    raw: Vec<u8>,
    epoch: u64,
    ids: Option<Arc<[Option<NodeId>]>>,
}

/// A gang request and the pod's launcher index, if it has one.
type IndexedRequest = (GangRequest, Option<u32>);

/// Whether a pod names its gang and size by itself (a dialect's gang name or the size
/// annotation), so an upstream PodGroup is not needed to read it.
fn names_no_gang_itself(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> bool {
    let has = |k: &str| labels.contains_key(k) || annotations.contains_key(k);
    ![
        keys::GANG,
        keys::KUEUE_POD_GROUP_NAME,
        keys::VOLCANO_GROUP_NAME,
        keys::GANG_SIZE,
    ]
    .iter()
    .any(|k| has(k))
}

/// The scheduler's state.
#[derive(Debug)]
pub struct State {
    config: Config,
    engine: Engine,
    pods: FxHashMap<String, PodRecord>,
    node_used: FxHashMap<String, u32>,
    /// Upstream PodGroups by `(namespace, name)`, when their API is watched.
    pod_groups: Option<FxHashMap<(String, String), PodGroupPolicy>>,
    ready: bool,
    /// Pod UIDs by gang, to take back a gang's running pods when the engine forgot it.
    members: FxHashMap<GangId, rustc_hash::FxHashSet<String>>,
    /// Where Events and evictions decided outside a request (a stranded gang released) go.
    publisher: Option<Arc<dyn Publisher>>,
    /// Gangs released whole since the start.
    released: u64,
    candidates: CandidateCache,
}

fn published_rank(pod: &Pod) -> Option<u32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(keys::RANK)?
        .trim()
        .parse()
        .ok()
}

fn uid(pod: &Pod) -> Option<&str> {
    pod.metadata.uid.as_deref().filter(|u| !u.is_empty())
}

impl State {
    /// An empty state.
    pub fn new(config: Config) -> State {
        let engine = Engine::new(Cluster::new(config.cluster.clone()), config.engine);
        State {
            config,
            engine,
            pods: FxHashMap::default(),
            node_used: FxHashMap::default(),
            pod_groups: None,
            ready: false,
            members: FxHashMap::default(),
            publisher: None,
            released: 0,
            candidates: CandidateCache::default(),
        }
    }

    /// Resolves a request's candidate names; `raw` is the `NodeNames` array as sent, when
    /// there is one, to reuse the last resolution of the same list.
    pub fn candidates<S: AsRef<str>>(&mut self, raw: Option<&str>, names: &[S]) -> Candidates {
        let epoch = self.engine.cluster().names_epoch();
        let cache = &mut self.candidates;
        if let (Some(raw), Some(ids)) = (raw, &cache.ids)
            && cache.epoch == epoch
            && cache.raw == raw.as_bytes()
        {
            return Candidates { ids: ids.clone() };
        }
        let c = self.engine.cluster();
        let ids: Arc<[Option<NodeId>]> = names.iter().map(|n| c.node_id(n.as_ref())).collect();
        if let Some(raw) = raw {
            cache.raw.clear();
            cache.raw.extend_from_slice(raw.as_bytes());
            cache.epoch = epoch;
            cache.ids = Some(ids.clone());
        }
        Candidates { ids }
    }

    /// Where side effects decided outside a request go (the extender's publisher).
    pub fn set_publisher(&mut self, publisher: Arc<dyn Publisher>) {
        self.publisher = Some(publisher);
    }

    /// Sets what the engine holds at most and how long a stranded gang may hold its nodes.
    pub fn set_limits(&mut self, limits: spinel_placement::HoldLimits) {
        self.engine.set_limits(limits);
    }

    /// Gangs released whole (part bound where the rest could not join) since the start.
    pub fn released_gangs(&self) -> u64 {
        self.released
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The engine (cluster view and reservations).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Nodes no gang may use (degraded, cordoned, not Ready); O(nodes).
    pub fn unusable_nodes(&self) -> usize {
        let c = self.engine.cluster();
        c.node_ids().iter().filter(|id| !c.is_healthy(**id)).count()
    }

    /// Whether the initial lists have been loaded.
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// Marks the initial lists loaded.
    pub fn set_ready(&mut self) {
        self.ready = true;
    }

    /// From now on, pods naming an upstream PodGroup not seen yet wait for it (the PodGroup
    /// API is served and watched).
    pub fn watch_pod_groups(&mut self) {
        self.pod_groups.get_or_insert_with(FxHashMap::default);
    }

    /// A PodGroup was added or changed.
    pub fn apply_pod_group(&mut self, group: &PodGroup) {
        let key = (
            group.metadata.namespace.clone().unwrap_or_default(),
            group.metadata.name.clone().unwrap_or_default(),
        );
        self.pod_groups
            .get_or_insert_with(FxHashMap::default)
            .insert(key, pod_group_policy(group));
    }

    /// A PodGroup was deleted.
    pub fn delete_pod_group(&mut self, namespace: &str, name: &str) {
        if let Some(groups) = &mut self.pod_groups {
            groups.remove(&(namespace.to_owned(), name.to_owned()));
        }
    }

    /// Reads a pod's gang request and launcher index; `Ok(None)` for pods outside gangs,
    /// `Err((resolvable, reason))` for pods that cannot be read now (a PodGroup not seen yet)
    /// or at all.
    fn gang_request(&self, pod: &Pod) -> Result<Option<IndexedRequest>, (bool, String)> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        match SchedMeta::of(pod, &self.config.parse.resource) {
            None => Ok(None),
            Some(meta) => self.request_of(&meta, namespace),
        }
    }

    fn request_of(
        &self,
        meta: &SchedMeta,
        namespace: &str,
    ) -> Result<Option<IndexedRequest>, (bool, String)> {
        let (labels, annotations) = (&meta.labels, &meta.annotations);
        let group = meta.pod_group.as_deref();
        let resource = annotations
            .get(keys::RESOURCE)
            .map_or(self.config.parse.resource.as_str(), |r| r.trim());
        let units = meta.units.clone().map_err(|e| (false, e))?;
        let requests = BTreeMap::from([(resource.to_owned(), units)]);
        let policy = match (group, &self.pod_groups) {
            (Some(g), Some(groups)) => match groups.get(&(namespace.to_owned(), g.to_owned())) {
                Some(p) => Some(p),
                None if names_no_gang_itself(labels, annotations) => {
                    return Err((
                        true,
                        format!("waiting to see PodGroup {namespace}/{g}, which the pod names"),
                    ));
                }
                None => None,
            },
            _ => None,
        };
        let meta = PodMeta {
            namespace,
            labels,
            annotations,
            requests: &requests,
            pod_group: group,
            pod_group_policy: policy,
        };
        let Some(request) =
            parse_gang(&meta, &self.config.parse).map_err(|e| (false, e.to_string()))?
        else {
            return Ok(None);
        };
        if request.resource != self.config.parse.resource {
            return Err((
                false,
                format!(
                    "gang {} counts in {} but this scheduler tracks {}",
                    request.gang, request.resource, self.config.parse.resource
                ),
            ));
        }
        let index = pod_index(&meta).map_err(|e| (false, e.to_string()))?;
        Ok(Some((request, index)))
    }

    /// The watched pod a request names: same UID, namespace and name, not bound, not ending.
    fn watched<'a>(&'a self, pod: &'a Pod) -> Option<(&'a PodRecord, &'a str)> {
        let uid = uid(pod)?;
        let record = self.pods.get(uid)?;
        let (ns, name) = record.name.as_ref()?;
        let same = pod.metadata.namespace.as_deref().unwrap_or("default") == ns
            && pod.metadata.name.as_deref() == Some(name.as_str());
        (record.seen && same && record.node.is_none() && !record.terminating)
            .then_some((record, uid))
    }

    /// The filter verb's decision for `pod`, and what to publish about it. `candidates` are
    /// the nodes kube-scheduler's own filters left (a gang is planned only on those); `None`
    /// when they are not known (prioritize sees only the filter's survivors).
    ///
    /// A gang pod is decided only when the pod watch has shown a pod with the request's UID,
    /// name and namespace, unbound; its request is read from what the watch showed, not from
    /// the request body, so a request can neither invent a gang nor change one.
    pub fn filter(
        &mut self,
        pod: &Pod,
        candidates: Option<&Candidates>,
        now_ms: u64,
    ) -> (FilterDecision, Publication) {
        let watched = self.watched(pod).map(|(r, uid)| {
            let ns = r.name.as_ref().map_or("default", |(ns, _)| ns.as_str());
            (r.meta.clone(), uid.to_owned(), ns.to_owned())
        });
        let (meta, uid, namespace) = match watched {
            Some(w) => w,
            None => {
                return match self.gang_request(pod) {
                    Ok(None) => (FilterDecision::PassThrough, Publication::default()),
                    _ => (
                        FilterDecision::NotSeen {
                            reason: format!(
                                "pod {}/{} (UID {}) is not a pending pod the API server shows; \
                                 spinel-scheduler decides only for pods it watches",
                                pod.metadata.namespace.as_deref().unwrap_or("default"),
                                pod.metadata.name.as_deref().unwrap_or(""),
                                uid(pod).unwrap_or("none")
                            ),
                        },
                        Publication::default(),
                    ),
                };
            }
        };
        let request = match meta.map(|m| self.request_of(&m, &namespace)) {
            None | Some(Ok(None)) => {
                return (FilterDecision::PassThrough, Publication::default());
            }
            Some(Ok(Some(r))) => r,
            Some(Err((true, reason))) => return self.reject(&uid, true, "GangPending", reason),
            Some(Err((false, reason))) => return self.reject(&uid, false, "GangInvalid", reason),
        };
        let (request, index) = request;
        // Known as the gang's before any outcome, so its deletion always reaches the engine.
        self.pods.entry(uid.clone()).or_default().gang = Some(request.gang.clone());
        self.take_back_running(&request, &uid);
        let feasible = candidates
            .map(|c| Feasible::from_ids(self.engine.cluster(), c.ids.iter().flatten().copied()));
        match self
            .engine
            .assign(&request, &uid, index, now_ms, feasible.as_ref())
        {
            Ok(a) => self.only(&request.gang, &uid, a),
            Err(AssignError::Plan(PlanError::Pending { gang, why })) => self.reject(
                &uid,
                true,
                "GangPending",
                format!("gang {gang} is waiting: {}", why.message),
            ),
            Err(e @ AssignError::OverLimit { .. }) => {
                let (_, publication) = self.reject(&uid, true, "GangPending", e.to_string());
                (
                    FilterDecision::OverLimit {
                        reason: e.to_string(),
                    },
                    publication,
                )
            }
            Err(e @ AssignError::Repair { .. }) => {
                self.reject(&uid, true, "GangPending", e.to_string())
            }
            Err(e) => self.reject(&uid, false, "GangUnschedulable", e.to_string()),
        }
    }

    /// When the engine holds nothing for the gang (all its pods had bound, then one went
    /// away), its running pods are taken back at their published ranks, so the new pod joins
    /// them instead of the gang being planned from scratch.
    fn take_back_running(&mut self, request: &GangRequest, asking: &str) {
        if self.engine.holds(&request.gang) {
            return;
        }
        let Some(members) = self.members.get(&request.gang) else {
            return;
        };
        let running: Vec<(String, u32, String)> = members
            .iter()
            .filter(|u| u.as_str() != asking)
            .filter_map(|u| {
                let r = self.pods.get(u)?;
                (!r.terminating).then_some(())?;
                Some((u.clone(), r.rank?, r.node.clone()?))
            })
            .collect();
        for (uid, rank, node) in running {
            if let Err(e) = self.engine.adopt(request, &uid, rank, &node) {
                tracing::warn!(gang = %request.gang, error = %e, "cannot take back a running gang pod");
            }
        }
    }

    fn remember_name(&mut self, uid: &str, pod: &Pod) {
        let record = self.pods.entry(uid.to_owned()).or_default();
        if record.name.is_none() {
            record.name = Some((
                pod.metadata
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".to_owned()),
                pod.metadata.name.clone().unwrap_or_default(),
            ));
        }
    }

    fn only(&mut self, gang: &GangId, uid: &str, a: Assignment) -> (FilterDecision, Publication) {
        let record = self.pods.entry(uid.to_owned()).or_default();
        record.gang = Some(gang.clone());
        record.last_reason = None;
        let publication = self.publication(gang, uid, a.rank);
        let others = format!("gang {gang} places rank {} on node {}", a.rank, a.node_name);
        (
            FilterDecision::Only {
                node: a.node_name,
                rank: a.rank,
                others,
            },
            publication,
        )
    }

    fn reject(
        &mut self,
        uid: &str,
        resolvable: bool,
        reason: &str,
        message: String,
    ) -> (FilterDecision, Publication) {
        let mut publication = Publication::default();
        if let Some(record) = self.pods.get_mut(uid)
            && record.last_reason.as_deref() != Some(message.as_str())
        {
            record.last_reason = Some(message.clone());
            publication.event = Some((reason.to_owned(), message.clone()));
        }
        (
            FilterDecision::Reject {
                resolvable,
                reason: message,
            },
            publication,
        )
    }

    /// The rank annotation, plus the rank list and placement summary on rank 0; and rank 0's
    /// list again when asking about another rank moved a rank (a repair, a dropped node), so
    /// the launcher never reads a stale list.
    fn publication(&mut self, gang: &GangId, uid: &str, rank: u32) -> Publication {
        let mut publication = Publication {
            annotations: self.annotations_for(gang, uid, rank).unwrap_or_default(),
            ..Publication::default()
        };
        if rank != 0
            && let Some(first) = self.engine.pod_of_rank(gang, 0).map(str::to_owned)
            && let Some((namespace, name)) = self.pods.get(&first).and_then(|r| r.name.clone())
            && let Some(annotations) = self.annotations_for(gang, &first, 0)
        {
            publication.others.push(OtherPod {
                namespace,
                name,
                annotations,
            });
        }
        publication
    }

    /// What pod `uid` at `rank` should carry; `None` when it already got exactly that.
    fn annotations_for(
        &mut self,
        gang: &GangId,
        uid: &str,
        rank: u32,
    ) -> Option<BTreeMap<String, String>> {
        let mut annotations = BTreeMap::from([(keys::RANK.to_owned(), rank.to_string())]);
        if rank == 0
            && let Some(view) = self.engine.view(gang)
        {
            annotations.insert(
                keys::RANK_NODES.to_owned(),
                publish::rank_nodes_value(&view.rank_nodes),
            );
            if let Some(plan) = &view.plan {
                let summary = json!({
                    "domain": plan.domain,
                    "spread": {"max": plan.spread.max, "total": plan.spread.total,
                               "crossSpineGroups": plan.spread.cross_spine_groups},
                    "fallbacks": plan.fallbacks,
                });
                annotations.insert(keys::PLACEMENT.to_owned(), summary.to_string());
            }
        }
        let digest = format!("{annotations:?}");
        let record = self.pods.entry(uid.to_owned()).or_default();
        if record.published.as_deref() == Some(digest.as_str()) {
            return None;
        }
        record.published = Some(digest);
        Some(annotations)
    }

    /// For a pod outside any gang that needs the scheduled resource: which candidates have too
    /// few units left once gang reservations are held (`None`: every candidate is fine).
    pub fn blocked_by_reservations(&self, pod: &Pod, candidates: &Candidates) -> Option<Vec<bool>> {
        let units = pod_units(pod, &self.config.parse.resource).ok()?;
        let units = u32::try_from(units).unwrap_or(u32::MAX);
        if units == 0 || self.engine.gang_ids().next().is_none() {
            return None;
        }
        let c = self.engine.cluster();
        let mask: Vec<bool> = candidates
            .ids
            .iter()
            .map(|id| id.is_some_and(|id| c.reserved(id) > 0 && c.free(id) < units))
            .collect();
        mask.contains(&true).then_some(mask)
    }

    /// Scores for the prioritize verb, 0..=10, one per candidate.
    pub fn prioritize(&mut self, pod: &Pod, candidates: &Candidates, now_ms: u64) -> Vec<i64> {
        if let (FilterDecision::Only { node, .. }, _) = self.filter(pod, None, now_ms) {
            let planned = self.engine.cluster().node_id(&node);
            return candidates
                .ids
                .iter()
                .map(|c| if c.is_some() && *c == planned { 10 } else { 0 })
                .collect();
        }
        if !self.config.binpack_non_gang {
            return vec![0; candidates.ids.len()];
        }
        let c = self.engine.cluster();
        // One score per leaf, however many of its nodes are candidates (domain ids are dense).
        let mut by_leaf: Vec<Option<i64>> = vec![None; c.domain_count()];
        candidates
            .ids
            .iter()
            .map(|id| {
                let Some(id) = *id else {
                    return 0;
                };
                let leaf = c.ancestor(id, 1);
                let slot = &mut by_leaf[leaf.0 as usize];
                *slot.get_or_insert_with(|| {
                    let alloc = c.domain_allocatable_units(leaf);
                    if alloc == 0 {
                        return 0;
                    }
                    let busy = alloc.saturating_sub(c.domain_free_units(leaf));
                    ((busy * 10 + alloc / 2) / alloc).min(10) as i64
                })
            })
            .collect()
    }

    /// The gang of a pod the scheduler has seen, by UID.
    pub fn gang_of(&self, uid: &str) -> Option<GangId> {
        self.pods.get(uid).and_then(|r| r.gang.clone())
    }

    /// A node object was added or changed.
    pub fn apply_node(&mut self, node: &Node, now_ms: u64) {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let used = self.node_used.get(name).copied().unwrap_or(0);
        if let Some(spec) = node_spec(node, &self.config.parse.resource, used) {
            self.engine.upsert_node(spec, now_ms);
        }
    }

    /// A node object was deleted.
    pub fn delete_node(&mut self, name: &str, now_ms: u64) {
        self.engine.remove_node(name, now_ms);
    }

    fn add_usage(&mut self, node: &str, delta: i64) {
        let used = self.node_used.entry(node.to_owned()).or_default();
        *used = u32::try_from((i64::from(*used) + delta).max(0)).unwrap_or(u32::MAX);
        let value = *used;
        self.engine.set_node_used(node, value);
    }

    /// A pod was added or changed: usage per node, and gang pods that got bound or ended.
    pub fn apply_pod(&mut self, pod: &Pod, now_ms: u64) {
        let Some(uid) = uid(pod).map(str::to_owned) else {
            return;
        };
        let terminal = is_terminal(pod);
        let node = if terminal {
            None
        } else {
            bound_node(pod).map(str::to_owned)
        };
        let units = pod_units(pod, &self.config.parse.resource)
            .ok()
            .and_then(|u| u32::try_from(u).ok())
            .unwrap_or(0);
        let request = self.gang_request(pod).ok().flatten().map(|(r, _)| r);
        let gang = request.as_ref().map(|r| r.gang.clone());
        let old = self.pods.get(&uid).cloned().unwrap_or_default();
        if old.node != node || old.units != units {
            if let Some(n) = &old.node {
                self.add_usage(n, -i64::from(old.units));
            }
            if let Some(n) = &node {
                self.add_usage(n, i64::from(units));
            }
        }
        if let (Some(r), Some(n), None) = (&request, &node, &old.node)
            && self.engine.bound(&r.gang, &uid, n, now_ms).is_none()
            && let Some(rank) = published_rank(pod)
        {
            // A running pod the engine does not know (the scheduler restarted): keep its rank.
            if let Err(e) = self.engine.adopt(r, &uid, rank, n) {
                tracing::warn!(gang = %r.gang, error = %e, "cannot adopt a running gang pod");
            }
        }
        if let (Some(g), true) = (&gang, terminal) {
            self.engine.pod_gone(g, &uid);
        }
        if let Some(g) = &gang {
            self.members
                .entry(g.clone())
                .or_default()
                .insert(uid.clone());
        }
        let waiting = node.is_none() && !terminal && pod.metadata.deletion_timestamp.is_none();
        let meta = waiting
            .then(|| SchedMeta::of(pod, &self.config.parse.resource).map(Box::new))
            .flatten();
        let record = self.pods.entry(uid).or_default();
        record.node = node;
        record.units = units;
        record.gang = gang.or(record.gang.take());
        record.seen = true;
        record.terminating =
            record.terminating || terminal || pod.metadata.deletion_timestamp.is_some();
        record.rank = published_rank(pod);
        record.meta = meta;
        record.name = Some((
            pod.metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_owned()),
            pod.metadata.name.clone().unwrap_or_default(),
        ));
    }

    /// Takes back the plans a previous scheduler published (after a restart or a change of
    /// leader), from every pod: the rank-to-node list on each gang's rank 0, and the ranks of
    /// pods told one but not bound yet. Running pods were adopted at their ranks by
    /// [`State::apply_pod`] already. Returns how many ranks hold a reservation again.
    pub fn resume<'a>(&mut self, pods: impl IntoIterator<Item = &'a Pod>, now_ms: u64) -> usize {
        struct Published {
            request: GangRequest,
            rank_nodes: Vec<String>,
            waiting: Vec<(String, u32)>,
        }
        let mut gangs: BTreeMap<GangId, Published> = BTreeMap::new();
        for pod in pods {
            let (Some(rank), Some(uid), false) = (published_rank(pod), uid(pod), is_terminal(pod))
            else {
                continue;
            };
            let Ok(Some((request, _))) = self.gang_request(pod) else {
                continue;
            };
            let size = request.size as usize;
            let entry = gangs
                .entry(request.gang.clone())
                .or_insert_with(|| Published {
                    request,
                    rank_nodes: Vec::new(),
                    waiting: Vec::new(),
                });
            if rank == 0
                && let Some(list) = pod
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(keys::RANK_NODES))
            {
                entry.rank_nodes = list
                    .split(',')
                    .take(size)
                    .map(|n| n.trim().to_owned())
                    .collect();
            }
            if bound_node(pod).is_none() {
                entry.waiting.push((uid.to_owned(), rank));
                self.remember_name(uid, pod);
            }
        }
        let mut restored = 0;
        for (gang, p) in gangs {
            match self
                .engine
                .restore(&p.request, &p.rank_nodes, &p.waiting, now_ms)
            {
                Ok(n) => {
                    restored += n;
                    if n > 0 {
                        tracing::info!(%gang, ranks = n, "took back a published reservation");
                    }
                }
                Err(e) => tracing::warn!(%gang, error = %e, "cannot take back a published plan"),
            }
        }
        restored
    }

    /// A pod was deleted.
    pub fn delete_pod(&mut self, pod: &Pod) {
        let Some(uid) = uid(pod) else {
            return;
        };
        if let Some(old) = self.pods.remove(uid) {
            if let Some(n) = &old.node {
                self.add_usage(n, -i64::from(old.units));
            }
            if let Some(g) = &old.gang {
                self.engine.pod_gone(g, uid);
                if let Some(m) = self.members.get_mut(g) {
                    m.remove(uid);
                    if m.is_empty() {
                        self.members.remove(g);
                    }
                }
            }
        }
    }

    /// Records a binding done by the bind verb (before the watch shows it).
    pub fn bound(&mut self, uid: &str, node: &str, now_ms: u64) {
        if let Some(g) = self.gang_of(uid) {
            self.engine.bound(&g, uid, node, now_ms);
        }
    }

    /// Releases reservations of gangs that stalled; returns them. Gangs stranded past their
    /// grace (part bound, the rest unable to join) are released whole: an Event on each of
    /// their pods says why, and their bound pods are evicted so the gang is planned again.
    pub fn expire(&mut self, now_ms: u64) -> Vec<GangId> {
        let expired = self.engine.expire(now_ms);
        for released in self.engine.release_stranded(now_ms) {
            self.publish_release(&released);
        }
        expired
    }

    fn publish_release(&mut self, released: &Released) {
        self.released += 1;
        tracing::warn!(gang = %released.gang, reason = %released.reason, "gang released");
        let mut targets = Vec::new();
        for uid in released.bound_pods.iter().chain(&released.waiting_pods) {
            let Some(record) = self.pods.get_mut(uid) else {
                continue;
            };
            let evict = released.bound_pods.contains(uid);
            // Not taken back as a running member while its eviction is under way.
            record.terminating |= evict;
            record.last_reason = Some(released.reason.clone());
            if let Some((ns, name)) = record.name.clone() {
                targets.push((ns, name, uid.clone(), evict));
            }
        }
        let Some(publisher) = &self.publisher else {
            return;
        };
        for (ns, name, uid, evict) in targets {
            publisher.event(&ns, &name, "GangReleased", &released.reason);
            if evict {
                publisher.evict(&ns, &name, &uid);
            }
        }
    }
}
