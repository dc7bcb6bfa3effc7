//! Reservations, ranks and re-planning, example by example; then the same properties over
//! random clusters and random event sequences.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use spinel_api::labels::LabelOptions;
use spinel_placement::sim::uniform::UniformFabric;
use spinel_placement::{
    AssignError, Cluster, ClusterOptions, Dialect, Engine, EngineOptions, Feasible, GangId,
    GangRequest, HoldLimits, Level, Mode, NodeSpec, RankState, Tier,
};

fn specs(spines: u32, leaves: u32, nodes: u32) -> Vec<NodeSpec> {
    UniformFabric {
        spines,
        leaves_per_spine: leaves,
        nodes_per_leaf: nodes,
        gpus_per_node: 8,
    }
    .node_specs(&LabelOptions::default())
}

fn engine(spines: u32, leaves: u32, nodes: u32) -> Engine {
    Engine::new(
        Cluster::from_nodes(ClusterOptions::default(), specs(spines, leaves, nodes)),
        EngineOptions::default(),
    )
}

fn gang(name: &str, size: u32, per_pod: u32, dp: u32, dp_tier: Tier) -> GangRequest {
    GangRequest::new(
        GangId {
            namespace: "ml".to_owned(),
            name: name.to_owned(),
        },
        size,
        per_pod,
        "nvidia.com/gpu",
        vec![Level {
            name: "dp".to_owned(),
            pods: dp,
            tier: dp_tier,
            mode: Mode::Hard,
        }],
        Dialect::Native,
    )
    .unwrap()
}

fn reserved_total(e: &Engine) -> u64 {
    let c = e.cluster();
    c.node_ids().iter().map(|n| u64::from(c.reserved(*n))).sum()
}

fn assign_all(e: &mut Engine, r: &GangRequest, now: u64) -> Vec<String> {
    (0..r.size)
        .map(|i| {
            e.assign(r, &format!("{}-{i}", r.gang.name), None, now, None)
                .unwrap()
                .node_name
        })
        .collect()
}

#[test]
fn two_gangs_are_never_promised_the_same_node() {
    let mut e = engine(1, 2, 4);
    let a = gang("a", 4, 8, 4, Tier::LEAF);
    let b = gang("b", 4, 8, 4, Tier::LEAF);
    let na = assign_all(&mut e, &a, 0);
    let nb = assign_all(&mut e, &b, 0);
    assert!(na.iter().all(|n| !nb.contains(n)), "{na:?} {nb:?}");
    // The cluster is now fully promised: a third gang waits with a reason.
    let c = gang("c", 1, 8, 1, Tier::LEAF);
    let err = e.assign(&c, "c-0", None, 0, None).unwrap_err();
    assert!(matches!(err, AssignError::Plan(_)), "{err}");
    assert!(e.view(&c.gang).unwrap().waiting.is_some());
    let stats = e.stats();
    assert_eq!(
        (stats.gangs, stats.waiting, stats.reserved_ranks),
        (3, 1, 8)
    );
    assert_eq!(stats.reserved_units, reserved_total(&e));
}

#[test]
fn binding_moves_units_from_reserved_to_used_and_the_gang_is_forgotten() {
    let mut e = engine(1, 1, 4);
    let a = gang("a", 2, 8, 2, Tier::LEAF);
    let nodes = assign_all(&mut e, &a, 0);
    assert_eq!(reserved_total(&e), 16);
    for (i, n) in nodes.iter().enumerate() {
        assert_eq!(e.bound(&a.gang, &format!("a-{i}"), n, 1), Some(i as u32));
        e.set_node_used(n, 8);
    }
    assert_eq!(reserved_total(&e), 0);
    assert_eq!(e.view(&a.gang).unwrap().states, vec![RankState::Bound; 2]);
    e.expire(2);
    assert!(e.view(&a.gang).is_none());
}

