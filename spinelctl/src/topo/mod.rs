//! `spinelctl topo ...`: the fabric model from neighbour-table files, and what derives from it.
//!
//! This is the I/O edge: files are read here (`inputs`) and handed to the pure inference in
//! `topo_discovery`; every output (`outputs`) is a function of the one inferred fabric.

pub(crate) mod inputs;
mod outputs;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use clap::ValueEnum;
use topo_discovery::fabric::{
    Fabric, FabricBuilder, FabricNics, InferOptions, NicPattern, RailKey,
};

use outputs::{DotHosts, Emit, ObjectFormat};

/// Exit status when an input cannot be read or understood.
pub const EXIT_INPUT: u8 = 1;
/// Exit status when the miswiring report has errors.
pub const EXIT_MISWIRED: u8 = 2;
/// Exit status when no host could be placed (every output would be empty).
pub const EXIT_NO_TOPOLOGY: u8 = 3;
/// Exit status when an output cannot be written (a file, Graphviz).
pub const EXIT_OUTPUT: u8 = 4;
/// Exit status of a usage error (sysexits' EX_USAGE), distinct from every result above.
pub const EXIT_USAGE: u8 = 64;

/// Topology commands.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Infer tiers, leaf groups, rails and miswiring from neighbour tables, and print the fabric
    /// or outputs derived from it. The miswiring report goes to stderr.
    #[command(after_help = "\
Inputs: Spinel neighbour tables (what `spinelctl lldp listen` prints) and lldpd captures, one \
system per file: `{ lldpcli -f json0 show interfaces details; lldpcli -f json0 show neighbors \
details; } > leaf01.json` (-f json works too). A capture of neighbours only (`lldpcli -f json0 \
show neighbors`) is named after its file (leaf01.json: leaf01), or explicitly with NAME=FILE. A \
directory stands for the files in it (files that are not JSON are skipped with a warning); `-` \
is stdin.

Outputs: one format to stdout (--json by default, --labels, ...), or several at once with \
--out-dir DIR (one file per format; every format when none is chosen) and --emit FORMAT=FILE.

Exit status: 0 the report has no errors (warnings allowed); 1 an input cannot be read or \
understood; 2 the report has errors (miswiring); 3 no host could be placed, the outputs are \
empty; 4 an output cannot be written; 64 usage error.")]
    Infer(InferArgs),
}

