//! Spinel's decisions against the best placement, decision by decision, on small and large
//! uniform fabrics: the distribution of the gap, not only the totals.
//!
//! `cargo bench -p spinel-placement --bench optimality [-- S,L,N:JOBS:MAX_PODS:SEED ...]`
//! (default: the 3,5,6 seed 7 case, the docs' 2,4,8 cases, and 8 spines × 16 leaves ×
//! 32 nodes = 4,096 nodes with jobs up to 256 pods). Each decision is checked against the
//! exhaustive search where it finishes (small cases; it stops at a proven floor it reaches),
//! else against the floor of `spinel_placement::floor` (exact where every level inside the
//! gang is hard within a leaf; otherwise a lower bound, so the gap shown is at least the true
//! one).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Instant;

use spinel_api::labels::LabelOptions;
use spinel_placement::sim::trace::{TraceSpec, generate};
use spinel_placement::sim::uniform::UniformFabric;
use spinel_placement::sim::{Audited, run::run};
use spinel_placement::{Cluster, ClusterOptions};

struct Case {
    fabric: UniformFabric,
    jobs: u32,
    max_pods: u32,
    seed: u64,
}

fn parse(arg: &str) -> Option<Case> {
    let mut parts = arg.split(':');
    let shape: Vec<u32> = parts
        .next()?
        .split(',')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [spines, leaves, nodes] = shape[..] else {
        return None;
    };
    Some(Case {
        fabric: UniformFabric {
            spines,
            leaves_per_spine: leaves,
            nodes_per_leaf: nodes,
            gpus_per_node: 8,
        },
        jobs: parts.next()?.parse().ok()?,
        max_pods: parts.next()?.parse().ok()?,
        seed: parts.next()?.parse().ok()?,
    })
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let defaults = [
        "3,5,6:200:16:7",
        "2,4,8:200:16:1",
        "2,4,8:200:16:2",
        "2,4,8:200:16:3",
        "8,16,32:1000:256:1",
    ];
    let wanted: Vec<String> = if args.is_empty() {
        defaults.iter().map(|s| (*s).to_owned()).collect()
    } else {
        args
    };
    for arg in wanted {
        let Some(case) = parse(&arg) else {
            eprintln!("optimality: {arg}: expected S,L,N:JOBS:MAX_PODS:SEED");
            std::process::exit(2);
        };
        let f = case.fabric;
        let cluster = Cluster::from_nodes(
            ClusterOptions::default(),
            f.node_specs(&LabelOptions::default()),
        );
        let jobs = generate(&TraceSpec {
            seed: case.seed,
            jobs: case.jobs,
            max_pods: case.max_pods,
            gpus_per_pod: 8,
            nodes_per_leaf: f.nodes_per_leaf,
            load: 0.9,
            cluster_gpus: u64::from(f.nodes()) * 8,
            min_duration_s: 600.0,
            max_duration_s: 28_800.0,
        });
        let t = Instant::now();
        let mut audited = Audited::default();
        run(&cluster, &jobs, &mut audited);
        let c = &audited.check;
        let widens = c
            .log
            .iter()
            .filter(|d| d.exact && d.spinel > d.bound && d.optimum_widens)
            .count();
        println!(
            "\n### {} nodes ({},{},{}), {} jobs up to {} pods, seed {}: {} decisions ({} exact, \
             {} against a floor), total spread {} vs {} over the exact ones, {} over 5 % \
             ({} where the optimum widens a tier Spinel kept), {:.1} s\n",
            f.nodes(),
            f.spines,
            f.leaves_per_spine,
            f.nodes_per_leaf,
            case.jobs,
            case.max_pods,
            case.seed,
            c.log.len(),
            c.decisions,
            c.skipped,
            c.spinel_total,
            c.optimal_total,
            c.over_five_percent,
            widens,
            t.elapsed().as_secs_f64()
        );
        print!("{}", c.report());
    }
}
