//! What one change costs the controller, over synthetic rail-optimised fabrics of 1k, 10k and
//! 100k nodes (8 RoCE NICs each, 32 nodes per leaf group; `SyntheticSpec::rail_optimized`):
//! every node's report as its agent publishes it, every switch's table in the switch-table
//! source.
//!
//! - `model`: the baseline on equal work, topo-discovery alone as `spinelctl topo infer` runs
//!   it: build from the same tables, infer, node labels, HyperNodes and the Kueue Topology;
//! - `full`: the controller's recompute (`desired::compute`: inference, every node's status,
//!   HyperNodes, Topology, Events, summary) and its plan against a cluster that already holds
//!   it (no write);
//! - `change`: one node's report changes (its two first cables swapped): take it in, recompute,
//!   plan; the plan is the node's status, the summary and the Events, and nothing else.
//!
//! `cargo bench -p spinel-fabric-controller --bench controller`
//!
//! Memory (peak RSS of the controller's state at one size, in a fresh process):
//! `SPINEL_BENCH_MEMORY=10000 cargo bench -p spinel-fabric-controller --bench controller`

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, HashSet};

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group};
use spinel_api::labels::LabelOptions;
use spinel_fabric_controller::desired::{self, Desired, Settings};
use spinel_fabric_controller::inputs::switches::parse_entry;
use spinel_fabric_controller::inputs::{HostTable, Inputs, NodeReport};
use spinel_fabric_controller::publish::{Observed, Write, plan};
use spinel_wire::neighbor::{NeighborTable, Role};
use topo_discovery::fabric::synthetic::SyntheticSpec;
use topo_discovery::fabric::{RailKey, kueue, labels, volcano};

fn settings() -> Settings {
    Settings {
        labels: LabelOptions::default(),
        topology_name: "spinel-fabric".into(),
    }
}

fn report(spec: &SyntheticSpec, table: &NeighborTable, generation: i64) -> NodeReport {
    let name = &table.observer.name;
    NodeReport {
        uid: format!("uid-{name}"),
        generation,
        nics: (0..spec.rails).map(|k| spec.nic_name(k)).collect(),
        table: HostTable::parse(name, &serde_json::to_value(table).unwrap()),
    }
}

/// Every node's report and every switch's table, as the controller holds them.
fn inputs(spec: &SyntheticSpec) -> Inputs {
    let mut inputs = Inputs::new(RailKey::NicName);
    let mut switches = BTreeMap::new();
    for t in spec.tables() {
        if t.observer.role == Some(Role::Switch) {
            let key = format!("{}.json", t.observer.name);
            switches.insert(
                key.clone(),
                parse_entry(&key, &key, serde_json::to_vec(&t).unwrap()),
            );
        } else {
            let name = t.observer.name.clone();
            inputs.upsert_node(name, report(spec, &t, 1));
        }
    }
    inputs.set_switch_source("configmap", switches);
    inputs
}

/// Node 0's report after a technician swapped its first two cables.
fn swapped(spec: &SyntheticSpec) -> (String, NodeReport) {
    let mut table = spec.host_table(0);
    let (a, b) = table.ports.split_at_mut(1);
    std::mem::swap(&mut a[0].neighbors, &mut b[0].neighbors);
    (table.observer.name.clone(), report(spec, &table, 2))
}

/// What the API server holds once every write of `d` went through.
fn written(d: &Desired) -> (Observed, HashSet<String>) {
    let mut o = Observed::default();
    o.statuses.begin_list();
    o.hypernodes.begin_list();
    o.topologies.begin_list();
    o.fabrics.begin_list();
    for (n, s) in &d.statuses {
        o.statuses.apply(n.clone(), Some(1), Some(s.clone()));
    }
    for (n, h) in d.hypernodes.as_ref().unwrap() {
        o.hypernodes.apply(n.clone(), Some(1), h.clone());
    }
    let t = d.topology.clone().unwrap();
    o.topologies
        .apply(t.metadata.name.clone().unwrap(), Some(1), t);
    o.fabrics
        .apply("default".into(), Some(1), Some(d.fabric.clone()));
    o.statuses.end_list();
    o.hypernodes.end_list();
    o.topologies.end_list();
    o.fabrics.end_list();
    (o, d.events.iter().map(|e| e.name.clone()).collect())
}