/// Arguments of `topo infer`.
#[derive(clap::Args)]
pub struct InferArgs {
    /// Neighbour-table files or directories (`NAME=FILE` names an lldpd capture's observer).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    /// Print the inferred fabric as JSON, report included (the default).
    #[arg(long)]
    json: bool,
    /// Print Kubernetes node labels, as partial Node objects for `kubectl apply --server-side`.
    #[arg(long)]
    labels: bool,
    /// Print Volcano HyperNode objects (topology.volcano.sh/v1alpha1).
    #[arg(long)]
    hypernodes: bool,
    /// Print a Kueue Topology (kueue.x-k8s.io/v1beta2).
    #[arg(long)]
    kueue: bool,
    /// Print a Slurm topology.conf (topology/tree).
    #[arg(long)]
    slurm: bool,
    /// Print a Graphviz DOT graph of the tiers.
    #[arg(long)]
    dot: bool,
    /// Also render the graph as SVG into FILE with Graphviz `dot` (apt-get install graphviz).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Write each chosen format (every format when none is chosen) into DIR, one file each:
    /// fabric.json, labels.yaml, hypernodes.yaml, kueue.yaml, topology.conf, fabric.dot.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Write FORMAT (json, labels, hypernodes, kueue, slurm, dot, svg) to FILE (`-`: stdout;
    /// no FILE: into --out-dir). Repeat for several outputs.
    #[arg(long, value_name = "FORMAT[=FILE]")]
    emit: Vec<Emit>,
    /// Format of Kubernetes objects (labels, hypernodes, kueue).
    #[arg(long, value_enum, default_value_t = ObjectFormat::Yaml)]
    format: ObjectFormat,
    /// Prefix of Spinel's label keys.
    #[arg(long, default_value = spinel_api::labels::DEFAULT_PREFIX, value_name = "PREFIX")]
    label_prefix: String,
    /// Write tier labels with Topograph's keys (fabric.topograph.run/tier-0 = closest).
    #[arg(long)]
    topograph: bool,
    /// How NICs map to rails: by NIC name (same name = same rail) or by NIC order per host.
    #[arg(long, value_enum, default_value_t = RailKeyArg::Name)]
    rail_key: RailKeyArg,
    /// The hosts' fabric (RoCE) NICs, by name or shell pattern (`ens1f0np0,ens1f1np1`,
    /// `ens*np*`); other NICs (management, storage) are ignored. Default: every NIC that sees a
    /// switch, except NICs on a switch that only management NICs reach.
    #[arg(long, value_name = "NICS", value_delimiter = ',')]
    fabric_nics: Vec<String>,
    /// Systems that are hosts (Kubernetes node names), short or fully qualified: the strongest
    /// evidence, and the names the hosts get. Repeat or separate with commas.
    #[arg(long = "host", value_name = "NAME", value_delimiter = ',')]
    hosts: Vec<String>,
    /// Read host names from FILE, one per line (`kubectl get nodes -o name` works: `node/`
    /// prefixes are dropped; `#` starts a comment).
    #[arg(long, value_name = "FILE")]
    hosts_from: Option<PathBuf>,
    /// Name of the Kueue Topology object.
    #[arg(long, default_value = "spinel-fabric", value_name = "NAME")]
    kueue_name: String,
    /// Hosts in the graph: each one, one box per leaf group, or each up to 64 hosts.
    #[arg(long, value_enum, default_value_t = DotHosts::Auto)]
    dot_hosts: DotHosts,
    /// Print how long reading, inference and each output took, to stderr.
    #[arg(long)]
    timings: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum RailKeyArg {
    Name,
    Order,
}

/// Why `topo infer` stopped, with the exit status each reason has.
enum Failure {
    /// The command line does not make sense.
    Usage(anyhow::Error),
    /// An input cannot be read or understood.
    Input(anyhow::Error),
    /// An output cannot be written.
    Output(anyhow::Error),
}

/// Runs a topology command.
pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    let result = match command {
        Command::Infer(args) => infer(&args),
    };
    Ok(match result {
        Ok(code) => code,
        Err(failure) => {
            let (code, e) = match failure {
                Failure::Usage(e) => (EXIT_USAGE, e),
                Failure::Input(e) => (EXIT_INPUT, e),
                Failure::Output(e) => (EXIT_OUTPUT, e),
            };
            eprintln!("spinelctl: {e:#}");
            ExitCode::from(code)
        }
    })
}

fn infer(args: &InferArgs) -> Result<ExitCode, Failure> {
    let label_options = spinel_api::labels::LabelOptions {
        prefix: args.label_prefix.clone(),
        keys: if args.topograph {
            spinel_api::labels::KeyMode::Topograph
        } else {
            spinel_api::labels::KeyMode::Spinel
        },
    };
    label_options
        .validate()
        .map_err(|e| Failure::Usage(e.into()))?;
    let planned = outputs::plan(args).map_err(Failure::Usage)?;
    let options = infer_options(args).map_err(Failure::Input)?;

    let start = Instant::now();
    let mut builder = FabricBuilder::new();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let warnings = inputs::load(&args.files, &mut builder, threads).map_err(Failure::Input)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    // Captures of neighbours only: which box each is, by its cabling, before any verdict.
    let stand_ins = builder
        .resolve_stand_ins()
        .map_err(|e| Failure::Input(e.into()))?;
    for note in &stand_ins {
        eprintln!("warning: {note}");
    }
    let mut timings = vec![("read", start.elapsed())];
    if builder.table_count() == 0 {
        return Err(Failure::Input(anyhow::anyhow!(
            "no neighbour tables in {}: give capture files or directories of them",
            args.files.join(" ")
        )));
    }
    let start = Instant::now();
    let fabric = builder.infer(&options);
    timings.push(("infer", start.elapsed()));

    let settings = outputs::Settings {
        labels: &label_options,
        format: args.format,
        kueue_name: &args.kueue_name,
        dot_hosts: args.dot_hosts,
    };
    let start = Instant::now();
    let written = outputs::write_all(&fabric, &planned, &settings).map_err(Failure::Output)?;
    timings.extend(written);
    timings.push(("outputs", start.elapsed()));
    report(&fabric);
    if args.timings {
        let list: Vec<String> = timings
            .iter()
            .map(|(what, t)| format!("{what} {:.3} s", t.as_secs_f64()))
            .collect();
        eprintln!("timings: {}", list.join(", "));
    }
    Ok(ExitCode::from(if fabric.placed_hosts() == 0 {
        EXIT_NO_TOPOLOGY
    } else if fabric.error_count() > 0 {
        EXIT_MISWIRED
    } else {
        0
    }))
}

