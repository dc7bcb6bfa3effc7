//! Outputs of `topo infer`: which formats go where (stdout, files, a directory), and each
//! format written from the one fabric. Files are written under a temporary name and renamed,
//! so a reader never sees half an output.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::ValueEnum;
use k8s_openapi::api::core::v1::Node;
use serde::Serialize;
use spinel_api::labels::LabelOptions;
use topo_discovery::fabric::{self, Fabric, HostIdx, dot, kueue, labels, slurm, volcano};

use super::InferArgs;

/// Format of Kubernetes objects.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ObjectFormat {
    /// YAML documents separated by `---`.
    Yaml,
    /// A `v1/List` (one object for a Topology).
    Json,
}

/// Hosts in the graph.
#[derive(Clone, Copy, ValueEnum)]
pub enum DotHosts {
    /// Each host up to 64, else one box per leaf group.
    Auto,
    /// Each host.
    Each,
    /// One box per leaf group.
    Summary,
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The fabric model and report (`spinel.dev/fabric/v1`).
    Json,
    /// Partial Node objects with the labels.
    Labels,
    /// Volcano HyperNodes.
    Hypernodes,
    /// A Kueue Topology.
    Kueue,
    /// Slurm topology.conf.
    Slurm,
    /// Graphviz DOT.
    Dot,
    /// SVG rendered by Graphviz.
    Svg,
}

/// Every text format, what `--out-dir` writes when no format is chosen.
const EVERY_TEXT_FORMAT: [Format; 6] = [
    Format::Json,
    Format::Labels,
    Format::Hypernodes,
    Format::Kueue,
    Format::Slurm,
    Format::Dot,
];

impl Format {
    fn name(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Labels => "labels",
            Self::Hypernodes => "hypernodes",
            Self::Kueue => "kueue",
            Self::Slurm => "slurm",
            Self::Dot => "dot",
            Self::Svg => "svg",
        }
    }

    /// File name in `--out-dir`.
    fn file_name(self, objects: ObjectFormat) -> &'static str {
        let json = objects == ObjectFormat::Json;
        match self {
            Self::Json => "fabric.json",
            Self::Labels if json => "labels.json",
            Self::Labels => "labels.yaml",
            Self::Hypernodes if json => "hypernodes.json",
            Self::Hypernodes => "hypernodes.yaml",
            Self::Kueue if json => "kueue.json",
            Self::Kueue => "kueue.yaml",
            Self::Slurm => "topology.conf",
            Self::Dot => "fabric.dot",
            Self::Svg => "fabric.svg",
        }
    }
}

/// `--emit FORMAT[=FILE]`.
#[derive(Debug, Clone)]
pub struct Emit {
    format: Format,
    file: Option<PathBuf>,
}

impl std::str::FromStr for Emit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (format, file) = match s.split_once('=') {
            Some((f, file)) if !file.is_empty() => (f, Some(PathBuf::from(file))),
            Some((f, _)) => (f, None),
            None => (s, None),
        };
        let format = Format::from_str(format, true).map_err(|_| {
            format!(
                "unknown output format {format:?}: expected one of json, labels, hypernodes, \
                 kueue, slurm, dot, svg, as FORMAT or FORMAT=FILE"
            )
        })?;
        Ok(Self { format, file })
    }
}

/// Where an output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Standard output.
    Stdout,
    /// A file, written under a temporary name and renamed.
    File(PathBuf),
}

/// One output to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    format: Format,
    target: Target,
}

