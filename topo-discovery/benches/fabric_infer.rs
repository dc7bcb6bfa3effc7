//! Fabric inference time over synthetic rail-optimised fabrics: 1k, 10k and 100k hosts with 8
//! rails, 32 hosts per leaf group, 16 groups per pod, 8 spines per pod, 16 super-spines.
//!
//! `cargo bench -p topo-discovery --bench fabric_infer`
//!
//! - `ingest`: `FabricBuilder::add_table` over every table (already parsed);
//! - `infer`: `FabricBuilder::infer` on the ingested builder;
//! - `outputs`: node labels and HyperNodes from the inferred fabric.
//!
//! Peak memory is measured by `--bench fabric_memory`.

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use spinel_api::labels::LabelOptions;
use spinel_wire::neighbor::NeighborTable;
use topo_discovery::fabric::synthetic::SyntheticSpec;
use topo_discovery::fabric::{FabricBuilder, InferOptions, labels, volcano};

fn bench(c: &mut Criterion) {
    let options = InferOptions::default();
    let label_options = LabelOptions::default();
    let mut group = c.benchmark_group("fabric");
    group.sample_size(10);
    for hosts in [1_000usize, 10_000, 100_000] {
        let spec = SyntheticSpec::rail_optimized(hosts);
        group.throughput(Throughput::Elements(hosts as u64));

        let tables: Vec<NeighborTable> = spec.tables().collect();
        group.bench_with_input(BenchmarkId::new("ingest", hosts), &tables, |b, tables| {
            b.iter(|| {
                let mut builder = FabricBuilder::new();
                for t in tables {
                    builder.add_table(t);
                }
                builder
            });
        });
        let mut builder = FabricBuilder::new();
        for t in &tables {
            builder.add_table(t);
        }
        drop(tables);

        group.bench_with_input(BenchmarkId::new("infer", hosts), &builder, |b, builder| {
            b.iter_batched(
                || builder.clone(),
                |bl| bl.infer(&options),
                BatchSize::LargeInput,
            );
        });
        let fabric = builder.infer(&options);
        assert!(
            fabric.findings.is_empty(),
            "the synthetic fabric is cabled correctly"
        );

        group.bench_with_input(BenchmarkId::new("outputs", hosts), &fabric, |b, fabric| {
            b.iter(|| {
                (
                    labels::node_labels(fabric, &label_options),
                    volcano::hypernodes(fabric, &label_options),
                )
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
