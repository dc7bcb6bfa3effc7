//! Greedy placement of one gang inside one domain, for one resolved [`Shape`].
//!
//! Blocks are placed outermost first and in rank order, so consecutive ranks land together.
//! Each block goes into the smallest domain that can hold it (one node, else one leaf, else
//! one spine, ... up to its tier), best-fit among equals (the one with the fewest free slots
//! left) so whole leaves stay free for the next big job. Slots of a block fill the fewest
//! leaves and nodes: a domain that takes all the remaining slots if one does (best-fit among
//! those), else the largest.

use crate::capacity::{Capacity, Shape};
use crate::cluster::{Cluster, DomainId, NodeId};

/// A plan under construction: the slots taken, in rank order.
#[derive(Clone)]
pub(crate) struct Placer<'a> {
    cluster: &'a Cluster,
    shape: &'a Shape,
    pub(crate) cap: Capacity,
    pub(crate) slots: Vec<NodeId>,
}

impl<'a> Placer<'a> {
    pub(crate) fn new(cluster: &'a Cluster, shape: &'a Shape, cap: Capacity) -> Self {
        Placer {
            cluster,
            shape,
            cap,
            slots: Vec::new(),
        }
    }

    /// Domains at `tier` inside `d` (itself when it is at that tier).
    pub(crate) fn descendants_at(&self, d: DomainId, tier: u8) -> Vec<DomainId> {
        let mut out = Vec::new();
        let mut stack = vec![d];
        while let Some(x) = stack.pop() {
            let dom = self.cluster.domain(x);
            if dom.tier == tier {
                out.push(x);
            } else if dom.tier > tier {
                stack.extend(dom.children.iter().copied());
            }
        }
        out
    }

    /// Takes one slot on `node`.
    pub(crate) fn take_one(&mut self, node: NodeId) {
        self.take(node, 1);
    }

    fn take(&mut self, node: NodeId, count: u32) {
        for _ in 0..count {
            self.cap.take_slot(self.cluster, self.shape, node);
            self.slots.push(node);
        }
    }

    fn slots_on(&self, node: NodeId) -> u32 {
        self.cap.node_slots(self.cluster, self.shape, node)
    }

    /// The node under `d` with the fewest free slots that still holds `need`, found through
    /// each leaf's histogram before any node is looked at.
    pub(crate) fn best_node_for(&self, d: DomainId, need: u32) -> Option<NodeId> {
        let units = u64::from(need) * u64::from(self.shape.slot_units);
        if u64::from(self.cluster.domain(d).free.max()) < units {
            return None;
        }
        let mut leaves: Vec<(u32, &str, DomainId)> = self
            .descendants_at(d, 1)
            .into_iter()
            .filter_map(|l| {
                let dom = self.cluster.domain(l);
                let low = u32::try_from(units).ok()?;
                let v = dom.free.min_at_least(low)?;
                Some((v, dom.value.as_str(), l))
            })
            .collect();
        leaves.sort_unstable();
        for (_, _, leaf) in leaves {
            let best = self
                .cluster
                .leaf_nodes(leaf)
                .iter()
                .map(|n| (self.slots_on(*n), self.cluster.node_name(*n), *n))
                .filter(|(s, _, _)| *s >= need)
                .min();
            if let Some((_, _, n)) = best {
                return Some(n);
            }
        }
        None
    }

    /// Places one block of level `i` (1-based; level 0 is a slot) inside `d`.
    pub(crate) fn place_block(&mut self, i: usize, d: DomainId) -> bool {
        let need = self.shape.r[i - 1];
        if let Some(n) = self.best_node_for(d, need) {
            self.take(n, need);
            return true;
        }
        let tmax = self.shape.tiers[i - 1].min(self.cluster.domain(d).tier);
        for tier in 1..=tmax {
            let best = self
                .descendants_at(d, tier)
                .into_iter()
                .filter(|c| self.cap.get(i, *c) >= 1)
                .min_by(|a, b| {
                    (self.cap.get(0, *a), self.cluster.domain_value(*a))
                        .cmp(&(self.cap.get(0, *b), self.cluster.domain_value(*b)))
                });
            let Some(c) = best else { continue };
            if i == 1 {
                return self.fill(c, need);
            }
            return self.place_sub_blocks(i, c);
        }
        false
    }

