//! `spinelctl topo ...`: the fabric model from neighbour-table files, and what derives from it.
//!
//! This is the I/O edge: files are read here and handed to the pure inference in
//! `topo_discovery`; every output is a function of the one inferred fabric.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode, Stdio};

use anyhow::{Context as _, bail};
use clap::{ArgGroup, ValueEnum};
use serde::Serialize;
use topo_discovery::fabric::{
    self, Fabric, FabricBuilder, InferOptions, RailKey, dot, kueue, labels, slurm, volcano,
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
        // One Node at a time: 100k nodes' objects are never all in memory.
        let keys = labels::LabelKeys::new(&fabric, &label_options);
        let nodes = (0..fabric.hosts.len())
            .map(|h| labels::node_object(keys.host_labels(&fabric, fabric::HostIdx(h as u32))));
        write_objects(&mut out, nodes, args.format)?;
    } else if args.hypernodes {
        let objects = volcano::hypernodes(&fabric, &label_options);
        write_objects(&mut out, objects.iter(), args.format)?;
    } else if args.kueue {
        let topology = kueue::topology(&fabric, &args.kueue_name, &label_options);
        match args.format {
            ObjectFormat::Yaml => write_yaml(&mut out, &topology)?,
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
fn expand(arg: &str) -> anyhow::Result<Vec<(Option<String>, PathBuf)>> {
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

fn read(path: &Path) -> anyhow::Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading stdin")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Several objects: YAML documents separated by `---`, or a `v1/List` in JSON (as kubectl
/// prints them), written one by one.
fn write_objects<T: Serialize>(
    out: &mut impl std::io::Write,
    objects: impl Iterator<Item = T>,
    format: ObjectFormat,
) -> anyhow::Result<()> {
    match format {
        ObjectFormat::Yaml => {
            for (i, object) in objects.enumerate() {
                if i > 0 {
                    out.write_all(b"---\n")?;
                }
                write_yaml(out, &object)?;
            }
        }
        ObjectFormat::Json => {
            let list = List {
                api_version: "v1",
                items: Items(std::cell::RefCell::new(Some(objects))),
                kind: "List",
            };
            serde_json::to_writer_pretty(&mut *out, &list)?;
            writeln!(out)?;
        }
    }
    Ok(())
}

/// One YAML document in kubectl's block style.
fn write_yaml(out: &mut impl std::io::Write, object: &impl Serialize) -> anyhow::Result<()> {
    serde_saphyr::to_io_writer(out, object).context("writing YAML")?;
    Ok(())
}

/// A `v1/List` whose items are serialised as they are produced.
#[derive(Serialize)]
#[serde(rename_all = "camelCase", bound(serialize = "Items<I>: Serialize"))]
struct List<I> {
    api_version: &'static str,
    items: Items<I>,
    kind: &'static str,
}

/// An iterator serialised as a sequence, once.
struct Items<I>(std::cell::RefCell<Option<I>>);

impl<I: Iterator<Item = T>, T: Serialize> Serialize for Items<I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let items = self.0.borrow_mut().take();
        serializer.collect_seq(items.into_iter().flatten())
    }
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::Node;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use topo_discovery::fabric::volcano::{
        HyperNode, HyperNodeSpec, MemberSelector, MemberSpec, MemberType,
    };

    use super::*;

    fn render(objects: &[impl Serialize], format: ObjectFormat) -> String {
        let mut out = Vec::new();
        write_objects(&mut out, objects.iter(), format).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn kubernetes_objects_render_in_kubectls_block_style() {
        let node = Node {
            metadata: ObjectMeta {
                name: Some("h1".into()),
                labels: Some(BTreeMap::from([
                    ("fabric.spinel.dev/rails".to_owned(), "2".to_owned()),
                    ("a/b".to_owned(), "yes".to_owned()),
                ])),
                ..ObjectMeta::default()
            },
            ..Node::default()
        };
        let hn = HyperNode::new(
            ObjectMeta {
                name: Some("spine1.leaf1-2".into()),
                ..ObjectMeta::default()
            },
            HyperNodeSpec {
                members: vec![MemberSpec {
                    selector: MemberSelector::exact("h1"),
                    member_type: MemberType::Node,
                }],
                tier: 1,
                tier_name: Some("leaf".into()),
            },
        );
        assert_eq!(
            render(&[node], ObjectFormat::Yaml),
            "\
apiVersion: v1
kind: Node
metadata:
  labels:
    a/b: \"yes\"
    fabric.spinel.dev/rails: \"2\"
  name: h1
"
        );
        assert_eq!(
            render(&[hn.clone(), hn], ObjectFormat::Yaml),
            "\
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: spine1.leaf1-2
spec:
  members:
  - selector:
      exactMatch:
        name: h1
    type: Node
  tier: 1
  tierName: leaf
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: spine1.leaf1-2
spec:
  members:
  - selector:
      exactMatch:
        name: h1
    type: Node
  tier: 1
  tierName: leaf
"
        );
    }

    #[test]
    fn ambiguous_strings_are_quoted_and_lists_stream_as_json() {
        let values = [
            "", "true", "No", "1", "1.5", "a: b", "#x", "null", "~", "on",
        ];
        let labels: BTreeMap<String, String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("k{i}"), (*v).to_owned()))
            .collect();
        let yaml = render(std::slice::from_ref(&labels), ObjectFormat::Yaml);
        let back: BTreeMap<String, String> = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(back, labels, "{yaml}");
        let json = render(&[labels.clone(), labels], ObjectFormat::Json);
        let list: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(list["kind"], "List");
        assert_eq!(list["items"].as_array().map(Vec::len), Some(2));
    }
}
