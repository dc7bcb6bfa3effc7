//! Graphviz DOT: domains as nested clusters, hosts at the bottom, spines on top; miswired
//! cables in red, missing uplinks as dashed red edges.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::model::{DomainIdx, Fabric, FindingKind};
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

/// Renders the fabric as a DOT digraph (edges point up the tree; arrowheads are hidden).
pub fn render(fabric: &Fabric, detail: HostDetail) -> String {
    let each = match detail {
        HostDetail::Each => true,
        HostDetail::Summary => false,
        HostDetail::Auto => fabric.hosts.len() <= AUTO_MAX_HOSTS,
    };
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
    let mut out = String::new();
    let _ = writeln!(out, "digraph fabric {{");
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
        "  graph [rankdir=BT, newrank=true, fontname=\"Helvetica\", fontsize=12, labelloc=t, label={}];",
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

    for (i, d) in fabric.domains.iter().enumerate() {
        if d.parent.is_none() {
            cluster(fabric, DomainIdx(i as u32), each, 1, &mut out);
        }
    }
    for (i, s) in fabric.switches.iter().enumerate() {
        if s.domain.is_none() {
            let _ = writeln!(
                out,
                "  s{i} [label={}, fillcolor=\"#eeeeee\", style=\"rounded,filled,dashed\"];",
                quote(&format!("{}\n(no tier)", s.name))
            );
        }
    }

    // Host cables.
    if each {
        for (hi, h) in fabric.hosts.iter().enumerate() {
            if h.domain.is_none() {
                let _ = writeln!(
                    out,
                    "  h{hi} [label={}, shape=ellipse, color=red];",
                    quote(&h.name)
                );
            }
            for nic in &h.nics {
                let Some(link) = &nic.link else { continue };
                let bad = miswired.contains(&(h.name.as_str(), &*nic.name));
                let _ = writeln!(
                    out,
                    "  h{hi} -> s{} [taillabel={}, headlabel={}{}];",
                    link.switch.0,
                    quote(&nic.name),
                    quote(&link.port.name),
                    if bad {
                        ", color=red, penwidth=2, fontcolor=red"
                    } else {
                        ""
                    }
                );
            }
        }
    } else {
        for (di, d) in fabric.domains.iter().enumerate() {
            if d.tier != 1 || d.hosts.is_empty() {
                continue;
            }
            for s in &d.switches {
                let _ = writeln!(out, "  g{di} -> s{};", s.0);
            }
        }
    }
    // Switch links.
    for l in &fabric.links {
        let style = match l.kind {
            super::model::LinkKind::Uplink => "",
            super::model::LinkKind::Peer => ", style=dotted, constraint=false",
            super::model::LinkKind::Unplaced => ", style=dashed",
        };
        let _ = writeln!(
            out,
            "  s{} -> s{} [taillabel={}, headlabel={}{style}];",
            l.lower.switch.0,
            l.upper.switch.0,
            quote(&l.lower.port.name),
            quote(&l.upper.port.name)
        );
    }
    // Missing uplinks, where both ends are known.
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
                c.0, p.0
            );
        }
    }
    let _ = writeln!(out, "}}");
    out
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
