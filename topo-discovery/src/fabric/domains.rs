//! Domains: leaf groups at tier 1, then each higher tier's connected pieces, nested by
//! construction into a strict tree; rails per leaf; path-qualified ids.

use std::collections::HashMap;

use super::draft::Draft;
use super::model::{
    Domain, DomainIdx, Fabric, Host, HostIdx, LinkKind, Switch, SwitchIdx, SwitchLink,
};
use super::names::{disambiguate, group_name, qualify, sanitize_segment};

struct UnionFind(Vec<u32>);

impl UnionFind {
    fn new(n: usize) -> Self {
        Self((0..n as u32).collect())
    }
    fn find(&mut self, mut x: u32) -> u32 {
        while self.0[x as usize] != x {
            let parent = self.0[x as usize];
            self.0[x as usize] = self.0[parent as usize];
            x = parent;
        }
        x
    }
    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        // The smaller root wins, so the result does not depend on the order of unions.
        if ra < rb {
            self.0[rb as usize] = ra;
        } else if rb < ra {
            self.0[ra as usize] = rb;
        }
    }
}

/// Domains from the draft: leaf groups, rails per leaf, hosts in groups, higher tiers, ids.
pub(crate) fn build(draft: Draft) -> Fabric {
    let Draft {
        rails,
        mut switches,
        salts,
        confirmed,
        mut hosts,
        links,
        findings,
        depth,
    } = draft;
    let host_leaves = host_leaves(&hosts);
    let mut domains = leaf_groups(&host_leaves, &mut switches);
    drop(host_leaves);
    let rail_optimized = leaf_rails(&hosts, &mut switches, rails.len());
    assign_hosts(&mut hosts, &switches, &mut domains);
    higher_tiers(&mut domains, &mut switches, &links, depth);
    let segments = id_segments(&switches, &confirmed);
    let ids = IdSources {
        segments: &segments,
        salts: &salts,
        confirmed: &confirmed,
    };
    name_domains(&mut domains, &ids, depth);
    name_switches(&mut switches, &domains, &ids);
    for d in &mut domains {
        d.children.sort_by_key(|c| c.0);
    }
    Fabric {
        rails,
        rail_optimized,
        depth,
        switches,
        hosts,
        domains,
        links,
        findings,
    }
}

/// The leaves of each host (switch indices, sorted).
fn host_leaves(hosts: &[Host]) -> Vec<Vec<u32>> {
    hosts.iter().map(leaves_of).collect()
}