/// One change, as the controller's loop handles it: take the report in, recompute, plan.
fn one_change(
    mut inputs: Inputs,
    change: &(String, NodeReport),
    observed: &Observed,
    emitted: &HashSet<String>,
) -> Vec<Write> {
    assert!(inputs.upsert_node(change.0.clone(), change.1.clone()));
    let d = desired::compute(&inputs, &settings());
    plan(&d, observed, "default", emitted)
}

/// The writes one change must cause: node 0's status, the summary and its Events only.
fn check_change(writes: &[Write], node: &str) {
    assert!(
        writes.iter().all(|w| match w {
            Write::NodeStatus(n, _) => n == node,
            Write::FabricStatus(..) | Write::Event(_) => true,
            _ => false,
        }),
        "{writes:?}"
    );
    assert!(
        writes
            .iter()
            .any(|w| matches!(w, Write::NodeStatus(n, _) if n == node)),
        "the changed node's status is written"
    );
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("controller");
    group.sample_size(10);
    let label_options = LabelOptions::default();
    for hosts in [1_000usize, 10_000, 100_000] {
        let spec = SyntheticSpec::rail_optimized(hosts);
        let inputs = inputs(&spec);
        group.bench_with_input(BenchmarkId::new("model", hosts), &inputs, |b, inputs| {
            b.iter(|| {
                let fabric = inputs.builder().0.infer(inputs.options());
                (
                    labels::node_labels(&fabric, &label_options),
                    volcano::hypernodes(&fabric, &label_options),
                    kueue::topology(&fabric, "spinel-fabric", &label_options),
                )
            });
        });
        let before = desired::compute(&inputs, &settings());
        let (observed, emitted) = written(&before);
        group.bench_with_input(BenchmarkId::new("full", hosts), &inputs, |b, inputs| {
            b.iter(|| {
                let d = desired::compute(inputs, &settings());
                let writes = plan(&d, &observed, "default", &emitted);
                assert!(writes.is_empty(), "an unchanged fabric writes nothing");
                d
            });
        });
        let change = swapped(&spec);
        check_change(
            &one_change(inputs.clone(), &change, &observed, &emitted),
            &change.0,
        );
        group.bench_with_input(BenchmarkId::new("change", hosts), &inputs, |b, inputs| {
            b.iter_batched(
                || inputs.clone(),
                |i| one_change(i, &change, &observed, &emitted),
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

/// `VmHWM` and `VmRSS` of this process, in MiB.
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |key: &str| -> f64 {
        let line = status.lines().find(|l| l.starts_with(key)).unwrap();
        let kib: f64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap();
        kib / 1024.0
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// The controller's state at `hosts` nodes: its inputs, the desired state and the observed
/// cluster, after one change; the peak includes building them.
fn measure_memory(hosts: usize) {
    let spec = SyntheticSpec::rail_optimized(hosts);
    let (_, base) = memory();
    let inputs = inputs(&spec);
    let (_, with_inputs) = memory();
    let before = desired::compute(&inputs, &settings());
    let (observed, emitted) = written(&before);
    let change = swapped(&spec);
    let writes = one_change(inputs.clone(), &change, &observed, &emitted);
    check_change(&writes, &change.0);
    let (peak, rss) = memory();
    println!(
        "controller memory at {hosts} nodes: inputs {:.1} MiB, held state {:.1} MiB \
         (inputs, desired, observed), peak RSS {peak:.1} MiB (process at start {base:.1} MiB)",
        with_inputs - base,
        rss - base,
    );
    drop((inputs, before, observed));
}

criterion_group!(benches, bench);

fn main() {
    if let Some(hosts) = std::env::var_os("SPINEL_BENCH_MEMORY") {
        let hosts: usize = hosts
            .to_str()
            .and_then(|h| h.parse().ok())
            .expect("SPINEL_BENCH_MEMORY=<nodes>");
        measure_memory(hosts);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
