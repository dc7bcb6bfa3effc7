//! `spinelctl sched ...`: the placement simulator and the hostfile of a placed gang.
//!
//! The simulator's cluster comes from a fabric (the synthetic generator or neighbour-table
//! files, through `topo_discovery`), labelled exactly as the fabric agent labels nodes; the
//! trace, the policies and the metrics live in `spinel_placement::sim`.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::Value;
use spinel_api::labels::LabelOptions;
use spinel_api::scheduling as keys;
use spinel_placement::sim::policy::{Optimal, Policy, Spinel, TierBoundedBestFit, TopologyUnaware};
use spinel_placement::sim::trace::{TraceSpec, generate};
use spinel_placement::sim::uniform::UniformFabric;
use spinel_placement::sim::{self, Audited};
use spinel_placement::{Cluster, ClusterOptions, NodeSpec, publish};
use topo_discovery::fabric::synthetic::SyntheticSpec;
use topo_discovery::fabric::{FabricBuilder, InferOptions, labels};

/// Scheduling commands.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Simulate a job trace on a fabric under several placement policies, side by side.
    Simulate(SimulateArgs),
    /// Print the hostfile of a placed gang from its pods (`kubectl get pods -o json`).
    #[command(after_help = "\
Example: kubectl get pods -n ml -l sched.spinel.dev/gang=llama -o json | spinelctl sched \
hostfile llama -")]
    Hostfile(HostfileArgs),
}

/// Arguments of `sched simulate`.
#[derive(clap::Args)]
pub struct SimulateArgs {
    /// A uniform fabric: SPINES,LEAVES_PER_SPINE,NODES_PER_LEAF.
    #[arg(long, value_name = "S,L,N", conflicts_with_all = ["hosts", "tables"])]
    uniform: Option<String>,
    /// A synthetic rail-optimised fabric of this many hosts (8 rails, 32 hosts per leaf group,
    /// 16 groups per spine pod).
    #[arg(long, value_name = "HOSTS", conflicts_with = "tables")]
    hosts: Option<usize>,
    /// Neighbour-table files or directories (as `spinelctl topo infer` reads them).
    #[arg(long, value_name = "FILE", num_args = 1..)]
    tables: Vec<String>,
    /// GPUs per node.
    #[arg(long, default_value_t = 8)]
    gpus_per_node: u32,
    /// Jobs in the trace.
    #[arg(long, default_value_t = 300)]
    jobs: u32,
    /// Trace seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Offered load (fraction of the cluster's GPUs).
    #[arg(long, default_value_t = 0.9)]
    load: f64,
    /// Largest job in pods (one pod per node).
    #[arg(long, default_value_t = 64)]
    max_pods: u32,
    /// Shortest job (s).
    #[arg(long, default_value_t = 600.0)]
    min_duration: f64,
    /// Longest job (s).
    #[arg(long, default_value_t = 28_800.0)]
    max_duration: f64,
    /// Also run the per-job optimum as a policy and audit Spinel against it (small fabrics).
    #[arg(long)]
    optimal: bool,
    /// Write the utilisation/spread chart here.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Print every job's result as JSON lines after the table.
    #[arg(long)]
    per_job: bool,
}

/// Arguments of `sched hostfile`.
#[derive(clap::Args)]
pub struct HostfileArgs {
    /// Gang name.
    gang: String,
    /// Pod list JSON (`kubectl get pods -o json`); `-` for stdin.
    #[arg(default_value = "-")]
    pods: String,
    /// `mpi` (`host slots=N`) or `torchrun` (`NODE_RANK HOST`).
    #[arg(long, default_value = "mpi")]
    format: String,
    /// MPI slots per pod (processes per pod).
    #[arg(long, default_value_t = 1)]
    slots: u32,
}

/// Runs a scheduling command.
pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Simulate(args) => simulate(&args),
        Command::Hostfile(args) => hostfile(&args),
    }
}

