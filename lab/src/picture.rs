//! The lab's fabric as a picture (SVG) and as a text tree: spines on top, leaves by rail group,
//! nodes under their group; a cable drawn in its rail's colour, dashed red when its link is
//! down; a node filled by its health as the agent reports it.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::layout::{Plan, Role};

/// What the lab knows of one node right now.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    /// The node's Spinel labels (key without the prefix, value).
    pub labels: BTreeMap<String, String>,
    /// Healthy, degraded (with the reason) or unknown (no report yet).
    pub health: Health,
}

/// A node's health as the agent reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "state", content = "reason")]
pub enum Health {
    /// No report yet.
    #[default]
    Unknown,
    /// RoCE ready on every NIC.
    Healthy,
    /// Tainted, with the agent's reason.
    Degraded(String),
}

/// The live state the picture shows over the plan.
#[derive(Clone, Debug, Default)]
pub struct Live {
    /// `(switch, port)` pairs whose link is down.
    pub down_ports: Vec<(String, String)>,
    /// Per node.
    pub nodes: BTreeMap<String, NodeView>,
}

impl Live {
    fn is_down(&self, switch: &str, port: &str) -> bool {
        self.down_ports
            .iter()
            .any(|(s, p)| s == switch && p == port)
    }
}

/// Colours of rails 0-7.
const RAIL_COLOURS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
];
const BOX_W: u32 = 96;
const BOX_H: u32 = 34;
const GAP: u32 = 14;
const ROWS: [u32; 3] = [30, 150, 290];

/// Escapes text for XML.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Horizontal centres: nodes evenly, leaves over their group's nodes, spines evenly on top.
fn layout(plan: &Plan) -> (BTreeMap<&str, (u32, u32)>, u32) {
    let mut at = BTreeMap::new();
    let width = (plan.nodes.len() as u32) * (BOX_W + GAP) + GAP;
    for (i, node) in plan.nodes.iter().enumerate() {
        at.insert(
            node.name.as_str(),
            (GAP + i as u32 * (BOX_W + GAP) + BOX_W / 2, ROWS[2]),
        );
    }
    let leaves: Vec<_> = plan
        .switches
        .iter()
        .filter(|s| s.role == Role::Leaf)
        .collect();
    let groups = plan.size.rail_groups;
    for leaf in &leaves {
        let (g, r) = (leaf.group.unwrap_or(0), leaf.rail.unwrap_or(0));
        let group_w = width / groups;
        let slot = group_w / (plan.size.rails + 1);
        at.insert(leaf.name.as_str(), (g * group_w + slot * (r + 1), ROWS[1]));
    }
    let spines: Vec<_> = plan
        .switches
        .iter()
        .filter(|s| s.role == Role::Spine)
        .collect();
    let spine_w = width / (spines.len() as u32 + 1);
    for (i, spine) in spines.iter().enumerate() {
        at.insert(spine.name.as_str(), (spine_w * (i as u32 + 1), ROWS[0]));
    }
    (at, width.max(2 * BOX_W))
}

