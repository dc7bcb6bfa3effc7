//! The miswiring report: rails (swapped, shared leaf, wrong group, missing), hosts with no
//! switch, and uplinks (missing, asymmetric fan-out). Each entry names what to fix.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use super::model::{
    Domain, DomainIdx, Fabric, Finding, FindingKind, Host, HostIdx, LinkKind, Severity, SwitchIdx,
};
use super::names::natural_cmp;

/// Tier names used in messages and as HyperNode `tierName`s.
pub fn tier_name(tier: u8) -> String {
    match tier {
        1 => String::from("leaf"),
        2 => String::from("spine"),
        3 => String::from("super-spine"),
        t => format!("tier-{t}"),
    }
}

/// Adds the report's findings; `listed` are the hosts the caller named.
pub(crate) fn check(fabric: &mut Fabric, listed: &[String]) {
    let mut out = Vec::new();
    let all: Vec<HostIdx> = (0..fabric.hosts.len() as u32).map(HostIdx).collect();
    host_findings(fabric, &all, &mut out);
    let domains: Vec<DomainIdx> = (0..fabric.domains.len() as u32).map(DomainIdx).collect();
    out.extend(
        domain_findings(fabric, &domains)
            .into_iter()
            .map(|(_, f)| f),
    );
    check_placement(fabric, listed, &mut out);
    fabric.findings.extend(out);
}

/// The report's findings about `hosts` (their rails and cables), each naming its host.
pub(crate) fn host_findings(fabric: &Fabric, hosts: &[HostIdx], out: &mut Vec<Finding>) {
    let mut expected: FxHashMap<u32, Vec<u16>> = FxHashMap::default();
    for &h in hosts {
        let host = fabric.host(h);
        if let Some(DomainIdx(g)) = host.domain {
            expected
                .entry(g)
                .or_insert_with(|| expected_rails(fabric, &fabric.domains[g as usize]));
        }
        check_host(fabric, host, &expected, out);
        check_host_cables(fabric, host, out);
    }
}

/// The report's findings about the switches of `domains` (uplinks of tier-2 and higher
/// domains, domains without a parent), each with the domain it is about.
pub(crate) fn domain_findings(fabric: &Fabric, domains: &[DomainIdx]) -> Vec<(u32, Finding)> {
    let mut out = Vec::new();
    check_uplinks(fabric, domains, &mut out);
    check_rootless(fabric, domains, &mut out);
    out
}

/// The placement findings: hosts the caller named that no table shows, and no host placed.
pub(crate) fn placement_findings(fabric: &Fabric, listed: &[String]) -> Vec<Finding> {
    let mut out = Vec::new();
    check_placement(fabric, listed, &mut out);
    out
}

fn free_ports_hint(fabric: &Fabric, sw: SwitchIdx) -> String {
    let free = &fabric.switch(sw).free_ports;
    if free.is_empty() {
        return String::new();
    }
    let shown: Vec<&str> = free.iter().take(4).map(|p| &**p).collect();
    let more = if free.len() > shown.len() {
        ", ..."
    } else {
        ""
    };
    format!(" (free ports: {}{more})", shown.join(", "))
}

/// The leaf of `group` that serves `rail`, if one does.
fn leaf_for_rail(fabric: &Fabric, group: &Domain, rail: u16) -> Option<SwitchIdx> {
    group
        .switches
        .iter()
        .copied()
        .find(|s| fabric.switch(*s).rails.contains(&rail))
}

/// `rail 1`, with the rail's key when it is not the NIC being talked about.
fn rail_label(fabric: &Fabric, rail: u16, nic: Option<&str>) -> String {
    match fabric.rails.get(rail as usize) {
        Some(key) if Some(&**key) != nic => format!("rail {rail} ({key})"),
        _ => format!("rail {rail}"),
    }
}

/// Plural of a tier name, for messages.
fn tier_plural(tier: u8) -> String {
    match tier {
        1 => String::from("leaves"),
        t => format!("{}s", tier_name(t)),
    }
}