#[test]
fn a_published_plan_is_taken_back_after_a_restart() {
    // The previous scheduler planned gang a on leaf l01 (leaf l00 is busier), two pods bound.
    let mut before = engine(1, 2, 4);
    before.set_node_used("n-s00-l00-000", 8);
    let a = gang("a", 4, 8, 4, Tier::LEAF);
    let plan = assign_all(&mut before, &a, 0);
    // A new scheduler: usage from bound pods, the two running pods adopted at their ranks.
    let mut e = engine(1, 2, 4);
    e.set_node_used("n-s00-l00-000", 8);
    for (i, n) in plan.iter().enumerate().take(2) {
        e.set_node_used(n, 8);
        e.adopt(&a, &format!("a-{i}"), i as u32, n).unwrap();
    }
    // Rank 3's node degraded meanwhile: it is not taken back.
    let mut sick = specs(1, 2, 4)
        .into_iter()
        .find(|s| s.name == plan[3])
        .unwrap();
    sick.degraded = true;
    e.upsert_node(sick, 1);
    let restored = e.restore(&a, &plan, &[("a-2".to_owned(), 2)], 2).unwrap();
    assert_eq!(restored, 1);
    assert_eq!(e.pod_of_rank(&a.gang, 2), Some("a-2"));
    let view = e.view(&a.gang).unwrap();
    assert_eq!(view.rank_nodes[..3], plan[..3]);
    assert_eq!(
        view.states,
        [
            RankState::Bound,
            RankState::Bound,
            RankState::Assigned,
            RankState::Open
        ]
    );
    // While rank 3 has nowhere to go in its DP group's leaf, the gang waits with the reason.
    let err = e.assign(&a, "a-2", None, 3, None).unwrap_err();
    assert!(
        err.to_string().contains("rank 3 must rejoin its dp group"),
        "{err}"
    );
    // The node recovers: the pod told rank 2 keeps its node, rank 3 rejoins its group.
    let mut healthy = specs(1, 2, 4)
        .into_iter()
        .find(|s| s.name == plan[3])
        .unwrap();
    healthy.used = 0;
    e.upsert_node(healthy, 4);
    assert_eq!(
        e.assign(&a, "a-2", None, 5, None).unwrap().node_name,
        plan[2]
    );
    assert_eq!(
        e.assign(&a, "a-3", None, 5, None).unwrap().node_name,
        plan[3]
    );
    // Nothing of the published plan goes to another gang.
    let b = gang("b", 1, 8, 1, Tier::LEAF);
    let nb = e.assign(&b, "b-0", None, 6, None).unwrap().node_name;
    assert!(!plan.contains(&nb), "{nb} was promised twice");
}

#[test]
fn a_gang_with_no_pod_and_nothing_held_is_forgotten() {
    let mut e = engine(1, 1, 4);
    let a = gang("a", 2, 8, 2, Tier::LEAF);
    // A published plan naming nodes that are gone: nothing to take back, no pod waiting.
    let gone = ["n-x-1".to_owned(), "n-x-2".to_owned()];
    assert_eq!(e.restore(&a, &gone, &[], 0).unwrap(), 0);
    assert!(e.view(&a.gang).is_some());
    assert!(e.expire(1).is_empty());
    assert!(e.view(&a.gang).is_none(), "an empty gang lingers");
    assert_eq!(e.stats().gangs, 0);
}

#[test]
fn an_idle_reservation_expires_and_frees_its_nodes() {
    let mut e = engine(1, 1, 4);
    let a = gang("a", 4, 8, 4, Tier::LEAF);
    e.assign(&a, "a-0", None, 1_000, None).unwrap();
    assert_eq!(reserved_total(&e), 32);
    // The same pod asking again is no progress: it does not push the deadline.
    e.assign(&a, "a-0", None, 60_000, None).unwrap();
    assert!(e.expire(120_999).is_empty());
    assert_eq!(e.expire(121_000), vec![a.gang.clone()]);
    assert_eq!(reserved_total(&e), 0);
    assert_eq!(
        e.view(&a.gang).unwrap().waiting.as_deref(),
        Some("reservation expired before every pod was bound")
    );
    // The next pod plans again.
    e.assign(&a, "a-1", None, 200_000, None).unwrap();
    assert_eq!(reserved_total(&e), 32);
}

