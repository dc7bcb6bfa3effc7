//! Peak memory of fabric inference over synthetic rail-optimised fabrics (8 rails).
//!
//! `cargo bench -p topo-discovery --bench fabric_memory [-- HOSTS...]` (default 1000 10000
//! 100000). Each size runs in a fresh child process, so the kernel's high-water mark (VmHWM in
//! /proc/self/status) belongs to that size alone. Two ways of feeding tables are measured:
//! streaming (each table generated, added, dropped: what `spinelctl topo infer` does file by
//! file) and materialised (every table in memory first, as the criterion benchmark holds them).
//! Times here are single runs for orientation; `--bench fabric_infer` is the timing benchmark.

use std::process::Command;
use std::time::Instant;

use spinel_api::labels::LabelOptions;
use spinel_wire::neighbor::NeighborTable;
use topo_discovery::fabric::synthetic::SyntheticSpec;
use topo_discovery::fabric::{FabricBuilder, InferOptions, labels, volcano};

const CHILD_ENV: &str = "SPINEL_FABRIC_MEMORY_CHILD";

/// Reads a `/proc/self/status` field in KiB.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn child(mode: &str, hosts: usize) {
    let spec = SyntheticSpec::rail_optimized(hosts);
    let base = status_kib("VmHWM:");
    let mut builder = FabricBuilder::new();
    let mut neighbours = 0usize;
    let tables_kib;
    // Only add_table is timed: generating the synthetic tables is not part of inference.
    let mut ingest = std::time::Duration::ZERO;
    if mode == "stream" {
        for t in spec.tables() {
            neighbours += t.ports.iter().map(|p| p.neighbors.len()).sum::<usize>();
            let start = Instant::now();
            builder.add_table(&t);
            ingest += start.elapsed();
        }
        tables_kib = 0;
    } else {
        let tables: Vec<NeighborTable> = spec.tables().collect();
        tables_kib = status_kib("VmHWM:");
        let start = Instant::now();
        for t in &tables {
            builder.add_table(t);
        }
        ingest = start.elapsed();
        neighbours = tables
            .iter()
            .flat_map(|t| &t.ports)
            .map(|p| p.neighbors.len())
            .sum();
        drop(tables);
    }
    let after_ingest = status_kib("VmHWM:");
    let start = Instant::now();
    let fabric = builder.infer(&InferOptions::default());
    let infer = start.elapsed();
    let after_infer = status_kib("VmHWM:");
    let start = Instant::now();
    let opts = LabelOptions::default();
    let n_labels = labels::node_labels(&fabric, &opts).len();
    let n_hn = volcano::hypernodes(&fabric, &opts).len();
    let outputs = start.elapsed();
    let peak = status_kib("VmHWM:");
    assert!(fabric.findings.is_empty() && n_labels == hosts && n_hn > 0);
    println!(
        "{mode}\t{hosts}\t{neighbours}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.0}\t{:.0}\t{:.0}",
        mib(base),
        mib(tables_kib),
        mib(after_ingest),
        mib(after_infer),
        mib(peak),
        ingest.as_secs_f64() * 1e3,
        infer.as_secs_f64() * 1e3,
        outputs.as_secs_f64() * 1e3,
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let Ok(mode) = std::env::var(CHILD_ENV) {
        let hosts = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
        child(&mode, hosts);
        return;
    }
    let sizes: Vec<usize> = if args.is_empty() {
        vec![1_000, 10_000, 100_000]
    } else {
        args.iter().filter_map(|a| a.parse().ok()).collect()
    };
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    println!(
        "mode\thosts\tneighbours\tstart_MiB\ttables_MiB\tingest_MiB\tinfer_MiB\tpeak_MiB\tingest_ms\tinfer_ms\toutputs_ms"
    );
    for mode in ["stream", "materialised"] {
        for &hosts in &sizes {
            let out = Command::new(&exe)
                .env(CHILD_ENV, mode)
                .arg(hosts.to_string())
                .output()
                .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()));
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            print!("{}", String::from_utf8_lossy(&out.stdout));
        }
    }
}
