//! `sched-scale`: the real kube-scheduler's per-pod scheduling latency on a large cluster, with
//! and without `spinel-scheduler` as its extender.
//!
//! One control plane (`spinel-k8s`: etcd, kube-apiserver, kube-scheduler) holds `--nodes`
//! Node objects labelled as the fabric controller labels a synthetic rail-optimised fabric
//! (8 rails, 32 hosts per leaf group, 16 groups per spine pod, 16 super-spines), 8 GPUs each.
//! kube-scheduler runs the shipped `deploy/scheduler/kube-scheduler-config.yaml`:
//!
//! 1. without its `extenders:` entry: `--pods` pods of 8 GPUs, one at a time, then `--gangs`
//!    gangs of `--gang-size` pods (DP groups of 8 pods, one pod per node), each gang's pods
//!    created at once: kube-scheduler alone, the baseline;
//! 2. restarted on the same cluster with the extender (names only, as shipped), a release
//!    `spinel-scheduler` on loopback with the shipped RBAC and a pod-bound token: the same work
//!    again (same shapes, other names).
//!
//! A pod's latency runs from issuing its create request to a watch on the namespace showing it
//! bound. Also reported: how many DP groups landed in one leaf group under each, the
//! extender's own filter and prioritize times (its histogram), its resident memory, how long
//! it took to load the cluster, and the time to create the nodes.
//!
//! Usage (root, like the rest of the test tier; `tests/k8s/build.sh` first):
//!   SPINEL_SCHEDULER_BIN=target/release/spinel-scheduler \
//!     target/release/sched-scale [--nodes 10000] [--pods 200] [--gangs 8] [--gang-size 16]

// A benchmark harness fails loudly on setup errors.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use spinel_netns_tests::Sandbox;
use spinel_netns_tests::k8s::{ControlPlane, ControlPlaneOptions};
use spinel_netns_tests::sched::latency::{Bound, median, schedule, summary, watch_bindings};
use spinel_netns_tests::sched::objects::{
    apply_manifest, create_ready_nodes, fabric_labels, gpu_node, gpu_pod, namespace,
};
use spinel_netns_tests::sched::{
    Extender, deploy_file, free_port, kube_scheduler_config, scheduler_token,
    write_token_kubeconfig,
};
use tokio::sync::mpsc;
use topo_discovery::fabric::synthetic::SyntheticSpec;

struct Options {
    nodes: usize,
    pods: usize,
    gangs: usize,
    gang_size: usize,
}

/// The flags after the program name.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        nodes: 10_000,
        pods: 200,
        gangs: 8,
        gang_size: 16,
    };
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or(format!("{flag} needs a value"))?
            .parse::<usize>()
            .map_err(|e| format!("{flag}: {e}"))?;
        match flag.as_str() {
            "--nodes" => o.nodes = value,
            "--pods" => o.pods = value,
            "--gangs" => o.gangs = value,
            "--gang-size" => o.gang_size = value,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if o.nodes == 0 || o.pods == 0 {
        return Err("--nodes and --pods must be at least 1".to_owned());
    }
    // Gang pods hold a whole node each (8 GPUs) in DP groups of 8 pods, so a gang is whole
    // DP groups; every pod of the run must find a node of its own.
    if o.gang_size == 0 || !o.gang_size.is_multiple_of(8) {
        return Err(format!(
            "--gang-size {} is not a positive multiple of 8 (the DP group, in pods)",
            o.gang_size
        ));
    }
    // Both phases run the same work (plus one warm-up pod each) and nothing is deleted.
    let needed = 2 * (o.pods + 1 + o.gangs * o.gang_size);
    if needed > o.nodes {
        return Err(format!(
            "{needed} pods of 8 GPUs need as many nodes, but --nodes is {}",
            o.nodes
        ));
    }
    Ok(o)
}

fn plain(prefix: &str, i: usize) -> Pod {
    gpu_pod(&format!("{prefix}-{i}"), 8, None, &[])
}

