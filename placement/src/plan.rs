//! Planning a whole gang: validation against the cluster, then the tightest tiers that fit,
//! soft levels widened one tier at a time (each widening recorded), then the best candidate
//! domain.
//!
//! Among the domains of the smallest tier that can hold the gang, every one that could be the
//! best is planned in full and compared by (largest group spread, total group spread, free slots
//! left in the domain): the spread of communication groups first, fragmentation second. A domain
//! is skipped only when a proven floor on its score ([`score_floor`]) is no better than the best
//! plan found, so the cut never drops the domain the objective prefers.

use serde::Serialize;

use crate::capacity::{Basis, Capacity, Shape};
use crate::cluster::{Cluster, DomainId, NodeId};
use crate::explain::{Explanation, explain};
use crate::placer::Placer;
use crate::request::{GangId, GangRequest, Mode};
use crate::spread::{Spread, measure};
use crate::tier::Tier;

/// Planner settings (none yet: every candidate domain that could win is planned).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanOptions {}

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
    // Every tier choice with room is planned: a soft level kept in its tight tier over
    // fragmented domains can cross more boundaries than one granted a wider tier. The tightest
    // choice wins ties.
    let mut best: Option<(Plan, usize)> = None;
    let mut first_fit: Option<(usize, (u32, u32))> = None;
    // No tier choice can beat the floor over the whole cluster: a plan that reaches it ends
    // the search.
    let floor = {
        let free = Capacity::compute(cluster, &shape, Basis::Free);
        let whole = Placer::new(cluster, &shape, free.clone());
        let (max, total, _) = score_floor(cluster, request, &shape, &whole, &free, cluster.root());
        (max, total)
    };
    for (i, tiers) in choices.iter().enumerate() {
        let shape = Shape::new(cluster, request, tiers);
        let cap = Capacity::compute(cluster, &shape, Basis::Free);
        if cap.get(shape.levels(), cluster.root()) == 0 {
            continue;
        }
        let Some((domain, slots)) = place_gang(cluster, request, &shape, &cap, options) else {
            continue;
        };
        let nodes = pod_nodes(&slots, shape.slot_pods);
        let spread = measure(cluster, request, &nodes);
        let score = (spread.max, spread.total);
        first_fit.get_or_insert((i, score));
        if best
            .as_ref()
            .is_none_or(|(b, _)| score < (b.spread.max, b.spread.total))
        {
            best = Some((
                Plan {
                    gang: request.gang.clone(),
                    nodes,
                    per_pod: request.per_pod,
                    domain,
                    tiers: tiers.clone(),
                    fallbacks: Vec::new(),
                    spread,
                },
                i,
            ));
        }
        if score <= floor {
            break;
        }
    }
    if let (Some((mut plan, i)), Some((first, first_score))) = (best, first_fit) {
        let tight = (i != first).then(|| (choices[first].as_slice(), first_score));
        plan.fallbacks = fallbacks(cluster, request, &choices[i], tight, &plan.spread);
        return Ok(plan);
    }
    let first = choices.first().cloned().unwrap_or_default();
    let shape = Shape::new(cluster, request, &first);
    let cap = Capacity::compute(cluster, &shape, Basis::Free);
    Err(PlanError::Pending {
        gang: request.gang.clone(),
        why: explain(cluster, &shape, &cap, &request.resource, "free"),
    })
}

/// The levels granted a wider tier than they asked for, each with its reason: no domain of its
/// tier had room, or (`tight`: the tightest choice with room and its spread) a wider one
/// crosses fewer boundaries.
fn fallbacks(
    cluster: &Cluster,
    request: &GangRequest,
    tiers: &[Tier],
    tight: Option<(&[Tier], (u32, u32))>,
    spread: &Spread,
) -> Vec<Fallback> {
    request
        .levels
        .iter()
        .enumerate()
        .zip(tiers)
        .filter(|((_, l), t)| cluster.effective_tier(l.tier) < cluster.effective_tier(**t))
        .map(|((i, l), t)| {
            let tighter = tight.and_then(|(choice, score)| {
                let had = choice.get(i).copied()?;
                (cluster.effective_tier(had) < cluster.effective_tier(*t)).then_some((had, score))
            });
            let reason = match tighter {
                Some((had, (max, total))) => format!(
                    "a {} group of {} pods across a {} crosses fewer boundaries (largest group \
                     spread {}, total {}) than within one {} ({max}, {total})",
                    l.name,
                    l.pods,
                    cluster.tier_name(cluster.effective_tier(*t)),
                    spread.max,
                    spread.total,
                    cluster.tier_name(cluster.effective_tier(had)),
                ),
                None => format!(
                    "no {} had room for a {} group of {} pods",
                    cluster.tier_name(cluster.effective_tier(l.tier)),
                    l.name,
                    l.pods
                ),
            };
            Fallback {
                level: l.name.clone(),
                requested: l.tier,
                granted: *t,
                reason,
            }
        })
        .collect()
}