/// The leaves of one host (switch indices, sorted, once each).
pub(crate) fn leaves_of(h: &Host) -> Vec<u32> {
    let mut v: Vec<u32> = h
        .nics
        .iter()
        .filter_map(|n| n.link.as_ref())
        .map(|l| l.switch.0)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether two leaves that `shared` hosts link are one leaf group: at least half of the
/// smaller leaf's hosts share them, and when that is a single host, it is also at least half
/// of the larger leaf's. So one miscabled host (or one report, which can always invent a leaf
/// of its own) never joins a leaf to a group of several hosts, while a small design (two hosts
/// a leaf, one dual-homed server) still forms its groups.
pub(crate) fn strong_edge(shared: u32, hosts_a: u32, hosts_b: u32) -> bool {
    let (smaller, larger) = (hosts_a.min(hosts_b), hosts_a.max(hosts_b));
    2 * shared >= smaller && (shared >= 2 || 2 * shared >= larger)
}

/// Leaf groups (the tier-1 domains): leaves joined by the hosts they share. An edge counts only
/// as [`strong_edge`] says, so one miscabled host (or one report) does not merge two groups.
/// Each host contributes a star from its first leaf (in content order) rather than every pair:
/// the hosts of a group share that first leaf, and it keeps 8 rails at 7 edges a host. Sets
/// each leaf's domain.
fn leaf_groups(host_leaves: &[Vec<u32>], switches: &mut [Switch]) -> Vec<Domain> {
    let n_sw = switches.len();
    let mut hosts_per_switch = vec![0u32; n_sw];
    for leaves in host_leaves {
        for &l in leaves {
            hosts_per_switch[l as usize] += 1;
        }
    }
    let mut pairs: Vec<u64> = Vec::new();
    for leaves in host_leaves {
        if let Some((&a, rest)) = leaves.split_first() {
            pairs.extend(rest.iter().map(|&b| (u64::from(a) << 32) | u64::from(b)));
        }
    }
    pairs.sort_unstable();
    let mut uf = UnionFind::new(n_sw);
    for run in pairs.chunk_by(|a, b| a == b) {
        let (a, b) = ((run[0] >> 32) as u32, run[0] as u32);
        let shared = run.len() as u32;
        if strong_edge(
            shared,
            hosts_per_switch[a as usize],
            hosts_per_switch[b as usize],
        ) {
            uf.union(a, b);
        }
    }
    drop(pairs);
    let mut domains: Vec<Domain> = Vec::new();
    let mut group_of_root: HashMap<u32, u32> = HashMap::new();
    // Switch indices are in content order, so iterating them gives a stable group order.
    for sw in 0..n_sw as u32 {
        if switches[sw as usize].tier != Some(1) {
            continue;
        }
        let root = uf.find(sw);
        let d = *group_of_root.entry(root).or_insert_with(|| {
            domains.push(new_domain(1));
            (domains.len() - 1) as u32
        });
        domains[d as usize].switches.push(SwitchIdx(sw));
        switches[sw as usize].domain = Some(DomainIdx(d));
    }
    domains
}

/// Per leaf: (rail, hosts) for every rail its hosts' NICs carry, sorted by rail.
fn rail_counts(hosts: &[Host], n_switches: usize, skip: &[Vec<bool>]) -> Vec<Vec<(u16, u32)>> {
    let mut counts: Vec<Vec<(u16, u32)>> = vec![Vec::new(); n_switches];
    for (h, host) in hosts.iter().enumerate() {
        for (i, nic) in host.nics.iter().enumerate() {
            let Some(l) = &nic.link else { continue };
            if skip.get(h).is_some_and(|s| s.get(i) == Some(&true)) {
                continue;
            }
            let per_rail = &mut counts[l.switch.0 as usize];
            match per_rail.iter_mut().find(|(r, _)| *r == nic.rail) {
                Some(c) => c.1 += 1,
                None => per_rail.push((nic.rail, 1)),
            }
        }
    }
    for c in &mut counts {
        c.sort_unstable();
    }
    counts
}

/// Per host and NIC: whether the NIC is one of a swapped pair: it sits on the main leaf of
/// another of the host's rails while that NIC sits on this one's main leaf. Such NICs say
/// nothing about which rails a leaf serves. Hosts without such a NIC get an empty list.
fn swapped_nics(hosts: &[Host], counts: &[Vec<(u16, u32)>]) -> Vec<Vec<bool>> {
    let max: Vec<u32> = counts
        .iter()
        .map(|c| c.iter().map(|x| x.1).max().unwrap_or(0))
        .collect();
    let is_main = |leaf: u32, rail: u16| {
        counts[leaf as usize]
            .iter()
            .any(|&(r, n)| r == rail && n == max[leaf as usize])
    };
    hosts.iter().map(|h| host_swapped(h, &is_main)).collect()
}

/// Per NIC of one host: whether it is one of a swapped pair (see [`swapped_nics`]), given
/// whether a rail is a leaf's main rail; empty when no NIC of the host is displaced.
pub(crate) fn host_swapped(h: &Host, is_main: &impl Fn(u32, u16) -> bool) -> Vec<bool> {
    let on = |i: usize| h.nics[i].link.as_ref().map(|l| l.switch.0);
    let displaced = (0..h.nics.len()).any(|i| on(i).is_some_and(|a| !is_main(a, h.nics[i].rail)));
    if !displaced {
        return Vec::new();
    }
    (0..h.nics.len())
        .map(|i| {
            let Some(a) = on(i) else { return false };
            let r = h.nics[i].rail;
            !is_main(a, r)
                && (0..h.nics.len()).any(|j| {
                    let s = h.nics[j].rail;
                    j != i
                        && on(j).is_some_and(|b| {
                            b != a && is_main(a, s) && is_main(b, r) && !is_main(b, s)
                        })
                })
        })
        .collect()
}

/// The rails a leaf serves from its (rail, hosts) counts: every rail with at least half the
/// count of its most common one; `None` for a switch no NIC counts on.
pub(crate) fn served(counts: &[(u16, u32)]) -> Option<Vec<u16>> {
    let max = counts.iter().map(|x| x.1).max()?;
    Some(
        counts
            .iter()
            .filter(|x| 2 * x.1 >= max)
            .map(|x| x.0)
            .collect(),
    )
}

/// Rails per leaf: the rails carried by at least half as many hosts as its main rail, not
/// counting swapped pairs of NICs (so one host whose cables are swapped between two leaves of
/// a small group makes neither leaf serve both rails). Returns whether the fabric is
/// rail-optimised: several rails, and most leaves serve fewer rails than exist.
fn leaf_rails(hosts: &[Host], switches: &mut [Switch], n_rails: usize) -> bool {
    let all = rail_counts(hosts, switches.len(), &[]);
    let swapped = swapped_nics(hosts, &all);
    let counts = if swapped.iter().flatten().any(|&s| s) {
        rail_counts(hosts, switches.len(), &swapped)
    } else {
        all
    };
    let mut aligned = 0usize;
    let mut leaves = 0usize;
    for (sw, c) in counts.iter().enumerate() {
        let Some(served) = served(c) else {
            continue;
        };
        leaves += 1;
        if served.len() < n_rails {
            aligned += 1;
        }
        switches[sw].rails = served;
    }
    n_rails >= 2 && 2 * aligned > leaves
}

/// Each host joins the group holding most of its NICs (ties: its lowest rail's group).
fn assign_hosts(hosts: &mut [Host], switches: &[Switch], domains: &mut [Domain]) {
    for (hi, h) in hosts.iter_mut().enumerate() {
        if let Some(g) = best_group(h, switches) {
            h.domain = Some(DomainIdx(g));
            domains[g as usize].hosts.push(HostIdx(hi as u32));
        }
    }
}

/// The leaf group holding most of a host's NICs (ties: its lowest rail's group).
pub(crate) fn best_group(h: &Host, switches: &[Switch]) -> Option<u32> {
    let mut votes: Vec<(u32, u32, u16)> = Vec::new(); // (group, count, lowest rail)
    for nic in &h.nics {
        let Some(l) = &nic.link else { continue };
        let Some(DomainIdx(g)) = switches[l.switch.0 as usize].domain else {
            continue;
        };
        match votes.iter_mut().find(|v| v.0 == g) {
            Some(v) => {
                v.1 += 1;
                v.2 = v.2.min(nic.rail);
            }
            None => votes.push((g, 1, nic.rail)),
        }
    }
    votes
        .iter()
        .max_by(|a, b| {
            a.1.cmp(&b.1)
                .then_with(|| b.2.cmp(&a.2))
                .then_with(|| b.0.cmp(&a.0))
        })
        .map(|v| v.0)
}

/// Higher tiers: at tier k, the tier k-1 domains and tier-k switches joined by uplinks form
/// one domain each; every tier k-1 domain gets its parent.
fn higher_tiers(
    domains: &mut Vec<Domain>,
    switches: &mut [Switch],
    links: &[SwitchLink],
    depth: u8,
) {
    let mut tier_start = 0usize;
    for k in 2..=depth {
        let below: Vec<u32> = (tier_start..domains.len()).map(|d| d as u32).collect();
        tier_start = domains.len();
        let base = below.first().copied().unwrap_or(0);
        let m = below.len() as u32;
        let uppers: Vec<u32> = (0..switches.len() as u32)
            .filter(|&s| switches[s as usize].tier == Some(k))
            .collect();
        let upper_pos: HashMap<u32, u32> = uppers
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, m + i as u32))
            .collect();
        let mut uf = UnionFind::new(below.len() + uppers.len());
        for l in links.iter().filter(|l| l.kind == LinkKind::Uplink) {
            let (lo, up) = (&switches[l.lower.switch.0 as usize], l.upper.switch.0);
            if lo.tier != Some(k - 1) || switches[up as usize].tier != Some(k) {
                continue;
            }
            let (Some(DomainIdx(d)), Some(&u)) = (lo.domain, upper_pos.get(&up)) else {
                continue;
            };
            uf.union(d - base, u);
        }
        let mut domain_of_root: HashMap<u32, u32> = HashMap::new();
        for (i, &sw) in uppers.iter().enumerate() {
            let root = uf.find(m + i as u32);
            let d = *domain_of_root.entry(root).or_insert_with(|| {
                domains.push(new_domain(k));
                (domains.len() - 1) as u32
            });
            domains[d as usize].switches.push(SwitchIdx(sw));
            switches[sw as usize].domain = Some(DomainIdx(d));
        }
        for &child in &below {
            let root = uf.find(child - base);
            if let Some(&parent) = domain_of_root.get(&root) {
                domains[child as usize].parent = Some(DomainIdx(parent));
                domains[parent as usize].children.push(DomainIdx(child));
            }
        }
    }
}