/// Rails a leaf group expects: in a rail-optimised fabric the rails its leaves serve;
/// otherwise the rails that more than half of the group's hosts have connected.
fn expected_rails(fabric: &Fabric, d: &Domain) -> Vec<u16> {
    if d.tier != 1 {
        return Vec::new();
    }
    let mut rails: Vec<u16> = if fabric.rail_optimized {
        d.switches
            .iter()
            .flat_map(|s| fabric.switch(*s).rails.iter().copied())
            .collect()
    } else {
        let mut per_rail: HashMap<u16, usize> = HashMap::new();
        for h in &d.hosts {
            let mut connected: Vec<u16> = fabric
                .host(*h)
                .nics
                .iter()
                .filter(|n| n.link.is_some())
                .map(|n| n.rail)
                .collect();
            connected.sort_unstable();
            connected.dedup();
            for r in connected {
                *per_rail.entry(r).or_default() += 1;
            }
        }
        per_rail
            .into_iter()
            .filter(|&(_, n)| 2 * n > d.hosts.len())
            .map(|(r, _)| r)
            .collect()
    };
    rails.sort_unstable();
    rails.dedup();
    rails
}

fn check_host(
    fabric: &Fabric,
    host: &Host,
    expected: &FxHashMap<u32, Vec<u16>>,
    out: &mut Vec<Finding>,
) {
    let Some(DomainIdx(g)) = host.domain else {
        let listed: Vec<&str> = host.nics.iter().map(|n| &*n.name).collect();
        out.push(Finding {
            severity: Severity::Error,
            kind: FindingKind::HostUnconnected,
            host: Some(host.name.clone()),
            nic: None,
            switch: None,
            port: None,
            expected: Some(String::from("a leaf switch on every RoCE NIC")),
            message: format!(
                "no NIC of {} sees a switch (NICs: {}): check cables, link state, and that no \
                 NIC firmware LLDP agent swallows LLDP",
                host.name,
                if listed.is_empty() {
                    String::from("none listed")
                } else {
                    listed.join(", ")
                }
            ),
        });
        return;
    };
    let group = &fabric.domains[g as usize];
    if fabric.rail_optimized {
        check_rails(fabric, host, group, out);
    }
    let none = Vec::new();
    let rails = expected.get(&g).unwrap_or(&none);
    check_missing_rails(fabric, host, group, rails, out);
}

/// Rails of the host's group that the host lacks: the NIC is absent, sees nothing, or sees a
/// device that is no switch. A NIC cabled to another host is left to [`check_host_cables`].
fn check_missing_rails(
    fabric: &Fabric,
    host: &Host,
    group: &Domain,
    expected: &[u16],
    out: &mut Vec<Finding>,
) {
    for &rail in expected {
        if host.nics.iter().any(|n| n.rail == rail && n.link.is_some()) {
            continue;
        }
        let unlinked = host.nics.iter().find(|n| n.rail == rail);
        if unlinked.is_some_and(|n| n.peer.as_ref().is_some_and(|p| p.host.is_some())) {
            continue;
        }
        let leaf = leaf_for_rail(fabric, group, rail);
        let to = leaf.map_or_else(String::new, |l| {
            format!(
                " it belongs on leaf {}{}",
                fabric.switch(l).name,
                free_ports_hint(fabric, l)
            )
        });
        let (nic, what) = match unlinked {
            Some(n) => (
                Some(n.name.to_string()),
                match &n.peer {
                    Some(p) => format!(
                        "NIC {} sees {} ({}), which is not a switch;",
                        n.name, p.system, p.port
                    ),
                    None => format!(
                        "NIC {} sees no LLDP neighbour (cable, link down, or LLDP blind);",
                        n.name
                    ),
                },
            ),
            None => (None, String::from("has no NIC for it;")),
        };
        // In a rail-optimised fabric a missing rail breaks NCCL's rail alignment; elsewhere
        // hosts with fewer NICs are often just a different model.
        let severity = if fabric.rail_optimized {
            Severity::Error
        } else {
            Severity::Warning
        };
        out.push(Finding {
            severity,
            kind: FindingKind::MissingRail,
            host: Some(host.name.clone()),
            nic,
            switch: leaf.map(|l| fabric.switch(l).name.clone()),
            port: None,
            expected: leaf.map(|l| format!("leaf {}", fabric.switch(l).name)),
            message: format!(
                "{} lacks {}: {what}{to}",
                host.name,
                rail_label(fabric, rail, None),
            ),
        });
    }
}

