//! Graphviz DOT: domains as nested clusters, hosts at the bottom, spines on top; miswired
//! cables in red (both NICs of a swap, cables between hosts), missing uplinks as dashed red
//! edges; hosts, switches and sibling domains left to right in natural order.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::model::{DomainIdx, Fabric, FindingKind, HostIdx, LinkKind};
use super::report::tier_name;

/// How hosts are drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HostDetail {
    /// Each host if there are at most 64, else one box per leaf group.
    #[default]
    Auto,
    /// Each host with its NIC cables.
    Each,
    /// One box per leaf group with its host count.
    Summary,
}

/// Hosts above which [`HostDetail::Auto`] summarises.
const AUTO_MAX_HOSTS: usize = 64;

const TIER_COLOURS: [&str; 4] = ["#dbe9f6", "#fbe3c6", "#e2f0d9", "#eadcf2"];

fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// Renders the fabric as a DOT digraph. Edges point down the tree (switch to switch below, leaf
/// to host) with `ordering=out`, and no second crossing minimisation across clusters, so
/// Graphviz keeps the order they are written in; invisible same-rank edges keep a domain's
/// switches in order. Hosts, switches and sibling domains run left to right in natural order.
/// Arrowheads are hidden.
pub fn render(fabric: &Fabric, detail: HostDetail) -> String {
    let each = match detail {
        HostDetail::Each => true,
        HostDetail::Summary => false,
        HostDetail::Auto => fabric.hosts.len() <= AUTO_MAX_HOSTS,
    };
    let mut out = String::new();
    let _ = writeln!(out, "digraph fabric {{");
    header(fabric, &mut out);
    for (i, d) in fabric.domains.iter().enumerate() {
        if d.parent.is_none() {
            cluster(fabric, DomainIdx(i as u32), each, 1, &mut out);
        }
    }
    for (i, s) in fabric.switches.iter().enumerate() {
        if s.domain.is_none() {
            let note = if s.management {
                "management"
            } else {
                "no tier"
            };
            let _ = writeln!(
                out,
                "  s{i} [label={}, fillcolor=\"#eeeeee\", style=\"rounded,filled,dashed\"];",
                quote(&format!("{}\n({note})", s.name))
            );
        }
    }
    switch_edges(fabric, &mut out);
    if each {
        host_edges(fabric, &mut out);
    } else {
        for (di, d) in fabric.domains.iter().enumerate() {
            if d.tier != 1 || d.hosts.is_empty() {
                continue;
            }
            for s in &d.switches {
                let _ = writeln!(out, "  s{} -> g{di};", s.0);
            }
        }
    }
    let _ = writeln!(out, "}}");
    out
}

fn header(fabric: &Fabric, out: &mut String) {
    let title = format!(
        "{} hosts, {} switches, {} tiers{}; {} errors, {} warnings",
        fabric.hosts.len(),
        fabric.switches.len(),
        fabric.depth,
        if fabric.rail_optimized {
            format!(", rail-optimised ({} rails)", fabric.rails.len())
        } else {
            String::new()
        },
        fabric.error_count(),
        fabric.warning_count()
    );
    let _ = writeln!(
        out,
        "  graph [rankdir=TB, ordering=out, remincross=false, newrank=true, fontname=\"Helvetica\", fontsize=12, labelloc=t, label={}];",
        quote(&title)
    );
    let _ = writeln!(
        out,
        "  node [fontname=\"Helvetica\", fontsize=10, shape=box, style=\"rounded,filled\", fillcolor=white];"
    );
    let _ = writeln!(
        out,
        "  edge [fontname=\"Helvetica\", fontsize=8, arrowhead=none, color=\"#555555\"];"
    );
}

/// Links between switches, upper end first, and missing uplinks where both ends are known.
fn switch_edges(fabric: &Fabric, out: &mut String) {
    for l in &fabric.links {
        let style = match l.kind {
            LinkKind::Uplink => "",
            LinkKind::Peer => ", style=dotted, constraint=false",
            LinkKind::Unplaced => ", style=dashed",
        };
        let _ = writeln!(
            out,
            "  s{} -> s{} [taillabel={}, headlabel={}{style}];",
            l.upper.switch.0,
            l.lower.switch.0,
            quote(&l.upper.port.name),
            quote(&l.lower.port.name)
        );
    }
    for f in &fabric.findings {
        if f.kind != FindingKind::MissingUplink {
            continue;
        }
        let (Some(child), Some(expected)) = (f.switch.as_deref(), f.expected.as_deref()) else {
            continue;
        };
        let parent = expected.split_once(' ').map_or(expected, |(_, name)| name);
        if let (Some(c), Some(p)) = (fabric.switch_by_name(child), fabric.switch_by_name(parent)) {
            let _ = writeln!(
                out,
                "  s{} -> s{} [style=dashed, color=red, fontcolor=red, label=\"missing\"];",
                p.0, c.0
            );
        }
    }
}

