//! Planning a whole gang: validation against the cluster, then the tightest tiers that fit,
//! soft levels widened one tier at a time (each widening recorded), then the best candidate
//! domain.
//!
//! Among the domains of the smallest tier that can hold the gang, up to
//! [`PlanOptions::candidates`] (fewest free slots first) are planned in full and compared by
//! (largest group spread, total group spread, free slots left in the domain): the spread of
//! communication groups first, fragmentation second.

use serde::Serialize;

use crate::capacity::{Basis, Capacity, Shape};
use crate::cluster::{Cluster, DomainId, NodeId};
use crate::explain::{Explanation, explain};
use crate::placer::Placer;
use crate::request::{GangId, GangRequest, Mode};
use crate::spread::{Spread, measure};
use crate::tier::Tier;

/// Planner settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOptions {
    /// Candidate domains planned in full before choosing.
    pub candidates: usize,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self { candidates: 8 }
    }
}

/// A level placed in a wider tier than it asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fallback {
    /// Level name.
    pub level: String,
    /// Tier asked for.
    pub requested: Tier,
    /// Tier granted.
    pub granted: Tier,
    /// Why.
    pub reason: String,
}

/// A gang's placement: the node of every rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The gang.
    pub gang: GangId,
    /// Node of each rank (pod), in rank order.
    pub nodes: Vec<NodeId>,
    /// Units each pod holds.
    pub per_pod: u32,
    /// The domain holding the whole gang (`node n`, `leaf l`, `spine s`, `the cluster`).
    pub domain: String,
    /// Tier granted to each request level.
    pub tiers: Vec<Tier>,
    /// Levels placed wider than asked.
    pub fallbacks: Vec<Fallback>,
    /// Quality of the placement.
    pub spread: Spread,
}

/// Why a gang has no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The gang cannot fit even in an empty cluster: it must change.
    #[error("gang {gang} can never fit this cluster: {}", why.message)]
    NeverFits {
        /// The gang.
        gang: GangId,
        /// Shortfalls measured on an empty cluster.
        why: Explanation,
    },
    /// Not enough free room now: the gang waits.
    #[error("gang {gang} is waiting: {}", why.message)]
    Pending {
        /// The gang.
        gang: GangId,
        /// Shortfalls measured on free capacity.
        why: Explanation,
    },
}

/// Tier choices to try, tightest first: soft levels widen one tier at a time, the outermost
/// first, and inner levels never get a wider tier than outer ones.
fn tier_choices(cluster: &Cluster, request: &GangRequest) -> Vec<Vec<Tier>> {
    let top = cluster.depth() + 1;
    let options: Vec<Vec<Tier>> = request
        .levels
        .iter()
        .map(|l| {
            let start = cluster.effective_tier(l.tier);
            let as_tier = |t: u8| if t >= top { Tier::CLUSTER } else { Tier(t) };
            match l.mode {
                Mode::Hard => vec![as_tier(start)],
                Mode::Soft => (start..=top).map(as_tier).collect(),
            }
        })
        .collect();
    let mut out: Vec<Vec<Tier>> = vec![Vec::new()];
    for opts in &options {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                opts.iter().filter_map(move |t| {
                    let ok = prefix.last().is_none_or(|p| p <= t);
                    ok.then(|| {
                        let mut v = prefix.clone();
                        v.push(*t);
                        v
                    })
                })
            })
            .collect();
    }
    out
}

fn pod_nodes(slots: &[NodeId], slot_pods: u32) -> Vec<NodeId> {
    slots
        .iter()
        .flat_map(|n| std::iter::repeat_n(*n, slot_pods as usize))
        .collect()
}

