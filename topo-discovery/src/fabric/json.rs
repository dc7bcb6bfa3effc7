//! The fabric as a JSON document: ids instead of indices, the miswiring report included.

use serde::Serialize;

use spinel_wire::neighbor::ChassisId;

use super::model::{Fabric, Finding, HostIdx, LinkKind};
use super::report::tier_name;

/// Schema identifier of [`FabricDocument`].
pub const SCHEMA: &str = "spinel.dev/fabric/v1";

/// The serialisable view of a [`Fabric`].
#[derive(Debug, Serialize)]
pub struct FabricDocument<'a> {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// Counts.
    pub summary: Summary,
    /// Whether the fabric is rail-optimised.
    pub rail_optimized: bool,
    /// Number of switch tiers.
    pub depth: u8,
    /// Rail keys in rail order.
    pub rails: Vec<&'a str>,
    /// Domains, highest tier first.
    pub domains: Vec<DomainDoc<'a>>,
    /// Switches.
    pub switches: Vec<SwitchDoc<'a>>,
    /// Hosts.
    pub hosts: Vec<HostDoc<'a>>,
    /// Switch-to-switch links.
    pub links: Vec<LinkDoc<'a>>,
    /// The miswiring report.
    pub findings: &'a [Finding],
}

/// Counts of everything, and of the report's entries.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Hosts.
    pub hosts: usize,
    /// Switches.
    pub switches: usize,
    /// Domains.
    pub domains: usize,
    /// Report entries of severity error.
    pub errors: usize,
    /// Report entries of severity warning.
    pub warnings: usize,
}

/// A domain.
#[derive(Debug, Serialize)]
pub struct DomainDoc<'a> {
    /// Path-qualified id.
    pub id: &'a str,
    /// Tier.
    pub tier: u8,
    /// `leaf`, `spine`, ...
    pub tier_name: String,
    /// Unqualified name.
    pub name: &'a str,
    /// Parent id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<&'a str>,
    /// Child ids.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<&'a str>,
    /// Switch ids at this tier.
    pub switches: Vec<&'a str>,
    /// Host names (tier 1).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<&'a str>,
}

/// A switch.
#[derive(Debug, Serialize)]
pub struct SwitchDoc<'a> {
    /// Unique id.
    pub id: &'a str,
    /// System name.
    pub name: &'a str,
    /// Chassis ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chassis_id: Option<&'a ChassisId>,
    /// Tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<u8>,
    /// Domain id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<&'a str>,
    /// Rails served (leaves).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rails: Vec<u16>,
    /// Ports without a neighbour in its own table.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub free_ports: Vec<&'a str>,
    /// A management switch, left out of the fabric.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub management: bool,
}

/// A host.
#[derive(Debug, Serialize)]
pub struct HostDoc<'a> {
    /// Node name.
    pub name: &'a str,
    /// Enclosing domain ids, tier 1 first.
    pub path: Vec<&'a str>,
    /// Set when only switch tables saw the host.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub seen_from_switches_only: bool,
    /// NICs.
    pub nics: Vec<NicDoc<'a>>,
}

/// A NIC.
#[derive(Debug, Serialize)]
pub struct NicDoc<'a> {
    /// Interface name.
    pub name: &'a str,
    /// Rail index.
    pub rail: u16,
    /// Switch id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch: Option<&'a str>,
    /// Switch port as resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<&'a str>,
    /// What the NIC sees when that is not a switch: `<system> <port>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
}

/// A switch link.
#[derive(Debug, Serialize)]
pub struct LinkDoc<'a> {
    /// Uplink, peer or unplaced.
    pub kind: LinkKind,
    /// Lower end.
    pub lower: EndDoc<'a>,
    /// Upper end.
    pub upper: EndDoc<'a>,
}

/// One end of a link.
#[derive(Debug, Serialize)]
pub struct EndDoc<'a> {
    /// Switch id.
    pub switch: &'a str,
    /// Port.
    pub port: &'a str,
}

/// Builds the document.
pub fn document(fabric: &Fabric) -> FabricDocument<'_> {
    let mut domains: Vec<DomainDoc<'_>> = fabric
        .domains
        .iter()
        .map(|d| DomainDoc {
            id: &d.id,
            tier: d.tier,
            tier_name: tier_name(d.tier),
            name: &d.name,
            parent: d.parent.map(|p| fabric.domain(p).id.as_str()),
            children: d
                .children
                .iter()
                .map(|c| fabric.domain(*c).id.as_str())
                .collect(),
            switches: d
                .switches
                .iter()
                .map(|s| fabric.switch(*s).id.as_str())
                .collect(),
            hosts: d
                .hosts
                .iter()
                .map(|h| fabric.host(*h).name.as_str())
                .collect(),
        })
        .collect();
    domains.sort_by(|a, b| b.tier.cmp(&a.tier).then_with(|| a.id.cmp(b.id)));
    FabricDocument {
        schema: SCHEMA,
        summary: Summary {
            hosts: fabric.hosts.len(),
            switches: fabric.switches.len(),
            domains: fabric.domains.len(),
            errors: fabric.error_count(),
            warnings: fabric.warning_count(),
        },
        rail_optimized: fabric.rail_optimized,
        depth: fabric.depth,
        rails: fabric.rails.iter().map(|r| &**r).collect(),
        domains,
        switches: fabric
            .switches
            .iter()
            .map(|s| SwitchDoc {
                id: &s.id,
                name: &s.name,
                chassis_id: s.chassis_id.as_ref(),
                tier: s.tier,
                domain: s.domain.map(|d| fabric.domain(d).id.as_str()),
                rails: s.rails.clone(),
                free_ports: s.free_ports.iter().map(|p| &**p).collect(),
                management: s.management,
            })
            .collect(),
        hosts: fabric
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| HostDoc {
                name: &h.name,
                path: fabric
                    .host_path(HostIdx(i as u32))
                    .iter()
                    .map(|d| d.id.as_str())
                    .collect(),
                seen_from_switches_only: h.seen_from_switches_only,
                nics: h
                    .nics
                    .iter()
                    .map(|n| NicDoc {
                        name: &n.name,
                        rail: n.rail,
                        switch: n.link.as_ref().map(|l| fabric.switch(l.switch).id.as_str()),
                        port: n.link.as_ref().map(|l| &*l.port.name),
                        peer: n.peer.as_ref().map(|p| format!("{} {}", p.system, p.port)),
                    })
                    .collect(),
            })
            .collect(),
        links: fabric
            .links
            .iter()
            .map(|l| LinkDoc {
                kind: l.kind,
                lower: EndDoc {
                    switch: &fabric.switch(l.lower.switch).id,
                    port: &l.lower.port.name,
                },
                upper: EndDoc {
                    switch: &fabric.switch(l.upper.switch).id,
                    port: &l.upper.port.name,
                },
            })
            .collect(),
        findings: &fabric.findings,
    }
}
