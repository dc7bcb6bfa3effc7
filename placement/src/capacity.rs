//! How many blocks of each level fit in every domain, computed bottom-up in O(domains × levels)
//! from the domains' free histograms, and kept exact while a plan takes slots one at a time.
//!
//! A *slot* is the innermost unit that must sit on one node: the largest node-level group
//! (a TP group within a node), or one pod. Every outer level is a number of slots confined to
//! a tier: a block fits in a domain at or below its tier when the domain holds enough blocks of
//! the level inside it; above its tier, a domain's count is the sum of its children's.

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, DomainId, NodeId};
use crate::request::GangRequest;
use crate::tier::Tier;

/// A request resolved against the cluster's depth for one choice of tiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Pods per slot.
    pub(crate) slot_pods: u32,
    /// Units per slot.
    pub(crate) slot_units: u32,
    /// Levels above the slot: sub-blocks per block (level 1 counts slots).
    pub(crate) q: Vec<u32>,
    /// Levels above the slot: slots per block.
    pub(crate) r: Vec<u32>,
    /// Levels above the slot: the domain tier each block must fit in.
    pub(crate) tiers: Vec<u8>,
    /// Levels above the slot: names.
    pub(crate) names: Vec<String>,
}

impl Shape {
    /// Resolves `request` with one tier per level (`tiers[i]` for `request.levels[i]`).
    pub(crate) fn new(cluster: &Cluster, request: &GangRequest, tiers: &[Tier]) -> Shape {
        let slot_pods = request
            .levels
            .iter()
            .zip(tiers)
            .filter(|(_, t)| **t == Tier::NODE)
            .map(|(l, _)| l.pods)
            .max()
            .unwrap_or(1);
        let mut shape = Shape {
            slot_pods,
            slot_units: slot_pods.saturating_mul(request.per_pod),
            q: Vec::new(),
            r: Vec::new(),
            tiers: Vec::new(),
            names: Vec::new(),
        };
        let mut below = 1;
        for (l, t) in request.levels.iter().zip(tiers) {
            if *t == Tier::NODE || l.pods <= slot_pods {
                continue;
            }
            let r = l.pods / slot_pods;
            shape.q.push(r / below);
            shape.r.push(r);
            shape.tiers.push(cluster.effective_tier(*t));
            shape.names.push(l.name.clone());
            below = r;
        }
        if shape.r.is_empty() {
            // The whole gang is one slot: one block of one slot, on one node by construction.
            shape.q.push(1);
            shape.r.push(1);
            shape.tiers.push(1);
            shape.names.push("gang".to_owned());
        }
        shape
    }

    /// Levels above the slot.
    pub(crate) fn levels(&self) -> usize {
        self.r.len()
    }

    /// Slots in the whole gang.
    pub(crate) fn gang_slots(&self) -> u32 {
        self.r.last().copied().unwrap_or(1)
    }
}

/// Blocks per level per domain: `blocks[i][d]`, level 0 counting slots.
#[derive(Debug, Clone)]
pub(crate) struct Capacity {
    pub(crate) blocks: Vec<Vec<u64>>,
    /// Slots already taken per node by the plan being built.
    taken: FxHashMap<NodeId, u32>,
}

/// Which amount the capacity counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Basis {
    /// Free units now.
    Free,
    /// Allocatable units of every node, as if the cluster were empty.
    Allocatable,
}

impl Capacity {
    /// Counts blocks of every level in every domain.
    pub(crate) fn compute(cluster: &Cluster, shape: &Shape, basis: Basis) -> Capacity {
        let n = cluster.domain_count();
        let mut by_tier: Vec<Vec<DomainId>> = vec![Vec::new(); usize::from(cluster.depth()) + 2];
        for d in cluster.domain_ids() {
            by_tier[usize::from(cluster.domain(d).tier)].push(d);
        }
        let mut blocks = vec![vec![0u64; n]; shape.levels() + 1];
        for d in cluster.domain_ids() {
            let dom = cluster.domain(d);
            let hist = match basis {
                Basis::Free => &dom.free,
                Basis::Allocatable => &dom.alloc,
            };
            blocks[0][d.0 as usize] = hist.slots(shape.slot_units);
        }
        for i in 1..=shape.levels() {
            let (q, t) = (u64::from(shape.q[i - 1].max(1)), shape.tiers[i - 1]);
            for tier_list in &by_tier {
                for d in tier_list {
                    let dom = cluster.domain(*d);
                    let v = if dom.tier <= t {
                        blocks[i - 1][d.0 as usize] / q
                    } else {
                        dom.children.iter().map(|c| blocks[i][c.0 as usize]).sum()
                    };
                    blocks[i][d.0 as usize] = v;
                }
            }
        }
        Capacity {
            blocks,
            taken: FxHashMap::default(),
        }
    }

    /// Blocks of level `i` that fit in domain `d`.
    pub(crate) fn get(&self, i: usize, d: DomainId) -> u64 {
        self.blocks[i][d.0 as usize]
    }

    /// Slots still free on a node for this plan.
    pub(crate) fn node_slots(&self, cluster: &Cluster, shape: &Shape, node: NodeId) -> u32 {
        let all = cluster.free(node) / shape.slot_units.max(1);
        all.saturating_sub(self.taken.get(&node).copied().unwrap_or(0))
    }

    /// Takes one slot on `node`, keeping every ancestor's counts exact.
    pub(crate) fn take_slot(&mut self, cluster: &Cluster, shape: &Shape, node: NodeId) {
        *self.taken.entry(node).or_default() += 1;
        let mut child_delta = vec![0i64; shape.levels() + 1];
        let mut d = Some(cluster.ancestor(node, 1));
        while let Some(id) = d {
            let dom = cluster.domain(id);
            let mut delta = vec![0i64; shape.levels() + 1];
            for i in 0..=shape.levels() {
                let old = self.blocks[i][id.0 as usize];
                let new = if i == 0 {
                    old.saturating_sub(1)
                } else if dom.tier <= shape.tiers[i - 1] {
                    self.blocks[i - 1][id.0 as usize] / u64::from(shape.q[i - 1].max(1))
                } else {
                    old.saturating_add_signed(child_delta[i])
                };
                self.blocks[i][id.0 as usize] = new;
                delta[i] = new as i64 - old as i64;
            }
            child_delta = delta;
            d = dom.parent;
        }
    }
}