/// Plans `request` on the cluster's free capacity; nothing is reserved.
pub fn plan(
    cluster: &Cluster,
    request: &GangRequest,
    options: &PlanOptions,
) -> Result<Plan, PlanError> {
    let choices = tier_choices(cluster, request);
    let loosest = choices.last().cloned().unwrap_or_default();
    let shape = Shape::new(cluster, request, &loosest);
    let empty = Capacity::compute(cluster, &shape, Basis::Allocatable);
    if empty.get(shape.levels(), cluster.root()) == 0 {
        return Err(PlanError::NeverFits {
            gang: request.gang.clone(),
            why: explain(cluster, &shape, &empty, &request.resource, "in all"),
        });
    }
    for tiers in &choices {
        let shape = Shape::new(cluster, request, tiers);
        let cap = Capacity::compute(cluster, &shape, Basis::Free);
        if cap.get(shape.levels(), cluster.root()) == 0 {
            continue;
        }
        if let Some((domain, slots)) = place_gang(cluster, request, &shape, &cap, options) {
            let nodes = pod_nodes(&slots, shape.slot_pods);
            let spread = measure(cluster, request, &nodes);
            return Ok(Plan {
                gang: request.gang.clone(),
                nodes,
                per_pod: request.per_pod,
                domain,
                tiers: tiers.clone(),
                fallbacks: fallbacks(cluster, request, tiers),
                spread,
            });
        }
    }
    let first = choices.first().cloned().unwrap_or_default();
    let shape = Shape::new(cluster, request, &first);
    let cap = Capacity::compute(cluster, &shape, Basis::Free);
    Err(PlanError::Pending {
        gang: request.gang.clone(),
        why: explain(cluster, &shape, &cap, &request.resource, "free"),
    })
}

fn fallbacks(cluster: &Cluster, request: &GangRequest, tiers: &[Tier]) -> Vec<Fallback> {
    request
        .levels
        .iter()
        .zip(tiers)
        .filter(|(l, t)| cluster.effective_tier(l.tier) < cluster.effective_tier(**t))
        .map(|(l, t)| Fallback {
            level: l.name.clone(),
            requested: l.tier,
            granted: *t,
            reason: format!(
                "no {} had room for a {} group of {} pods",
                cluster.tier_name(cluster.effective_tier(l.tier)),
                l.name,
                l.pods
            ),
        })
        .collect()
}

type Score = (u32, u32, u64);

/// Chooses the gang's domain: the smallest tier with room, then the best of the candidates.
fn place_gang(
    cluster: &Cluster,
    request: &GangRequest,
    shape: &Shape,
    cap: &Capacity,
    options: &PlanOptions,
) -> Option<(String, Vec<NodeId>)> {
    let k = shape.levels();
    let whole = Placer::new(cluster, shape, cap.clone());
    // The whole gang on one node when it fits there.
    if let Some(node) = whole.best_node_for(cluster.root(), shape.gang_slots()) {
        let slots = vec![node; shape.gang_slots() as usize];
        return Some((format!("node {}", cluster.node_name(node)), slots));
    }
    for tier in 1..=shape.tiers[k - 1] {
        let mut candidates: Vec<DomainId> = whole
            .descendants_at(cluster.root(), tier)
            .into_iter()
            .filter(|d| cap.get(k, *d) >= 1)
            .collect();
        if candidates.is_empty() {
            continue;
        }
        candidates.sort_by(|a, b| {
            (cap.get(0, *a), cluster.domain_value(*a))
                .cmp(&(cap.get(0, *b), cluster.domain_value(*b)))
        });
        let mut best: Option<(Score, DomainId, Vec<NodeId>)> = None;
        for d in candidates.into_iter().take(options.candidates.max(1)) {
            let mut p = Placer::new(cluster, shape, cap.clone());
            if !p.place_block(k, d) || p.slots.len() != shape.gang_slots() as usize {
                continue;
            }
            let s = measure(cluster, request, &pod_nodes(&p.slots, shape.slot_pods));
            let score = (
                s.max,
                s.total,
                cap.get(0, d).saturating_sub(u64::from(shape.gang_slots())),
            );
            if best.as_ref().is_none_or(|(b, _, _)| score < *b) {
                best = Some((score, d, p.slots));
            }
        }
        if let Some((_, d, slots)) = best {
            return Some((cluster.describe(d), slots));
        }
    }
    None
}