/// The picture, a standalone SVG document.
pub fn svg(plan: &Plan, live: &Live) -> String {
    let (at, width) = layout(plan);
    let height = ROWS[2] + BOX_H + 60;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for cable in &plan.cables {
        let (Some(&(x1, y1)), Some(&(x2, y2))) =
            (at.get(cable.a.as_str()), at.get(cable.b.as_str()))
        else {
            continue;
        };
        let down = live.is_down(&cable.b, &cable.b_port) || live.is_down(&cable.a, &cable.a_port);
        let colour = match cable.p2p {
            Some(_) => "#999999",
            None => {
                let rail = cable
                    .a_port
                    .trim_start_matches("rail")
                    .parse::<usize>()
                    .unwrap_or(0);
                RAIL_COLOURS[rail % RAIL_COLOURS.len()]
            }
        };
        let (stroke, dash) = if down {
            ("#d62728", r#" stroke-dasharray="6,4""#)
        } else {
            (colour, "")
        };
        let _ = writeln!(
            out,
            r#"<line x1="{x1}" y1="{}" x2="{x2}" y2="{}" stroke="{stroke}" stroke-width="{}"{dash}><title>{}:{} - {}:{}{}</title></line>"#,
            y1,
            y2 + BOX_H,
            if down { 2.5 } else { 1.5 },
            xml(&cable.a),
            xml(&cable.a_port),
            xml(&cable.b),
            xml(&cable.b_port),
            if down { " (link down)" } else { "" }
        );
    }
    for switch in &plan.switches {
        if let Some(&(x, y)) = at.get(switch.name.as_str()) {
            let fill = match switch.rail {
                Some(r) => RAIL_COLOURS[r as usize % RAIL_COLOURS.len()],
                None => "#555555",
            };
            box_with_text(
                &mut out,
                x,
                y,
                fill,
                "white",
                &switch.name,
                switch.subnet.map(|s| s.to_string()).as_deref(),
            );
        }
    }
    for node in &plan.nodes {
        if let Some(&(x, y)) = at.get(node.name.as_str()) {
            let view = live.nodes.get(&node.name);
            let (fill, note) = match view.map(|v| &v.health) {
                Some(Health::Healthy) => ("#c7e9c0", "healthy".to_owned()),
                Some(Health::Degraded(reason)) => ("#fcbba1", format!("degraded: {reason}")),
                _ => ("#eeeeee", "no report yet".to_owned()),
            };
            box_with_text(&mut out, x, y, fill, "black", &node.name, Some(&note));
        }
    }
    let _ = writeln!(
        out,
        r#"<text x="{GAP}" y="{}">rails: {}; grey: spine uplinks; red dashed: link down</text>"#,
        height - 12,
        (0..plan.size.rails)
            .map(|r| format!(
                "rail {r} = {}",
                RAIL_COLOURS[r as usize % RAIL_COLOURS.len()]
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    out.push_str("</svg>\n");
    out
}

fn box_with_text(
    out: &mut String,
    x: u32,
    y: u32,
    fill: &str,
    ink: &str,
    name: &str,
    note: Option<&str>,
) {
    let _ = writeln!(
        out,
        r##"<g><title>{}</title><rect x="{}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="4" fill="{fill}" stroke="#333"/><text x="{x}" y="{}" text-anchor="middle" fill="{ink}" font-weight="bold">{}</text>"##,
        xml(note.unwrap_or(name)),
        x - BOX_W / 2,
        y + 14,
        xml(name)
    );
    if let Some(note) = note {
        let short: String = note.chars().take(16).collect();
        let _ = writeln!(
            out,
            r#"<text x="{x}" y="{}" text-anchor="middle" fill="{ink}" font-size="9">{}</text>"#,
            y + 27,
            xml(&short)
        );
    }
    out.push_str("</g>\n");
}

/// The text tree: spines, then each rail group with its leaves and its nodes, each node with
/// its NICs' links, its health and its labels.
pub fn tree(plan: &Plan, live: &Live) -> String {
    let mut out = String::new();
    let spines: Vec<&str> = plan
        .switches
        .iter()
        .filter(|s| s.role == Role::Spine)
        .map(|s| s.name.as_str())
        .collect();
    let _ = writeln!(out, "fabric: spines {}", spines.join(", "));
    for g in 0..plan.size.rail_groups {
        let last_group = g + 1 == plan.size.rail_groups;
        let leaves: Vec<String> = plan
            .switches
            .iter()
            .filter(|s| s.group == Some(g))
            .map(|s| {
                format!(
                    "{} ({})",
                    s.name,
                    s.subnet.map(|n| n.to_string()).unwrap_or_default()
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "{} rail group {}: {}",
            if last_group { "└─" } else { "├─" },
            g + 1,
            leaves.join(", ")
        );
        let indent = if last_group { "   " } else { "│  " };
        let nodes: Vec<_> = plan.nodes.iter().filter(|n| n.group == g).collect();
        for (i, node) in nodes.iter().enumerate() {
            let branch = if i + 1 == nodes.len() {
                "└─"
            } else {
                "├─"
            };
            let links: Vec<String> = node
                .nics
                .iter()
                .map(|nic| {
                    let state = if live.is_down(&nic.leaf, &nic.leaf_port) {
                        "DOWN"
                    } else {
                        "up"
                    };
                    format!("{}→{}:{} {state}", nic.ifname, nic.leaf, nic.leaf_port)
                })
                .collect();
            let view = live.nodes.get(&node.name).cloned().unwrap_or_default();
            let health = match &view.health {
                Health::Healthy => "healthy".to_owned(),
                Health::Degraded(reason) => format!("DEGRADED ({reason})"),
                Health::Unknown => "no report yet".to_owned(),
            };
            let _ = writeln!(
                out,
                "{indent}{branch} {}  {}  {health}",
                node.name,
                links.join("  ")
            );
            if !view.labels.is_empty() {
                let labels: Vec<String> = view
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                let pad = if i + 1 == nodes.len() { "   " } else { "│  " };
                let _ = writeln!(out, "{indent}{pad}   labels: {}", labels.join(" "));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::layout::LabSize;

    fn live() -> Live {
        let mut live = Live {
            down_ports: vec![("leaf2-r1".to_owned(), "swp4".to_owned())],
            ..Live::default()
        };
        live.nodes.insert(
            "node08".to_owned(),
            NodeView {
                labels: BTreeMap::new(),
                health: Health::Degraded("rail1 <link down>".to_owned()),
            },
        );
        live.nodes.insert(
            "node01".to_owned(),
            NodeView {
                labels: [("tier-1".to_owned(), "leaf1".to_owned())].into(),
                health: Health::Healthy,
            },
        );
        live
    }

    #[test]
    fn svg_is_well_formed_and_shows_the_pulled_cable() {
        let plan = Plan::new(LabSize::default()).unwrap();
        let svg = svg(&plan, &live());
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let lines = doc.descendants().filter(|n| n.has_tag_name("line")).count();
        assert_eq!(lines, plan.cables.len());
        let down: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("line") && n.attribute("stroke") == Some("#d62728"))
            .collect();
        assert_eq!(down.len(), 1);
        assert!(svg.contains("degraded: rail1 &lt;link"));
    }

    #[test]
    fn tree_lists_groups_nodes_links_health_and_labels() {
        let plan = Plan::new(LabSize::default()).unwrap();
        let tree = tree(&plan, &live());
        assert!(tree.starts_with("fabric: spines spine1, spine2\n"));
        assert!(
            tree.contains("├─ rail group 1: leaf1-r0 (10.100.0.0/22), leaf1-r1 (10.101.0.0/22)")
        );
        assert!(tree.contains(
            "node08  rail0→leaf2-r0:swp4 up  rail1→leaf2-r1:swp4 DOWN  DEGRADED (rail1 <link down>)"
        ));
        assert!(tree.contains("labels: tier-1=leaf1"));
        assert!(
            tree.contains("node02  rail0→leaf1-r0:swp2 up  rail1→leaf1-r1:swp2 up  no report yet")
        );
    }
}