/// A gang of `size` 8-GPU pods: TP 8 inside each pod, DP groups (pipeline stages) of 8 pods
/// hard within a leaf group, `size / 8` stages soft within a spine. `pp` must be given: unset,
/// it is 1 and `tp × dp` would not cover the gang's ranks.
fn gang(prefix: &str, g: usize, size: usize) -> Vec<Pod> {
    let size_u32 = u32::try_from(size).unwrap();
    let pp = (size / 8).to_string();
    (0..size)
        .map(|i| {
            let index = i.to_string();
            gpu_pod(
                &format!("{prefix}-gang{g}-{i}"),
                8,
                Some((&format!("{prefix}-gang{g}"), size_u32)),
                &[
                    ("sched.spinel.dev/tp", "8"),
                    ("sched.spinel.dev/dp", "8"),
                    ("sched.spinel.dev/pp", &pp),
                    ("batch.kubernetes.io/job-completion-index", &index),
                ],
            )
        })
        .collect()
}

async fn one_at_a_time(
    client: &kube::Client,
    bound: &mut mpsc::UnboundedReceiver<Bound>,
    prefix: &str,
    n: usize,
) -> Vec<Duration> {
    // A first pod warms kube-scheduler's cache and the extender's connection; not counted.
    schedule(
        client,
        "scale",
        bound,
        vec![plain(&format!("{prefix}-warm"), 0)],
    )
    .await;
    let mut all = Vec::new();
    for i in 0..n {
        let done = schedule(client, "scale", bound, vec![plain(prefix, i)]).await;
        all.extend(done.into_iter().map(|(_, _, latency)| latency));
    }
    all
}

/// What one kube-scheduler configuration did with the same work.
struct Phase {
    plain: Vec<Duration>,
    gang_pods: Vec<Duration>,
    gangs: Vec<Duration>,
    /// DP groups (8 consecutive pods of a gang) whose nodes share one leaf group.
    dp_in_one_leaf: usize,
    dp_groups: usize,
}

/// `pods` plain pods one at a time, then the gangs one after the other, each created at once;
/// names start with `prefix` so the phases never share an object.
/// `leaf_of` maps a node to its leaf group (tier-1 label).
async fn phase(
    client: &kube::Client,
    prefix: &str,
    o: &Options,
    leaf_of: &HashMap<String, String>,
) -> Phase {
    let mut bound = watch_bindings(client.clone(), "scale");
    let plain = one_at_a_time(client, &mut bound, prefix, o.pods).await;
    let mut p = Phase {
        plain,
        gang_pods: Vec::new(),
        gangs: Vec::new(),
        dp_in_one_leaf: 0,
        dp_groups: 0,
    };
    for g in 0..o.gangs {
        let t = Instant::now();
        let done = schedule(client, "scale", &mut bound, gang(prefix, g, o.gang_size)).await;
        p.gangs.push(t.elapsed());
        // Pod i of the gang asked for rank i (its completion index): DP group i / 8.
        let mut leaves: HashMap<usize, HashSet<&str>> = HashMap::new();
        for (i, node, latency) in &done {
            p.gang_pods.push(*latency);
            let leaf = leaf_of.get(node).map_or("?", String::as_str);
            leaves.entry(i / 8).or_default().insert(leaf);
        }
        p.dp_groups += leaves.len();
        p.dp_in_one_leaf += leaves.values().filter(|l| l.len() == 1).count();
    }
    p
}

/// p50 and p99 of a Prometheus histogram, as the upper edge of the bucket they fall in.
fn histogram_quantiles(text: &str, verb: &str) -> Option<(f64, f64, u64)> {
    let prefix = "spinel_scheduler_request_duration_seconds_bucket{le=\"";
    let suffix = format!("\",verb=\"{verb}\"}}");
    let buckets: Vec<(f64, u64)> = text
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(prefix)?;
            let (le, count) = rest.split_once(&suffix)?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, count.trim().parse().ok()?))
        })
        .collect();
    let total = buckets.last()?.1;
    let q = |q: f64| {
        let want = (total as f64 * q).ceil() as u64;
        buckets.iter().find(|(_, c)| *c >= want).map(|(le, _)| *le)
    };
    Some((q(0.5)?, q(0.99)?, total))
}

