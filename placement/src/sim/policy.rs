//! Placement policies compared by the simulator. Every policy places a whole gang or nothing,
//! so they differ only in where pods go.

use rustc_hash::FxHashMap;

use crate::cluster::{Cluster, NodeId};
use crate::plan::{PlanOptions, plan};
use crate::request::{GangRequest, Mode};
use crate::sim::optimal;

/// A way of placing gangs.
pub trait Policy {
    /// Short name for tables.
    fn name(&self) -> &'static str;
    /// The node of every rank, or `None` when the gang waits.
    fn place(&mut self, cluster: &Cluster, request: &GangRequest) -> Option<Vec<NodeId>>;
}

/// Free units per node after tentative placements.
struct Tentative<'a> {
    cluster: &'a Cluster,
    taken: FxHashMap<NodeId, u32>,
}

impl<'a> Tentative<'a> {
    fn new(cluster: &'a Cluster) -> Self {
        Tentative {
            cluster,
            taken: FxHashMap::default(),
        }
    }

    fn free(&self, n: NodeId) -> u32 {
        self.cluster
            .free(n)
            .saturating_sub(self.taken.get(&n).copied().unwrap_or(0))
    }

    fn take(&mut self, n: NodeId, units: u32) {
        *self.taken.entry(n).or_default() += units;
    }
}

/// kube-scheduler's default: each pod on the feasible node with the most free units
/// (NodeResourcesFit LeastAllocated), which spreads; blind to the fabric.
#[derive(Debug, Default)]
pub struct TopologyUnaware;

impl Policy for TopologyUnaware {
    fn name(&self) -> &'static str {
        "topology-unaware"
    }

    fn place(&mut self, cluster: &Cluster, request: &GangRequest) -> Option<Vec<NodeId>> {
        let nodes = cluster.node_ids();
        let mut t = Tentative::new(cluster);
        let mut out = Vec::with_capacity(request.size as usize);
        for _ in 0..request.size {
            let best = nodes
                .iter()
                .copied()
                .filter(|n| t.free(*n) >= request.per_pod)
                .max_by_key(|n| (t.free(*n), std::cmp::Reverse(*n)))?;
            t.take(best, request.per_pod);
            out.push(best);
        }
        Some(out)
    }
}

/// Volcano-like: the whole job inside the lowest-tier domain that has room, up to the job's
/// highest allowed tier (hard) or anywhere (soft), best-fit among domains and bin-packing nodes
/// inside; groups inside the job are not looked at.
#[derive(Debug, Default)]
pub struct TierBoundedBestFit;

impl Policy for TierBoundedBestFit {
    fn name(&self) -> &'static str {
        "volcano-like"
    }

    fn place(&mut self, cluster: &Cluster, request: &GangRequest) -> Option<Vec<NodeId>> {
        let job = request.levels.last()?;
        let highest = cluster.effective_tier(job.tier);
        let top = if job.mode == Mode::Soft {
            cluster.depth() + 1
        } else {
            highest
        };
        let pods_fit = |n: NodeId| u64::from(cluster.free(n) / request.per_pod.max(1));
        let nodes = cluster.node_ids();
        for tier in 1..=top {
            let mut members: FxHashMap<u32, Vec<NodeId>> = FxHashMap::default();
            for n in &nodes {
                members
                    .entry(cluster.ancestor(*n, tier).0)
                    .or_default()
                    .push(*n);
            }
            let best = members
                .values()
                .map(|ns| (ns.iter().map(|n| pods_fit(*n)).sum::<u64>(), ns))
                .filter(|(fit, _)| *fit >= u64::from(request.size))
                .min_by_key(|(fit, ns)| (*fit, ns.first().copied()));
            if let Some((_, ns)) = best {
                return binpack(cluster, ns, request);
            }
        }
        None
    }
}

fn binpack(cluster: &Cluster, nodes: &[NodeId], request: &GangRequest) -> Option<Vec<NodeId>> {
    let mut t = Tentative::new(cluster);
    let mut out = Vec::with_capacity(request.size as usize);
    for _ in 0..request.size {
        let best = nodes
            .iter()
            .copied()
            .filter(|n| t.free(*n) >= request.per_pod)
            .min_by_key(|n| (t.free(*n), *n))?;
        t.take(best, request.per_pod);
        out.push(best);
    }
    Some(out)
}

/// Spinel's planner.
#[derive(Debug, Default)]
pub struct Spinel {
    /// Planner settings.
    pub options: PlanOptions,
}

impl Policy for Spinel {
    fn name(&self) -> &'static str {
        "spinel"
    }

    fn place(&mut self, cluster: &Cluster, request: &GangRequest) -> Option<Vec<NodeId>> {
        plan(cluster, request, &self.options).ok().map(|p| p.nodes)
    }
}

/// Each job at its exact minimum group spread on the state it finds (see [`optimal`]): the
/// per-decision optimum, blind to fragmentation, so not the best over a whole trace. Waits when
/// the case is too large to search: small clusters only.
#[derive(Debug, Default)]
pub struct Optimal;

impl Policy for Optimal {
    fn name(&self) -> &'static str {
        "optimal-per-job"
    }

    fn place(&mut self, cluster: &Cluster, request: &GangRequest) -> Option<Vec<NodeId>> {
        optimal::solve(cluster, request, optimal::Limits::default()).map(|s| s.nodes)
    }
}