/// Where a NIC of `host` on `rail` belongs: the leaf of its group serving that rail.
fn home_leaf(fabric: &Fabric, host: &Host, rail: u16) -> Option<SwitchIdx> {
    let group = fabric.domain(host.domain?);
    leaf_for_rail(fabric, group, rail)
}

/// Cables between two hosts of the fabric, once per cable (from the end whose host and NIC
/// come first), naming both ends and where each belongs.
fn check_host_cables(fabric: &Fabric, host: &Host, out: &mut Vec<Finding>) {
    {
        for nic in &host.nics {
            let Some(peer) = &nic.peer else { continue };
            let (Some(other), None) = (peer.host, &nic.link) else {
                continue;
            };
            let far = fabric.host(other);
            let far_nic = far.nics.iter().find(|n| *n.name == *peer.port);
            let sees_back = far_nic
                .and_then(|n| n.peer.as_ref())
                .is_some_and(|p| p.host.is_some_and(|h| fabric.host(h).name == host.name));
            let first = natural_cmp(&host.name, &far.name)
                .then_with(|| natural_cmp(&nic.name, &peer.port))
                .is_le();
            if sees_back && !first {
                continue;
            }
            let belongs = |h: &Host, n: Option<&super::model::Nic>| -> Option<String> {
                let n = n?;
                let leaf = home_leaf(fabric, h, n.rail)?;
                Some(format!(
                    "{} {} belongs on leaf {}{}",
                    h.name,
                    n.name,
                    fabric.switch(leaf).name,
                    free_ports_hint(fabric, leaf)
                ))
            };
            let mut homes: Vec<String> = belongs(host, Some(nic)).into_iter().collect();
            homes.extend(belongs(far, far_nic));
            let fix = if homes.is_empty() {
                String::from("cable both to their leaves")
            } else {
                homes.join("; ")
            };
            let expected = home_leaf(fabric, host, nic.rail)
                .map(|l| format!("leaf {}", fabric.switch(l).name));
            out.push(Finding {
                severity: Severity::Error,
                kind: FindingKind::NotASwitch,
                host: Some(host.name.clone()),
                nic: Some(nic.name.to_string()),
                switch: None,
                port: None,
                expected: Some(expected.unwrap_or_else(|| String::from("a leaf switch"))),
                message: format!(
                    "{} {} is cabled to host {} {}, not to a switch: {fix}",
                    host.name, nic.name, far.name, peer.port
                ),
            });
        }
    }
}

/// Nothing placed means empty outputs: say so, and why; and name the hosts the caller listed
/// that no table shows.
fn check_placement(fabric: &Fabric, listed: &[String], out: &mut Vec<Finding>) {
    for name in listed {
        if fabric.host_by_name(name).is_none() {
            out.push(Finding {
                severity: Severity::Warning,
                kind: FindingKind::HostNotSeen,
                host: Some(name.clone()),
                nic: None,
                switch: None,
                port: None,
                expected: None,
                message: format!(
                    "host {name} was named as a host but no table shows it: collect its table \
                     (or its leaf's) and check that LLDP runs on its fabric NICs"
                ),
            });
        }
    }
    if fabric.placed_hosts() > 0 {
        return;
    }
    let why = if fabric.hosts.is_empty() {
        format!(
            "no system was recognised as a host ({} switches): name the hosts (--host, \
             --hosts-from: the Kubernetes node names) or their fabric NICs (--fabric-nics), or \
             capture hosts with `spinelctl lldp listen --role host`",
            fabric.switches.len()
        )
    } else {
        format!(
            "none of the {} hosts sees a fabric switch on a fabric NIC: check the captures, \
             the cabling and --fabric-nics",
            fabric.hosts.len()
        )
    };
    out.push(Finding {
        severity: Severity::Error,
        kind: FindingKind::NoHostsPlaced,
        host: None,
        nic: None,
        switch: None,
        port: None,
        expected: None,
        message: format!("no host could be placed in the fabric, so every output is empty: {why}"),
    });
}

