//! The scheduler's memory: the placement engine, what it knows of pods (usage per node, gang
//! membership) and the decisions the extender verbs return. Fed by watches (or a file), read by
//! the HTTP handlers; no I/O here.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1alpha2::PodGroup;
use rustc_hash::FxHashMap;
use serde_json::json;
use spinel_api::scheduling as keys;
use spinel_placement::annotations::{ParseOptions, PodGroupPolicy, PodMeta, parse_gang, pod_index};
use spinel_placement::{
    AssignError, Assignment, Cluster, ClusterOptions, Engine, EngineOptions, GangId, GangRequest,
    PlanError, publish,
};

use crate::objects::{bound_node, is_terminal, node_spec, pod_group_policy, pod_meta, pod_units};

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

#[derive(Debug, Clone, Default)]
struct PodRecord {
    /// Namespace and name, for publishing to it while another pod is asked about.
    name: Option<(String, String)>,
    node: Option<String>,
    units: u32,
    gang: Option<GangId>,
    published: Option<String>,
    last_reason: Option<String>,
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
        }
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
        let (labels, annotations, group) = pod_meta(pod);
        let resource = annotations
            .get(keys::RESOURCE)
            .map_or(self.config.parse.resource.as_str(), |r| r.trim());
        let units = pod_units(pod, resource).map_err(|e| (false, e.to_string()))?;
        let requests = BTreeMap::from([(resource.to_owned(), units)]);
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
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

    /// The filter verb's decision for `pod`, and what to publish about it.
    pub fn filter(&mut self, pod: &Pod, now_ms: u64) -> (FilterDecision, Publication) {
        let request = match self.gang_request(pod) {
            Ok(None) => return (FilterDecision::PassThrough, Publication::default()),
            Ok(Some(r)) => r,
            Err((true, reason)) => return self.reject(pod, true, "GangPending", reason),
            Err((false, reason)) => return self.reject(pod, false, "GangInvalid", reason),
        };
        let (request, index) = request;
        let Some(uid) = uid(pod) else {
            return self.reject(pod, false, "GangInvalid", "the pod has no UID".to_owned());
        };
        self.remember_name(uid, pod);
        // Known as the gang's before any outcome, so its deletion always reaches the engine.
        self.pods.entry(uid.to_owned()).or_default().gang = Some(request.gang.clone());
        match self.engine.assign(&request, uid, index, now_ms) {
            Ok(a) => self.only(&request.gang, uid, a),
            Err(AssignError::Plan(PlanError::Pending { gang, why })) => self.reject(
                pod,
                true,
                "GangPending",
                format!("gang {gang} is waiting: {}", why.message),
            ),
            Err(e) => self.reject(pod, false, "GangUnschedulable", e.to_string()),
        }
    }

    /// kube-scheduler's filters dropped the node planned for `pod`: plan its rank elsewhere.
    pub fn refuse(&mut self, pod: &Pod, now_ms: u64) -> (FilterDecision, Publication) {
        let Some(uid) = uid(pod) else {
            return self.reject(pod, false, "GangInvalid", "the pod has no UID".to_owned());
        };
        let Some(gang) = self.gang_of(uid) else {
            return self.reject(
                pod,
                true,
                "GangPending",
                "the pod's gang is unknown".to_owned(),
            );
        };
        match self.engine.refuse(&gang, uid, now_ms) {
            Ok(a) => self.only(&gang, uid, a),
            Err(e) => self.reject(pod, true, "GangPending", e.to_string()),
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
        pod: &Pod,
        resolvable: bool,
        reason: &str,
        message: String,
    ) -> (FilterDecision, Publication) {
        let mut publication = Publication::default();
        let key = uid(pod).unwrap_or("").to_owned();
        let record = self.pods.entry(key).or_default();
        if record.last_reason.as_deref() != Some(message.as_str()) {
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
    pub fn blocked_by_reservations<S: AsRef<str>>(
        &self,
        pod: &Pod,
        candidates: &[S],
    ) -> Option<Vec<bool>> {
        let units = pod_units(pod, &self.config.parse.resource).ok()?;
        let units = u32::try_from(units).unwrap_or(u32::MAX);
        if units == 0 || self.engine.gang_ids().next().is_none() {
            return None;
        }
        let c = self.engine.cluster();
        let mask: Vec<bool> = candidates
            .iter()
            .map(|name| {
                c.node_id(name.as_ref())
                    .is_some_and(|id| c.reserved(id) > 0 && c.free(id) < units)
            })
            .collect();
        mask.contains(&true).then_some(mask)
    }

    /// Scores for the prioritize verb, 0..=10, one per candidate.
    pub fn prioritize<S: AsRef<str>>(
        &mut self,
        pod: &Pod,
        candidates: &[S],
        now_ms: u64,
    ) -> Vec<i64> {
        if let (FilterDecision::Only { node, .. }, _) = self.filter(pod, now_ms) {
            return candidates
                .iter()
                .map(|c| if c.as_ref() == node { 10 } else { 0 })
                .collect();
        }
        if !self.config.binpack_non_gang {
            return vec![0; candidates.len()];
        }
        let c = self.engine.cluster();
        // One score per leaf, however many of its nodes are candidates.
        let mut by_leaf: FxHashMap<u32, i64> = FxHashMap::default();
        candidates
            .iter()
            .map(|name| {
                let Some(id) = c.node_id(name.as_ref()) else {
                    return 0;
                };
                let leaf = c.ancestor(id, 1);
                *by_leaf.entry(leaf.0).or_insert_with(|| {
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
        let record = self.pods.entry(uid).or_default();
        record.node = node;
        record.units = units;
        record.gang = gang.or(record.gang.take());
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
            }
        }
    }

    /// Records a binding done by the bind verb (before the watch shows it).
    pub fn bound(&mut self, uid: &str, node: &str, now_ms: u64) {
        if let Some(g) = self.gang_of(uid) {
            self.engine.bound(&g, uid, node, now_ms);
        }
    }

    /// Releases reservations of gangs that stalled; returns them.
    pub fn expire(&mut self, now_ms: u64) -> Vec<GangId> {
        self.engine.expire(now_ms)
    }
}
