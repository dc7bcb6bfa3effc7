//! `spinelctl topo ...`: the fabric model from neighbour-table files, and what derives from it.
//!
//! This is the I/O edge: files are read here and handed to the pure inference in
//! `topo_discovery`; every output is a function of the one inferred fabric.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode, Stdio};

use anyhow::{Context as _, bail};
use clap::{ArgGroup, ValueEnum};
use serde_json::{Value, json};
use topo_discovery::fabric::{
    self, Fabric, FabricBuilder, InferOptions, RailKey, dot, kueue, labels, slurm, volcano, yaml,
};
use topo_discovery::sources::{self, ParseOptions};

/// Exit status when the miswiring report has errors (input problems exit with 1).
const EXIT_MISWIRED: u8 = 2;

/// Topology commands.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Infer tiers, leaf groups, rails and miswiring from neighbour tables, and print the fabric
    /// or an output derived from it. The miswiring report goes to stderr.
    #[command(after_help = "\
Inputs: Spinel neighbour tables (what `spinelctl lldp listen` prints) and lldpd captures, one \
system per file: `{ lldpcli -f json0 show interfaces details; lldpcli -f json0 show neighbors \
details; } > leaf01.json` (-f json works too). A directory stands for the files in it; `-` is \
stdin. Prefix NAME= to name the observer of an lldpd capture that lacks its own chassis.

Exit status: 0 when the report has no errors (warnings allowed), 2 when it has errors, 1 when \
the input cannot be read.")]
    Infer(InferArgs),
}

/// Arguments of `topo infer`.
#[derive(clap::Args)]
#[command(group(ArgGroup::new("output").args(["json", "labels", "hypernodes", "kueue", "slurm", "dot"])))]
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
    /// Format of Kubernetes objects (--labels, --hypernodes, --kueue).
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
    /// Name of the Kueue Topology object.
    #[arg(long, default_value = "spinel-fabric", value_name = "NAME")]
    kueue_name: String,
    /// Hosts in the graph: each one, one box per leaf group, or each up to 64 hosts.
    #[arg(long, value_enum, default_value_t = DotHosts::Auto)]
    dot_hosts: DotHosts,
}

#[derive(Clone, Copy, ValueEnum)]
enum ObjectFormat {
    Yaml,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum RailKeyArg {
    Name,
    Order,
}

#[derive(Clone, Copy, ValueEnum)]
enum DotHosts {
    Auto,
    Each,
    Summary,
}

/// Runs a topology command.
pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Infer(args) => infer(&args),
    }
}

fn infer(args: &InferArgs) -> anyhow::Result<ExitCode> {
    let label_options = spinel_api::labels::LabelOptions {
        prefix: args.label_prefix.clone(),
        keys: if args.topograph {
            spinel_api::labels::KeyMode::Topograph
        } else {
            spinel_api::labels::KeyMode::Spinel
        },
    };
    label_options.validate()?;
    let options = InferOptions {
        rail_key: match args.rail_key {
            RailKeyArg::Name => RailKey::NicName,
            RailKeyArg::Order => RailKey::NicOrder,
        },
    };

    let mut builder = FabricBuilder::new();
    for arg in &args.files {
        for (observer, path) in expand(arg)? {
            let text = read(&path)?;
            let captures = sources::parse(&text, &ParseOptions { observer })
                .with_context(|| format!("{}", path.display()))?;
            for c in &captures {
                c.add_to(&mut builder);
            }
        }
    }
    if builder.table_count() == 0 {
        bail!("no neighbour tables in {}", args.files.join(" "));
    }
    let fabric = builder.infer(&options);

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let nothing_chosen =
        !(args.json || args.labels || args.hypernodes || args.kueue || args.slurm || args.dot);
    if args.json || (nothing_chosen && args.svg.is_none()) {
        serde_json::to_writer_pretty(&mut out, &fabric::json::document(&fabric))?;
        writeln!(out)?;
    } else if args.labels {
        let objects = labels::node_objects(&fabric, &label_options);
        write_objects(&mut out, &objects, args.format)?;
    } else if args.hypernodes {
        let objects: Vec<Value> = volcano::hypernodes(&fabric, &label_options)
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?;
        write_objects(&mut out, &objects, args.format)?;
    } else if args.kueue {
        let topology =
            serde_json::to_value(kueue::topology(&fabric, &args.kueue_name, &label_options))?;
        match args.format {
            ObjectFormat::Yaml => out.write_all(yaml::to_string(&topology).as_bytes())?,
            ObjectFormat::Json => {
                serde_json::to_writer_pretty(&mut out, &topology)?;
                writeln!(out)?;
            }
        }
    } else if args.slurm {
        out.write_all(slurm::topology_conf(&fabric).as_bytes())?;
    } else if args.dot {
        out.write_all(dot::render(&fabric, dot_detail(args.dot_hosts)).as_bytes())?;
    }
    out.flush()?;
    if let Some(svg) = &args.svg {
        render_svg(&dot::render(&fabric, dot_detail(args.dot_hosts)), svg)?;
    }

    report(&fabric);
    Ok(if fabric.error_count() > 0 {
        ExitCode::from(EXIT_MISWIRED)
    } else {
        ExitCode::SUCCESS
    })
}

fn dot_detail(d: DotHosts) -> dot::HostDetail {
    match d {
        DotHosts::Auto => dot::HostDetail::Auto,
        DotHosts::Each => dot::HostDetail::Each,
        DotHosts::Summary => dot::HostDetail::Summary,
    }
}

/// `NAME=FILE` or `FILE`; a directory expands to its files (sorted, hidden ones skipped).
pub(crate) fn expand(arg: &str) -> anyhow::Result<Vec<(Option<String>, PathBuf)>> {
    let (observer, path) = match arg.split_once('=') {
        Some((name, path)) if !Path::new(arg).exists() && !name.is_empty() => {
            (Some(name.to_owned()), PathBuf::from(path))
        }
        _ => (None, PathBuf::from(arg)),
    };
    if arg == "-" || !path.is_dir() {
        return Ok(vec![(observer, path)]);
    }
    if observer.is_some() {
        bail!("{arg}: NAME= names one lldpd capture, not a directory");
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
        .with_context(|| format!("listing {}", path.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("{}: directory has no files", path.display());
    }
    Ok(files.into_iter().map(|p| (None, p)).collect())
}

pub(crate) fn read(path: &Path) -> anyhow::Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading stdin")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn write_objects(
    out: &mut impl std::io::Write,
    objects: &[Value],
    format: ObjectFormat,
) -> anyhow::Result<()> {
    match format {
        ObjectFormat::Yaml => out.write_all(yaml::documents(objects).as_bytes())?,
        ObjectFormat::Json => {
            serde_json::to_writer_pretty(
                &mut *out,
                &json!({"apiVersion": "v1", "kind": "List", "items": objects}),
            )?;
            writeln!(out)?;
        }
    }
    Ok(())
}

fn render_svg(dot_text: &str, svg: &Path) -> anyhow::Result<()> {
    let mut child = Process::new("dot")
        .arg("-Tsvg")
        .arg("-o")
        .arg(svg)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot run Graphviz `dot` to write {}: {e} (apt-get install graphviz)",
                svg.display()
            )
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(dot_text.as_bytes())
            .context("sending the graph to dot")?;
    }
    let output = child.wait_with_output().context("waiting for dot")?;
    if !output.status.success() {
        bail!(
            "dot failed writing {} ({}): {}",
            svg.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
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
