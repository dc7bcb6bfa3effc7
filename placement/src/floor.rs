//! A proven floor under the best (largest, total) group spread any placement of a gang can reach
//! on the cluster's free capacity, computed exactly in O(domains × units²) however large the
//! cluster: the audit's bound where the exhaustive search ([`crate::sim::optimal`]) is out of
//! reach.
//!
//! Why it is a floor. A placement's spread at one group is Σ over tiers of (domains it touches
//! − 1), so a group that touches the domain set D has spread |D| − depth. The gang encloses every
//! group, so the largest spread is the gang's own. Relax every constraint but two: each block
//! of the outermost level that is hard within a leaf (else each slot: the *unit*) sits in one
//! leaf, and a leaf holds at most as many units as its free capacity counts. The fewest domains
//! a set of units can touch under that relaxation is computed exactly bottom-up: a tier-2
//! domain reaches `j` units with the fewest leaves by taking its largest leaves first (any other
//! choice of as many leaves holds no more); above, a knapsack over children gives the fewest
//! domains for every `j` up to the gang's units. Any real placement is feasible for the
//! relaxation, so its gang spread is at least the floor; a whole gang hard within a tier is
//! kept in one domain of that tier, which only raises the floor where a real placement must too.
//! The total adds, for each level whose groups are the whole gang, the gang's floor, and for
//! every other soft level, each group's own floor on an otherwise empty choice (groups compete
//! for leaves, which only raises the true total); hard levels within a leaf add 0.
//!
//! Where every level inside the gang is hard within a leaf, the relaxation loses nothing (any
//! leaves holding enough units hold the blocks), so the floor is the optimum itself.

use crate::capacity::{Basis, Capacity, Shape};
use crate::cluster::{Cluster, DomainId};
use crate::request::{GangRequest, Mode};
use crate::tier::Tier;

/// The floor, and whether it is the optimum itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Floor {
    /// Floor under the largest group spread.
    pub max: u32,
    /// Floor under the total group spread.
    pub total: u32,
    /// Both are exact (every level inside the gang is hard within a leaf).
    pub exact: bool,
}

const NONE: u32 = u32::MAX;

/// Fewest domains (the leaves and everything above them up to `d`'s children, `d` excluded)
/// touched by `j` units inside `d`, for `j` in `0..=need`; `NONE` where `d` cannot hold `j`.
fn fewest(cluster: &Cluster, units: &[u64], d: DomainId, need: usize) -> Vec<u32> {
    let dom = cluster.domain(d);
    let mut best = vec![NONE; need + 1];
    best[0] = 0;
    if dom.tier == 1 {
        let cap = usize::try_from(units[d.0 as usize])
            .unwrap_or(usize::MAX)
            .min(need);
        best[..=cap].fill(0);
        return best;
    }
    if dom.tier == 2 {
        // Largest leaves first: k leaves hold at most the k largest capacities.
        let mut caps: Vec<u64> = dom
            .children
            .iter()
            .map(|c| units[c.0 as usize])
            .filter(|u| *u > 0)
            .collect();
        caps.sort_unstable_by(|a, b| b.cmp(a));
        let (mut held, mut leaves) = (0usize, 0u32);
        for c in caps {
            let from = held + 1;
            held = held.saturating_add(usize::try_from(c).unwrap_or(usize::MAX));
            leaves += 1;
            for slot in best.iter_mut().take(held.min(need) + 1).skip(from) {
                *slot = leaves;
            }
            if held >= need {
                break;
            }
        }
        return best;
    }
    for c in &dom.children {
        let child = fewest(cluster, units, *c, need);
        let mut next = best.clone();
        for (have, base) in best.iter().enumerate() {
            if *base == NONE {
                continue;
            }
            for (add, cost) in child.iter().enumerate().skip(1) {
                let j = have + add;
                if j > need || *cost == NONE {
                    continue;
                }
                next[j] = next[j].min(base + 1 + cost);
            }
        }
        best = next;
    }
    best
}

/// The floor of the spread of one group of `need` units counted in `units` per domain, the
/// group kept inside one domain of `hard_tier` when set; `None` when nothing holds it.
fn group_floor(
    cluster: &Cluster,
    units: &[u64],
    need: usize,
    hard_tier: Option<u8>,
) -> Option<u32> {
    let depth = u32::from(cluster.depth());
    let touched = match hard_tier {
        Some(t) if t <= cluster.depth() => cluster
            .domains_at(t)
            .into_iter()
            .filter_map(|d| {
                let inside = fewest(cluster, units, d, need)[need];
                // The domain itself and one domain at each tier above it.
                (inside != NONE).then(|| inside + 1 + (depth - u32::from(t)))
            })
            .min()?,
        _ => {
            let all = fewest(cluster, units, cluster.root(), need)[need];
            (all != NONE).then_some(all)?
        }
    };
    Some(touched.saturating_sub(depth))
}

/// The floor for `request` on the cluster's free capacity; `None` when it cannot be placed.
pub fn floor(cluster: &Cluster, request: &GangRequest) -> Option<Floor> {
    let tiers: Vec<Tier> = request
        .levels
        .iter()
        .map(|l| match l.mode {
            Mode::Hard => l.tier,
            Mode::Soft => Tier::CLUSTER,
        })
        .collect();
    let shape = Shape::new(cluster, request, &tiers);
    let cap = Capacity::compute(cluster, &shape, Basis::Free);
    let levels = shape.levels();
    // The unit: the outermost level held inside a leaf (level 0, the slot, when none is).
    let unit_level = (1..=levels)
        .rev()
        .find(|i| shape.tiers[i - 1] <= 1)
        .unwrap_or(0);
    let unit_slots = if unit_level == 0 {
        1
    } else {
        shape.r[unit_level - 1]
    };
    let units: Vec<u64> = (0..cluster.domain_count() as u32)
        .map(|d| cap.get(unit_level, DomainId(d)))
        .collect();
    let gang_units = (shape.gang_slots() / unit_slots.max(1)) as usize;
    let gang_tier = shape.tiers[levels - 1];
    let max = group_floor(cluster, &units, gang_units, Some(gang_tier))?;
    let mut total = 0u32;
    let mut exact = true;
    for level in &request.levels {
        let groups = request.size / level.pods.max(1);
        let slot_pods = shape.slot_pods.max(1);
        if level.pods == request.size {
            total += max;
        } else if level.mode == Mode::Hard && cluster.effective_tier(level.tier) <= 1
            || level.pods <= slot_pods
        {
            // Inside a leaf, or inside a node: spread 0 in every placement.
        } else {
            exact = false;
            let slots = (level.pods / slot_pods) as usize;
            let slot_units: Vec<u64> = (0..cluster.domain_count() as u32)
                .map(|d| cap.get(0, DomainId(d)))
                .collect();
            let hard = (level.mode == Mode::Hard).then(|| cluster.effective_tier(level.tier));
            total += groups * group_floor(cluster, &slot_units, slots, hard)?;
        }
    }
    Some(Floor { max, total, exact })
}
