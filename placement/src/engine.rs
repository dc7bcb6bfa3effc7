//! The planner with memory: one plan per gang, held as reservations on nodes so no other gang
//! is promised the same units, ranks handed to pods as they arrive, and reservations released
//! when pods bind, when the gang goes away, or when the gang does not finish binding in time.
//! A node that disappears or degrades under a reservation triggers a new plan (or, when some
//! ranks already run, a repair of the lost ranks next to their groups).
//!
//! Time is a number of milliseconds the caller supplies, so the engine stays free of clocks.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::cluster::{Cluster, NodeId, NodeSpec};
use crate::explain::Explanation;
use crate::plan::{Plan, PlanError, PlanOptions, plan};
use crate::repair::repair;
use crate::request::{GangId, GangRequest};

/// Engine settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineOptions {
    /// Planner settings.
    pub plan: PlanOptions,
    /// How long a gang may take to bind after its last progress before its reservation goes.
    pub reservation_timeout_ms: u64,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            plan: PlanOptions::default(),
            reservation_timeout_ms: 120_000,
        }
    }
}

/// What the engine holds at most, and for how long a gang may hold what it cannot use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldLimits {
    /// How long part of a gang may stay bound on nodes the rest of it cannot join (a lost node
    /// its hard level cannot replace) before the gang is released whole: reservations freed,
    /// bound pods handed back for eviction, the gang planned again when its pods return.
    pub stranded_grace_ms: u64,
    /// Most ranks held over all gangs (each gang holds one per pod of its size); a new gang
    /// past it is refused with the reason until others finish.
    pub max_held_ranks: u64,
}

impl Default for HoldLimits {
    fn default() -> Self {
        Self {
            stranded_grace_ms: 30_000,
            max_held_ranks: 1 << 20,
        }
    }
}

/// The nodes kube-scheduler found feasible for a gang's pod: the candidates of its filter call
/// (its own filters ran first: taints, affinity, resources the engine does not count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feasible {
    mask: Vec<bool>,
}

impl Feasible {
    /// The known nodes among `names`.
    pub fn from_names<S: AsRef<str>>(cluster: &Cluster, names: &[S]) -> Feasible {
        let mut mask = vec![false; cluster.id_bound()];
        for n in names {
            if let Some(id) = cluster.node_id(n.as_ref())
                && let Some(m) = mask.get_mut(id.0 as usize)
            {
                *m = true;
            }
        }
        Feasible { mask }
    }

    /// The candidates given as ids.
    pub fn from_ids(cluster: &Cluster, ids: impl IntoIterator<Item = NodeId>) -> Feasible {
        let mut mask = vec![false; cluster.id_bound()];
        for id in ids {
            if let Some(m) = mask.get_mut(id.0 as usize) {
                *m = true;
            }
        }
        Feasible { mask }
    }

    /// Whether `node` was a candidate.
    pub fn contains(&self, node: NodeId) -> bool {
        self.mask.get(node.0 as usize).copied().unwrap_or(false)
    }
}

/// A gang released because part of it was bound where the rest could not join in time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    /// The gang.
    pub gang: GangId,
    /// Why.
    pub reason: String,
    /// UIDs of its bound pods (to evict, so the gang can be planned whole again).
    pub bound_pods: Vec<String>,
    /// UIDs of its pods not bound yet.
    pub waiting_pods: Vec<String>,
}

/// Where one rank stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RankState {
    /// No node (not planned, or its reservation was released).
    Open,
    /// Units reserved on its node; no pod told yet.
    Reserved,
    /// Units reserved; a pod was sent to the node.
    Assigned,
    /// The pod is bound; its units count as used, not reserved.
    Bound,
}

#[derive(Debug, Clone)]
struct Rank {
    node: Option<NodeId>,
    state: RankState,
    pod: Option<String>,
}

