//! The planner on small uniform clusters: groups under their tiers, fallbacks recorded,
//! explanations exact, degraded nodes avoided, decisions deterministic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use spinel_api::labels::LabelOptions;
use spinel_placement::sim::uniform::UniformFabric;
use spinel_placement::{
    Cluster, ClusterOptions, Dialect, GangId, GangRequest, Level, Mode, NodeId, PlanError,
    PlanOptions, Tier, plan,
};

fn cluster(spines: u32, leaves: u32, nodes: u32) -> Cluster {
    let f = UniformFabric {
        spines,
        leaves_per_spine: leaves,
        nodes_per_leaf: nodes,
        gpus_per_node: 8,
    };
    Cluster::from_nodes(
        ClusterOptions::default(),
        f.node_specs(&LabelOptions::default()),
    )
}

fn level(name: &str, pods: u32, tier: Tier, mode: Mode) -> Level {
    Level {
        name: name.to_owned(),
        pods,
        tier,
        mode,
    }
}

fn job(name: &str, size: u32, per_pod: u32, levels: Vec<Level>) -> GangRequest {
    GangRequest::new(
        GangId {
            namespace: "ml".to_owned(),
            name: name.to_owned(),
        },
        size,
        per_pod,
        "nvidia.com/gpu",
        levels,
        Dialect::Native,
    )
    .unwrap()
}

fn leaf_of(c: &Cluster, n: NodeId) -> String {
    c.domain_value(c.ancestor(n, 1)).to_owned()
}

fn spine_of(c: &Cluster, n: NodeId) -> String {
    c.domain_value(c.ancestor(n, 2)).to_owned()
}

/// 3D job: 16 pods of 8 GPUs, DP groups of 4 pods under a leaf, the gang under a spine.
fn three_d(name: &str) -> GangRequest {
    job(
        name,
        16,
        8,
        vec![
            level("dp", 4, Tier::LEAF, Mode::Hard),
            level("pp", 16, Tier::SPINE, Mode::Hard),
        ],
    )
}

#[test]
fn dp_groups_sit_under_one_leaf_and_the_gang_under_one_spine() {
    let c = cluster(2, 4, 4);
    let p = plan(&c, &three_d("a"), &PlanOptions::default()).unwrap();
    assert_eq!(p.nodes.len(), 16);
    for group in p.nodes.chunks(4) {
        let leaf = leaf_of(&c, group[0]);
        assert!(group.iter().all(|n| leaf_of(&c, *n) == leaf), "{group:?}");
    }
    let spine = spine_of(&c, p.nodes[0]);
    assert!(p.nodes.iter().all(|n| spine_of(&c, *n) == spine));
    // Every pod of 8 GPUs on its own node.
    let mut distinct = p.nodes.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 16);
    assert!(p.fallbacks.is_empty());
    assert_eq!(p.spread.max, 3, "the gang spans 4 leaves of one spine");
    assert_eq!(p.spread.cross_spine_groups, 0);
}

#[test]
fn a_small_gang_takes_the_fullest_leaf_that_fits() {
    let mut c = cluster(1, 3, 4);
    // Leaf 1 has 2 nodes busy: best-fit sends a 2-node gang there, keeping whole leaves free.
    for name in ["n-s00-l01-000", "n-s00-l01-001"] {
        let id = c.node_id(name).unwrap();
        c.add_used(id, 8);
    }
    let p = plan(&c, &job("small", 2, 8, vec![]), &PlanOptions::default()).unwrap();
    assert!(
        p.nodes.iter().all(|n| leaf_of(&c, *n) == "s00-l01"),
        "{}",
        p.domain
    );
    assert_eq!(p.domain, "leaf s00-l01");
}

#[test]
fn tensor_parallel_pods_share_a_node() {
    let c = cluster(1, 2, 2);
    // 8 pods of 2 GPUs, TP groups of 4 pods per node.
    let r = job("tp", 8, 2, vec![level("tp", 4, Tier::NODE, Mode::Hard)]);
    let p = plan(&c, &r, &PlanOptions::default()).unwrap();
    for group in p.nodes.chunks(4) {
        assert!(group.iter().all(|n| *n == group[0]));
    }
    assert_ne!(p.nodes[0], p.nodes[4]);
}