fn report(o: &Options, without: Phase, with: Phase) {
    let (alone, ours) = (median(&without.gangs), median(&with.gangs));
    let mean = |v: &[Duration]| v.iter().sum::<Duration>().as_secs_f64() / v.len().max(1) as f64;
    println!(
        "\nwhole {}-pod gang, with the extender over kube-scheduler alone: {:.2}x the median \
         ({:.1} ms vs {:.1} ms), {:.2}x the mean",
        o.gang_size,
        ours.as_secs_f64() / alone.as_secs_f64().max(f64::MIN_POSITIVE),
        ours.as_secs_f64() * 1e3,
        alone.as_secs_f64() * 1e3,
        mean(&with.gangs) / mean(&without.gangs).max(f64::MIN_POSITIVE)
    );
    println!(
        "\n| kube-scheduler | pods | p50 | p99 | mean | max |\n|---|---:|---:|---:|---:|---:|"
    );
    let g = o.gang_size;
    for (name, p) in [
        ("without the extender", without),
        ("with spinel-scheduler", with),
    ] {
        summary(&format!("{name}, 8-GPU pod outside gangs"), p.plain);
        summary(&format!("{name}, pod of a {g}-pod gang"), p.gang_pods);
        summary(
            &format!("{name}, whole {g}-pod gang (create to last bound)"),
            p.gangs,
        );
        println!(
            "| {name}: DP groups of 8 pods in one leaf group | {} of {} | | | | |",
            p.dp_in_one_leaf, p.dp_groups
        );
    }
}

