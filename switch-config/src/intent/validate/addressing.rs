//! Addressing: rail networks (VLAN, subnet, gateway), their size against the pods they carry,
//! neighbour-table capacity, point-to-point links, and no two subnets overlapping.

use ipnet::Ipv4Net;
use std::collections::HashSet;

use super::{Issues, switch_field};
use crate::intent::{Intent, Network};
use crate::plan::{FabricPlan, PortPeer, SwitchPlan, addresses_needed, other_end};

pub(super) fn check(intent: &Intent, plan: &FabricPlan<'_>, issues: &mut Issues) {
    let mut prefixes: Vec<(Ipv4Net, String, String)> = Vec::new();
    for sp in &plan.switches {
        networks(intent, sp, issues, &mut prefixes);
        links(sp, issues, &mut prefixes);
        capacity(intent, sp, issues);
    }
    overlaps(prefixes, issues);
}

fn networks(
    intent: &Intent,
    sp: &SwitchPlan<'_>,
    issues: &mut Issues,
    prefixes: &mut Vec<(Ipv4Net, String, String)>,
) {
    let s = sp.switch;
    let mut rails = HashSet::new();
    let mut vlans = HashSet::new();
    for n in &s.networks {
        let field = format!("{}.networks[{}]", switch_field(&s.name), n.rail);
        if !intent.rails.iter().any(|r| r.name == n.rail) {
            issues.error(
                &field,
                Some(&s.name),
                format!("rail {} is not in rails", n.rail),
            );
        }
        if !rails.insert(n.rail.as_str()) {
            issues.error(
                &field,
                Some(&s.name),
                "the rail has two networks here".into(),
            );
        }
        if !(2..=4094).contains(&n.vlan) {
            issues.error(
                format!("{field}.vlan"),
                Some(&s.name),
                format!("VLAN {} is outside 2-4094", n.vlan),
            );
        }
        if !vlans.insert(n.vlan) {
            issues.error(
                format!("{field}.vlan"),
                Some(&s.name),
                format!("VLAN {} is used by two rails on this leaf", n.vlan),
            );
        }
        subnet(intent, sp, n, &field, issues);
        prefixes.push((n.subnet.trunc(), format!("{field}.subnet"), s.name.clone()));
    }
}

fn subnet(intent: &Intent, sp: &SwitchPlan<'_>, n: &Network, field: &str, issues: &mut Issues) {
    let s = sp.switch;
    if n.subnet != n.subnet.trunc() {
        issues.error(
            format!("{field}.subnet"),
            Some(&s.name),
            format!(
                "{} has host bits set; the subnet is {}",
                n.subnet,
                n.subnet.trunc()
            ),
        );
    }
    if n.subnet.prefix_len() > 30 {
        issues.error(
            format!("{field}.subnet"),
            Some(&s.name),
            format!(
                "/{} leaves no room for hosts behind a gateway",
                n.subnet.prefix_len()
            ),
        );
        return;
    }
    let net = n.subnet.trunc();
    if !net.contains(&n.gateway) || n.gateway == net.network() || n.gateway == net.broadcast() {
        issues.error(
            format!("{field}.gateway"),
            Some(&s.name),
            format!("{} is not a host address of {}", n.gateway, net),
        );
    }
    let hosts = sp
        .ports
        .iter()
        .filter(|p| matches!(&p.peer, PortPeer::Host { network: Some(m), .. } if m.rail == n.rail))
        .count() as u64;
    let needed = addresses_needed(intent, hosts) + 1;
    let usable = (1u64 << (32 - u32::from(net.prefix_len()))) - 2;
    if needed > usable {
        issues.error(
            format!("{field}.subnet"),
            Some(&s.name),
            format!(
                "{net} has {usable} host addresses but {hosts} host(s) × (1 + {} pods, \
                 arp.pods_per_host) + the gateway need {needed}: use a /{} or fewer pods",
                intent.arp.pods_per_host,
                32 - (needed + 2).next_power_of_two().trailing_zeros()
            ),
        );
    }
}

fn links(sp: &SwitchPlan<'_>, issues: &mut Issues, prefixes: &mut Vec<(Ipv4Net, String, String)>) {
    let s = sp.switch;
    for p in s.ports.iter() {
        let Some(addr) = p.address else {
            continue;
        };
        let field = format!("{}.ports.{}.address", switch_field(&s.name), p.name);
        if addr.prefix_len() < 30 {
            issues.error(
                &field,
                Some(&s.name),
                format!("{addr}: a switch link takes a /31 (or /30)"),
            );
            continue;
        }
        if other_end(addr).is_none() {
            issues.error(
                &field,
                Some(&s.name),
                format!("{addr} is the network or broadcast address of its /30"),
            );
        }
        // Compare with the far end when it is listed with an address too.
        if let Some(PortPeer::Switch { .. }) = sp.port(&p.name).map(|q| &q.peer) {
            prefixes.push((addr.trunc(), field, s.name.clone()));
        }
    }
}

fn capacity(intent: &Intent, sp: &SwitchPlan<'_>, issues: &mut Issues) {
    let s = sp.switch;
    if let Some(cap) = s.neighbor_capacity
        && sp.neighbor_entries > u64::from(cap)
    {
        issues.error(
            format!("{}.neighbor_capacity", switch_field(&s.name)),
            Some(&s.name),
            format!(
                "the rail networks need {} neighbour entries (hosts × (1 + {} pods) + {}% \
                 headroom) but the ASIC holds {cap}: entries beyond it are not programmed and \
                 pods become unreachable",
                sp.neighbor_entries, intent.arp.pods_per_host, intent.arp.headroom_percent
            ),
        );
    }
}

/// Sort by start address; two prefixes overlap when the next starts inside the widest one
/// seen so far. A /31 listed from both of its ends is one link, not an overlap.
fn overlaps(mut prefixes: Vec<(Ipv4Net, String, String)>, issues: &mut Issues) {
    prefixes.sort_by(|a, b| {
        (u32::from(a.0.network()), a.0.prefix_len(), &a.1).cmp(&(
            u32::from(b.0.network()),
            b.0.prefix_len(),
            &b.1,
        ))
    });
    let mut widest: Option<&(Ipv4Net, String, String)> = None;
    for cur in &prefixes {
        if let Some(prev) = widest
            && prev.0.contains(&cur.0.network())
        {
            let same_link = prev.0 == cur.0 && prev.0.prefix_len() >= 30 && prev.2 != cur.2;
            if !same_link {
                issues.error(
                    &cur.1,
                    Some(&cur.2),
                    format!("{} overlaps {} ({})", cur.0, prev.0, prev.1),
                );
            }
        }
        let end = |n: &Ipv4Net| u32::from(n.broadcast());
        if widest.is_none_or(|w| end(&cur.0) > end(&w.0)) {
            widest = Some(cur);
        }
    }
}