/// The outputs the flags ask for. Format flags and `--emit FORMAT` go into `--out-dir` when
/// given, else to stdout; with nothing chosen, `--out-dir` gets every text format and stdout
/// gets the JSON. At most one output may go to stdout.
pub fn plan(args: &InferArgs) -> anyhow::Result<Vec<Planned>> {
    let flags = [
        (args.json, Format::Json),
        (args.labels, Format::Labels),
        (args.hypernodes, Format::Hypernodes),
        (args.kueue, Format::Kueue),
        (args.slurm, Format::Slurm),
        (args.dot, Format::Dot),
    ];
    let mut picks: Vec<(Format, Option<Target>)> = flags
        .iter()
        .filter(|(on, _)| *on)
        .map(|&(_, f)| (f, None))
        .collect();
    if let Some(svg) = &args.svg {
        picks.push((Format::Svg, Some(Target::File(svg.clone()))));
    }
    for e in &args.emit {
        let target = e.file.as_ref().map(|f| {
            if f.as_os_str() == "-" {
                Target::Stdout
            } else {
                Target::File(f.clone())
            }
        });
        picks.push((e.format, target));
    }
    if picks.is_empty() {
        match args.out_dir {
            Some(_) => picks.extend(EVERY_TEXT_FORMAT.iter().map(|&f| (f, None))),
            None => picks.push((Format::Json, None)),
        }
    }
    let mut planned: Vec<Planned> = picks
        .into_iter()
        .map(|(format, target)| Planned {
            format,
            target: target.unwrap_or_else(|| match &args.out_dir {
                Some(dir) => Target::File(dir.join(format.file_name(args.format))),
                None => Target::Stdout,
            }),
        })
        .collect();
    planned.dedup();
    let to_stdout: Vec<&str> = planned
        .iter()
        .filter(|p| p.target == Target::Stdout)
        .map(|p| p.format.name())
        .collect();
    if to_stdout.len() > 1 {
        bail!(
            "{} would all print to stdout: write several outputs with --out-dir DIR (one file \
             per format) or --emit FORMAT=FILE, for example `--out-dir out/` or `--emit \
             kueue=kueue.yaml --emit slurm=topology.conf`",
            to_stdout.join(", ")
        );
    }
    Ok(planned)
}

/// What the outputs need besides the fabric.
pub struct Settings<'a> {
    /// Label keys.
    pub labels: &'a LabelOptions,
    /// Kubernetes object format.
    pub format: ObjectFormat,
    /// Kueue Topology name.
    pub kueue_name: &'a str,
    /// Hosts in the graph.
    pub dot_hosts: DotHosts,
}

/// Writes every planned output, files in parallel (each is a function of the same fabric);
/// the first failure in plan order is returned. Returns how long each output took.
pub fn write_all(
    fabric: &Fabric,
    planned: &[Planned],
    settings: &Settings<'_>,
) -> anyhow::Result<Vec<(&'static str, Duration)>> {
    if let Some(dir) = planned.iter().find_map(|p| match &p.target {
        Target::File(f) => f.parent().filter(|d| !d.as_os_str().is_empty()),
        Target::Stdout => None,
    }) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the output directory {}", dir.display()))?;
    }
    let results: Vec<anyhow::Result<Duration>> = std::thread::scope(|scope| {
        let handles: Vec<_> = planned
            .iter()
            .map(|p| scope.spawn(move || write_one(fabric, p, settings)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("an output thread panicked")))
            })
            .collect()
    });
    planned
        .iter()
        .zip(results)
        .map(|(p, r)| r.map(|t| (p.format.name(), t)))
        .collect()
}

fn write_one(fabric: &Fabric, p: &Planned, settings: &Settings<'_>) -> anyhow::Result<Duration> {
    let start = Instant::now();
    match &p.target {
        Target::Stdout => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
            write_format(&mut out, fabric, p.format, settings)
                .and_then(|()| out.flush().context("flushing stdout"))
                .with_context(|| format!("writing {} to stdout", p.format.name()))?;
        }
        Target::File(path) => {
            crate::output::write_file(path, |out| write_format(out, fabric, p.format, settings))
                .with_context(|| format!("writing {} to {}", p.format.name(), path.display()))?
        }
    }
    Ok(start.elapsed())
}