#[derive(Debug, Clone)]
struct Gang {
    request: GangRequest,
    ranks: Vec<Rank>,
    pods: FxHashMap<String, u32>,
    plan: Option<Plan>,
    deadline_ms: u64,
    waiting: Option<String>,
    /// Nodes kube-scheduler's own filters refused to this gang's pods.
    refused: Vec<NodeId>,
    /// Since when part of the gang is bound and lost ranks cannot rejoin their groups.
    stranded_since: Option<u64>,
}

/// What a pod of a gang is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assignment {
    /// Its rank.
    pub rank: u32,
    /// Its node.
    pub node: NodeId,
    /// The node's name.
    pub node_name: String,
}

/// Why a pod gets no node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignError {
    /// No plan: the gang waits or can never fit.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Pods of one gang disagree about its request.
    #[error(
        "pods of gang {gang} disagree: {detail}; every pod of a gang must carry the same \
             scheduling annotations"
    )]
    Disagree {
        /// The gang.
        gang: GangId,
        /// The difference.
        detail: String,
    },
    /// A requested rank outside the gang.
    #[error("pod asks for rank {rank} but gang {gang} has {size} ranks")]
    RankOutOfRange {
        /// The gang.
        gang: GangId,
        /// Requested rank.
        rank: u32,
        /// Gang size.
        size: u32,
    },
    /// A requested rank held by another pod.
    #[error("rank {rank} of gang {gang} is held by pod {holder}")]
    RankTaken {
        /// The gang.
        gang: GangId,
        /// Requested rank.
        rank: u32,
        /// Pod UID holding it.
        holder: String,
    },
    /// More pods than ranks.
    #[error("gang {gang} already has a pod on each of its {size} ranks")]
    GangFull {
        /// The gang.
        gang: GangId,
        /// Gang size.
        size: u32,
    },
    /// A pod the engine holds no rank for.
    #[error("pod {pod} has no rank in gang {gang}")]
    UnknownPod {
        /// The gang.
        gang: GangId,
        /// The pod's UID.
        pod: String,
    },
    /// Lost ranks cannot rejoin their groups.
    #[error("gang {gang} cannot replace lost ranks: {}", why.message)]
    Repair {
        /// The gang.
        gang: GangId,
        /// Why.
        why: Explanation,
    },
    /// Holding the gang would pass the limit on ranks held.
    #[error(
        "gang {gang} ({size} pods) waits: the scheduler already holds {held} ranks of other \
         gangs and its limit is {limit}"
    )]
    OverLimit {
        /// The gang.
        gang: GangId,
        /// Its size.
        size: u32,
        /// Ranks held now.
        held: u64,
        /// The limit.
        limit: u64,
    },
}

/// A gang's plan as published to its pods and launcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GangView {
    /// The gang.
    pub gang: GangId,
    /// Node name per rank (empty when open).
    pub rank_nodes: Vec<String>,
    /// State per rank.
    pub states: Vec<RankState>,
    /// The latest plan, if any.
    pub plan: Option<Plan>,
    /// Why it waits, if it does.
    pub waiting: Option<String>,
}

/// Counts for monitoring: gangs held, gangs waiting, ranks and units reserved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EngineStats {
    /// Gangs the engine holds state for.
    pub gangs: usize,
    /// Gangs waiting with a reason (no room, a lost rank that cannot rejoin its group).
    pub waiting: usize,
    /// Ranks holding a reservation (planned, not yet bound).
    pub reserved_ranks: usize,
    /// Units those reservations hold.
    pub reserved_units: u64,
    /// Ranks held over all gangs (the limit counts these).
    pub held_ranks: u64,
    /// Bytes the gangs' state takes, estimated from what it holds (ranks and pod UIDs).
    pub held_bytes: u64,
    /// Gangs partly bound whose lost ranks cannot rejoin their groups.
    pub stranded: usize,
}

/// Cluster state plus every gang's plan and reservations.
#[derive(Debug, Clone)]
pub struct Engine {
    cluster: Cluster,
    gangs: BTreeMap<GangId, Gang>,
    options: EngineOptions,
    limits: HoldLimits,
    /// Sum of the held gangs' sizes.
    held_ranks: u64,
}

