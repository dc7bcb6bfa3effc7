//! Planning time: a 1,024-pod gang on 10,240 nodes, and the incremental cluster update.
//!
//! `cargo bench -p spinel-placement --bench plan`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use spinel_api::labels::LabelOptions;
use spinel_placement::sim::uniform::UniformFabric;
use spinel_placement::{
    Cluster, ClusterOptions, Dialect, GangId, GangRequest, Level, Mode, PlanOptions, Tier, plan,
};

fn cluster() -> Cluster {
    // 20 spines x 16 leaves x 32 nodes = 10,240 nodes of 8 GPUs.
    let f = UniformFabric {
        spines: 20,
        leaves_per_spine: 16,
        nodes_per_leaf: 32,
        gpus_per_node: 8,
    };
    let mut specs = f.node_specs(&LabelOptions::default());
    // A used cluster: every third node busy, so candidates differ.
    for (i, s) in specs.iter_mut().enumerate() {
        if i % 3 == 0 {
            s.used = 8;
        }
    }
    Cluster::from_nodes(ClusterOptions::default(), specs)
}

fn gang(size: u32, dp: u32) -> GangRequest {
    GangRequest::new(
        GangId {
            namespace: "bench".to_owned(),
            name: "g".to_owned(),
        },
        size,
        8,
        "nvidia.com/gpu",
        vec![
            Level {
                name: "dp".to_owned(),
                pods: dp,
                tier: Tier::LEAF,
                mode: Mode::Hard,
            },
            Level {
                name: "pp".to_owned(),
                pods: size,
                tier: Tier::SPINE,
                mode: Mode::Soft,
            },
        ],
        Dialect::Native,
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let cl = cluster();
    let big = gang(1024, 16);
    let p = plan(&cl, &big, &PlanOptions::default()).unwrap();
    eprintln!(
        "1024-pod gang: domain {}, max spread {}, total spread {}, fallbacks {:?}",
        p.domain,
        p.spread.max,
        p.spread.total,
        p.fallbacks.iter().map(|f| &f.level).collect::<Vec<_>>()
    );
    c.bench_function("plan 1024-pod gang on 10240 nodes", |b| {
        b.iter(|| plan(&cl, &big, &PlanOptions::default()).unwrap())
    });
    let small = gang(64, 8);
    c.bench_function("plan 64-pod gang on 10240 nodes", |b| {
        b.iter(|| plan(&cl, &small, &PlanOptions::default()).unwrap())
    });
    let mut m = cl.clone();
    let id = m.node_id("n-s05-l03-007").unwrap();
    c.bench_function("node usage update on 10240 nodes", |b| {
        b.iter(|| {
            m.add_used(id, 1);
            m.sub_used(id, 1);
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
