//! The exact solver against brute force, Spinel against the exact solver, and the simulator's
//! targets on small traces.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use spinel_api::labels::LabelOptions;
use spinel_placement::sim::optimal::{Limits, solve};
use spinel_placement::sim::policy::{Optimal, Policy, Spinel, TierBoundedBestFit, TopologyUnaware};
use spinel_placement::sim::trace::{TraceSpec, generate};
use spinel_placement::sim::uniform::UniformFabric;
use spinel_placement::sim::{Audited, compare};
use spinel_placement::spread::measure;
use spinel_placement::{
    Cluster, ClusterOptions, Dialect, GangId, GangRequest, Level, Mode, NodeId, PlanOptions, Tier,
    plan,
};

fn cluster(f: UniformFabric, busy: &[u32]) -> Cluster {
    let mut specs = f.node_specs(&LabelOptions::default());
    for (s, b) in specs.iter_mut().zip(busy.iter().cycle()) {
        s.used = (*b).min(s.allocatable);
    }
    Cluster::from_nodes(ClusterOptions::default(), specs)
}

fn request(size: u32, per_pod: u32, dp: u32, dp_mode: Mode, pp_mode: Mode) -> GangRequest {
    GangRequest::new(
        GangId {
            namespace: "t".to_owned(),
            name: "j".to_owned(),
        },
        size,
        per_pod,
        "nvidia.com/gpu",
        vec![
            Level {
                name: "dp".to_owned(),
                pods: dp,
                tier: Tier::LEAF,
                mode: dp_mode,
            },
            Level {
                name: "pp".to_owned(),
                pods: size,
                tier: Tier::SPINE,
                mode: pp_mode,
            },
        ],
        Dialect::Native,
    )
    .unwrap()
}

/// Every map from ranks to nodes with room, no pruning: the reference for tiny cases.
fn brute_force(c: &Cluster, r: &GangRequest) -> Option<(u32, u32)> {
    let nodes = c.node_ids();
    let mut best: Option<(u32, u32)> = None;
    let mut assign: Vec<NodeId> = Vec::new();
    fn go(
        c: &Cluster,
        r: &GangRequest,
        nodes: &[NodeId],
        assign: &mut Vec<NodeId>,
        best: &mut Option<(u32, u32)>,
    ) {
        if assign.len() == r.size as usize {
            for l in &r.levels {
                if l.mode == Mode::Hard {
                    let t = c.effective_tier(l.tier);
                    for b in assign.chunks(l.pods as usize) {
                        if b.iter().any(|n| c.ancestor(*n, t) != c.ancestor(b[0], t)) {
                            return;
                        }
                    }
                }
            }
            let s = measure(c, r, assign);
            if best.is_none_or(|b| (s.max, s.total) < b) {
                *best = Some((s.max, s.total));
            }
            return;
        }
        for n in nodes {
            let used = assign.iter().filter(|a| *a == n).count() as u32 * r.per_pod;
            if c.free(*n) >= used + r.per_pod {
                assign.push(*n);
                go(c, r, nodes, assign, best);
                assign.pop();
            }
        }
    }
    go(c, r, &nodes, &mut assign, &mut best);
    best
}