/// Each switch's id segment: its name sanitised, without the domain part of a fully
/// qualified name (`leaf1.fab.example` gives `leaf1`) when the first label is a host name
/// (starts with a letter) that no other switch's first label repeats. So FQDN fabrics keep
/// readable ids instead of falling back to hashes. Only confirmed switches count against a
/// confirmed one: a switch one report alone shows never changes a real switch's segment.
fn id_segments(switches: &[Switch], confirmed: &[bool]) -> Vec<String> {
    let first = |name: &str| -> Option<String> {
        let (label, rest) = name.split_once('.')?;
        (label.starts_with(|c: char| c.is_ascii_alphabetic()) && !rest.is_empty())
            .then(|| label.to_ascii_lowercase())
    };
    let mut count: HashMap<String, (u32, u32)> = HashMap::new();
    for (sw, &sure) in switches.iter().zip(confirmed) {
        let key = first(&sw.name).unwrap_or_else(|| sw.name.to_ascii_lowercase());
        let c = count.entry(key).or_default();
        if sure {
            c.0 += 1;
        } else {
            c.1 += 1;
        }
    }
    switches
        .iter()
        .zip(confirmed)
        .map(|(sw, &sure)| match first(&sw.name) {
            Some(label)
                if count.get(&label).is_some_and(
                    |&(c, u)| {
                        if sure { c == 1 } else { c + u == 1 }
                    },
                ) =>
            {
                sanitize_segment(&label)
            }
            _ => sanitize_segment(&sw.name),
        })
        .collect()
}