fn node_specs(args: &SimulateArgs) -> anyhow::Result<(Vec<NodeSpec>, u32)> {
    let options = LabelOptions::default();
    if let Some(shape) = &args.uniform {
        let n: Vec<u32> = shape
            .split(',')
            .map(|x| x.trim().parse::<u32>())
            .collect::<Result<_, _>>()
            .with_context(|| format!("--uniform {shape}: expected S,L,N"))?;
        let [spines, leaves, nodes] = n[..] else {
            bail!("--uniform {shape}: expected three numbers S,L,N");
        };
        let f = UniformFabric {
            spines,
            leaves_per_spine: leaves,
            nodes_per_leaf: nodes,
            gpus_per_node: args.gpus_per_node,
        };
        return Ok((f.node_specs(&options), nodes));
    }
    let mut builder = FabricBuilder::new();
    if let Some(hosts) = args.hosts {
        let spec = SyntheticSpec {
            super_spines: 0,
            ..SyntheticSpec::rail_optimized(hosts)
        };
        for t in spec.tables() {
            builder.add_table(&t);
        }
    } else if !args.tables.is_empty() {
        // The same reading `topo infer` does (file names as observers, stray files skipped).
        for warning in crate::topo::inputs::load(&args.tables, &mut builder, 2)? {
            eprintln!("spinelctl: {warning}");
        }
    } else {
        bail!("choose a fabric: --uniform S,L,N, --hosts N or --tables FILE...");
    }
    let fabric = builder.infer(&InferOptions::default());
    let labelled = labels::node_labels(&fabric, &options);
    let mut per_leaf = std::collections::BTreeMap::<String, u32>::new();
    let leaf_key = options.tier_key(1);
    let specs: Vec<NodeSpec> = labelled
        .into_iter()
        .map(|n| {
            if let Some(l) = n.labels.get(&leaf_key) {
                *per_leaf.entry(l.clone()).or_default() += 1;
            }
            NodeSpec {
                name: n.node,
                labels: n.labels,
                allocatable: args.gpus_per_node,
                used: 0,
                degraded: false,
                unschedulable: false,
            }
        })
        .collect();
    let largest_leaf = per_leaf.values().copied().max().unwrap_or(1);
    Ok((specs, largest_leaf))
}