type Score = (u32, u32, u64);

/// The fewest tier-`tier` domains under `d` whose free blocks of level `unit` (0: slots) add
/// up to `need` (all of them when even they do not).
fn fewest_holding(
    placer: &Placer<'_>,
    cap: &Capacity,
    d: DomainId,
    tier: u8,
    need: u64,
    unit: usize,
) -> u32 {
    let mut held_by: Vec<u64> = placer
        .descendants_at(d, tier)
        .into_iter()
        .map(|c| cap.get(unit, c))
        .filter(|s| *s > 0)
        .collect();
    held_by.sort_unstable_by(|a, b| b.cmp(a));
    let mut held = 0u64;
    let mut count = 0u32;
    for s in held_by {
        if held >= need {
            break;
        }
        held += s;
        count += 1;
    }
    count.max(1)
}

/// A floor under the score of any placement of the gang inside `d`, proven as follows. The
/// whole gang is one of the request's groups and encloses every other, so the largest spread
/// is the gang's own: at each tier below `d`'s, it touches at least the fewest domains whose
/// free capacity holds it (the largest first), counted in blocks of the outermost level held
/// within a leaf (a leaf holds no more of them than its capacity counts; slots when no level
/// is), and exactly one at `d`'s tier and above.
/// Every level whose groups are the whole gang adds that spread to the total again, and
/// inner groups add at least 0. The free slots left in `d` are exact.
pub(crate) fn score_floor(
    cluster: &Cluster,
    request: &GangRequest,
    shape: &Shape,
    placer: &Placer<'_>,
    cap: &Capacity,
    d: DomainId,
) -> Score {
    let unit = (1..=shape.levels())
        .rev()
        .find(|i| shape.tiers[i - 1] <= 1)
        .unwrap_or(0);
    let unit_slots = if unit == 0 { 1 } else { shape.r[unit - 1] };
    let need = u64::from(shape.gang_slots() / unit_slots.max(1));
    let spread: u32 = (1..cluster.domain(d).tier)
        .map(|t| fewest_holding(placer, cap, d, t, need, unit) - 1)
        .sum();
    let whole = request
        .levels
        .iter()
        .filter(|l| l.pods == request.size)
        .count() as u32;
    (
        spread,
        spread * whole.max(1),
        cap.get(0, d).saturating_sub(u64::from(shape.gang_slots())),
    )
}

/// Chooses the gang's domain: the smallest tier with room, then the best of its domains,
/// planning in full every domain whose floor could still beat the best plan found.
fn place_gang(
    cluster: &Cluster,
    request: &GangRequest,
    shape: &Shape,
    cap: &Capacity,
    _options: &PlanOptions,
) -> Option<(String, Vec<NodeId>)> {
    let k = shape.levels();
    let whole = Placer::new(cluster, shape, cap.clone());
    // The whole gang on one node when it fits there.
    if let Some(node) = whole.best_node_for(cluster.root(), shape.gang_slots()) {
        let slots = vec![node; shape.gang_slots() as usize];
        return Some((format!("node {}", cluster.node_name(node)), slots));
    }
    for tier in 1..=shape.tiers[k - 1] {
        let mut candidates: Vec<(Score, &str, DomainId)> = whole
            .descendants_at(cluster.root(), tier)
            .into_iter()
            .filter(|d| cap.get(k, *d) >= 1)
            .map(|d| {
                let floor = score_floor(cluster, request, shape, &whole, cap, d);
                (floor, cluster.domain_value(d), d)
            })
            .collect();
        if candidates.is_empty() {
            continue;
        }
        // Lowest floor first: once a floor is no better than the best plan, no later domain
        // (its floor as high or higher) can be better either.
        candidates.sort_unstable();
        let mut best: Option<((Score, &str), DomainId, Vec<NodeId>)> = None;
        for (floor, value, d) in candidates {
            if best.as_ref().is_some_and(|(b, _, _)| (floor, value) >= *b) {
                break;
            }
            let mut p = Placer::new(cluster, shape, cap.clone());
            if !p.place_block(k, d) || p.slots.len() != shape.gang_slots() as usize {
                continue;
            }
            let s = measure(cluster, request, &pod_nodes(&p.slots, shape.slot_pods));
            let score = (
                (
                    s.max,
                    s.total,
                    cap.get(0, d).saturating_sub(u64::from(shape.gang_slots())),
                ),
                value,
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