fn small_case() -> impl Strategy<Value = (UniformFabric, Vec<u32>, u32, u32, bool, bool)> {
    (
        1u32..=3,
        1u32..=3,
        1u32..=3,
        proptest::collection::vec(0u32..=8, 1..6),
    )
        .prop_flat_map(|(spines, leaves, nodes, busy)| {
            (
                Just(UniformFabric {
                    spines,
                    leaves_per_spine: leaves,
                    nodes_per_leaf: nodes,
                    gpus_per_node: 8,
                }),
                Just(busy),
                prop_oneof![Just(1u32), Just(2), Just(4), Just(6), Just(8)],
                prop_oneof![Just(1u32), Just(2), Just(3)],
                any::<bool>(),
                any::<bool>(),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn exhaustive_matches_brute_force(
        spines in 1u32..=2, leaves in 1u32..=2, nodes in 1u32..=2,
        busy in proptest::collection::vec(0u32..=8, 1..4),
        size in 1u32..=4, hard in any::<bool>(),
    ) {
        let f = UniformFabric { spines, leaves_per_spine: leaves, nodes_per_leaf: nodes,
            gpus_per_node: 8 };
        let c = cluster(f, &busy);
        let dp = if size % 2 == 0 { 2 } else { 1 };
        let mode = if hard { Mode::Hard } else { Mode::Soft };
        let r = request(size, 4, dp, mode, Mode::Soft);
        let exact = solve(&c, &r, Limits::default()).map(|o| (o.max, o.total));
        prop_assert_eq!(exact, brute_force(&c, &r));
    }

    // The audit's floor is never above the exhaustive optimum, and is the optimum where it says
    // it is exact.
    #[test]
    fn the_floor_is_under_the_optimum_and_exact_when_it_says_so(
        (f, busy, size, dp_div, dp_hard, pp_hard) in small_case()
    ) {
        let c = cluster(f, &busy);
        let dp = (size / dp_div).max(1);
        prop_assume!(size % dp == 0);
        let mode = |h| if h { Mode::Hard } else { Mode::Soft };
        let r = request(size, 8, dp, mode(dp_hard), mode(pp_hard));
        let opt = solve(&c, &r, Limits::default());
        let low = spinel_placement::floor::floor(&c, &r);
        match (&opt, low) {
            (Some(o), Some(l)) => {
                prop_assert!(l.max <= o.max && l.total <= o.total, "floor {l:?} optimum {o:?}");
                if l.exact {
                    prop_assert_eq!((l.max, l.total), (o.max, o.total));
                }
            }
            (None, None) => {}
            // The floor relaxes hard levels inside the gang, so it may exist where nothing fits.
            (None, Some(l)) => prop_assert!(!l.exact || !pp_hard, "exact floor {l:?}, no placement"),
            (Some(o), None) => prop_assert!(false, "no floor, optimum {o:?}"),
        }
    }

    #[test]
    fn spinel_is_within_five_percent_of_the_optimum_on_small_cases(
        (f, busy, size, dp_div, dp_hard, pp_hard) in small_case()
    ) {
        let c = cluster(f, &busy);
        let dp = (size / dp_div).max(1);
        prop_assume!(size % dp == 0);
        let mode = |h| if h { Mode::Hard } else { Mode::Soft };
        let r = request(size, 8, dp, mode(dp_hard), mode(pp_hard));
        let opt = solve(&c, &r, Limits::default());
        let ours = plan(&c, &r, &PlanOptions::default());
        if let (Some(opt), Ok(p)) = (&opt, &ours) {
            prop_assert!(
                f64::from(p.spread.total) <= f64::from(opt.total) * 1.05,
                "spinel {} vs optimum {}", p.spread.total, opt.total
            );
            let opt_cross = measure(&c, &r, &opt.nodes).cross_spine_groups;
            prop_assert!(opt_cross > 0 || p.spread.cross_spine_groups == 0,
                "avoidable spine crossing");
        }
        // Spinel plans whenever a placement honouring the hard levels exists.
        if opt.is_some() {
            prop_assert!(ours.is_ok(), "{:?}", ours);
        }
    }
}

fn small_trace(seed: u64) -> (Cluster, Vec<spinel_placement::sim::trace::Job>) {
    let f = UniformFabric {
        spines: 2,
        leaves_per_spine: 4,
        nodes_per_leaf: 8,
        gpus_per_node: 8,
    };
    let c = cluster(f, &[0]);
    let jobs = generate(&TraceSpec {
        seed,
        jobs: 60,
        max_pods: 16,
        gpus_per_pod: 8,
        nodes_per_leaf: 8,
        load: 0.9,
        cluster_gpus: 512,
        min_duration_s: 60.0,
        max_duration_s: 3_600.0,
    });
    (c, jobs)
}

#[test]
fn traces_are_reproducible() {
    let (_, a) = small_trace(7);
    let (_, b) = small_trace(7);
    let (_, other) = small_trace(8);
    assert_eq!(a, b);
    assert_ne!(a, other);
    assert!(a.windows(2).all(|w| w[0].arrival_s <= w[1].arrival_s));
}

#[test]
fn spinel_matches_the_optimum_and_keeps_utilisation_on_small_traces() {
    for seed in 1..=5 {
        let (c, jobs) = small_trace(seed);
        let mut policies: Vec<Box<dyn Policy>> = vec![
            Box::new(TopologyUnaware),
            Box::new(TierBoundedBestFit),
            Box::new(Spinel::default()),
        ];
        let runs = compare(&c, &jobs, &mut policies);
        let unaware = &runs[0].summary;
        let spinel = &runs[2].summary;
        assert_eq!(spinel.started, 60, "seed {seed}");
        assert!(
            spinel.utilisation >= unaware.utilisation * 0.98,
            "seed {seed}: spinel {:.3} vs unaware {:.3}",
            spinel.utilisation,
            unaware.utilisation
        );
        assert!(spinel.total_spread <= unaware.total_spread, "seed {seed}");
        assert!(
            spinel.cross_spine_groups <= unaware.cross_spine_groups,
            "seed {seed}"
        );
        let mut audited = Audited::default();
        spinel_placement::sim::run::run(&c, &jobs, &mut audited);
        let check = audited.check;
        assert!(check.decisions > 0);
        assert_eq!(check.avoidable_spine_crossings, 0, "seed {seed}: {check:?}");
        assert_eq!(check.over_five_percent, 0, "seed {seed}: {check:?}");
    }
}

/// Spinel's planner that keeps the cluster state it saw for one gang.
struct Snapshot {
    gang: &'static str,
    seen: Option<(Cluster, GangRequest)>,
}

impl Policy for Snapshot {
    fn name(&self) -> &'static str {
        "spinel"
    }

    fn place(&mut self, c: &Cluster, r: &GangRequest) -> Option<Vec<NodeId>> {
        let p = plan(c, r, &PlanOptions::default()).ok()?;
        if r.gang.name == self.gang {
            self.seen = Some((c.clone(), r.clone()));
        }
        Some(p.nodes)
    }
}

// Issue 19: on 3 spines of 5 leaves of 6 nodes, seed 7, the audit found Spinel's total spread
// 138 against the optimum's 136, two decisions more than 5 % above it. One was job 29 (16 pods,
// DP groups of 8 soft within a leaf, the pipeline soft within a spine), on a spine whose free
// nodes were 2, 6, 6 and 6 per leaf: the first DP group was cut best-fit (6 + 2 nodes) and the
// pipeline touched 4 leaves where 3 do. The state it saw is rebuilt with the old decisions
// before it (Spinel's earlier choices shape it) and audited alone, as the whole trace's audit
// takes minutes in a debug build.
#[test]
fn a_group_is_not_cut_best_fit_when_that_spreads_its_pipeline() {
    let f = UniformFabric {
        spines: 3,
        leaves_per_spine: 5,
        nodes_per_leaf: 6,
        gpus_per_node: 8,
    };
    let mut c = cluster(f, &[0]);
    let free = [[3, 2, 0, 2, 2], [0, 0, 0, 1, 0], [2, 0, 6, 6, 6]];
    for id in c.node_ids() {
        let name = c.node_name(id).to_owned();
        let (s, l, n): (usize, usize, u32) = (
            name[3..5].parse().unwrap(),
            name[7..9].parse().unwrap(),
            name[10..].parse().unwrap(),
        );
        if n >= free[s][l] {
            c.set_used(id, 8);
        }
    }
    let r = request(16, 8, 8, Mode::Soft, Mode::Soft);
    let ours = plan(&c, &r, &PlanOptions::default()).unwrap();
    let opt = solve(&c, &r, Limits::default()).unwrap();
    assert_eq!((opt.max, opt.total), (2, 4));
    assert_eq!((ours.spread.max, ours.spread.total), (2, 4), "{ours:?}");
    // And the same trace audited decision by decision stays at the optimum up to that job.
    let jobs = generate(&TraceSpec {
        seed: 7,
        jobs: 200,
        max_pods: 16,
        gpus_per_pod: 8,
        nodes_per_leaf: 6,
        load: 0.9,
        cluster_gpus: 720,
        min_duration_s: 600.0,
        max_duration_s: 28_800.0,
    });
    let mut snap = Snapshot {
        gang: "job-00029",
        seen: None,
    };
    spinel_placement::sim::run::run(&cluster(f, &[0]), &jobs, &mut snap);
    let (state, req) = snap.seen.unwrap();
    let ours = plan(&state, &req, &PlanOptions::default()).unwrap();
    let opt = solve(&state, &req, Limits::default()).unwrap();
    assert_eq!(
        (ours.spread.max, ours.spread.total),
        (opt.max, opt.total),
        "{ours:?}"
    );
}

#[test]
fn the_chart_has_one_series_per_policy() {
    let (c, jobs) = small_trace(3);
    let (small, few) = (
        cluster(
            UniformFabric {
                spines: 2,
                leaves_per_spine: 2,
                nodes_per_leaf: 2,
                gpus_per_node: 8,
            },
            &[0],
        ),
        &jobs[..10],
    );
    let mut policies: Vec<Box<dyn Policy>> = vec![
        Box::new(TopologyUnaware),
        Box::new(Spinel::default()),
        Box::new(Optimal),
    ];
    let runs = compare(&small, few, &mut policies);
    let _ = c;
    let svg = spinel_placement::sim::chart::render(&runs, "test <trace>");
    assert!(svg.starts_with("<svg"));
    assert_eq!(svg.matches("<polyline").count(), 3);
    assert!(svg.contains("test &lt;trace&gt;"));
    assert!(svg.contains("spinel ("));
}