/// What ids are made of, per switch.
struct IdSources<'a> {
    segments: &'a [String],
    salts: &'a [String],
    confirmed: &'a [bool],
}

/// Ids one tier (or the switches) want, counted: (by confirmed owners, by all owners).
#[derive(Default)]
struct IdCounts(HashMap<String, (u32, u32)>);

impl IdCounts {
    fn add(&mut self, id: &str, confirmed: bool) {
        let c = self.0.entry(id.to_owned()).or_default();
        c.1 += 1;
        if confirmed {
            c.0 += 1;
        }
    }

    /// Whether an owner (confirmed or not) of `id` shares it with another that takes
    /// precedence: a confirmed owner yields only to confirmed ones, an unconfirmed one to all.
    fn clashes(&self, id: &str, confirmed: bool) -> bool {
        self.0
            .get(id)
            .is_some_and(|&(c, all)| if confirmed { c > 1 } else { all > 1 })
    }
}

/// Names and ids, top-down so that children qualify with their parent's final id; clashes get
/// a hash of their switches' salts. A domain is confirmed when one of its switches is; a
/// confirmed domain keeps its id against unconfirmed ones.
fn name_domains(domains: &mut [Domain], ids: &IdSources<'_>, depth: u8) {
    for d in domains.iter_mut() {
        let refs: Vec<&str> = d
            .switches
            .iter()
            .map(|s| ids.segments[s.0 as usize].as_str())
            .collect();
        d.name = group_name(&refs);
    }
    let sure: Vec<bool> = domains
        .iter()
        .map(|d| d.switches.iter().any(|s| ids.confirmed[s.0 as usize]))
        .collect();
    // Final ids of the tiers above, with whether a confirmed domain holds each.
    let mut taken: HashMap<String, bool> = HashMap::new();
    for tier in (1..=depth.max(1)).rev() {
        let at: Vec<usize> = (0..domains.len())
            .filter(|&d| domains[d].tier == tier)
            .collect();
        let mut wanted: Vec<String> = at
            .iter()
            .map(|&d| {
                let parent = domains[d].parent.map(|p| domains[p.0 as usize].id.clone());
                qualify(parent.as_deref(), &domains[d].name)
            })
            .collect();
        let mut count = IdCounts::default();
        for (id, &d) in wanted.iter().zip(&at) {
            count.add(id, sure[d]);
        }
        let clash: Vec<bool> = wanted
            .iter()
            .zip(&at)
            .map(|(id, &d)| {
                count.clashes(id, sure[d])
                    || taken
                        .get(id)
                        .is_some_and(|&held_sure| held_sure || !sure[d])
            })
            .collect();
        for (i, &d) in at.iter().enumerate() {
            if clash[i] {
                let salt: Vec<&str> = domains[d]
                    .switches
                    .iter()
                    .map(|s| ids.salts[s.0 as usize].as_str())
                    .collect();
                wanted[i] = disambiguate(&wanted[i], &salt.join(","));
            }
        }
        for (i, &d) in at.iter().enumerate() {
            let held = taken.entry(wanted[i].clone()).or_insert(false);
            *held |= sure[d];
            domains[d].id = std::mem::take(&mut wanted[i]);
        }
    }
}