#[test]
fn a_degraded_node_under_a_reservation_is_replaced() {
    let mut e = engine(1, 2, 4);
    let a = gang("a", 2, 8, 2, Tier::LEAF);
    let nodes = assign_all(&mut e, &a, 0);
    let mut spec = specs(1, 2, 4)
        .into_iter()
        .find(|s| s.name == nodes[0])
        .unwrap();
    spec.degraded = true;
    e.upsert_node(spec, 5);
    let view = e.view(&a.gang).unwrap();
    assert!(!view.rank_nodes.contains(&nodes[0]), "{view:?}");
    assert_eq!(reserved_total(&e), 16);
    // Still one leaf for the DP group.
    let leaf = |n: &str| n[..9].to_owned();
    assert_eq!(leaf(&view.rank_nodes[0]), leaf(&view.rank_nodes[1]));
    // A removed node is replaced the same way.
    e.remove_node(&view.rank_nodes[1], 6);
    let again = e.view(&a.gang).unwrap();
    assert!(!again.rank_nodes.contains(&view.rank_nodes[1]));
    assert_eq!(reserved_total(&e), 16);
}

#[test]
fn a_lost_rank_rejoins_its_group_while_the_others_run() {
    let mut e = engine(1, 2, 6);
    let a = gang("a", 4, 8, 2, Tier::LEAF);
    let nodes = assign_all(&mut e, &a, 0);
    for (i, n) in nodes.iter().enumerate().skip(1) {
        e.bound(&a.gang, &format!("a-{i}"), n, 1);
        e.set_node_used(n, 8);
    }
    e.remove_node(&nodes[0], 2);
    let view = e.view(&a.gang).unwrap();
    assert_eq!(view.states[0], RankState::Assigned);
    assert_ne!(view.rank_nodes[0], nodes[0]);
    assert_eq!(
        &view.rank_nodes[0][..9],
        &nodes[1][..9],
        "rank 0 rejoins rank 1's leaf"
    );
    // With its leaf full, the hard DP level keeps it waiting, with the reason.
    e.remove_node(&view.rank_nodes[0], 3);
    e.remove_node("n-s00-l00-005", 3);
    let view = e.view(&a.gang).unwrap();
    assert_eq!(view.states[0], RankState::Open);
    let why = view.waiting.unwrap();
    assert!(
        why.contains("rank 0 must rejoin its dp group within leaf s00-l00"),
        "{why}"
    );
}

#[test]
fn launcher_ranks_are_honoured_and_conflicts_refused() {
    let mut e = engine(1, 1, 4);
    let a = gang("a", 4, 8, 4, Tier::LEAF);
    assert_eq!(e.assign(&a, "p3", Some(3), 0, None).unwrap().rank, 3);
    assert_eq!(e.assign(&a, "px", None, 0, None).unwrap().rank, 0);
    let err = e.assign(&a, "py", Some(3), 0, None).unwrap_err();
    assert!(
        err.to_string()
            .contains("rank 3 of gang ml/a is held by pod p3"),
        "{err}"
    );
    let err = e.assign(&a, "pz", Some(9), 0, None).unwrap_err();
    assert!(matches!(err, AssignError::RankOutOfRange { .. }), "{err}");
    // The same pod asking twice gets the same answer.
    assert_eq!(e.assign(&a, "p3", Some(3), 0, None).unwrap().rank, 3);
}

#[test]
fn pods_of_one_gang_must_agree() {
    let mut e = engine(1, 1, 4);
    e.assign(&gang("a", 4, 8, 4, Tier::LEAF), "p0", None, 0, None)
        .unwrap();
    let err = e
        .assign(&gang("a", 2, 8, 2, Tier::LEAF), "p1", None, 0, None)
        .unwrap_err();
    assert!(err.to_string().contains("size 4 vs 2"), "{err}");
}