fn simulate(args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    let (specs, nodes_per_leaf) = node_specs(args)?;
    if specs.is_empty() {
        bail!("the fabric has no hosts");
    }
    let node_count = specs.len();
    let options = ClusterOptions::default();
    let cluster = Cluster::from_nodes(options, specs);
    let spec = TraceSpec {
        seed: args.seed,
        jobs: args.jobs,
        max_pods: args.max_pods,
        gpus_per_pod: args.gpus_per_node,
        nodes_per_leaf,
        load: args.load,
        cluster_gpus: node_count as u64 * u64::from(args.gpus_per_node),
        min_duration_s: args.min_duration,
        max_duration_s: args.max_duration,
    };
    let jobs = generate(&spec);
    let mut policies: Vec<Box<dyn Policy>> = vec![
        Box::new(TopologyUnaware),
        Box::new(TierBoundedBestFit),
        Box::new(Spinel::default()),
    ];
    if args.optimal {
        policies.push(Box::new(Optimal));
    }
    let runs = sim::compare(&cluster, &jobs, &mut policies);
    println!(
        "{} nodes, {} leaves, {} GPUs; {} jobs (seed {}, load {}, up to {} pods)\n",
        node_count,
        cluster.domains_at(1).len(),
        spec.cluster_gpus,
        args.jobs,
        args.seed,
        args.load,
        args.max_pods
    );
    print!("{}", sim::table(&runs));
    if args.optimal {
        let mut audited = Audited::default();
        sim::run::run(&cluster, &jobs, &mut audited);
        let c = &audited.check;
        println!(
            "\nspinel vs the exact optimum, decision by decision: {} decisions ({} too large to \
             search), total spread {} vs {} ({:+.1} %), {} avoidable spine crossings, {} \
             decisions over 5 %",
            c.decisions,
            c.skipped,
            c.spinel_total,
            c.optimal_total,
            if c.optimal_total == 0 {
                0.0
            } else {
                (c.spinel_total as f64 / c.optimal_total as f64 - 1.0) * 100.0
            },
            c.avoidable_spine_crossings,
            c.over_five_percent
        );
    }
    if let Some(path) = &args.svg {
        let title = format!(
            "{} nodes, {} jobs, seed {}: utilisation (top), largest group spread (bottom)",
            node_count, args.jobs, args.seed
        );
        std::fs::write(path, sim::chart::render(&runs, &title))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.per_job {
        for r in &runs {
            for j in &r.jobs {
                let line = serde_json::json!({"policy": r.summary.policy, "job": j});
                println!("{line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn hostfile(args: &HostfileArgs) -> anyhow::Result<ExitCode> {
    let text = if args.pods == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        s
    } else {
        std::fs::read_to_string(&args.pods).with_context(|| format!("reading {}", args.pods))?
    };
    let nodes = rank_nodes(&text, &args.gang)?;
    match args.format.as_str() {
        "mpi" => print!("{}", publish::mpi_hostfile(&nodes, args.slots)),
        "torchrun" => print!("{}", publish::torchrun_hostfile(&nodes)),
        other => bail!("--format {other}: expected mpi or torchrun"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The gang's nodes in rank order: rank 0's published list, else each pod's rank and node.
fn rank_nodes(text: &str, gang: &str) -> anyhow::Result<Vec<String>> {
    let doc: Value = serde_json::from_str(text).context("the pod list is not JSON")?;
    let items: Vec<&Value> = match doc.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().collect(),
        None => vec![&doc],
    };
    let of_gang = |p: &&Value| {
        let meta = &p["metadata"];
        meta["labels"][keys::GANG].as_str() == Some(gang)
            || meta["annotations"][keys::GANG].as_str() == Some(gang)
    };
    let pods: Vec<&Value> = items.into_iter().filter(of_gang).collect();
    if pods.is_empty() {
        bail!("no pod of gang {gang} in the input (label {})", keys::GANG);
    }
    if let Some(list) = pods
        .iter()
        .find_map(|p| p["metadata"]["annotations"][keys::RANK_NODES].as_str())
    {
        return Ok(publish::parse_rank_nodes(list)?);
    }
    let mut ranked: Vec<(u64, String)> = Vec::new();
    for p in &pods {
        let name = p["metadata"]["name"].as_str().unwrap_or("?");
        let rank = p["metadata"]["annotations"][keys::RANK]
            .as_str()
            .and_then(|r| r.parse::<u64>().ok())
            .with_context(|| format!("pod {name} has no {} annotation yet", keys::RANK))?;
        let node = p["spec"]["nodeName"]
            .as_str()
            .with_context(|| format!("pod {name} is not bound to a node yet"))?;
        ranked.push((rank, node.to_owned()));
    }
    ranked.sort();
    if ranked.iter().enumerate().any(|(i, (r, _))| *r != i as u64) {
        bail!(
            "gang {gang}: ranks are not 0..{} (a pod is missing)",
            ranked.len()
        );
    }
    Ok(ranked.into_iter().map(|(_, n)| n).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: SimulateArgs,
    }

    fn args(list: &[&str]) -> SimulateArgs {
        Wrap::parse_from(std::iter::once("simulate").chain(list.iter().copied())).args
    }

    #[test]
    fn fabrics_come_from_shapes_generators_and_tables() {
        let (nodes, per_leaf) = node_specs(&args(&["--uniform", "2,3,4"])).unwrap();
        assert_eq!((nodes.len(), per_leaf), (24, 4));
        let e = node_specs(&args(&["--uniform", "2,3"])).unwrap_err();
        assert!(e.to_string().contains("expected three numbers"), "{e}");
        let (nodes, per_leaf) = node_specs(&args(&["--hosts", "64"])).unwrap();
        assert_eq!((nodes.len(), per_leaf), (64, 32));
        assert!(nodes[0].labels.contains_key("fabric.spinel.dev/tier-2"));
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../topo-discovery/tests/fixtures/lldpd"
        );
        let files: Vec<String> = ["leaf01", "leaf02", "node01", "node02", "node03", "spine01"]
            .iter()
            .map(|f| format!("{dir}/{f}.json0"))
            .collect();
        let mut list = vec!["--tables"];
        list.extend(files.iter().map(String::as_str));
        let (nodes, _) = node_specs(&args(&list)).unwrap();
        assert_eq!(nodes.len(), 3);
        assert!(node_specs(&args(&[])).is_err());
    }

    #[test]
    fn the_published_list_wins_and_pod_ranks_are_the_fallback() {
        let published = r#"{"items":[{"metadata":{"name":"p0","labels":{"sched.spinel.dev/gang":"g"},
            "annotations":{"sched.spinel.dev/rank-nodes":"a,b"}}}]}"#;
        assert_eq!(rank_nodes(published, "g").unwrap(), ["a", "b"]);
        let per_pod = r#"{"items":[
            {"metadata":{"name":"p1","labels":{"sched.spinel.dev/gang":"g"},"annotations":{"sched.spinel.dev/rank":"1"}},"spec":{"nodeName":"y"}},
            {"metadata":{"name":"p0","labels":{"sched.spinel.dev/gang":"g"},"annotations":{"sched.spinel.dev/rank":"0"}},"spec":{"nodeName":"x"}},
            {"metadata":{"name":"o","labels":{"sched.spinel.dev/gang":"other"}}}]}"#;
        assert_eq!(rank_nodes(per_pod, "g").unwrap(), ["x", "y"]);
        let gap = r#"{"items":[{"metadata":{"name":"p1","labels":{"sched.spinel.dev/gang":"g"},"annotations":{"sched.spinel.dev/rank":"1"}},"spec":{"nodeName":"y"}}]}"#;
        assert!(
            rank_nodes(gap, "g")
                .unwrap_err()
                .to_string()
                .contains("a pod is missing")
        );
        assert!(rank_nodes(per_pod, "none").is_err());
    }
}