    /// Places the sub-blocks of one level-`i` block inside `c` two ways (each sub-block
    /// best-fit on its own, or the fewest domains of the sub-level's tier, largest first), and a
    /// third when no level inside the block is held below `c`'s tier: the whole block's slots
    /// over the fewest leaves, cut into sub-blocks in that order, so the block touches no more
    /// leaves than it must. Keeps the way whose slots cross the fewest boundaries (the block's
    /// own, then its sub-blocks' summed); the first on a tie.
    fn place_sub_blocks(&mut self, i: usize, c: DomainId) -> bool {
        let (q, start) = (self.shape.q[i - 1], self.slots.len());
        let mut each = self.clone();
        let a = (0..q).all(|_| each.place_block(i - 1, c));
        let mut fewest = self.clone();
        let b = fewest.place_in_fewest(i - 1, c, q);
        let free_inside = self.shape.tiers[0] >= self.cluster.domain(c).tier;
        let mut whole = self.clone();
        let w = free_inside && whole.fill(c, self.shape.r[i - 1]);
        let sub = self.shape.r[i - 2] as usize;
        let cost = |p: &Placer<'_>| {
            let slots = &p.slots[start..];
            let inner: u32 = slots.chunks(sub).map(|s| footprint(self.cluster, s)).sum();
            (footprint(self.cluster, slots), inner)
        };
        let mut best: Option<((u32, u32), Placer<'a>)> = None;
        for (ok, p) in [(a, each), (b, fewest), (w, whole)] {
            if !ok {
                continue;
            }
            let k = cost(&p);
            if best.as_ref().is_none_or(|(bk, _)| k < *bk) {
                best = Some((k, p));
            }
        }
        match best {
            Some((_, p)) => {
                *self = p;
                true
            }
            None => false,
        }
    }

    /// `count` blocks of level `j` inside `c`, over the fewest domains of level `j`'s tier.
    fn place_in_fewest(&mut self, j: usize, c: DomainId, mut count: u32) -> bool {
        let tier = self.shape.tiers[j - 1].min(self.cluster.domain(c).tier);
        let mut domains: Vec<DomainId> = self
            .descendants_at(c, tier)
            .into_iter()
            .filter(|d| self.cap.get(j, *d) > 0)
            .collect();
        while count > 0 {
            let Some(pos) = pick(&domains, count, |d| {
                (self.cap.get(j, *d), self.cluster.domain_value(*d))
            }) else {
                return false;
            };
            let d = domains.swap_remove(pos);
            let k = u32::try_from(self.cap.get(j, d))
                .unwrap_or(u32::MAX)
                .min(count);
            if !(0..k).all(|_| self.place_block(j, d)) {
                return false;
            }
            count -= k;
        }
        true
    }

    /// Places `count` slots inside `d` spanning as few domains as it can: above the leaf
    /// tier, two ways are tried (fill the children one by one, or pick the fewest leaves
    /// directly) and the one whose slots cross fewer boundaries kept.
    fn fill(&mut self, d: DomainId, count: u32) -> bool {
        if self.cluster.domain(d).tier == 1 {
            return self.fill_leaf(d, count);
        }
        let start = self.slots.len();
        let mut by_children = self.clone();
        let a = by_children.fill_children(d, count);
        let mut by_leaves = self.clone();
        let b = by_leaves.fill_leaves(d, count);
        let chosen = match (a, b) {
            (true, true) => {
                let sa = footprint(self.cluster, &by_children.slots[start..]);
                let sb = footprint(self.cluster, &by_leaves.slots[start..]);
                if sb < sa { by_leaves } else { by_children }
            }
            (true, false) => by_children,
            (false, true) => by_leaves,
            (false, false) => return false,
        };
        *self = chosen;
        true
    }