fn check_rails(fabric: &Fabric, host: &Host, group: &Domain, out: &mut Vec<Finding>) {
    let conforming = |nic: &super::model::Nic| -> bool {
        nic.link.as_ref().is_some_and(|l| {
            let sw = fabric.switch(l.switch);
            sw.domain == host.domain && sw.rails.contains(&nic.rail)
        })
    };
    for nic in &host.nics {
        let Some(link) = &nic.link else { continue };
        let leaf = fabric.switch(link.switch);
        if leaf.domain == host.domain && leaf.rails.contains(&nic.rail) {
            continue; // the common case: nothing to say, nothing to format
        }
        let expected_leaf = leaf_for_rail(fabric, group, nic.rail);
        let expected = expected_leaf.map(|l| {
            format!(
                "leaf {}{}",
                fabric.switch(l).name,
                free_ports_hint(fabric, l)
            )
        });
        let goes = match &expected {
            Some(e) => format!("move it to {e}"),
            None => String::from("no leaf of its group serves that rail"),
        };
        let rail = rail_label(fabric, nic.rail, Some(&nic.name));
        if leaf.domain != host.domain {
            out.push(Finding {
                severity: Severity::Error,
                kind: FindingKind::WrongGroup,
                host: Some(host.name.clone()),
                nic: Some(nic.name.to_string()),
                switch: Some(leaf.name.clone()),
                port: Some(link.port.to_string()),
                expected: expected_leaf.map(|l| format!("leaf {}", fabric.switch(l).name)),
                message: format!(
                    "{} {} ({rail}) is on leaf {} port {}, outside its leaf group {}; {goes}",
                    host.name, nic.name, leaf.name, link.port, group.id
                ),
            });
            continue;
        }
        if leaf.rails.contains(&nic.rail) {
            continue;
        }
        let sharer = host.nics.iter().find(|o| {
            o.name != nic.name
                && conforming(o)
                && o.link.as_ref().is_some_and(|l| l.switch == link.switch)
        });
        let served: Vec<String> = leaf
            .rails
            .iter()
            .map(|r| rail_label(fabric, *r, None))
            .collect();
        let (kind, why) = match sharer {
            Some(o) => (
                FindingKind::SharedLeaf,
                format!(
                    "together with {} ({})",
                    o.name,
                    rail_label(fabric, o.rail, Some(&o.name))
                ),
            ),
            None => {
                let displaced = host.nics.iter().find(|o| {
                    o.name != nic.name
                        && o.link
                            .as_ref()
                            .is_some_and(|l| Some(l.switch) == expected_leaf)
                });
                let swap =
                    displaced.map_or_else(String::new, |o| format!(" (swapped with {})", o.name));
                (
                    FindingKind::SwappedRail,
                    format!("which serves {}{swap}", served.join(", ")),
                )
            }
        };
        out.push(Finding {
            severity: Severity::Error,
            kind,
            host: Some(host.name.clone()),
            nic: Some(nic.name.to_string()),
            switch: Some(leaf.name.clone()),
            port: Some(link.port.to_string()),
            expected: expected_leaf.map(|l| format!("leaf {}", fabric.switch(l).name)),
            message: format!(
                "{} {} ({rail}) is on leaf {} port {}, {why}; {goes}",
                host.name, nic.name, leaf.name, link.port
            ),
        });
    }
}