fn rss_mib(pid_of: &Extender) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid_of.pid())).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn main() -> ExitCode {
    let o = match parse_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "sched-scale: {e}\nusage: sched-scale [--nodes N] [--pods N] [--gangs N] [--gang-size N]"
            );
            return ExitCode::from(2);
        }
    };
    assert!(
        std::env::var_os("SPINEL_SCHEDULER_BIN").is_some(),
        "set SPINEL_SCHEDULER_BIN to a release build: cargo build --release -p spinel-scheduler"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let config_without = kube_scheduler_config("http://127.0.0.1:1/", |cfg| {
        cfg.as_object_mut().unwrap().remove("extenders");
    });
    let mut cp = ControlPlane::start(
        ControlPlaneOptions::new("sched-scale")
            .scheduler(&config_without)
            .ready_timeout(Duration::from_secs(300)),
    );
    let sandbox = Sandbox::new("sched-scale-ext");
    let labelled = fabric_labels(SyntheticSpec::rail_optimized(o.nodes));
    let (token, created) = runtime.block_on(async {
        let admin = cp.admin_client().await;
        for file in ["../namespace.yaml", "rbac.yaml", "admission-policy.yaml"] {
            apply_manifest(&admin, &deploy_file(file)).await;
        }
        let token = scheduler_token(&admin, "spinel-scheduler-0").await;
        let nodes: Vec<Node> = labelled.iter().map(|(n, l)| gpu_node(n, l, 8)).collect();
        let t0 = Instant::now();
        create_ready_nodes(&admin, nodes, 32).await;
        (token, t0.elapsed())
    });
    println!(
        "{} nodes created and made Ready in {:.1} s",
        labelled.len(),
        created.as_secs_f64()
    );
    let leaf_key = format!("{}tier-1", spinel_api::labels::DEFAULT_PREFIX);
    let leaf_of: HashMap<String, String> = labelled
        .iter()
        .filter_map(|(n, l)| Some((n.clone(), l.get(&leaf_key)?.clone())))
        .collect();
    let without = runtime.block_on(async {
        let admin = cp.admin_client().await;
        namespace(&admin, "scale").await;
        phase(&admin, "a", &o, &leaf_of).await
    });

    // The same cluster, kube-scheduler restarted with the extender.
    let port = free_port();
    let config_with = kube_scheduler_config(&format!("http://127.0.0.1:{port}/"), |_| {});
    cp.terminate();
    cp.set_scheduler(&config_with);
    cp.start_again();
    let kubeconfig = sandbox.dir().join("scheduler.kubeconfig");
    write_token_kubeconfig(&kubeconfig, cp.server(), cp.ca_file(), &token);
    let t0 = Instant::now();
    let ext = Extender::spawn_on(
        &sandbox,
        &kubeconfig,
        "spinel-scheduler-0",
        port,
        &["--reservation-timeout=300".to_owned()],
    );
    ext.wait_for("/readyz", Duration::from_secs(300));
    let loaded = t0.elapsed();
    let with = runtime.block_on(async {
        let admin = cp.admin_client().await;
        phase(&admin, "b", &o, &leaf_of).await
    });

    println!(
        "\nspinel-scheduler ready (watches listed {} nodes) {:.1} s after start; RSS {:.1} MiB",
        labelled.len(),
        loaded.as_secs_f64(),
        rss_mib(&ext).unwrap_or(f64::NAN)
    );
    report(&o, without, with);
    if let Some((_, text)) = ext.get("/metrics") {
        println!(
            "\n| extender verb (server side) | requests | p50 ≤ | p99 ≤ |\n|---|---:|---:|---:|"
        );
        for verb in ["filter", "prioritize"] {
            if let Some((p50, p99, n)) = histogram_quantiles(&text, verb) {
                println!(
                    "| {verb} | {n} | {:.1} ms | {:.1} ms |",
                    p50 * 1e3,
                    p99 * 1e3
                );
            }
        }
    }
    println!(
        "\nload average at the end: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<Options, String> {
        parse_args(args.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn flags_are_read_and_bad_ones_refused_with_the_reason() {
        let o = parse("--nodes 1000 --pods 10 --gangs 2 --gang-size 24").unwrap();
        assert_eq!((o.nodes, o.pods, o.gangs, o.gang_size), (1000, 10, 2, 24));
        assert_eq!(
            parse("--gang-size 12").err().unwrap(),
            "--gang-size 12 is not a positive multiple of 8 (the DP group, in pods)"
        );
        assert_eq!(parse("--pods").err().unwrap(), "--pods needs a value");
        assert!(
            parse("--pods x")
                .err()
                .unwrap()
                .starts_with("--pods: invalid digit")
        );
        assert_eq!(parse("--nodez 5").err().unwrap(), "unknown flag --nodez");
        assert_eq!(
            parse("--pods 0").err().unwrap(),
            "--nodes and --pods must be at least 1"
        );
        // 2 × (200 + 1 + 8 × 16) = 658 pods, one node each.
        assert_eq!(
            parse("--nodes 657").err().unwrap(),
            "658 pods of 8 GPUs need as many nodes, but --nodes is 657"
        );
        assert!(parse("--nodes 658").is_ok());
    }

    #[test]
    fn quantiles_are_the_bucket_bounds_they_fall_in() {
        let b = "spinel_scheduler_request_duration_seconds_bucket";
        let text = format!(
            "{b}{{le=\"0.001\",verb=\"filter\"}} 50\n\
             {b}{{le=\"0.005\",verb=\"filter\"}} 98\n\
             {b}{{le=\"0.01\",verb=\"filter\"}} 100\n\
             {b}{{le=\"+Inf\",verb=\"filter\"}} 100\n\
             {b}{{le=\"0.001\",verb=\"prioritize\"}} 0\n\
             {b}{{le=\"+Inf\",verb=\"prioritize\"}} 4\n"
        );
        assert_eq!(
            histogram_quantiles(&text, "filter"),
            Some((0.001, 0.01, 100))
        );
        assert_eq!(
            histogram_quantiles(&text, "prioritize"),
            Some((f64::INFINITY, f64::INFINITY, 4))
        );
        assert_eq!(histogram_quantiles(&text, "bind"), None);
    }
}
