//! Why a gang cannot be placed: for each level, from the outside in, the best domain of the
//! tier it must fit in and how much of what it needs that domain has ("leaf l7 has 6 of 8 nodes
//! free").

use serde::Serialize;

use crate::capacity::{Capacity, Shape};
use crate::cluster::{Cluster, DomainId};

/// One level that does not fit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shortfall {
    /// Level name.
    pub level: String,
    /// The tier its groups must fit in.
    pub tier: String,
    /// The best domain of that tier (`the cluster` above the deepest tier).
    pub domain: String,
    /// What that domain has, in `unit`.
    pub has: u64,
    /// What one group needs, in `unit`.
    pub needs: u64,
    /// `nodes` when a slot is a whole node, else the resource's units.
    pub unit: String,
    /// For a level made of smaller groups: `(inner level, whole inner groups the domain has
    /// room for, inner groups one group needs)`; `has` counts only units in such groups.
    pub inner: Option<(String, u64, u64)>,
}

/// The explanation of a pending or impossible gang.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// One sentence per shortfall, outermost level first.
    pub message: String,
    /// The shortfalls.
    pub shortfalls: Vec<Shortfall>,
}

/// Explains why `shape` does not fit, given capacity `cap` computed for it.
pub(crate) fn explain(
    cluster: &Cluster,
    shape: &Shape,
    cap: &Capacity,
    resource: &str,
    free_word: &str,
) -> Explanation {
    // A slot that fills the largest node is counted in nodes, which is what people count.
    let whole_node = cluster.domain(cluster.root()).alloc.max() <= shape.slot_units;
    let (unit, per_slot) = if whole_node {
        ("nodes".to_owned(), 1)
    } else {
        (resource.to_owned(), u64::from(shape.slot_units))
    };
    let mut shortfalls = Vec::new();
    let mut within: DomainId = cluster.root();
    for i in (1..=shape.levels()).rev() {
        let tier = shape.tiers[i - 1];
        let mut candidates = descendants(cluster, within, tier);
        candidates.sort_by(|a, b| cluster.domain_value(*a).cmp(cluster.domain_value(*b)));
        let below = if i >= 2 { u64::from(shape.r[i - 2]) } else { 1 };
        let best = candidates
            .into_iter()
            .max_by(|a, b| cap.get(i - 1, *a).cmp(&cap.get(i - 1, *b)).then(b.cmp(a)));
        let Some(best) = best else { break };
        // A level whose groups are its inner level's groups (pp = 1) says nothing the inner
        // level's line does not.
        let same_as_inner = i >= 2 && shape.r[i - 1] == shape.r[i - 2];
        if cap.get(i, best) == 0 && !same_as_inner {
            let inner = (i >= 2).then(|| {
                (
                    shape.names[i - 2].clone(),
                    cap.get(i - 1, best),
                    u64::from(shape.q[i - 1]),
                )
            });
            shortfalls.push(Shortfall {
                level: shape.names[i - 1].clone(),
                tier: cluster.tier_name(tier),
                domain: cluster.describe(best),
                has: cap.get(i - 1, best) * below * per_slot,
                needs: u64::from(shape.r[i - 1]) * per_slot,
                unit: unit.clone(),
                inner,
            });
        }
        within = best;
    }
    let message = if shortfalls.is_empty() {
        "no domain has room for the gang".to_owned()
    } else {
        shortfalls
            .iter()
            .map(|s| match &s.inner {
                // Free units scattered outside whole inner groups do not count: say so.
                Some((inner, has, needs)) => format!(
                    "each {} group needs {} {} within one {}: {} has room for {has} of the \
                     {needs} {inner} groups it needs",
                    s.level, s.needs, s.unit, s.tier, s.domain
                ),
                None => format!(
                    "each {} group needs {} {} within one {}: {} has {} of {} {} {free_word}",
                    s.level, s.needs, s.unit, s.tier, s.domain, s.has, s.needs, s.unit
                ),
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    Explanation {
        message,
        shortfalls,
    }
}

fn descendants(cluster: &Cluster, d: DomainId, tier: u8) -> Vec<DomainId> {
    let mut out = Vec::new();
    let mut stack = vec![d];
    while let Some(x) = stack.pop() {
        let dom = cluster.domain(x);
        if dom.tier == tier {
            out.push(x);
        } else if dom.tier > tier {
            stack.extend(dom.children.iter().copied());
        }
    }
    out
}
