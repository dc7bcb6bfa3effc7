//! The event loop: jobs arrive, wait in one FIFO queue (later jobs may start when the head does
//! not fit: greedy backfill, the same for every policy), run for their duration and leave.
//! Every policy sees the same trace on its own copy of the cluster.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::Serialize;

use crate::cluster::{Cluster, NodeId};
use crate::sim::policy::Policy;
use crate::sim::trace::Job;
use crate::spread::{Spread, measure};

/// One job's outcome under one policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobResult {
    /// Job id.
    pub id: u32,
    /// Pods.
    pub size: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Arrival (s).
    pub arrival_s: f64,
    /// Start (s), if it ever started.
    pub start_s: Option<f64>,
    /// Most leaves any DP group spans.
    pub dp_leaves: u32,
    /// Spines the pipeline (whole job) spans.
    pub pp_spines: u32,
    /// Group spread.
    pub spread: Spread,
}

/// The cluster at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Time (s).
    pub t: f64,
    /// Fraction of GPUs in use.
    pub utilisation: f64,
    /// Fraction of free GPUs in partly used leaves.
    pub fragmentation: f64,
}

/// Totals of one policy's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Policy name.
    pub policy: String,
    /// Jobs that ran.
    pub started: u32,
    /// Jobs that never started.
    pub never_started: u32,
    /// Mean queueing delay (s).
    pub mean_wait_s: f64,
    /// 95th percentile queueing delay (s).
    pub p95_wait_s: f64,
    /// GPU-seconds used over GPU-seconds available until the last job ended.
    pub utilisation: f64,
    /// Time-averaged fragmentation.
    pub fragmentation: f64,
    /// Mean over jobs of the largest group spread.
    pub mean_max_spread: f64,
    /// Sum of every job's total group spread.
    pub total_spread: u64,
    /// Groups spanning more than one spine, over all jobs.
    pub cross_spine_groups: u64,
    /// Jobs with at least one cross-spine group.
    pub cross_spine_jobs: u32,
    /// When the last job ended (s).
    pub makespan_s: f64,
}

/// A policy's whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyRun {
    /// Totals.
    pub summary: Summary,
    /// Per job.
    pub jobs: Vec<JobResult>,
    /// Over time.
    pub samples: Vec<Sample>,
}

#[derive(PartialEq)]
struct Completion {
    t: f64,
    job: usize,
}

impl Eq for Completion {}

impl Ord for Completion {
    fn cmp(&self, other: &Self) -> Ordering {
        // Earliest first in a max-heap.
        other.t.total_cmp(&self.t).then(other.job.cmp(&self.job))
    }
}

impl PartialOrd for Completion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn sample(cluster: &Cluster, t: f64) -> Sample {
    let total = cluster.domain_allocatable_units(cluster.root()).max(1);
    let free = cluster.domain_free_units(cluster.root());
    let free_in_empty_leaves: u64 = cluster
        .domains_at(1)
        .into_iter()
        .filter(|d| cluster.domain_free_units(*d) == cluster.domain_allocatable_units(*d))
        .map(|d| cluster.domain_free_units(d))
        .sum();
    Sample {
        t,
        utilisation: 1.0 - free as f64 / total as f64,
        fragmentation: if free == 0 {
            0.0
        } else {
            1.0 - free_in_empty_leaves as f64 / free as f64
        },
    }
}