/// Each host's cables: to its leaves (red when the report says the NIC is miswired: both
/// NICs of a swap, a NIC on the wrong leaf or group) and to other hosts (red).
fn host_edges(fabric: &Fabric, out: &mut String) {
    let miswired: HashSet<(&str, &str)> = fabric
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.kind,
                FindingKind::SwappedRail | FindingKind::SharedLeaf | FindingKind::WrongGroup
            )
        })
        .filter_map(|f| Some((f.host.as_deref()?, f.nic.as_deref()?)))
        .collect();
    for (hi, h) in fabric.hosts.iter().enumerate() {
        if h.domain.is_none() {
            let _ = writeln!(
                out,
                "  h{hi} [label={}, shape=ellipse, color=red];",
                quote(&h.name)
            );
        }
        host_cables(fabric, hi, out);
        for nic in &h.nics {
            let Some(link) = &nic.link else { continue };
            let bad = miswired.contains(&(h.name.as_str(), &*nic.name));
            let _ = writeln!(
                out,
                "  s{} -> h{hi} [taillabel={}, headlabel={}{}];",
                link.switch.0,
                quote(&link.port.name),
                quote(&nic.name),
                if bad {
                    ", color=red, penwidth=2, fontcolor=red"
                } else {
                    ""
                }
            );
        }
    }
}

/// Cables from host `hi`'s NICs to other hosts, in red, drawn once (from the first end).
fn host_cables(fabric: &Fabric, hi: usize, out: &mut String) {
    let h = &fabric.hosts[hi];
    for nic in &h.nics {
        let Some(HostIdx(other)) = nic.peer.as_ref().and_then(|p| p.host) else {
            continue;
        };
        let far = fabric.host(HostIdx(other));
        let far_port = nic.peer.as_ref().map_or("", |p| p.port.as_str());
        let back = far.nics.iter().any(|n| {
            *n.name == *far_port
                && n.peer
                    .as_ref()
                    .is_some_and(|p| p.host == Some(HostIdx(hi as u32)))
        });
        if back && (other as usize, far_port) < (hi, &*nic.name) {
            continue;
        }
        let _ = writeln!(
            out,
            "  h{hi} -> h{other} [taillabel={}, headlabel={}, color=red, penwidth=2, fontcolor=red, constraint=false];",
            quote(&nic.name),
            quote(far_port)
        );
    }
}

fn cluster(fabric: &Fabric, idx: DomainIdx, each: bool, depth: usize, out: &mut String) {
    let d = fabric.domain(idx);
    let pad = "  ".repeat(depth);
    let colour = TIER_COLOURS[(d.tier as usize - 1) % TIER_COLOURS.len()];
    let _ = writeln!(out, "{pad}subgraph cluster_d{} {{", idx.0);
    let _ = writeln!(
        out,
        "{pad}  label={}; style=\"rounded,filled\"; fillcolor={}; color=\"#888888\";",
        quote(&format!(
            "{} (tier {}: {})",
            d.id,
            d.tier,
            tier_name(d.tier)
        )),
        quote(colour)
    );
    for s in &d.switches {
        let sw = fabric.switch(*s);
        let rails = if fabric.rail_optimized && !sw.rails.is_empty() {
            let r: Vec<String> = sw.rails.iter().map(u16::to_string).collect();
            format!("\nrail {}", r.join(","))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{pad}  s{} [label={}];",
            s.0,
            quote(&format!("{}{rails}", sw.name))
        );
    }
    if d.switches.len() > 1 {
        let chain: Vec<String> = d.switches.iter().map(|s| format!("s{}", s.0)).collect();
        let _ = writeln!(
            out,
            "{pad}  {{ rank=same; {} [style=invis]; }}",
            chain.join(" -> ")
        );
    }
    if d.tier == 1 && !d.hosts.is_empty() {
        if each {
            for h in &d.hosts {
                let _ = writeln!(
                    out,
                    "{pad}  h{} [label={}, shape=ellipse];",
                    h.0,
                    quote(&fabric.host(*h).name)
                );
            }
        } else {
            let _ = writeln!(
                out,
                "{pad}  g{} [label={}, shape=folder];",
                idx.0,
                quote(&format!("{} hosts", d.hosts.len()))
            );
        }
    }
    for c in &d.children {
        cluster(fabric, *c, each, depth + 1, out);
    }
    let _ = writeln!(out, "{pad}}}");
}
