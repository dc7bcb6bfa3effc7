//! The exact minimum group spread of one gang on the cluster's free capacity, by exhaustive
//! branch-and-bound search, for small cases.
//!
//! Why it is exhaustive. A slot (the pods that share a node) can go to a leaf exactly when the
//! leaf has a free slot left: a leaf's slot capacity is the sum over its nodes, and which node
//! of a leaf takes a slot changes no group's spread (spread counts leaves and the tiers above).
//! So the feasible placements, up to that irrelevant choice, are the maps from the gang's slots
//! to leaves with per-leaf counts within capacity, and hard levels keeping each group in one
//! domain of its tier. The search enumerates those maps slot by slot and skips only:
//! 1. a branch whose partial (largest spread, total spread) is already no better than the best
//!    complete map found: spreads never shrink as slots are added, so nothing below it wins;
//! 2. a leaf interchangeable with one already tried for this slot (same ancestors, same free
//!    capacity left, neither used by the gang yet): swapping the two maps every completion of
//!    one branch to a completion of the other with equal spreads.
//!
//! `exhaustive_matches_brute_force` in the tests checks it against plain enumeration.

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, DomainId, NodeId};
use crate::repair::slot_pods;
use crate::request::{GangRequest, Mode};

/// Size limits beyond which the search gives up (returns `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most slots in the gang.
    pub max_slots: usize,
    /// Most leaves with free capacity.
    pub max_leaves: usize,
    /// Most search steps.
    pub max_steps: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_slots: 16,
            max_leaves: 16,
            max_steps: 20_000_000,
        }
    }
}

/// The best placement found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Optimum {
    /// Largest group spread.
    pub max: u32,
    /// Total group spread.
    pub total: u32,
    /// Node of every rank.
    pub nodes: Vec<NodeId>,
}

struct Leaf {
    id: DomainId,
    /// Ancestors from tier 1 (itself) up to the deepest tier.
    path: Vec<DomainId>,
    cap: u32,
}

struct Group {
    /// Slots per block.
    size: usize,
    /// For a hard level, the tier every block must stay in.
    hard_tier: Option<u8>,
}

struct Search<'a> {
    leaves: &'a [Leaf],
    groups: &'a [Group],
    depth: usize,
    left: Vec<u32>,
    used_by_gang: Vec<u32>,
    assign: Vec<usize>,
    /// Per group block, per tier: domain -> slots in it.
    seen: Vec<Vec<Vec<FxHashMap<DomainId, u32>>>>,
    best: Option<(u32, u32, Vec<usize>)>,
    steps: u64,
    max_steps: u64,
    /// A proven floor: a complete map reaching it ends the search (nothing can beat it).
    floor: Option<(u32, u32)>,
}

impl Search<'_> {
    fn cost(&self) -> (u32, u32) {
        let (mut max, mut total) = (0, 0);
        for blocks in &self.seen {
            for tiers in blocks {
                let s: u32 = tiers
                    .iter()
                    .map(|m| (m.len() as u32).saturating_sub(1))
                    .sum();
                max = max.max(s);
                total += s;
            }
        }
        (max, total)
    }

    fn apply(&mut self, slot: usize, leaf: usize, add: bool) -> bool {
        let mut ok = true;
        for (g, group) in self.groups.iter().enumerate() {
            let block = slot / group.size;
            for t in 0..self.depth {
                let d = self.leaves[leaf].path[t];
                let m = &mut self.seen[g][block][t];
                if add {
                    *m.entry(d).or_default() += 1;
                    if group.hard_tier == Some(t as u8 + 1) && m.len() > 1 {
                        ok = false;
                    }
                } else if let Some(c) = m.get_mut(&d) {
                    *c -= 1;
                    if *c == 0 {
                        m.remove(&d);
                    }
                }
            }
        }
        ok
    }

    fn candidates(&self, slot: usize) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        let mut tried_fresh: Vec<(&[DomainId], u32)> = Vec::new();
        let prev = slot.checked_sub(1).map(|s| self.assign[s]);
        let mut order: Vec<usize> = (0..self.leaves.len())
            .filter(|l| self.left[*l] > 0)
            .collect();
        order.sort_by_key(|l| {
            (
                Some(*l) != prev,
                self.used_by_gang[*l] == 0,
                std::cmp::Reverse(self.left[*l]),
                *l,
            )
        });
        for l in order {
            if self.used_by_gang[l] == 0 {
                let key = (&self.leaves[l].path[1..], self.left[l]);
                if tried_fresh.contains(&key) {
                    continue;
                }
                tried_fresh.push(key);
            }
            out.push(l);
        }
        out
    }

    fn dfs(&mut self, slot: usize) {
        self.steps += 1;
        if self.steps > self.max_steps {
            return;
        }
        let (max, total) = self.cost();
        if let Some((bm, bt, _)) = &self.best
            && (max, total) >= (*bm, *bt)
        {
            return;
        }
        if slot == self.assign.len() {
            self.best = Some((max, total, self.assign.clone()));
            if self.floor.is_some_and(|f| (max, total) <= f) {
                self.steps = self.max_steps.saturating_add(1);
            }
            return;
        }
        for l in self.candidates(slot) {
            self.assign[slot] = l;
            self.left[l] -= 1;
            self.used_by_gang[l] += 1;
            if self.apply(slot, l, true) {
                self.dfs(slot + 1);
            }
            self.apply(slot, l, false);
            self.left[l] += 1;
            self.used_by_gang[l] -= 1;
        }
    }
}