impl Engine {
    /// An engine over `cluster`.
    pub fn new(cluster: Cluster, options: EngineOptions) -> Engine {
        Engine {
            cluster,
            gangs: BTreeMap::new(),
            options,
            limits: HoldLimits::default(),
            held_ranks: 0,
        }
    }

    /// The cluster (free capacity net of reservations).
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Gangs the engine holds state for.
    pub fn gang_ids(&self) -> impl Iterator<Item = &GangId> {
        self.gangs.keys()
    }

    /// Whether the engine holds state for `gang`.
    pub fn holds(&self, gang: &GangId) -> bool {
        self.gangs.contains_key(gang)
    }

    /// The settings.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// The limits in force.
    pub fn limits(&self) -> HoldLimits {
        self.limits
    }

    /// Sets the limits (gangs held already stay).
    pub fn set_limits(&mut self, limits: HoldLimits) {
        self.limits = limits;
    }

    fn forget(&mut self, gang: &GangId) -> Option<Gang> {
        let g = self.gangs.remove(gang)?;
        self.held_ranks = self.held_ranks.saturating_sub(u64::from(g.request.size));
        Some(g)
    }

    /// Sets a node's usage by bound pods.
    pub fn set_node_used(&mut self, name: &str, used: u32) {
        if let Some(id) = self.cluster.node_id(name) {
            self.cluster.set_used(id, used);
        }
    }

    /// Adds or updates a node; reservations on a node that became unusable are re-planned.
    pub fn upsert_node(&mut self, spec: NodeSpec, now_ms: u64) {
        let before = self.cluster.node_id(&spec.name).map(|id| {
            (
                self.cluster.is_healthy(id),
                self.cluster.ancestor(id, 1),
                self.cluster.allocatable(id),
            )
        });
        let id = self.cluster.upsert(spec);
        let after = (
            self.cluster.is_healthy(id),
            self.cluster.ancestor(id, 1),
            self.cluster.allocatable(id),
        );
        let lost = match before {
            Some((healthy, leaf, alloc)) => {
                (healthy && !after.0) || leaf != after.1 || alloc > after.2
            }
            None => false,
        };
        if lost {
            self.replan_on(id, now_ms);
        }
    }

    /// Removes a node; reservations on it are re-planned.
    pub fn remove_node(&mut self, name: &str, now_ms: u64) {
        if let Some(id) = self.cluster.node_id(name) {
            // Unusable first, so the new plan cannot pick it again.
            self.cluster.set_unschedulable(id, true);
            self.replan_on(id, now_ms);
            // Ranks still naming the node (bound pods) lose it before its id can be reused.
            for g in self.gangs.values_mut() {
                for r in &mut g.ranks {
                    if r.node == Some(id) {
                        r.node = None;
                        r.state = RankState::Open;
                    }
                }
            }
            self.cluster.remove(name);
        }
    }