fn write_format(
    out: &mut dyn std::io::Write,
    fabric: &Fabric,
    format: Format,
    settings: &Settings<'_>,
) -> anyhow::Result<()> {
    match format {
        Format::Json => {
            // A concrete buffer in front of the `dyn` writer: serde_json writes a few octets
            // at a time, and each would otherwise be a virtual call.
            let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut *out);
            serde_json::to_writer_pretty(&mut buffered, &fabric::json::document(fabric))?;
            writeln!(buffered)?;
            buffered.flush()?;
        }
        Format::Labels => write_labels(out, fabric, settings)?,
        Format::Hypernodes => {
            let objects = volcano::hypernodes(fabric, settings.labels);
            write_objects(out, objects.iter(), settings.format)?;
        }
        Format::Kueue => {
            let topology = kueue::topology(fabric, settings.kueue_name, settings.labels);
            match settings.format {
                ObjectFormat::Yaml => write_yaml(out, &topology)?,
                ObjectFormat::Json => {
                    serde_json::to_writer_pretty(&mut *out, &topology)?;
                    writeln!(out)?;
                }
            }
        }
        Format::Slurm => out.write_all(slurm::topology_conf(fabric).as_bytes())?,
        Format::Dot => out.write_all(dot_text(fabric, settings.dot_hosts).as_bytes())?,
        Format::Svg => out.write_all(&render_svg(&dot_text(fabric, settings.dot_hosts))?)?,
    }
    Ok(())
}

fn dot_text(fabric: &Fabric, hosts: DotHosts) -> String {
    let detail = match hosts {
        DotHosts::Auto => dot::HostDetail::Auto,
        DotHosts::Each => dot::HostDetail::Each,
        DotHosts::Summary => dot::HostDetail::Summary,
    };
    dot::render(fabric, detail)
}

/// The partial Node objects, one at a time through one reused Node: 100k nodes' objects are
/// never all in memory, and hardly allocate.
fn write_labels(
    out: &mut dyn std::io::Write,
    fabric: &Fabric,
    settings: &Settings<'_>,
) -> anyhow::Result<()> {
    let keys = labels::LabelKeys::new(fabric, settings.labels);
    let node = std::cell::RefCell::new(Node::default());
    let nodes = (0..fabric.hosts.len()).map(|h| {
        keys.fill_node(fabric, HostIdx(h as u32), &mut node.borrow_mut());
        NodeRef(&node)
    });
    write_objects(out, nodes, settings.format)
}

/// The reused Node, as the object it holds at the moment it is serialised.
struct NodeRef<'a>(&'a std::cell::RefCell<Node>);

impl Serialize for NodeRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.borrow().serialize(serializer)
    }
}

/// Several objects: YAML documents separated by `---`, or a `v1/List` in JSON (as kubectl
/// prints them), written one by one.
fn write_objects<T: Serialize>(
    out: &mut dyn std::io::Write,
    objects: impl Iterator<Item = T>,
    format: ObjectFormat,
) -> anyhow::Result<()> {
    match format {
        ObjectFormat::Yaml => {
            let mut text = String::new();
            for (i, object) in objects.enumerate() {
                text.clear();
                if i > 0 {
                    text.push_str("---\n");
                }
                serde_saphyr::to_fmt_writer(&mut text, &object).context("writing YAML")?;
                out.write_all(text.as_bytes())?;
            }
        }
        ObjectFormat::Json => {
            let list = List {
                api_version: "v1",
                items: Items(std::cell::RefCell::new(Some(objects))),
                kind: "List",
            };
            let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut *out);
            serde_json::to_writer_pretty(&mut buffered, &list)?;
            writeln!(buffered)?;
            buffered.flush()?;
        }
    }
    Ok(())
}

/// One YAML document in kubectl's block style.
fn write_yaml(out: &mut dyn std::io::Write, object: &impl Serialize) -> anyhow::Result<()> {
    let text = serde_saphyr::to_string(object).context("writing YAML")?;
    out.write_all(text.as_bytes())?;
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

/// The graph rendered by Graphviz `dot -Tsvg`.
fn render_svg(dot_text: &str) -> anyhow::Result<Vec<u8>> {
    let mut child = Process::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!("cannot run Graphviz `dot`: {e} (apt-get install graphviz)")
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(dot_text.as_bytes())
            .context("sending the graph to dot")?;
    }
    let output = child.wait_with_output().context("waiting for dot")?;
    if !output.status.success() {
        bail!(
            "dot failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(output.stdout)
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
            "spine1.leaf1-2",
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
