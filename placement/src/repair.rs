//! Placing the ranks of a gang that lost their node (or whose reservation expired) while other
//! ranks are already running: each lost slot goes to the free node closest to the ranks it
//! communicates with, never outside a hard level's tier.

use crate::capacity::{Basis, Capacity, Shape};
use crate::cluster::{Cluster, DomainId, NodeId};
use crate::explain::{Explanation, Shortfall};
use crate::placer::Placer;
use crate::request::{GangRequest, Mode};
use crate::tier::Tier;

/// Pods that must share a node (the largest node-level group), from the request as written.
pub(crate) fn slot_pods(request: &GangRequest) -> u32 {
    request
        .levels
        .iter()
        .filter(|l| l.tier == Tier::NODE)
        .map(|l| l.pods)
        .max()
        .unwrap_or(1)
}

/// Fills every `None` in `ranks` (the node of each rank). Ranks of one slot go to one node.
pub(crate) fn repair(
    cluster: &Cluster,
    request: &GangRequest,
    ranks: &mut [Option<NodeId>],
) -> Result<(), Explanation> {
    let tiers: Vec<Tier> = request.levels.iter().map(|l| l.tier).collect();
    let shape = Shape::new(cluster, request, &tiers);
    let mut placer = Placer::new(
        cluster,
        &shape,
        Capacity::compute(cluster, &shape, Basis::Free),
    );
    let per_slot = slot_pods(request).max(1) as usize;
    for start in (0..ranks.len()).step_by(per_slot) {
        let end = (start + per_slot).min(ranks.len());
        if ranks[start..end].iter().all(Option::is_some) {
            continue;
        }
        let node = match ranks[start..end].iter().flatten().next() {
            // Part of the slot runs: the rest must join it.
            Some(n) => *n,
            None => nearest_node(cluster, request, &mut placer, ranks, start)?,
        };
        for r in &mut ranks[start..end] {
            r.get_or_insert(node);
        }
    }
    Ok(())
}

/// The free node nearest to the placed ranks of `rank`'s groups, innermost group first.
fn nearest_node(
    cluster: &Cluster,
    request: &GangRequest,
    placer: &mut Placer<'_>,
    ranks: &[Option<NodeId>],
    rank: usize,
) -> Result<NodeId, Explanation> {
    let root = cluster.root();
    for level in &request.levels {
        let size = level.pods.max(1) as usize;
        let block = rank / size * size;
        let mates: Vec<NodeId> = ranks[block..(block + size).min(ranks.len())]
            .iter()
            .flatten()
            .copied()
            .collect();
        let Some(first) = mates.first() else {
            continue;
        };
        let bound = match level.mode {
            Mode::Hard => cluster.effective_tier(level.tier),
            Mode::Soft => cluster.depth() + 1,
        };
        // The smallest domain already holding every mate, then wider ones up to the bound.
        let lowest = (1..=cluster.depth() + 1)
            .find(|t| {
                mates
                    .iter()
                    .all(|m| cluster.ancestor(*m, *t) == cluster.ancestor(*first, *t))
            })
            .unwrap_or(cluster.depth() + 1);
        for tier in lowest..=bound.max(lowest) {
            let d: DomainId = if tier > cluster.depth() {
                root
            } else {
                cluster.ancestor(*first, tier)
            };
            if let Some(n) = placer.best_node_for(d, 1) {
                placer.take_one(n);
                return Ok(n);
            }
        }
        if level.mode == Mode::Hard {
            let d = cluster.ancestor(*first, bound);
            return Err(Explanation {
                message: format!(
                    "rank {rank} must rejoin its {} group within {}, which has no node with {} \
                     free {}",
                    level.name,
                    cluster.describe(d),
                    request.per_pod * slot_pods(request),
                    request.resource
                ),
                shortfalls: vec![Shortfall {
                    level: level.name.clone(),
                    tier: cluster.tier_name(bound),
                    domain: cluster.describe(d),
                    has: 0,
                    needs: u64::from(request.per_pod * slot_pods(request)),
                    unit: request.resource.clone(),
                    inner: None,
                }],
            });
        }
    }
    placer
        .best_node_for(root, 1)
        .inspect(|n| placer.take_one(*n))
        .ok_or_else(|| Explanation {
            message: format!(
                "rank {rank} needs a node with {} free {} and none has it",
                request.per_pod * slot_pods(request),
                request.resource
            ),
            shortfalls: Vec::new(),
        })
}