/// Switch ids: the domain's id for a domain's only switch, else qualified by it; a confirmed
/// switch keeps its id against unconfirmed ones.
fn name_switches(switches: &mut [Switch], domains: &[Domain], ids: &IdSources<'_>) {
    let mut wanted: Vec<String> = switches
        .iter()
        .zip(ids.segments)
        .map(|(sw, segment)| match sw.domain {
            Some(DomainIdx(d)) if domains[d as usize].switches.len() == 1 => {
                domains[d as usize].id.clone()
            }
            Some(DomainIdx(d)) => qualify(Some(&domains[d as usize].id), segment),
            None => segment.clone(),
        })
        .collect();
    let mut count = IdCounts::default();
    for (id, &sure) in wanted.iter().zip(ids.confirmed) {
        count.add(id, sure);
    }
    for (i, id) in wanted.iter_mut().enumerate() {
        if count.clashes(id, ids.confirmed[i]) {
            *id = disambiguate(id, &ids.salts[i]);
        }
    }
    for (sw, id) in switches.iter_mut().zip(wanted) {
        sw.id = id;
    }
}

fn new_domain(tier: u8) -> Domain {
    Domain {
        id: String::new(),
        name: String::new(),
        tier,
        parent: None,
        children: Vec::new(),
        switches: Vec::new(),
        hosts: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::fabric::model::{LinkEnd, Nic, NicLink, PortRef};

    fn sw(name: &str, tier: Option<u8>) -> Switch {
        Switch {
            id: String::new(),
            name: name.to_owned(),
            chassis_id: None,
            tier,
            domain: None,
            rails: Vec::new(),
            free_ports: Vec::new(),
            management: false,
        }
    }

    fn port(name: &str) -> PortRef {
        PortRef {
            name: Arc::from(name),
            resolved: true,
            description: None,
        }
    }

    /// A host whose NIC k (rail k) is on switch `leaves[k]`.
    fn host(name: &str, leaves: &[u32]) -> Host {
        Host {
            name: name.to_owned(),
            domain: None,
            nics: leaves
                .iter()
                .enumerate()
                .map(|(k, &l)| Nic {
                    name: Arc::from(format!("nic{k}")),
                    rail: k as u16,
                    link: Some(NicLink {
                        switch: SwitchIdx(l),
                        port: port("swp1"),
                    }),
                    peer: None,
                })
                .collect(),
            seen_from_switches_only: false,
        }
    }

    fn uplink(lower: u32, upper: u32) -> SwitchLink {
        SwitchLink {
            lower: LinkEnd {
                switch: SwitchIdx(lower),
                port: port("swp51"),
            },
            upper: LinkEnd {
                switch: SwitchIdx(upper),
                port: port("swp1"),
            },
            kind: LinkKind::Uplink,
        }
    }

    /// leaf1-4 (0-3) in two rail groups, spine1 (4) above all; h1-h4 on 0+1, h5-h8 on 2+3, and
    /// h9 miscabled across the groups.
    fn two_groups() -> (Vec<Switch>, Vec<Host>, Vec<SwitchLink>) {
        let mut switches: Vec<Switch> = (1..=4).map(|l| sw(&format!("leaf{l}"), Some(1))).collect();
        switches.push(sw("spine1", Some(2)));
        let mut hosts: Vec<Host> = (1..=8)
            .map(|h| host(&format!("h{h}"), if h <= 4 { &[0, 1] } else { &[2, 3] }))
            .collect();
        hosts.push(host("h9", &[1, 2]));
        let links = (0..4).map(|l| uplink(l, 4)).collect();
        (switches, hosts, links)
    }

    #[test]
    fn host_leaves_are_sorted_and_unique() {
        assert_eq!(host_leaves(&[host("h", &[3, 1, 3])]), [vec![1, 3]]);
    }

    #[test]
    fn leaf_groups_join_shared_leaves_but_not_one_miscabled_host() {
        let (mut switches, hosts, _) = two_groups();
        let groups = leaf_groups(&host_leaves(&hosts), &mut switches);
        let members: Vec<Vec<u32>> = groups
            .iter()
            .map(|d| d.switches.iter().map(|s| s.0).collect())
            .collect();
        assert_eq!(members, [vec![0, 1], vec![2, 3]]);
        assert_eq!(switches[3].domain, Some(DomainIdx(1)));
        assert_eq!(switches[4].domain, None, "spines are not leaves");
    }

    #[test]
    fn leaves_serve_their_main_rails_and_the_fabric_is_rail_optimised() {
        let (mut switches, hosts, _) = two_groups();
        assert!(leaf_rails(&hosts, &mut switches, 2));
        assert_eq!(switches[0].rails, [0]);
        assert_eq!(
            switches[1].rails,
            [1],
            "h9's rail 0 on leaf2 is one of five"
        );
        // Every NIC on one leaf: that leaf serves both rails, nothing is rail-optimised.
        let mut one = vec![sw("leaf1", Some(1))];
        assert!(!leaf_rails(&[host("h1", &[0, 0])], &mut one, 2));
        assert_eq!(one[0].rails, [0, 1]);
    }

    #[test]
    fn a_swapped_pair_of_nics_serves_no_rail_even_in_a_small_group() {
        // leaf1 (0) and leaf2 (1); h1, h3 cabled right; h2 swapped; h4 has no rail-1 link.
        let mut switches = vec![sw("leaf1", Some(1)), sw("leaf2", Some(1))];
        let mut hosts = vec![
            host("h1", &[0, 1]),
            host("h2", &[1, 0]),
            host("h3", &[0, 1]),
            host("h4", &[0]),
        ];
        hosts[3].nics.truncate(1);
        let all = rail_counts(&hosts, 2, &[]);
        let swapped = swapped_nics(&hosts, &all);
        assert_eq!(swapped[1], [true, true]);
        assert!(swapped[0].is_empty() && swapped[2].is_empty());
        assert!(leaf_rails(&hosts, &mut switches, 2));
        assert_eq!(
            (&switches[0].rails[..], &switches[1].rails[..]),
            (&[0][..], &[1][..])
        );
    }

    #[test]
    fn hosts_join_the_group_with_most_of_their_nics_ties_by_lowest_rail() {
        let (mut switches, mut hosts, _) = two_groups();
        let mut groups = leaf_groups(&host_leaves(&hosts), &mut switches);
        assign_hosts(&mut hosts, &switches, &mut groups);
        assert_eq!(hosts[0].domain, Some(DomainIdx(0)));
        assert_eq!(hosts[7].domain, Some(DomainIdx(1)));
        assert_eq!(
            hosts[8].domain,
            Some(DomainIdx(0)),
            "h9: rail 0 is in group 0"
        );
        assert_eq!(groups[0].hosts.len(), 5);
    }

    #[test]
    fn higher_tiers_nest_groups_under_spine_domains() {
        let (mut switches, hosts, links) = two_groups();
        let mut domains = leaf_groups(&host_leaves(&hosts), &mut switches);
        higher_tiers(&mut domains, &mut switches, &links, 2);
        assert_eq!(domains.len(), 3);
        assert_eq!(domains[2].tier, 2);
        assert_eq!(domains[0].parent, Some(DomainIdx(2)));
        assert_eq!(domains[2].children, [DomainIdx(0), DomainIdx(1)]);
        assert_eq!(switches[4].domain, Some(DomainIdx(2)));
    }

    #[test]
    fn ids_are_path_qualified_and_switch_ids_follow_their_domain() {
        let (mut switches, hosts, links) = two_groups();
        let mut domains = leaf_groups(&host_leaves(&hosts), &mut switches);
        higher_tiers(&mut domains, &mut switches, &links, 2);
        let salts: Vec<String> = switches.iter().map(|s| s.name.clone()).collect();
        let confirmed = vec![true; switches.len()];
        let segments = id_segments(&switches, &confirmed);
        let ids = IdSources {
            segments: &segments,
            salts: &salts,
            confirmed: &confirmed,
        };
        name_domains(&mut domains, &ids, 2);
        let got: Vec<&str> = domains.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(got, ["spine1.leaf1-2", "spine1.leaf3-4", "spine1"]);
        name_switches(&mut switches, &domains, &ids);
        assert_eq!(switches[0].id, "spine1.leaf1-2.leaf1");
        assert_eq!(switches[4].id, "spine1");
    }

    #[test]
    fn fully_qualified_names_give_readable_segments_unless_their_first_labels_clash() {
        let names = [
            "leaf1.fab.example",
            "Spine1.fab.example",
            "leaf2.pod1.example",
            "leaf2.pod2.example",
            "10.0.0.1",
            "tor",
        ];
        let switches: Vec<Switch> = names.iter().map(|n| sw(n, None)).collect();
        assert_eq!(
            id_segments(&switches, &vec![true; switches.len()]),
            [
                "leaf1",
                "spine1",
                "leaf2-pod1-example",
                "leaf2-pod2-example",
                "10-0-0-1",
                "tor"
            ]
        );
    }
}