/// Most common value; ties go to the larger (a missing cable is likelier than an extra one).
fn mode(values: impl Iterator<Item = u32>) -> Option<u32> {
    let mut counts: HashMap<u32, u32> = HashMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)))
        .map(|(v, _)| v)
}

fn check_uplinks(fabric: &Fabric, domains: &[DomainIdx], out: &mut Vec<(u32, Finding)>) {
    // Uplink counts per (lower switch, upper switch), for the upper switches of `domains`.
    let mut upper = vec![false; fabric.switches.len()];
    for &DomainIdx(d) in domains {
        let d = &fabric.domains[d as usize];
        if d.tier >= 2 {
            for s in &d.switches {
                upper[s.0 as usize] = true;
            }
        }
    }
    let mut count: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    for l in &fabric.links {
        if l.kind == LinkKind::Uplink && upper[l.upper.switch.0 as usize] {
            *count
                .entry((l.lower.switch.0, l.upper.switch.0))
                .or_default() += 1;
        }
    }
    for &DomainIdx(di) in domains {
        let d = &fabric.domains[di as usize];
        if d.tier < 2 {
            continue;
        }
        let mut found = Vec::new();
        let mut children: Vec<SwitchIdx> = d
            .children
            .iter()
            .flat_map(|c| fabric.domain(*c).switches.iter().copied())
            .collect();
        children.sort();
        let mut corrected: HashMap<u32, i64> = HashMap::new();
        for &p in &d.switches {
            check_parent(fabric, d, p, &children, &count, &mut corrected, &mut found);
        }
        if d.switches.len() >= 2 {
            check_fanout(fabric, d, &children, &count, &corrected, &mut found);
        }
        out.extend(found.into_iter().map(|f| (di, f)));
    }
}

/// One upper switch of domain `d` against its children: an extra parallel link is an
/// asymmetric fan-out, a missing one (where most children have it) a missing uplink.
/// `corrected` collects what the parent's downlink total would be if every child matched the
/// usual count.
fn check_parent(
    fabric: &Fabric,
    d: &Domain,
    p: SwitchIdx,
    children: &[SwitchIdx],
    count: &FxHashMap<(u32, u32), u32>,
    corrected: &mut HashMap<u32, i64>,
    out: &mut Vec<Finding>,
) {
    let lower_tier = d.tier - 1;
    let linked: Vec<u32> = children
        .iter()
        .map(|c| count.get(&(c.0, p.0)).copied().unwrap_or(0))
        .collect();
    let n_linked = linked.iter().filter(|&&c| c > 0).count();
    let Some(expected) = mode(linked.iter().copied().filter(|&c| c > 0)) else {
        return;
    };
    let common = 2 * n_linked >= children.len();
    let parent = fabric.switch(p);
    for (c, &have) in children.iter().zip(&linked) {
        let child = fabric.switch(*c);
        if have > expected {
            *corrected.entry(p.0).or_default() -= i64::from(have - expected);
            let ports: Vec<String> = fabric
                .links
                .iter()
                .filter(|l| {
                    l.kind == LinkKind::Uplink && l.lower.switch == *c && l.upper.switch == p
                })
                .map(|l| l.lower.port.to_string())
                .collect();
            out.push(Finding {
                severity: Severity::Warning,
                kind: FindingKind::AsymmetricFanout,
                host: None,
                nic: None,
                switch: Some(parent.name.clone()),
                port: None,
                expected: Some(format!(
                    "{expected} link(s) from each {}",
                    tier_name(lower_tier)
                )),
                message: format!(
                    "{} {} has {have} links from {} {} (ports {}), {expected} from each \
                     other {}: ECMP over it is unbalanced",
                    tier_name(d.tier),
                    parent.name,
                    tier_name(lower_tier),
                    child.name,
                    ports.join(", "),
                    tier_name(lower_tier)
                ),
            });
            continue;
        }
        if have == expected || !common {
            continue;
        }
        *corrected.entry(p.0).or_default() += i64::from(expected - have);
        let has = if have == 0 {
            format!("has no link to {} {}", tier_name(d.tier), parent.name)
        } else {
            format!(
                "has {have} link(s) to {} {} where its peers have {expected}",
                tier_name(d.tier),
                parent.name
            )
        };
        out.push(Finding {
            severity: Severity::Error,
            kind: FindingKind::MissingUplink,
            host: None,
            nic: None,
            switch: Some(child.name.clone()),
            port: child.free_ports.first().map(|p| p.to_string()),
            expected: Some(format!("{} {}", tier_name(d.tier), parent.name)),
            message: format!(
                "{} {} {has} ({n_linked} of the {} {} in {} do); cable {}{} to {}{}",
                tier_name(lower_tier),
                child.name,
                children.len(),
                tier_plural(lower_tier),
                d.id,
                child.name,
                free_ports_hint(fabric, *c),
                parent.name,
                free_ports_hint(fabric, p)
            ),
        });
    }
}