    fn fill_leaf(&mut self, d: DomainId, mut count: u32) -> bool {
        let mut nodes: Vec<(u32, NodeId)> = self
            .cluster
            .domain(d)
            .nodes
            .iter()
            .map(|n| (self.slots_on(*n), *n))
            .filter(|(s, _)| *s > 0)
            .collect();
        while count > 0 {
            let Some(pos) = pick(&nodes, count, |(s, n)| {
                (u64::from(*s), self.cluster.node_name(*n))
            }) else {
                return false;
            };
            let (s, n) = nodes.swap_remove(pos);
            let k = s.min(count);
            self.take(n, k);
            count -= k;
        }
        true
    }

    fn fill_children(&mut self, d: DomainId, mut count: u32) -> bool {
        let mut children: Vec<DomainId> = self
            .cluster
            .domain(d)
            .children
            .iter()
            .copied()
            .filter(|c| self.cap.get(0, *c) > 0)
            .collect();
        while count > 0 {
            let Some(pos) = pick(&children, count, |c| {
                (self.cap.get(0, *c), self.cluster.domain_value(*c))
            }) else {
                return false;
            };
            let c = children.swap_remove(pos);
            let k = u32::try_from(self.cap.get(0, c))
                .unwrap_or(u32::MAX)
                .min(count);
            if !self.fill(c, k) {
                return false;
            }
            count -= k;
        }
        true
    }

    /// The fewest leaves under `d`: the largest first (leaves next to ones already chosen
    /// first among equals), the last one best-fit.
    fn fill_leaves(&mut self, d: DomainId, mut count: u32) -> bool {
        let mut leaves: Vec<DomainId> = self
            .descendants_at(d, 1)
            .into_iter()
            .filter(|l| self.cap.get(0, *l) > 0)
            .collect();
        let mut parents: Vec<DomainId> = Vec::new();
        while count > 0 {
            let near = |l: &DomainId| {
                let p = self.cluster.domain(*l).parent;
                u64::from(!p.is_some_and(|p| parents.contains(&p)))
            };
            let fits = leaves
                .iter()
                .enumerate()
                .filter(|(_, l)| self.cap.get(0, **l) >= u64::from(count))
                .min_by_key(|(_, l)| {
                    (
                        near(l),
                        self.cap.get(0, **l),
                        self.cluster.domain_value(**l),
                    )
                })
                .map(|(i, _)| i);
            let pos = fits.or_else(|| {
                leaves
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, l)| {
                        (
                            std::cmp::Reverse(self.cap.get(0, **l)),
                            near(l),
                            self.cluster.domain_value(**l),
                        )
                    })
                    .map(|(i, _)| i)
            });
            let Some(pos) = pos else { return false };
            let l = leaves.swap_remove(pos);
            if let Some(p) = self.cluster.domain(l).parent {
                parents.push(p);
            }
            let k = u32::try_from(self.cap.get(0, l))
                .unwrap_or(u32::MAX)
                .min(count);
            if !self.fill_leaf(l, k) {
                return false;
            }
            count -= k;
        }
        true
    }
}

/// Boundaries crossed by a set of slots, summed over tiers.
fn footprint(cluster: &Cluster, slots: &[NodeId]) -> u32 {
    (1..=cluster.depth())
        .map(|t| {
            let mut ds: Vec<DomainId> = slots.iter().map(|n| cluster.ancestor(*n, t)).collect();
            ds.sort_unstable();
            ds.dedup();
            ds.len().saturating_sub(1) as u32
        })
        .sum()
}

/// Index of the item to fill next: the smallest that holds all `count` (best-fit), else the
/// largest; ties by name.
fn pick<T, K: Ord>(items: &[T], count: u32, key: impl Fn(&T) -> (u64, K)) -> Option<usize> {
    let fits = items
        .iter()
        .enumerate()
        .filter(|(_, x)| key(x).0 >= u64::from(count))
        .min_by(|(_, a), (_, b)| key(a).cmp(&key(b)))
        .map(|(i, _)| i);
    fits.or_else(|| {
        items
            .iter()
            .enumerate()
            .max_by(|(_, a), (_, b)| {
                let (ka, kb) = (key(a), key(b));
                ka.0.cmp(&kb.0).then_with(|| kb.1.cmp(&ka.1))
            })
            .map(|(i, _)| i)
    })
}
