//! Placement quality: how far each communication group spreads over the fabric.
//!
//! The groups are the request's blocks: each TP group, each DP group (one pipeline stage) and
//! the pipeline (the whole gang). A group's spread is the number of domain boundaries it
//! crosses, summed over tiers: (leaves − 1) + (spines − 1) + ..., so crossing a spine costs
//! more than crossing a leaf inside one spine. A group on one leaf has spread 0.

use rustc_hash::FxHashSet;
use serde::Serialize;

use crate::cluster::{Cluster, NodeId};
use crate::request::GangRequest;

/// One group's footprint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupSpread {
    /// Level name (`tp`, `dp`, `pp`, ...).
    pub level: String,
    /// Block index within the level.
    pub index: u32,
    /// Tier-1 domains (leaves) it spans.
    pub leaves: u32,
    /// Tier-2 domains (spines) it spans (1 in a one-tier fabric).
    pub spines: u32,
    /// Boundaries crossed, summed over tiers.
    pub spread: u32,
}

/// A placement's footprint over all its groups.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Spread {
    /// Largest spread of any group.
    pub max: u32,
    /// Sum of all groups' spreads.
    pub total: u32,
    /// Groups that span more than one spine.
    pub cross_spine_groups: u32,
    /// Every group with spread above 0 (groups with spread 0 are left out).
    pub groups: Vec<GroupSpread>,
}

fn group_footprint(cluster: &Cluster, nodes: &[NodeId]) -> (u32, u32, u32) {
    let mut spread = 0u32;
    let (mut leaves, mut spines) = (1u32, 1u32);
    let mut seen = FxHashSet::default();
    for tier in 1..=cluster.depth() {
        seen.clear();
        seen.extend(nodes.iter().map(|n| cluster.ancestor(*n, tier)));
        let count = seen.len().max(1) as u32;
        spread += count - 1;
        match tier {
            1 => leaves = count,
            2 => spines = count,
            _ => {}
        }
    }
    (leaves, spines, spread)
}

/// Measures the groups of `request` placed as `pod_nodes` (the node of each rank).
pub fn measure(cluster: &Cluster, request: &GangRequest, pod_nodes: &[NodeId]) -> Spread {
    let mut out = Spread::default();
    for level in &request.levels {
        let size = level.pods.max(1) as usize;
        for (index, block) in pod_nodes.chunks(size).enumerate() {
            let (leaves, spines, spread) = group_footprint(cluster, block);
            out.max = out.max.max(spread);
            out.total += spread;
            if spines > 1 {
                out.cross_spine_groups += 1;
            }
            if spread > 0 {
                out.groups.push(GroupSpread {
                    level: level.name.clone(),
                    index: index as u32,
                    leaves,
                    spines,
                    spread,
                });
            }
        }
    }
    out
}
