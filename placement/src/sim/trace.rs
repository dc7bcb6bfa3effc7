//! A seeded job trace: the same seed gives the same jobs on every machine.
//!
//! Each job is a gang of whole-node pods (`gpus_per_pod` units each, one rank per GPU):
//! - size: a power of two between 1 and `max_pods`, smaller sizes more likely (weight
//!   1/sqrt(size), as in production traces where most jobs are small and most GPU-hours large);
//! - shape: `tp` = GPUs per pod (TP inside a node); `pp` stages from {1, 2, 4} dividing the size
//!   (more stages for larger jobs); `dp` = the rest, so a DP group (one stage) is `size / pp`
//!   pods, hard within a leaf when it fits one, else soft; the pipeline soft within a spine;
//! - arrival: a Poisson process whose rate keeps the offered load at `load` of the cluster's
//!   GPUs given the mean size and duration;
//! - duration: log-uniform between `min_duration_s` and `max_duration_s`.

use serde::Serialize;

use crate::request::{Dialect, GangId, GangRequest, Level, Mode};
use crate::tier::Tier;

/// Trace settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceSpec {
    /// Seed.
    pub seed: u64,
    /// Number of jobs.
    pub jobs: u32,
    /// Largest gang in pods.
    pub max_pods: u32,
    /// Units per pod.
    pub gpus_per_pod: u32,
    /// Nodes per leaf in the target cluster (decides whether a DP group fits a leaf).
    pub nodes_per_leaf: u32,
    /// Offered load as a fraction of the cluster's GPUs.
    pub load: f64,
    /// Total GPUs of the cluster.
    pub cluster_gpus: u64,
    /// Shortest job.
    pub min_duration_s: f64,
    /// Longest job.
    pub max_duration_s: f64,
}

/// One job of the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    /// Position in the trace.
    pub id: u32,
    /// Arrival time (seconds).
    pub arrival_s: f64,
    /// Run time once started (seconds).
    pub duration_s: f64,
    /// Pipeline stages.
    pub pp: u32,
    /// The gang request.
    pub request: GangRequest,
}

/// SplitMix64: small, seedable, good enough for traces.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
}

fn sizes(max_pods: u32) -> Vec<(u32, f64)> {
    let mut out = Vec::new();
    let mut s = 1u32;
    while s <= max_pods.max(1) {
        out.push((s, 1.0 / f64::from(s).sqrt()));
        s = s.saturating_mul(2);
    }
    out
}

fn pick_size(rng: &mut Rng, table: &[(u32, f64)]) -> u32 {
    let total: f64 = table.iter().map(|(_, w)| w).sum();
    let mut x = rng.unit() * total;
    for (s, w) in table {
        if x < *w {
            return *s;
        }
        x -= w;
    }
    table.last().map_or(1, |(s, _)| *s)
}

/// The request of a job of `size` pods with `pp` stages.
pub fn job_request(id: u32, size: u32, pp: u32, spec: &TraceSpec) -> GangRequest {
    let stage = (size / pp.max(1)).max(1);
    let dp_mode = if stage <= spec.nodes_per_leaf {
        Mode::Hard
    } else {
        Mode::Soft
    };
    let levels = vec![
        Level {
            name: "dp".to_owned(),
            pods: stage,
            tier: Tier::LEAF,
            mode: dp_mode,
        },
        Level {
            name: "pp".to_owned(),
            pods: size,
            tier: Tier::SPINE,
            mode: Mode::Soft,
        },
    ];
    let gang = GangId {
        namespace: "sim".to_owned(),
        name: format!("job-{id:05}"),
    };
    let fallback = |_| plain_gang(id, size, spec);
    GangRequest::new(
        gang,
        size,
        spec.gpus_per_pod,
        "nvidia.com/gpu",
        levels,
        Dialect::Native,
    )
    .unwrap_or_else(fallback)
}

/// Trace requests are built valid (sizes are powers of two, stages divide them); should one not
/// be, the job stays in the trace as a gang without levels rather than stopping the run.
fn plain_gang(id: u32, size: u32, spec: &TraceSpec) -> GangRequest {
    GangRequest {
        gang: GangId {
            namespace: "sim".to_owned(),
            name: format!("job-{id:05}"),
        },
        size: size.max(1),
        per_pod: spec.gpus_per_pod.max(1),
        resource: "nvidia.com/gpu".to_owned(),
        levels: vec![Level {
            name: "gang".to_owned(),
            pods: size.max(1),
            tier: Tier::CLUSTER,
            mode: Mode::Soft,
        }],
        dialect: Dialect::Native,
    }
}

/// Generates the trace.
pub fn generate(spec: &TraceSpec) -> Vec<Job> {
    let mut rng = Rng::new(spec.seed);
    let table = sizes(spec.max_pods);
    let total_w: f64 = table.iter().map(|(_, w)| w).sum();
    let mean_size: f64 = table.iter().map(|(s, w)| f64::from(*s) * w).sum::<f64>() / total_w;
    let (lo, hi) = (spec.min_duration_s.max(1.0), spec.max_duration_s.max(1.0));
    let mean_duration = if hi > lo {
        (hi - lo) / (hi / lo).ln()
    } else {
        lo
    };
    let gpus_per_job = mean_size * f64::from(spec.gpus_per_pod);
    let rate = spec.load.max(0.01) * spec.cluster_gpus as f64 / (gpus_per_job * mean_duration);
    let mut t = 0.0;
    (0..spec.jobs)
        .map(|id| {
            t += -(1.0 - rng.unit()).ln() / rate;
            let size = pick_size(&mut rng, &table);
            let pp_choices: Vec<u32> = [1u32, 2, 4]
                .into_iter()
                .filter(|p| size.is_multiple_of(*p) && (*p == 1 || size >= 4 * p))
                .collect();
            let pp = pp_choices[rng.below(pp_choices.len() as u64) as usize];
            let duration_s = lo * (hi / lo).powf(rng.unit());
            Job {
                id,
                arrival_s: t,
                duration_s,
                pp,
                request: job_request(id, size, pp, spec),
            }
        })
        .collect()
}