fn leaves(cluster: &Cluster, slot_units: u32) -> Vec<Leaf> {
    cluster
        .domains_at(1)
        .into_iter()
        .filter_map(|id| {
            let cap = u32::try_from(cluster.domain(id).free.slots(slot_units)).ok()?;
            let mut path = vec![id];
            let mut d = cluster.domain(id).parent;
            while let Some(p) = d {
                if cluster.domain(p).parent.is_some() {
                    path.push(p);
                }
                d = cluster.domain(p).parent;
            }
            (cap > 0).then_some(Leaf { id, path, cap })
        })
        .collect()
}

/// The placement of `request` with the smallest (largest group spread, total group spread), or
/// `None` when nothing fits or the case is beyond `limits`.
pub fn solve(cluster: &Cluster, request: &GangRequest, limits: Limits) -> Option<Optimum> {
    solve_down_to(cluster, request, limits, None)
}

/// [`solve`], ending as soon as a placement reaches `floor` (a proven floor, see
/// [`crate::floor`]): no placement can be better, so the search is still exhaustive.
pub fn solve_down_to(
    cluster: &Cluster,
    request: &GangRequest,
    limits: Limits,
    floor: Option<(u32, u32)>,
) -> Option<Optimum> {
    let per_slot = slot_pods(request).max(1);
    let slot_units = per_slot.saturating_mul(request.per_pod);
    let slots = (request.size / per_slot) as usize;
    let leaves = leaves(cluster, slot_units);
    if slots > limits.max_slots || leaves.len() > limits.max_leaves {
        return None;
    }
    let depth = usize::from(cluster.depth());
    let groups: Vec<Group> = request
        .levels
        .iter()
        .filter(|l| l.pods > per_slot)
        .map(|l| Group {
            size: (l.pods / per_slot) as usize,
            hard_tier: (l.mode == Mode::Hard && cluster.effective_tier(l.tier) <= cluster.depth())
                .then(|| cluster.effective_tier(l.tier)),
        })
        .collect();
    let seen = groups
        .iter()
        .map(|g| vec![vec![FxHashMap::default(); depth]; slots.div_ceil(g.size)])
        .collect();
    let mut s = Search {
        leaves: &leaves,
        groups: &groups,
        depth,
        left: leaves.iter().map(|l| l.cap).collect(),
        used_by_gang: vec![0; leaves.len()],
        assign: vec![0; slots],
        seen,
        best: None,
        steps: 0,
        max_steps: limits.max_steps,
        floor,
    };
    s.dfs(0);
    let reached_floor = floor.is_some_and(|f| s.best.as_ref().is_some_and(|b| (b.0, b.1) <= f));
    if s.steps > limits.max_steps && !reached_floor {
        return None;
    }
    let (max, total, assign) = s.best?;
    let nodes = materialise(cluster, &leaves, &assign, slot_units, per_slot)?;
    Some(Optimum { max, total, nodes })
}

/// Picks nodes inside each chosen leaf (best-fit); any choice has the same spread.
fn materialise(
    cluster: &Cluster,
    leaves: &[Leaf],
    assign: &[usize],
    slot_units: u32,
    per_slot: u32,
) -> Option<Vec<NodeId>> {
    let mut taken: FxHashMap<NodeId, u32> = FxHashMap::default();
    let mut out = Vec::with_capacity(assign.len() * per_slot as usize);
    for l in assign {
        let left = |n: &NodeId| {
            (cluster.free(*n) / slot_units.max(1))
                .saturating_sub(taken.get(n).copied().unwrap_or(0))
        };
        let node = cluster
            .leaf_nodes(leaves[*l].id)
            .iter()
            .filter(|n| left(n) > 0)
            .min_by_key(|n| (left(n), cluster.node_name(**n)))
            .copied()?;
        *taken.entry(node).or_default() += 1;
        out.extend(std::iter::repeat_n(node, per_slot as usize));
    }
    Some(out)
}
