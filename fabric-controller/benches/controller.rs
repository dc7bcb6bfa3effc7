//! What one change costs the controller, over synthetic rail-optimised fabrics of 1k, 10k and
//! 100k nodes (8 RoCE NICs each, 32 nodes per leaf group; `SyntheticSpec::rail_optimized`):
//! every node's report as its agent publishes it, every switch's table in the switch-table
//! source.
//!
//! - `model`: the baseline on equal work, topo-discovery alone as `spinelctl topo infer` runs
//!   it: build from the same tables, infer, node labels, HyperNodes and the Kueue Topology;
//! - `full`: the whole recompute (`desired::compute`: a model from nothing, every node's status,
//!   HyperNodes, Topology, Events, summary) and its plan against a cluster that already holds
//!   it (no write);
//! - `change/full`: one node's report changes (its two first cables swapped, or back): parse it,
//!   take it in, recompute everything, plan everything;
//! - `change`: the same change as the controller handles it now: parse the report, take it into
//!   the live model, bring the touched statuses and HyperNodes up to date, plan from them. The
//!   plan is the node's status, the summary and the Events, and nothing else (asserted);
//! - `leaf-reboot` (with `SPINEL_BENCH_REBOOT=1`): one leaf's 32 nodes lose that leaf and its
//!   table goes, then all comes back: both batches, from arrival to the plan.
//!
//! `cargo bench -p spinel-fabric-controller --bench controller`
//!
//! Memory (peak RSS of the controller's state at one size, in a fresh process):
//! `SPINEL_BENCH_MEMORY=10000 cargo bench -p spinel-fabric-controller --bench controller`

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, HashSet};

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use spinel_api::crd::{NicReport, NodeFabric, NodeFabricSpec};
use spinel_api::labels::LabelOptions;
use spinel_fabric_controller::desired::{self, Desired, Model, Settings};
use spinel_fabric_controller::inputs::switches::parse_entry;
use spinel_fabric_controller::inputs::{HostTable, Inputs, NodeReport};
use spinel_fabric_controller::publish::{Observed, Write, plan, plan_changes};
use spinel_wire::neighbor::{NeighborTable, Role};
use topo_discovery::fabric::live::LiveFabric;
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

/// The `NodeFabric` object an agent publishes for `table`, at `generation`.
fn object(spec: &SyntheticSpec, table: &NeighborTable, generation: i64) -> NodeFabric {
    let name = table.observer.name.clone();
    let mut nf = NodeFabric::new(
        &name,
        NodeFabricSpec {
            node_name: name.clone(),
            agent_version: "bench".into(),
            nics: (0..spec.rails)
                .map(|k| NicReport {
                    name: spec.nic_name(k),
                    mtu: 9000,
                    carrier: true,
                    ..NicReport::default()
                })
                .collect(),
            lldp: serde_json::to_value(table).unwrap(),
            lldp_frames_ignored: 0,
            health: Vec::new(),
        },
    );
    nf.metadata = ObjectMeta {
        name: Some(name.clone()),
        uid: Some(format!("uid-{name}")),
        generation: Some(generation),
        ..ObjectMeta::default()
    };
    nf
}