/// Inference settings from the flags and the host file.
fn infer_options(args: &InferArgs) -> anyhow::Result<InferOptions> {
    let mut hosts: Vec<String> = args.hosts.iter().map(|h| h.trim().to_owned()).collect();
    if let Some(path) = &args.hosts_from {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the host list {}", path.display()))?;
        hosts.extend(
            text.lines()
                .map(|l| l.split('#').next().unwrap_or("").trim())
                .filter(|l| !l.is_empty())
                .map(|l| l.strip_prefix("node/").unwrap_or(l).to_owned()),
        );
    }
    hosts.retain(|h| !h.is_empty());
    hosts.sort();
    hosts.dedup();
    let patterns: Vec<NicPattern> = args
        .fabric_nics
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .map(NicPattern::new)
        .collect();
    Ok(InferOptions {
        rail_key: match args.rail_key {
            RailKeyArg::Name => RailKey::NicName,
            RailKeyArg::Order => RailKey::NicOrder,
        },
        fabric_nics: if patterns.is_empty() {
            FabricNics::Inferred
        } else {
            FabricNics::Matching(patterns)
        },
        hosts,
    })
}

/// The report, for people, on stderr: a summary line, then one line per finding.
fn report(fabric: &Fabric) {
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    let rails = if fabric.rail_optimized {
        format!("rail-optimised, {} rails", fabric.rails.len())
    } else {
        format!("not rail-optimised, {} rail(s)", fabric.rails.len())
    };
    let _ = writeln!(
        err,
        "fabric: {} hosts, {} switches, {} tier(s), {} domains, {rails}; {} error(s), {} warning(s)",
        fabric.hosts.len(),
        fabric.switches.len(),
        fabric.depth,
        fabric.domains.len(),
        fabric.error_count(),
        fabric.warning_count()
    );
    for f in &fabric.findings {
        let _ = writeln!(err, "{f}");
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: InferArgs,
    }

    fn rack(name: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../topo-discovery/tests/fixtures/lldpd-rack")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Captures of neighbours only under management IPs, leaves and hosts only: nothing tells
    /// the two leaf groups apart. `topo infer` says so and exits 1 (input), naming the files
    /// and the boxes each could be; no miswiring verdict, no output.
    #[test]
    fn undecidable_captures_exit_1_naming_files_and_candidates() {
        let dir = tempfile::tempdir().unwrap();
        let boxes = ["lf1a", "lf1b", "lf2a", "lf2b", "h1", "h2", "h3", "h4"];
        let boxes = boxes.iter().chain(["h5", "h6", "h7", "h8"].iter());
        for (i, b) in boxes.enumerate() {
            let to = dir.path().join(format!("10.0.0.{}.json", 13 + i));
            std::fs::write(to, rack(&format!("{b}.neighbours.json0"))).unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        let out_arg = out.path().display().to_string();
        let dir_arg = dir.path().display().to_string();
        let cli = Cli::try_parse_from(["infer", "--out-dir", &out_arg, &dir_arg]).unwrap();
        let Err(Failure::Input(e)) = infer(&cli.args) else {
            panic!("an input failure (exit status 1)");
        };
        let msg = format!("{e:#}");
        assert!(msg.contains("10.0.0.17.json"), "{msg}");
        assert!(
            msg.contains("its cabling fits 2 boxes (h1.fab.example, h5.fab.example)"),
            "{msg}"
        );
        // A spine's capture that names itself settles it.
        std::fs::write(dir.path().join("sp1.json"), rack("sp1.full.json0")).unwrap();
        let code = infer(&cli.args).ok().expect("inferred");
        assert_eq!(code, ExitCode::SUCCESS);
        assert!(out.path().join("fabric.json").is_file());
    }
}