#[test]
fn releasing_a_gang_returns_everything() {
    let mut e = engine(2, 2, 2);
    let a = gang("a", 4, 8, 2, Tier::LEAF);
    assign_all(&mut e, &a, 0);
    e.release(&a.gang);
    assert_eq!(reserved_total(&e), 0);
    assert!(e.view(&a.gang).is_none());
}

/// One random step of the world around the engine.
#[derive(Debug, Clone)]
enum Step {
    Submit {
        size_log: u32,
        dp_log: u32,
        leaf: bool,
    },
    BindAll,
    Expire,
    Degrade(usize),
    Remove(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u32..4, 0u32..3, any::<bool>())
            .prop_map(|(size_log, dp_log, leaf)| Step::Submit { size_log, dp_log, leaf }),
        2 => Just(Step::BindAll),
        1 => Just(Step::Expire),
        1 => (0usize..64).prop_map(Step::Degrade),
        1 => (0usize..64).prop_map(Step::Remove),
    ]
}

/// Runs the steps; returns every plan's rank nodes for determinism checks.
fn run(steps: &[Step], check: bool) -> Vec<Vec<String>> {
    let base = specs(2, 2, 4);
    let mut e = engine(2, 2, 4);
    let mut gangs: Vec<GangRequest> = Vec::new();
    let mut used: std::collections::BTreeMap<String, u32> = Default::default();
    let mut out = Vec::new();
    for (t, s) in steps.iter().enumerate() {
        let now = t as u64 * 10_000;
        match s {
            Step::Submit {
                size_log,
                dp_log,
                leaf,
            } => {
                let size = 1 << size_log;
                let dp = 1 << dp_log.min(size_log);
                let tier = if *leaf { Tier::LEAF } else { Tier::SPINE };
                let g = gang(&format!("g{t}"), size, 8, dp, tier);
                let ok =
                    (0..size).all(|i| e.assign(&g, &format!("g{t}-{i}"), None, now, None).is_ok());
                if ok {
                    out.push(e.view(&g.gang).unwrap().rank_nodes);
                    gangs.push(g);
                }
            }
            Step::BindAll => {
                for g in &gangs {
                    let Some(v) = e.view(&g.gang) else { continue };
                    for (i, n) in v.rank_nodes.iter().enumerate() {
                        if v.states[i] != RankState::Bound && !n.is_empty() {
                            e.bound(&g.gang, &format!("{}-{i}", g.gang.name), n, now);
                            let u = used.entry(n.clone()).or_default();
                            *u += 8;
                            e.set_node_used(n, *u);
                        }
                    }
                }
            }
            Step::Expire => {
                e.expire(now);
            }
            Step::Degrade(i) => {
                let mut spec = base[i % base.len()].clone();
                spec.degraded = true;
                spec.used = used.get(&spec.name).copied().unwrap_or(0);
                e.upsert_node(spec, now);
            }
            Step::Remove(i) => e.remove_node(&base[i % base.len()].name, now),
        }
        if check {
            invariants(&e, &gangs);
        }
    }
    out
}

