//! Volcano `HyperNode` objects (`topology.volcano.sh/v1alpha1`): one per domain that holds at
//! least one host, members by exact name, so the HyperNodes form the strict tree Volcano needs.

use std::collections::BTreeMap;

use serde::Serialize;

use super::model::{Fabric, HostIdx};
use super::report::tier_name;
use spinel_api::labels::LabelOptions;

/// API version of the HyperNode CRD.
pub const API_VERSION: &str = "topology.volcano.sh/v1alpha1";

/// Label Volcano's HyperNode controller uses to tell discovery sources apart.
pub const SOURCE_LABEL: &str = "volcano.sh/network-topology-source";

/// Our value for [`SOURCE_LABEL`].
pub const SOURCE: &str = "spinel";

/// A HyperNode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HyperNode {
    /// Always [`API_VERSION`].
    pub api_version: &'static str,
    /// Always `HyperNode`.
    pub kind: &'static str,
    /// Name and labels.
    pub metadata: Metadata,
    /// Tier and members.
    pub spec: Spec,
}

/// HyperNode metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metadata {
    /// The domain id (also the nodes' label value for this tier).
    pub name: String,
    /// The source label and the tier label with the domain id.
    pub labels: BTreeMap<String, String>,
}

/// HyperNode spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    /// Tier, 1 closest to the nodes.
    pub tier: u8,
    /// `leaf`, `spine`, `super-spine`, then `tier-N`.
    pub tier_name: String,
    /// Nodes (tier 1) or HyperNodes (above).
    pub members: Vec<Member>,
}

/// One member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    /// `Node` or `HyperNode`.
    #[serde(rename = "type")]
    pub member_type: &'static str,
    /// Always an exact name.
    pub selector: Selector,
}

/// Member selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selector {
    /// The member's name.
    #[serde(rename = "exactMatch")]
    pub exact_match: ExactMatch,
}

/// Exact name match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExactMatch {
    /// Node or HyperNode name.
    pub name: String,
}

fn member(member_type: &'static str, name: &str) -> Member {
    Member {
        member_type,
        selector: Selector {
            exact_match: ExactMatch {
                name: name.to_owned(),
            },
        },
    }
}

/// HyperNodes for every domain with hosts below it, highest tier first.
pub fn hypernodes(fabric: &Fabric, options: &LabelOptions) -> Vec<HyperNode> {
    // Hosts below each domain; domains are stored tier by tier, parents after children.
    let mut below = vec![0usize; fabric.domains.len()];
    for (i, d) in fabric.domains.iter().enumerate() {
        below[i] += d.hosts.len();
        if let Some(p) = d.parent {
            below[p.0 as usize] += below[i];
        }
    }
    let mut out: Vec<HyperNode> = fabric
        .domains
        .iter()
        .enumerate()
        .filter(|(i, _)| below[*i] > 0)
        .map(|(_, d)| {
            let members = if d.tier == 1 {
                d.hosts
                    .iter()
                    .map(|h: &HostIdx| member("Node", &fabric.host(*h).name))
                    .collect()
            } else {
                d.children
                    .iter()
                    .filter(|c| below[c.0 as usize] > 0)
                    .map(|c| member("HyperNode", &fabric.domain(*c).id))
                    .collect()
            };
            let mut labels = BTreeMap::new();
            labels.insert(SOURCE_LABEL.to_owned(), SOURCE.to_owned());
            labels.insert(options.tier_key(d.tier), d.id.clone());
            HyperNode {
                api_version: API_VERSION,
                kind: "HyperNode",
                metadata: Metadata {
                    name: d.id.clone(),
                    labels,
                },
                spec: Spec {
                    tier: d.tier,
                    tier_name: tier_name(d.tier),
                    members,
                },
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.spec
            .tier
            .cmp(&a.spec.tier)
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    out
}