/// Node 0's objects: its first two cables swapped, and as cabled.
fn swap_objects(spec: &SyntheticSpec) -> [NodeFabric; 2] {
    let mut table = spec.host_table(0);
    let (a, b) = table.ports.split_at_mut(1);
    std::mem::swap(&mut a[0].neighbors, &mut b[0].neighbors);
    [
        object(spec, &table, 2),
        object(spec, &spec.host_table(0), 3),
    ]
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

/// One change, as the controller's loop handled it before the live model: take the report
/// in, recompute everything, plan everything.
fn one_change(
    mut inputs: Inputs,
    nf: &NodeFabric,
    observed: &Observed,
    emitted: &HashSet<String>,
) -> Vec<Write> {
    let (name, report) = NodeReport::from_object(nf).unwrap();
    assert!(inputs.upsert_node(name, report));
    let d = desired::compute(&inputs, &settings());
    plan(&d, observed, "default", emitted)
}

/// The controller's state at rest: inputs, the live model over them, and what the server
/// holds once the model's first desired state was written.
struct Live {
    inputs: Inputs,
    model: Model,
    observed: Observed,
    emitted: HashSet<String>,
}

fn live(mut inputs: Inputs) -> Live {
    let mut model = Model::new(&inputs);
    assert!(model.update(&mut inputs, &settings()).is_none());
    let (observed, emitted) = written(model.desired().unwrap());
    Live {
        inputs,
        model,
        observed,
        emitted,
    }
}

/// Changes as the controller handles them now: parse the objects, take them into the live
/// model, plan from what it touched.
fn live_change(l: &mut Live, objects: &[NodeFabric]) -> Vec<Write> {
    for nf in objects {
        let (name, report) = NodeReport::from_object(nf).unwrap();
        l.inputs.upsert_node(name, report);
    }
    let dirty = l.model.update(&mut l.inputs, &settings());
    let d = l.model.desired().unwrap();
    plan_changes(d, &l.observed, "default", &l.emitted, dirty.as_ref())
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
        let mut reference = LiveFabric::new(RailKey::NicName);
        reference.apply(inputs.all_changes());
        let options = reference.options();
        group.bench_with_input(BenchmarkId::new("model", hosts), &reference, |b, r| {
            b.iter(|| {
                let fabric = r.builder().0.infer(&options);
                (
                    labels::node_labels(&fabric, &label_options),
                    volcano::hypernodes(&fabric, &label_options),
                    kueue::topology(&fabric, "spinel-fabric", &label_options),
                )
            });
        });
        drop(reference);
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
        let [swap, back] = swap_objects(&spec);
        let node = spec.host_name(0);
        check_change(
            &one_change(inputs.clone(), &swap, &observed, &emitted),
            &node,
        );
        group.bench_with_input(
            BenchmarkId::new("change/full", hosts),
            &inputs,
            |b, inputs| {
                b.iter_batched(
                    || inputs.clone(),
                    |i| one_change(i, &swap, &observed, &emitted),
                    BatchSize::LargeInput,
                );
            },
        );
        drop((observed, emitted, before));
        let mut l = live(inputs.clone());
        check_change(&live_change(&mut l, std::slice::from_ref(&swap)), &node);
        check_change(&live_change(&mut l, std::slice::from_ref(&back)), &node);
        let mut generation = 4;
        group.bench_function(BenchmarkId::new("change", hosts), |b| {
            b.iter_batched(
                || {
                    // Swap, or swap back: one node's change each time, a new generation.
                    let mut nf = if generation % 2 == 0 {
                        swap.clone()
                    } else {
                        back.clone()
                    };
                    nf.metadata.generation = Some(generation);
                    generation += 1;
                    nf
                },
                |nf| live_change(&mut l, std::slice::from_ref(&nf)),
                BatchSize::SmallInput,
            );
        });
        let (fast, full) = l.model.stats();
        assert!(
            full <= 1,
            "every change took the host-local path ({fast} fast, {full} full)"
        );
        if std::env::var_os("SPINEL_BENCH_REBOOT").is_some() {
            bench_reboot(&mut group, &spec, &inputs, hosts);
        }
    }
    group.finish();
}

/// One leaf reboots: its 32 nodes' reports lose it and its table goes, then all comes back.
fn bench_reboot(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    spec: &SyntheticSpec,
    inputs: &Inputs,
    hosts: usize,
) {
    let leaf = 0usize;
    let key = format!("{}.json", spec.leaf_name(leaf));
    let down: Vec<NodeFabric> = (0..spec.hosts_per_group)
        .map(|h| {
            let mut t = spec.host_table(h);
            t.ports[leaf % spec.rails].neighbors.clear();
            object(spec, &t, 10)
        })
        .collect();
    let up: Vec<NodeFabric> = (0..spec.hosts_per_group)
        .map(|h| object(spec, &spec.host_table(h), 11))
        .collect();
    let leaf_entry = parse_entry(
        &key,
        &key,
        serde_json::to_vec(&spec.leaf_table(leaf)).unwrap(),
    );
    let mut l = live(inputs.clone());
    let mut generation = 12;
    group.bench_function(BenchmarkId::new("leaf-reboot", hosts), |b| {
        b.iter_batched(
            || generation,
            |g| {
                let mut entries: BTreeMap<String, _> = l
                    .inputs
                    .switch_entries()
                    .map(|(k, e)| (k.clone(), e.clone()))
                    .collect();
                let back = entries.clone();
                entries.remove(&key);
                l.inputs.set_switch_source("configmap", entries);
                let mut d = down.clone();
                d.iter_mut().for_each(|o| o.metadata.generation = Some(g));
                let w1 = live_change(&mut l, &d);
                l.inputs.set_switch_source("configmap", back);
                let mut u = up.clone();
                u.iter_mut()
                    .for_each(|o| o.metadata.generation = Some(g + 1));
                let w2 = live_change(&mut l, &u);
                (w1, w2)
            },
            BatchSize::SmallInput,
        );
        generation += 2;
    });
    let _ = &leaf_entry;
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
    let mut l = live(inputs);
    let [swap, _] = swap_objects(&spec);
    let writes = live_change(&mut l, std::slice::from_ref(&swap));
    check_change(&writes, &spec.host_name(0));
    let (peak, rss) = memory();
    println!(
        "controller memory at {hosts} nodes: inputs {:.1} MiB, held state {:.1} MiB \
         (inputs, live model, desired, observed), peak RSS {peak:.1} MiB (process at start \
         {base:.1} MiB)",
        with_inputs - base,
        rss - base,
    );
    drop(l);
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
