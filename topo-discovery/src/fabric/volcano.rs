//! Volcano `HyperNode` objects (`topology.volcano.sh/v1alpha1`): one per domain that holds at
//! least one host, members by exact name, so the HyperNodes form the strict tree Volcano needs.
//! The object types are `spinel_api::volcano`'s, shared with the fabric controller.

use std::collections::BTreeMap;

use super::model::{Domain, DomainIdx, Fabric};
use super::report::tier_name;
use spinel_api::labels::LabelOptions;
pub use spinel_api::volcano::{
    API_VERSION, HyperNode, HyperNodeSpec, MemberSelector, MemberSpec, MemberType, SOURCE_LABEL,
};

/// Our value for [`SOURCE_LABEL`].
pub const SOURCE: &str = "spinel";

fn member(member_type: MemberType, name: &str) -> MemberSpec {
    MemberSpec {
        selector: MemberSelector::exact(name),
        member_type,
    }
}

/// HyperNodes for every domain with hosts below it, highest tier first.
pub fn hypernodes(fabric: &Fabric, options: &LabelOptions) -> Vec<HyperNode> {
    let below = hosts_below(fabric);
    let mut out: Vec<(u8, &str, HyperNode)> = fabric
        .domains
        .iter()
        .enumerate()
        .filter(|(i, _)| below[*i] > 0)
        .map(|(_, d)| (d.tier, d.id.as_str(), hypernode(fabric, d, &below, options)))
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    out.into_iter().map(|(_, _, h)| h).collect()
}

/// The HyperNodes of `domains`: each one's object, or `None` when no host is below it (it
/// has none).
pub fn hypernodes_of(
    fabric: &Fabric,
    domains: &[DomainIdx],
    options: &LabelOptions,
) -> Vec<(DomainIdx, Option<HyperNode>)> {
    let below = hosts_below(fabric);
    domains
        .iter()
        .map(|&d| {
            let h = (below[d.0 as usize] > 0)
                .then(|| hypernode(fabric, fabric.domain(d), &below, options));
            (d, h)
        })
        .collect()
}

/// Hosts below each domain; domains are stored tier by tier, parents after children.
fn hosts_below(fabric: &Fabric) -> Vec<usize> {
    let mut below = vec![0usize; fabric.domains.len()];
    for (i, d) in fabric.domains.iter().enumerate() {
        below[i] += d.hosts.len();
        if let Some(p) = d.parent {
            below[p.0 as usize] += below[i];
        }
    }
    below
}

fn hypernode(fabric: &Fabric, d: &Domain, below: &[usize], options: &LabelOptions) -> HyperNode {
    let members = if d.tier == 1 {
        d.hosts
            .iter()
            .map(|h| member(MemberType::Node, &fabric.host(*h).name))
            .collect()
    } else {
        d.children
            .iter()
            .filter(|c| below[c.0 as usize] > 0)
            .map(|c| member(MemberType::HyperNode, &fabric.domain(*c).id))
            .collect()
    };
    let labels = BTreeMap::from([
        (SOURCE_LABEL.to_owned(), SOURCE.to_owned()),
        (options.tier_key(d.tier), d.id.clone()),
    ]);
    let mut hn = HyperNode::new(
        &d.id,
        HyperNodeSpec {
            members,
            tier: i32::from(d.tier),
            tier_name: Some(tier_name(d.tier)),
        },
    );
    hn.metadata.labels = Some(labels);
    hn
}