/// Upper switches of one domain whose downlink totals differ from their peers' beyond what
/// missing uplinks explain.
fn check_fanout(
    fabric: &Fabric,
    d: &Domain,
    children: &[SwitchIdx],
    count: &FxHashMap<(u32, u32), u32>,
    corrected: &HashMap<u32, i64>,
    out: &mut Vec<Finding>,
) {
    let lower_tier = d.tier - 1;
    let totals: Vec<(SwitchIdx, u32, u32)> = d
        .switches
        .iter()
        .map(|&p| {
            let total: u32 = children
                .iter()
                .map(|c| count.get(&(c.0, p.0)).copied().unwrap_or(0))
                .sum();
            let fixed = i64::from(total) + corrected.get(&p.0).copied().unwrap_or(0);
            (p, total, u32::try_from(fixed.max(0)).unwrap_or(0))
        })
        .collect();
    let Some(usual) = mode(totals.iter().map(|t| t.2)) else {
        return;
    };
    for &(p, total, adjusted) in &totals {
        if adjusted == usual {
            continue;
        }
        let parent = fabric.switch(p);
        let reached = children
            .iter()
            .filter(|c| count.get(&(c.0, p.0)).is_some_and(|&n| n > 0))
            .count();
        out.push(Finding {
            severity: Severity::Warning,
            kind: FindingKind::AsymmetricFanout,
            host: None,
            nic: None,
            switch: Some(parent.name.clone()),
            port: None,
            expected: Some(format!("{usual} downlinks")),
            message: format!(
                "{} {} has {total} downlinks to {reached} of the {} {} in {}, its peers have \
                 {usual}: traffic through it is {}",
                tier_name(d.tier),
                parent.name,
                children.len(),
                tier_plural(lower_tier),
                d.id,
                if adjusted < usual {
                    "oversubscribed"
                } else {
                    "unbalanced"
                }
            ),
        });
    }
}

/// Domains left without a parent while higher tiers exist: every switch in them lacks uplinks.
fn check_rootless(fabric: &Fabric, domains: &[DomainIdx], out: &mut Vec<(u32, Finding)>) {
    for &DomainIdx(di) in domains {
        let d = &fabric.domains[di as usize];
        if d.parent.is_some() || d.tier >= fabric.depth {
            continue;
        }
        for &s in &d.switches {
            let sw = fabric.switch(s);
            out.push((di, Finding {
                severity: Severity::Error,
                kind: FindingKind::MissingUplink,
                host: None,
                nic: None,
                switch: Some(sw.name.clone()),
                port: sw.free_ports.first().map(|p| p.to_string()),
                expected: Some(format!("links to the {} tier", tier_name(d.tier + 1))),
                message: format!(
                    "{} {} has no uplink to any {} (neither its table nor any {}'s shows one){}: its \
                     hosts are cut off from the rest of the fabric",
                    tier_name(d.tier),
                    sw.name,
                    tier_name(d.tier + 1),
                    tier_name(d.tier + 1),
                    free_ports_hint(fabric, s)
                ),
            }));
        }
    }
}