    fn replan_on(&mut self, node: NodeId, now_ms: u64) {
        let affected: Vec<GangId> = self
            .gangs
            .iter()
            .filter(|(_, g)| {
                g.ranks.iter().any(|r| {
                    r.node == Some(node)
                        && matches!(r.state, RankState::Reserved | RankState::Assigned)
                })
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in affected {
            self.open_ranks(&id, None, |r| r.node == Some(node));
            // A failure leaves the gang waiting with its reason; the next pod retries.
            let _ = self.ensure_plan(&id, now_ms, None);
        }
    }

    /// Releases the reserved ranks `lost` picks; when no rank of the gang is committed (bound,
    /// or told to a pod other than `asking`), every reserved rank goes, so the gang is planned
    /// again whole.
    fn open_ranks(&mut self, id: &GangId, asking: Option<&str>, lost: impl Fn(&Rank) -> bool) {
        let Some(g) = self.gangs.get_mut(id) else {
            return;
        };
        let committed = g.ranks.iter().any(|r| match r.state {
            RankState::Bound => true,
            RankState::Assigned => r.pod.as_deref() != asking || asking.is_none(),
            RankState::Open | RankState::Reserved => false,
        });
        let any_lost = g
            .ranks
            .iter()
            .any(|r| lost(r) && matches!(r.state, RankState::Reserved | RankState::Assigned));
        if !any_lost {
            return;
        }
        for r in &mut g.ranks {
            let release = if committed {
                lost(r)
            } else {
                r.state != RankState::Bound
            };
            if release && matches!(r.state, RankState::Reserved | RankState::Assigned) {
                if let Some(n) = r.node.take() {
                    self.cluster.unreserve(n, g.request.per_pod);
                }
                r.state = RankState::Open;
            }
        }
        g.plan = None;
    }

    /// Nodes this gang's plans must not use: those refused to it, and, when kube-scheduler's
    /// candidates are known, every node outside them that has room.
    fn infeasible(&self, id: &GangId, feasible: Option<&Feasible>) -> Vec<NodeId> {
        let mut out: Vec<NodeId> = self
            .gangs
            .get(id)
            .map(|g| g.refused.clone())
            .unwrap_or_default();
        if let Some(f) = feasible {
            out.extend(
                (0..self.cluster.id_bound() as u32)
                    .map(NodeId)
                    .filter(|n| !f.contains(*n) && self.cluster.free(*n) > 0),
            );
        }
        out
    }

    /// Places the gang's open ranks: a full plan when nothing is placed yet, else a repair;
    /// never on nodes refused to the gang or outside `feasible`.
    fn ensure_plan(
        &mut self,
        id: &GangId,
        now_ms: u64,
        feasible: Option<&Feasible>,
    ) -> Result<(), AssignError> {
        let Some(g) = self.gangs.get(id) else {
            return Ok(());
        };
        if g.ranks.iter().all(|r| r.node.is_some()) {
            return Ok(());
        }
        let hidden = self.infeasible(id, feasible);
        let hidden = self.cluster.set_excluded(&hidden, true);
        let outcome = self.place_open(id, now_ms);
        self.cluster.set_excluded(&hidden, false);
        outcome
    }

    fn place_open(&mut self, id: &GangId, now_ms: u64) -> Result<(), AssignError> {
        let Some(g) = self.gangs.get_mut(id) else {
            return Ok(());
        };
        // Ranks already placed stay; the open ones join them. Nothing placed: a full plan.
        let any_placed = g.ranks.iter().any(|r| r.node.is_some());
        let nodes: Vec<NodeId> = if any_placed {
            let mut ranks: Vec<Option<NodeId>> = g.ranks.iter().map(|r| r.node).collect();
            if let Err(why) = repair(&self.cluster, &g.request, &mut ranks) {
                g.waiting = Some(why.message.clone());
                if g.ranks.iter().any(|r| r.state == RankState::Bound) {
                    g.stranded_since.get_or_insert(now_ms);
                }
                return Err(AssignError::Repair {
                    gang: id.clone(),
                    why,
                });
            }
            ranks.into_iter().flatten().collect()
        } else {
            match plan(&self.cluster, &g.request, &self.options.plan) {
                Ok(p) => {
                    let nodes = p.nodes.clone();
                    g.plan = Some(p);
                    nodes
                }
                Err(e) => {
                    g.waiting = Some(e.to_string());
                    let never = matches!(e, PlanError::NeverFits { .. });
                    if never && g.ranks.iter().all(|r| r.state == RankState::Open) {
                        // Nothing will change that: keep no state for it.
                        self.forget(id);
                    }
                    return Err(e.into());
                }
            }
        };
        for (r, n) in g.ranks.iter_mut().zip(nodes) {
            if r.node.is_none() {
                r.node = Some(n);
                r.state = if r.pod.is_some() {
                    RankState::Assigned
                } else {
                    RankState::Reserved
                };
                self.cluster.reserve(n, g.request.per_pod);
            }
        }
        g.waiting = None;
        g.stranded_since = None;
        g.deadline_ms = now_ms.saturating_add(self.options.reservation_timeout_ms);
        Ok(())
    }

    fn gang_entry(&mut self, request: &GangRequest) -> Result<&mut Gang, AssignError> {
        if !self.gangs.contains_key(&request.gang) {
            let size = u64::from(request.size);
            if self.held_ranks.saturating_add(size) > self.limits.max_held_ranks {
                return Err(AssignError::OverLimit {
                    gang: request.gang.clone(),
                    size: request.size,
                    held: self.held_ranks,
                    limit: self.limits.max_held_ranks,
                });
            }
            self.held_ranks += size;
        }
        let g = self
            .gangs
            .entry(request.gang.clone())
            .or_insert_with(|| Gang {
                request: request.clone(),
                ranks: vec![
                    Rank {
                        node: None,
                        state: RankState::Open,
                        pod: None,
                    };
                    request.size as usize
                ],
                pods: FxHashMap::default(),
                plan: None,
                deadline_ms: 0,
                waiting: None,
                refused: Vec::new(),
                stranded_since: None,
            });
        if g.request != *request {
            return Err(AssignError::Disagree {
                gang: request.gang.clone(),
                detail: describe_difference(&g.request, request),
            });
        }
        Ok(g)
    }

    /// The node for pod `pod_uid` of the gang: plans the gang on its first pod, reserves it,
    /// and gives the pod its rank (`index` when the launcher fixed one, else the lowest free).
    ///
    /// `feasible` is what kube-scheduler's own filters left for this pod (its candidates):
    /// plans use only those nodes, and a node reserved for the gang (for a rank no pod was
    /// told yet, or for this pod) that is no longer among them is refused to the gang for good
    /// and its rank placed again: the whole plan again while no rank is committed, else next
    /// to its group.
    pub fn assign(
        &mut self,
        request: &GangRequest,
        pod_uid: &str,
        index: Option<u32>,
        now_ms: u64,
        feasible: Option<&Feasible>,
    ) -> Result<Assignment, AssignError> {
        let id = request.gang.clone();
        let timeout = self.options.reservation_timeout_ms;
        let g = self.gang_entry(request)?;
        let rank = match g.pods.get(pod_uid) {
            Some(r) => *r,
            None => {
                let r = choose_rank(g, &id, index)?;
                g.pods.insert(pod_uid.to_owned(), r);
                g.ranks[r as usize].pod = Some(pod_uid.to_owned());
                if g.ranks[r as usize].state == RankState::Reserved {
                    g.ranks[r as usize].state = RankState::Assigned;
                }
                // A new pod is progress; the same pod asking again is not.
                g.deadline_ms = now_ms.saturating_add(timeout);
                r
            }
        };
        if let Some(f) = feasible {
            self.refuse_infeasible(&id, pod_uid, f);
        }
        self.ensure_plan(&id, now_ms, feasible)?;
        let g = self.gangs.get(&id).ok_or_else(|| AssignError::GangFull {
            gang: id.clone(),
            size: request.size,
        })?;
        let node = g.ranks[rank as usize]
            .node
            .ok_or_else(|| AssignError::GangFull {
                gang: id.clone(),
                size: request.size,
            })?;
        Ok(Assignment {
            rank,
            node,
            node_name: self.cluster.node_name(node).to_owned(),
        })
    }

    /// Refuses to the gang every node it holds for a rank no other pod was told (or for
    /// `pod_uid`'s own) that kube-scheduler no longer found feasible, and opens those ranks.
    fn refuse_infeasible(&mut self, id: &GangId, pod_uid: &str, feasible: &Feasible) {
        let Some(g) = self.gangs.get_mut(id) else {
            return;
        };
        let lost = |r: &Rank| {
            let ours = match r.state {
                RankState::Reserved => true,
                RankState::Assigned => r.pod.as_deref() == Some(pod_uid),
                RankState::Open | RankState::Bound => false,
            };
            ours && r.node.is_some_and(|n| !feasible.contains(n))
        };
        let gone: Vec<NodeId> = g
            .ranks
            .iter()
            .filter(|r| lost(r))
            .filter_map(|r| r.node)
            .collect();
        if gone.is_empty() {
            return;
        }
        for n in gone {
            if !g.refused.contains(&n) {
                g.refused.push(n);
            }
        }
        self.open_ranks(id, Some(pod_uid), lost);
    }

    /// Records that a gang pod is bound to `node_name`: its reservation is released (the
    /// caller counts the pod's units as used). Returns the pod's rank.
    pub fn bound(
        &mut self,
        gang: &GangId,
        pod_uid: &str,
        node_name: &str,
        now_ms: u64,
    ) -> Option<u32> {
        let node = self.cluster.node_id(node_name);
        let g = self.gangs.get_mut(gang)?;
        let rank = *g.pods.get(pod_uid)?;
        let r = &mut g.ranks[rank as usize];
        if r.state != RankState::Bound {
            if let Some(n) = r.node {
                self.cluster.unreserve(n, g.request.per_pod);
            }
            r.state = RankState::Bound;
            r.node = node.or(r.node);
        }
        g.deadline_ms = now_ms.saturating_add(self.options.reservation_timeout_ms);
        Some(rank)
    }

    /// Takes in a pod found running with its published rank (after a restart of the
    /// scheduler): its rank is bound to its node, so the gang's other ranks are placed next to
    /// it rather than planned from scratch.
    pub fn adopt(
        &mut self,
        request: &GangRequest,
        pod_uid: &str,
        rank: u32,
        node_name: &str,
    ) -> Result<(), AssignError> {
        let node = self.cluster.node_id(node_name);
        let id = request.gang.clone();
        let g = self.gang_entry(request)?;
        if g.pods.contains_key(pod_uid) {
            return Ok(());
        }
        let r = choose_rank(g, &id, Some(rank))?;
        let per_pod = g.request.per_pod;
        let slot = &mut g.ranks[r as usize];
        let release = match slot.state {
            RankState::Reserved | RankState::Assigned => slot.node,
            RankState::Open | RankState::Bound => None,
        };
        slot.node = node;
        slot.state = RankState::Bound;
        slot.pod = Some(pod_uid.to_owned());
        g.pods.insert(pod_uid.to_owned(), r);
        if let Some(n) = release {
            self.cluster.unreserve(n, per_pod);
        }
        Ok(())
    }

    /// Takes back a gang's plan as a previous scheduler published it (after a restart or a
    /// change of leader): each open rank is reserved again on its published node when that
    /// node still exists, is healthy and has room, and pods that were told a rank keep it.
    /// Ranks that cannot be taken back stay open and are placed next to their group when the
    /// gang's next pod asks. Returns how many ranks were reserved again.
    pub fn restore(
        &mut self,
        request: &GangRequest,
        rank_nodes: &[String],
        pods: &[(String, u32)],
        now_ms: u64,
    ) -> Result<usize, AssignError> {
        let id = request.gang.clone();
        let timeout = self.options.reservation_timeout_ms;
        self.gang_entry(request)?;
        let Some(g) = self.gangs.get_mut(&id) else {
            return Ok(0);
        };
        let per_pod = g.request.per_pod;
        let mut restored = 0;
        for (rank, name) in g.ranks.iter_mut().zip(rank_nodes) {
            if rank.state != RankState::Open || rank.node.is_some() {
                continue;
            }
            let Some(node) = self.cluster.node_id(name) else {
                continue;
            };
            if self.cluster.is_healthy(node) && self.cluster.free(node) >= per_pod {
                self.cluster.reserve(node, per_pod);
                rank.node = Some(node);
                rank.state = RankState::Reserved;
                restored += 1;
            }
        }
        for (uid, r) in pods {
            let Some(rank) = g.ranks.get_mut(*r as usize) else {
                continue;
            };
            if rank.pod.is_some() || g.pods.contains_key(uid) {
                continue;
            }
            rank.pod = Some(uid.clone());
            if rank.state == RankState::Reserved {
                rank.state = RankState::Assigned;
            }
            g.pods.insert(uid.clone(), *r);
        }
        g.deadline_ms = now_ms.saturating_add(timeout);
        Ok(restored)
    }

    /// The UID of the pod holding `rank`, if any.
    pub fn pod_of_rank(&self, gang: &GangId, rank: u32) -> Option<&str> {
        self.gangs
            .get(gang)?
            .ranks
            .get(rank as usize)?
            .pod
            .as_deref()
    }

    /// A pod of the gang ended or was deleted: its rank opens for a replacement (units it held
    /// as used are the caller's to release).
    pub fn pod_gone(&mut self, gang: &GangId, pod_uid: &str) {
        let Some(g) = self.gangs.get_mut(gang) else {
            return;
        };
        let Some(rank) = g.pods.remove(pod_uid) else {
            return;
        };
        let r = &mut g.ranks[rank as usize];
        r.pod = None;
        match r.state {
            RankState::Assigned => r.state = RankState::Reserved,
            RankState::Bound => {
                r.state = RankState::Open;
                r.node = None;
            }
            RankState::Open | RankState::Reserved => {}
        }
        if g.pods.is_empty() && g.ranks.iter().all(|r| r.state != RankState::Bound) {
            self.release(gang);
        }
    }

    /// Forgets a gang and releases every reservation it holds.
    pub fn release(&mut self, gang: &GangId) {
        if let Some(g) = self.forget(gang) {
            for r in g.ranks {
                if let (Some(n), RankState::Reserved | RankState::Assigned) = (r.node, r.state) {
                    self.cluster.unreserve(n, g.request.per_pod);
                }
            }
        }
    }

    /// Releases the reservations of gangs that made no progress before their deadline;
    /// returns them. Gangs fully bound are forgotten (their pods keep running), and so are
    /// gangs left with no pod and nothing held (their pods went away unseen).
    pub fn expire(&mut self, now_ms: u64) -> Vec<GangId> {
        let done: Vec<GangId> = self
            .gangs
            .iter()
            .filter(|(_, g)| {
                g.ranks.iter().all(|r| r.state == RankState::Bound)
                    || (g.pods.is_empty() && g.ranks.iter().all(|r| r.state == RankState::Open))
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in done {
            self.forget(&id);
        }
        let expired: Vec<GangId> = self
            .gangs
            .iter()
            .filter(|(_, g)| {
                g.deadline_ms <= now_ms
                    && g.ranks
                        .iter()
                        .any(|r| matches!(r.state, RankState::Reserved | RankState::Assigned))
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            let Some(g) = self.gangs.get_mut(id) else {
                continue;
            };
            for r in &mut g.ranks {
                if matches!(r.state, RankState::Reserved | RankState::Assigned) {
                    if let Some(n) = r.node.take() {
                        self.cluster.unreserve(n, g.request.per_pod);
                    }
                    r.state = RankState::Open;
                }
            }
            g.plan = None;
            g.waiting = Some("reservation expired before every pod was bound".to_owned());
        }
        expired
    }

    /// A gang's plan, rank order and state.
    pub fn view(&self, gang: &GangId) -> Option<GangView> {
        let g = self.gangs.get(gang)?;
        Some(GangView {
            gang: gang.clone(),
            rank_nodes: g
                .ranks
                .iter()
                .map(|r| {
                    r.node
                        .map(|n| self.cluster.node_name(n).to_owned())
                        .unwrap_or_default()
                })
                .collect(),
            states: g.ranks.iter().map(|r| r.state.clone()).collect(),
            plan: g.plan.clone(),
            waiting: g.waiting.clone(),
        })
    }

    /// Releases, whole, every gang stranded (part bound, lost ranks unable to rejoin their
    /// groups) for [`HoldLimits::stranded_grace_ms`] after trying once more to place the
    /// lost ranks: its reservations go and it is forgotten, so its pods, once evicted and
    /// back, are planned as a new gang.
    pub fn release_stranded(&mut self, now_ms: u64) -> Vec<Released> {
        let grace = self.limits.stranded_grace_ms;
        let due: Vec<GangId> = self
            .gangs
            .iter()
            .filter(|(_, g)| {
                g.stranded_since
                    .is_some_and(|t| now_ms >= t.saturating_add(grace))
            })
            .map(|(id, _)| id.clone())
            .collect();
        let mut out = Vec::new();
        for id in due {
            if self.ensure_plan(&id, now_ms, None).is_ok() {
                continue;
            }
            let Some(g) = self.gangs.get(&id) else {
                continue;
            };
            let reason = format!(
                "part of gang {id} was bound where the rest cannot join for {} s ({}); the gang \
                 is released whole: its bound pods are evicted so it can be planned again",
                grace / 1000,
                g.waiting
                    .as_deref()
                    .unwrap_or("lost ranks cannot rejoin their groups")
            );
            let (mut bound_pods, mut waiting_pods) = (Vec::new(), Vec::new());
            for r in &g.ranks {
                if let Some(uid) = &r.pod {
                    if r.state == RankState::Bound {
                        bound_pods.push(uid.clone());
                    } else {
                        waiting_pods.push(uid.clone());
                    }
                }
            }
            self.release(&id);
            out.push(Released {
                gang: id,
                reason,
                bound_pods,
                waiting_pods,
            });
        }
        out
    }

    /// Counts for monitoring; O(ranks held).
    pub fn stats(&self) -> EngineStats {
        let mut stats = EngineStats {
            gangs: self.gangs.len(),
            held_ranks: self.held_ranks,
            ..EngineStats::default()
        };
        for g in self.gangs.values() {
            stats.waiting += usize::from(g.waiting.is_some());
            stats.stranded += usize::from(g.stranded_since.is_some());
            let reserved = g
                .ranks
                .iter()
                .filter(|r| {
                    r.node.is_some() && matches!(r.state, RankState::Reserved | RankState::Assigned)
                })
                .count();
            stats.reserved_ranks += reserved;
            stats.reserved_units += reserved as u64 * u64::from(g.request.per_pod);
            stats.held_bytes += gang_bytes(g);
        }
        stats
    }

    /// The rank a pod holds, if any.
    pub fn rank_of(&self, gang: &GangId, pod_uid: &str) -> Option<u32> {
        self.gangs.get(gang)?.pods.get(pod_uid).copied()
    }
}

/// The memory a gang's state holds: its ranks, its pods' UIDs (in the rank and the index),
/// its plan and the hash index's slots.
fn gang_bytes(g: &Gang) -> u64 {
    let uid_bytes: usize = g.pods.keys().map(|k| 2 * k.capacity()).sum();
    let index = g.pods.capacity() * (std::mem::size_of::<(String, u32)>() + 1);
    let plan = g
        .plan
        .as_ref()
        .map_or(0, |p| p.nodes.capacity() * std::mem::size_of::<NodeId>());
    (std::mem::size_of::<Gang>()
        + g.ranks.capacity() * std::mem::size_of::<Rank>()
        + uid_bytes
        + index
        + plan) as u64
}

fn choose_rank(g: &Gang, id: &GangId, index: Option<u32>) -> Result<u32, AssignError> {
    let size = g.request.size;
    match index {
        Some(i) if i >= size => Err(AssignError::RankOutOfRange {
            gang: id.clone(),
            rank: i,
            size,
        }),
        Some(i) => match &g.ranks[i as usize].pod {
            Some(holder) => Err(AssignError::RankTaken {
                gang: id.clone(),
                rank: i,
                holder: holder.clone(),
            }),
            None => Ok(i),
        },
        None => g
            .ranks
            .iter()
            .position(|r| r.pod.is_none() && r.state != RankState::Bound)
            .map(|p| p as u32)
            .ok_or_else(|| AssignError::GangFull {
                gang: id.clone(),
                size,
            }),
    }
}

fn describe_difference(a: &GangRequest, b: &GangRequest) -> String {
    if a.size != b.size {
        format!("size {} vs {}", a.size, b.size)
    } else if a.per_pod != b.per_pod || a.resource != b.resource {
        format!(
            "{} {} vs {} {} per pod",
            a.per_pod, a.resource, b.per_pod, b.resource
        )
    } else {
        format!("levels {:?} vs {:?}", a.levels, b.levels)
    }
}