#[test]
fn a_soft_level_falls_back_one_tier_and_says_so() {
    let c = cluster(2, 2, 4);
    // 12 nodes: no spine has 12 (each has 8), so the soft pipeline widens to the cluster.
    let r = job(
        "wide",
        12,
        8,
        vec![
            level("dp", 4, Tier::LEAF, Mode::Hard),
            level("pp", 12, Tier::SPINE, Mode::Soft),
        ],
    );
    let p = plan(&c, &r, &PlanOptions::default()).unwrap();
    assert_eq!(p.fallbacks.len(), 1);
    assert_eq!(p.fallbacks[0].level, "pp");
    assert_eq!(p.fallbacks[0].requested, Tier::SPINE);
    assert_eq!(p.fallbacks[0].granted, Tier::CLUSTER);
    assert!(
        p.fallbacks[0].reason.contains("no spine had room"),
        "{:?}",
        p.fallbacks
    );
    for group in p.nodes.chunks(4) {
        let leaf = leaf_of(&c, group[0]);
        assert!(group.iter().all(|n| leaf_of(&c, *n) == leaf));
    }
}

#[test]
fn a_hard_level_waits_and_explains_the_best_leaf() {
    let mut c = cluster(1, 2, 8);
    // Leaf 0 has 6 of 8 nodes free, leaf 1 has 5: a DP group of 8 nodes cannot start.
    for name in [
        "n-s00-l00-000",
        "n-s00-l00-001",
        "n-s00-l01-000",
        "n-s00-l01-001",
        "n-s00-l01-002",
    ] {
        let id = c.node_id(name).unwrap();
        c.add_used(id, 8);
    }
    let r = job("big", 8, 8, vec![level("dp", 8, Tier::LEAF, Mode::Hard)]);
    let e = plan(&c, &r, &PlanOptions::default()).unwrap_err();
    let PlanError::Pending { why, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(
        why.message,
        "each dp group needs 8 nodes within one leaf: leaf s00-l00 has 6 of 8 nodes free"
    );
    assert_eq!(why.shortfalls[0].has, 6);
    assert_eq!(why.shortfalls[0].needs, 8);
}

#[test]
fn an_outer_level_counts_whole_inner_groups_and_a_redundant_one_is_not_repeated() {
    let mut c = cluster(2, 2, 4);
    // Each spine has one whole leaf (4 nodes) and 3 free nodes in the other: 7 nodes free,
    // room for one DP group of 4 only.
    for name in ["n-s00-l00-000", "n-s01-l01-003"] {
        let id = c.node_id(name).unwrap();
        c.add_used(id, 8);
    }
    let pipeline = job(
        "pipe",
        8,
        8,
        vec![
            level("dp", 4, Tier::LEAF, Mode::Hard),
            level("pp", 8, Tier::SPINE, Mode::Hard),
        ],
    );
    let e = plan(&c, &pipeline, &PlanOptions::default()).unwrap_err();
    let PlanError::Pending { why, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(
        why.message,
        "each pp group needs 8 nodes within one spine: spine s00 has room for 1 of the 2 dp \
         groups it needs"
    );
    // A pipeline of one stage is its DP group: only the DP line explains it.
    for name in ["n-s00-l01-000", "n-s01-l00-000"] {
        let id = c.node_id(name).unwrap();
        c.add_used(id, 8);
    }
    let one_stage = job(
        "stage",
        4,
        8,
        vec![
            level("dp", 4, Tier::LEAF, Mode::Hard),
            level("pp", 4, Tier::SPINE, Mode::Hard),
        ],
    );
    let e = plan(&c, &one_stage, &PlanOptions::default()).unwrap_err();
    let PlanError::Pending { why, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(why.shortfalls.len(), 1, "{}", why.message);
    assert!(
        why.message
            .starts_with("each dp group needs 4 nodes within one leaf: leaf")
    );
    assert!(
        why.message.ends_with("has 3 of 4 nodes free"),
        "{}",
        why.message
    );
}

#[test]
fn a_gang_larger_than_any_leaf_never_fits_a_hard_leaf() {
    let c = cluster(2, 2, 4);
    let r = job("huge", 8, 8, vec![level("dp", 8, Tier::LEAF, Mode::Hard)]);
    let e = plan(&c, &r, &PlanOptions::default()).unwrap_err();
    assert!(matches!(e, PlanError::NeverFits { .. }), "{e}");
    assert!(e.to_string().contains("can never fit"), "{e}");
    // Pods larger than any node never fit either.
    let e = plan(&c, &job("fat", 1, 16, vec![]), &PlanOptions::default()).unwrap_err();
    assert!(matches!(e, PlanError::NeverFits { .. }), "{e}");
}

#[test]
fn degraded_and_cordoned_nodes_are_never_chosen() {
    let f = UniformFabric {
        spines: 1,
        leaves_per_spine: 2,
        nodes_per_leaf: 4,
        gpus_per_node: 8,
    };
    let mut specs = f.node_specs(&LabelOptions::default());
    specs[0].degraded = true;
    specs[5].unschedulable = true;
    let bad = [specs[0].name.clone(), specs[5].name.clone()];
    let c = Cluster::from_nodes(ClusterOptions::default(), specs);
    let p = plan(&c, &job("all", 6, 8, vec![]), &PlanOptions::default()).unwrap();
    for n in &p.nodes {
        assert!(!bad.contains(&c.node_name(*n).to_owned()));
    }
    let e = plan(&c, &job("seven", 7, 8, vec![]), &PlanOptions::default()).unwrap_err();
    assert!(matches!(e, PlanError::Pending { .. }), "{e}");
}

#[test]
fn planning_is_deterministic() {
    let c = cluster(3, 4, 4);
    let a = plan(&c, &three_d("x"), &PlanOptions::default()).unwrap();
    let b = plan(&c.clone(), &three_d("x"), &PlanOptions::default()).unwrap();
    assert_eq!(a, b);
}

// Issue 19: ten spines where the spine that holds the gang with the smallest spread has the
// most free slots (it ranks 10th by best-fit). Nine spines have 8 free nodes each, scattered
// 3 + 3 + 2 over three leaves (pipeline spread 2 there); the tenth has two leaves of 4 free
// nodes and more room elsewhere (spread 1). The old cut planned only the 8 fullest spines.
#[test]
fn the_domain_the_objective_prefers_is_never_cut() {
    let mut c = cluster(10, 4, 4);
    let busy_per_leaf: [[u32; 4]; 2] = [[1, 1, 2, 4], [0, 0, 0, 0]];
    for id in c.node_ids() {
        let spine: u32 = spine_of(&c, id)[1..].parse().unwrap();
        let leaf = leaf_of(&c, id);
        let (l, n): (usize, u32) = (
            leaf[5..7].parse().unwrap(),
            c.node_name(id)[10..].parse().unwrap(),
        );
        let pattern = usize::from(spine == 9);
        if n < busy_per_leaf[pattern][l] {
            c.set_used(id, 8);
        }
    }
    let r = job(
        "wide",
        8,
        8,
        vec![
            level("dp", 8, Tier::LEAF, Mode::Soft),
            level("pp", 8, Tier::SPINE, Mode::Soft),
        ],
    );
    let p = plan(&c, &r, &PlanOptions::default()).unwrap();
    assert_eq!(p.domain, "spine s09", "{p:?}");
    assert_eq!(p.spread.max, 1, "{p:?}");
    let leaves: std::collections::BTreeSet<String> =
        p.nodes.iter().map(|n| leaf_of(&c, *n)).collect();
    assert_eq!(leaves.len(), 2, "{leaves:?}");
}