fn invariants(e: &Engine, gangs: &[GangRequest]) {
    let c = e.cluster();
    let mut promised: std::collections::BTreeMap<String, u32> = Default::default();
    for g in gangs {
        let Some(v) = e.view(&g.gang) else { continue };
        for (n, s) in v.rank_nodes.iter().zip(&v.states) {
            if matches!(s, RankState::Reserved | RankState::Assigned) {
                *promised.entry(n.clone()).or_default() += g.per_pod;
            }
        }
        // Groups contiguous: every hard DP group within one domain of its tier.
        let level = &g.levels[0];
        let t = c.effective_tier(level.tier);
        for block in v.rank_nodes.chunks(level.pods as usize) {
            let ids: Vec<_> = block.iter().filter_map(|n| c.node_id(n)).collect();
            if let Some(first) = ids.first() {
                assert!(
                    ids.iter()
                        .all(|n| c.ancestor(*n, t) == c.ancestor(*first, t)),
                    "group of {} crosses its {:?}: {block:?}",
                    g.gang,
                    level.tier
                );
            }
        }
    }
    for n in c.node_ids() {
        let name = c.node_name(n);
        let p = promised.get(name).copied().unwrap_or(0);
        // No double booking: what is promised is exactly what is reserved, and it fits.
        assert_eq!(c.reserved(n), p, "node {name}");
        assert!(
            c.used(n) + c.reserved(n) <= c.allocatable(n),
            "node {name} overbooked"
        );
        if !c.is_healthy(n) {
            assert_eq!(p, 0, "reservation left on unhealthy node {name}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn no_double_booking_groups_contiguous_and_deterministic(
        steps in proptest::collection::vec(step(), 1..24)
    ) {
        let a = run(&steps, true);
        let b = run(&steps, false);
        prop_assert_eq!(a, b);
    }

    #[test]
    fn reservations_are_all_released(
        steps in proptest::collection::vec(step(), 1..16)
    ) {
        let base = specs(2, 2, 4);
        let mut e = engine(2, 2, 4);
        let mut ids = Vec::new();
        for (t, s) in steps.iter().enumerate() {
            if let Step::Submit { size_log, dp_log, .. } = s {
                let size = 1 << size_log;
                let g = gang(&format!("g{t}"), size, 8, 1 << dp_log.min(size_log), Tier::LEAF);
                let _ = e.assign(&g, &format!("g{t}-0"), None, 0, None);
                ids.push(g.gang);
            }
            if let Step::Degrade(i) = s {
                let mut spec = base[i % base.len()].clone();
                spec.degraded = true;
                e.upsert_node(spec, 0);
            }
        }
        e.expire(u64::MAX);
        prop_assert_eq!(reserved_total(&e), 0);
        for id in &ids {
            e.release(id);
        }
        prop_assert_eq!(e.gang_ids().count(), 0);
    }
}

/// Every node of the engine's cluster but `without`.
fn candidates_without(e: &Engine, without: &[&str]) -> Feasible {
    let c = e.cluster();
    let names: Vec<&str> = c
        .node_ids()
        .into_iter()
        .map(|n| c.node_name(n))
        .filter(|n| !without.contains(n))
        .collect();
    Feasible::from_names(c, &names)
}

#[test]
fn a_node_refused_by_kube_scheduler_is_replaced_next_to_the_group() {
    let mut e = engine(1, 2, 4);
    let a = gang("a", 2, 8, 2, Tier::LEAF);
    let first = e.assign(&a, "a-0", None, 0, None).unwrap();
    let other = e.assign(&a, "a-1", None, 0, None).unwrap();
    // kube-scheduler's filters drop rank 0's node when a-0 asks again.
    let dropped = candidates_without(&e, &[&first.node_name]);
    let again = e.assign(&a, "a-0", None, 1, Some(&dropped)).unwrap();
    assert_eq!(again.rank, 0);
    assert_ne!(again.node_name, first.node_name);
    assert_ne!(again.node_name, other.node_name);
    assert_eq!(
        &again.node_name[..9],
        &other.node_name[..9],
        "same leaf as rank 1"
    );
    assert_eq!(reserved_total(&e), 16);
    // The refused node stays out of this gang's plans, even after an expiry.
    e.expire(u64::MAX);
    let after = e.assign(&a, "a-2", None, u64::MAX - 1, None).unwrap_err();
    assert!(matches!(after, AssignError::GangFull { .. }), "{after}");
    let view = e.view(&a.gang).unwrap();
    assert!(!view.rank_nodes.contains(&first.node_name), "{view:?}");
}

// Issue 19: a node of the best-fit leaf carries a taint the engine does not know; kube-scheduler
// leaves it out of the first pod's candidates. The plan uses only candidates, so the gang goes
// whole to the other leaf at once instead of holding the tainted leaf.
#[test]
fn plans_use_only_the_nodes_kube_scheduler_found_feasible() {
    let mut e = engine(1, 2, 4);
    // Leaf 0 is the best fit (one node busy), but one of its free nodes is tainted.
    e.set_node_used("n-s00-l00-000", 8);
    let tainted = "n-s00-l00-001";
    let a = gang("a", 3, 8, 3, Tier::LEAF);
    let feasible = candidates_without(&e, &[tainted]);
    let nodes: Vec<String> = (0..3)
        .map(|i| {
            e.assign(&a, &format!("a-{i}"), None, 0, Some(&feasible))
                .unwrap()
                .node_name
        })
        .collect();
    assert!(!nodes.contains(&tainted.to_owned()), "{nodes:?}");
    assert!(
        nodes.iter().all(|n| n.starts_with("n-s00-l01")),
        "{nodes:?}"
    );
}

// A node planned for a rank no pod was told yet stops being a candidate (cordoned, tainted,
// taken by a pod outside the engine's view): while no rank is committed the gang is planned
// again whole, so it never keeps a leaf it cannot complete.
#[test]
fn a_planned_node_that_stops_being_a_candidate_replans_the_gang() {
    let mut e = engine(1, 2, 4);
    e.set_node_used("n-s00-l00-000", 8);
    let a = gang("a", 3, 8, 3, Tier::LEAF);
    let all = candidates_without(&e, &[]);
    let first = e.assign(&a, "a-0", None, 0, Some(&all)).unwrap();
    assert!(first.node_name.starts_with("n-s00-l00"), "{first:?}");
    let plan = e.view(&a.gang).unwrap().rank_nodes;
    // a-0 was told its node, but kube-scheduler failed it (never bound); when it asks again,
    // rank 2's node is gone from the candidates and leaf 0 has no spare node.
    let lost = plan[2].clone();
    let fewer = candidates_without(&e, &[&lost]);
    let again = e.assign(&a, "a-0", None, 1, Some(&fewer)).unwrap();
    let view = e.view(&a.gang).unwrap();
    assert!(!view.rank_nodes.contains(&lost), "{view:?}");
    let leaves: std::collections::BTreeSet<&str> =
        view.rank_nodes.iter().map(|n| &n[..9]).collect();
    assert_eq!(leaves.len(), 1, "{view:?}");
    assert!(again.node_name.starts_with("n-s00-l01"), "{again:?}");
    assert_eq!(reserved_total(&e), 24);
}

// Part of a gang bound, then a node its DP group needs is lost and the leaf has no other: the
// gang does not hold the bound pods there for ever; after the grace it is released whole, with
// the pods to evict and the reason.
#[test]
fn a_stranded_gang_is_released_whole_after_the_grace() {
    let mut e = engine(1, 2, 4);
    let a = gang("a", 4, 8, 4, Tier::LEAF);
    let n0 = e.assign(&a, "a-0", None, 0, None).unwrap().node_name;
    let n1 = e.assign(&a, "a-1", None, 0, None).unwrap().node_name;
    // Bound: the caller counts their units as used.
    for (uid, n) in [("a-0", &n0), ("a-1", &n1)] {
        e.bound(&a.gang, uid, n, 1);
        e.set_node_used(n, 8);
    }
    let plan = e.view(&a.gang).unwrap().rank_nodes;
    // Rank 3's node is deleted; the leaf has no spare node for it.
    e.remove_node(&plan[3], 2_000);
    let err = e.assign(&a, "a-3", Some(3), 2_500, None).unwrap_err();
    assert!(matches!(err, AssignError::Repair { .. }), "{err}");
    assert_eq!(e.stats().stranded, 1);
    assert!(e.release_stranded(2_000 + 29_999).is_empty());
    let released = e.release_stranded(32_000);
    assert_eq!(released.len(), 1, "{released:?}");
    assert_eq!(
        released[0].bound_pods,
        vec!["a-0".to_owned(), "a-1".to_owned()]
    );
    assert_eq!(released[0].waiting_pods, vec!["a-3".to_owned()]);
    assert!(
        released[0].reason.contains("released whole"),
        "{}",
        released[0].reason
    );
    assert!(!e.holds(&a.gang));
    assert_eq!(reserved_total(&e), 0);
    assert_eq!(e.stats().held_ranks, 0);
}

// A lost node whose leaf recovers before the grace ends: the gang completes, nothing released.
#[test]
fn a_stranded_gang_that_can_complete_again_is_kept() {
    let mut e = engine(1, 2, 4);
    let a = gang("a", 4, 8, 4, Tier::LEAF);
    let n0 = e.assign(&a, "a-0", None, 0, None).unwrap().node_name;
    e.bound(&a.gang, "a-0", &n0, 1);
    e.set_node_used(&n0, 8);
    let plan = e.view(&a.gang).unwrap().rank_nodes;
    let spec = e
        .cluster()
        .node_id(&plan[3])
        .map(|_| {
            specs(1, 2, 4)
                .into_iter()
                .find(|s| s.name == plan[3])
                .unwrap()
        })
        .unwrap();
    let mut cordoned = spec.clone();
    cordoned.unschedulable = true;
    e.upsert_node(cordoned, 2);
    assert_eq!(e.stats().stranded, 1, "{:?}", e.view(&a.gang));
    e.upsert_node(spec, 3);
    assert!(e.release_stranded(60_000).is_empty());
    assert!(e.holds(&a.gang));
    assert_eq!(e.stats().stranded, 0);
}

// Issue 19: 150 requests for never-fitting 65,536-pod gangs kept 187 gangs (406 MiB): a gang
// that can never fit holds nothing; gangs past the limit on held ranks are refused with it.
#[test]
fn never_fitting_gangs_are_not_kept_and_held_ranks_are_limited() {
    let mut e = engine(1, 2, 4);
    e.set_limits(HoldLimits {
        max_held_ranks: 20,
        ..HoldLimits::default()
    });
    for g in 0..150 {
        let huge = gang(&format!("huge-{g}"), 65_536, 8, 65_536, Tier::CLUSTER);
        let err = e.assign(&huge, "p", None, 0, None).unwrap_err();
        assert!(
            matches!(err, AssignError::OverLimit { .. } | AssignError::Plan(_)),
            "{err}"
        );
    }
    let big = gang("big", 16, 8, 16, Tier::CLUSTER);
    let err = e.assign(&big, "p", None, 0, None).unwrap_err();
    assert!(
        matches!(
            err,
            AssignError::Plan(spinel_placement::PlanError::NeverFits { .. })
        ),
        "{err}"
    );
    let stats = e.stats();
    assert_eq!((stats.gangs, stats.held_ranks, stats.held_bytes), (0, 0, 0));
    // Two 8-pod gangs that wait for room are kept (20 ranks allowed); a third is refused.
    e.set_node_used("n-s00-l00-000", 8);
    let w = |n: &str| gang(n, 8, 8, 8, Tier::CLUSTER);
    assert!(matches!(
        e.assign(&w("w1"), "w1-0", None, 0, None).unwrap_err(),
        AssignError::Plan(spinel_placement::PlanError::Pending { .. })
    ));
    assert!(e.assign(&w("w2"), "w2-0", None, 0, None).is_err());
    let err = e.assign(&w("w3"), "w3-0", None, 0, None).unwrap_err();
    assert!(
        err.to_string()
            .contains("already holds 16 ranks of other gangs and its limit is 20"),
        "{err}"
    );
    let stats = e.stats();
    assert_eq!((stats.gangs, stats.held_ranks), (2, 16));
    assert!(stats.held_bytes > 16 * 8, "{stats:?}");
}

#[test]
fn nodes_listed_before_their_labels_are_placed_once_labelled() {
    // spinel-scheduler lists Nodes before the fabric agents label them: the engine starts
    // from unlabelled nodes and sees each node's labels arrive as an update.
    let labelled = specs(1, 2, 4);
    let mut e = Engine::new(
        Cluster::new(ClusterOptions::default()),
        EngineOptions::default(),
    );
    for s in &labelled {
        let mut bare = s.clone();
        bare.labels.clear();
        e.upsert_node(bare, 0);
    }
    for s in labelled {
        e.upsert_node(s, 1);
    }
    let a = gang("a", 8, 8, 4, Tier::LEAF);
    let nodes = assign_all(&mut e, &a, 2);
    assert_eq!(nodes.len(), 8);
}