/// Runs `jobs` on a copy of `cluster` under `policy`.
pub fn run(cluster: &Cluster, jobs: &[Job], policy: &mut dyn Policy) -> PolicyRun {
    let mut c = cluster.clone();
    let mut placed: Vec<Option<Vec<NodeId>>> = vec![None; jobs.len()];
    let mut results: Vec<JobResult> = jobs
        .iter()
        .map(|j| JobResult {
            id: j.id,
            size: j.request.size,
            pp: j.pp,
            arrival_s: j.arrival_s,
            start_s: None,
            dp_leaves: 0,
            pp_spines: 0,
            spread: Spread::default(),
        })
        .collect();
    let mut running: BinaryHeap<Completion> = BinaryHeap::new();
    let mut queue: Vec<usize> = Vec::new();
    let mut samples = vec![sample(&c, 0.0)];
    let mut next_arrival = 0usize;
    loop {
        let t_arr = jobs.get(next_arrival).map(|j| j.arrival_s);
        let t_done = running.peek().map(|r| r.t);
        let t = match (t_arr, t_done) {
            (None, None) => break,
            (Some(a), Some(d)) => a.min(d),
            (Some(a), None) => a,
            (None, Some(d)) => d,
        };
        while running.peek().is_some_and(|r| r.t <= t) {
            if let Some(done) = running.pop()
                && let Some(nodes) = &placed[done.job]
            {
                for n in nodes {
                    c.sub_used(*n, jobs[done.job].request.per_pod);
                }
            }
        }
        while jobs.get(next_arrival).is_some_and(|j| j.arrival_s <= t) {
            queue.push(next_arrival);
            next_arrival += 1;
        }
        let mut waiting = Vec::with_capacity(queue.len());
        for &j in &queue {
            let req = &jobs[j].request;
            let fits = req.total_units() <= c.domain_free_units(c.root());
            let nodes = if fits { policy.place(&c, req) } else { None };
            match nodes {
                Some(nodes) if nodes.len() == req.size as usize => {
                    for n in &nodes {
                        c.add_used(*n, req.per_pod);
                    }
                    record(&c, &mut results[j], &jobs[j], &nodes, t);
                    running.push(Completion {
                        t: t + jobs[j].duration_s,
                        job: j,
                    });
                    placed[j] = Some(nodes);
                }
                _ => waiting.push(j),
            }
        }
        queue = waiting;
        samples.push(sample(&c, t));
        if next_arrival >= jobs.len() && running.is_empty() {
            break;
        }
    }
    PolicyRun {
        summary: summarise(policy.name(), &results, &samples),
        jobs: results,
        samples,
    }
}

fn record(c: &Cluster, r: &mut JobResult, job: &Job, nodes: &[NodeId], t: f64) {
    r.start_s = Some(t);
    r.spread = measure(c, &job.request, nodes);
    let stage = (job.request.size / job.pp.max(1)).max(1) as usize;
    r.dp_leaves = nodes
        .chunks(stage)
        .map(|g| distinct(c, g, 1))
        .max()
        .unwrap_or(1);
    r.pp_spines = distinct(c, nodes, 2);
}

fn distinct(c: &Cluster, nodes: &[NodeId], tier: u8) -> u32 {
    let mut ds: Vec<_> = nodes.iter().map(|n| c.ancestor(*n, tier)).collect();
    ds.sort_unstable();
    ds.dedup();
    ds.len() as u32
}

fn summarise(policy: &str, results: &[JobResult], samples: &[Sample]) -> Summary {
    let started: Vec<&JobResult> = results.iter().filter(|r| r.start_s.is_some()).collect();
    let mut waits: Vec<f64> = started
        .iter()
        .map(|r| r.start_s.unwrap_or(r.arrival_s) - r.arrival_s)
        .collect();
    waits.sort_by(f64::total_cmp);
    let n = started.len().max(1) as f64;
    let makespan = samples.last().map_or(0.0, |s| s.t);
    let (mut busy, mut frag) = (0.0, 0.0);
    for w in samples.windows(2) {
        let dt = w[1].t - w[0].t;
        busy += w[0].utilisation * dt;
        frag += w[0].fragmentation * dt;
    }
    let span = makespan.max(f64::MIN_POSITIVE);
    Summary {
        policy: policy.to_owned(),
        started: started.len() as u32,
        never_started: (results.len() - started.len()) as u32,
        mean_wait_s: waits.iter().sum::<f64>() / n,
        p95_wait_s: waits
            .get(((waits.len() as f64 * 0.95) as usize).min(waits.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0),
        utilisation: busy / span,
        fragmentation: frag / span,
        mean_max_spread: started.iter().map(|r| f64::from(r.spread.max)).sum::<f64>() / n,
        total_spread: started.iter().map(|r| u64::from(r.spread.total)).sum(),
        cross_spine_groups: started
            .iter()
            .map(|r| u64::from(r.spread.cross_spine_groups))
            .sum(),
        cross_spine_jobs: started
            .iter()
            .filter(|r| r.spread.cross_spine_groups > 0)
            .count() as u32,
        makespan_s: makespan,
    }
}
