//! Tiers: leaves have hosts; each next tier is what the previous one reaches.

use std::collections::VecDeque;

use crate::fabric::model::{Finding, FindingKind, Host, LinkKind, Severity, Switch, SwitchLink};

/// Phase 15 (reads hosts' links and switch links): each switch's tier, breadth-first from the
/// leaves, never through a management switch; `unplaced_switch` for what no leaf reaches.
/// Returns the depth (at least 1 when there are switches).
pub(super) fn tiers(
    switches: &mut [Switch],
    hosts: &[Host],
    links: &[SwitchLink],
    findings: &mut Vec<Finding>,
) -> u8 {
    let mut adjacency: Vec<Vec<u32>> = vec![Vec::new(); switches.len()];
    for l in links {
        let (a, b) = (l.lower.switch.0, l.upper.switch.0);
        if switches[a as usize].management || switches[b as usize].management {
            continue;
        }
        adjacency[a as usize].push(b);
        adjacency[b as usize].push(a);
    }
    let mut queue = VecDeque::new();
    for h in hosts {
        for nic in &h.nics {
            if let Some(link) = &nic.link {
                let sw = &mut switches[link.switch.0 as usize];
                if sw.tier.is_none() {
                    sw.tier = Some(1);
                    queue.push_back(link.switch.0);
                }
            }
        }
    }
    let mut depth = 0u8;
    while let Some(sw) = queue.pop_front() {
        let tier = switches[sw as usize].tier.unwrap_or(1);
        depth = depth.max(tier);
        for &next in &adjacency[sw as usize] {
            if switches[next as usize].tier.is_none() {
                switches[next as usize].tier = Some(tier.saturating_add(1));
                queue.push_back(next);
            }
        }
    }
    for sw in switches
        .iter()
        .filter(|s| s.tier.is_none() && !s.management)
    {
        findings.push(Finding {
            severity: Severity::Warning,
            kind: FindingKind::UnplacedSwitch,
            host: None,
            nic: None,
            switch: Some(sw.name.clone()),
            port: None,
            expected: None,
            message: format!(
                "switch {} is connected to no leaf (no host or leaf reaches it), so it has no \
                 tier: a management switch, or its links to the fabric were not observed",
                sw.name
            ),
        });
    }
    depth.max(u8::from(!switches.is_empty()))
}

/// Phase 16 (reads tiers): orients links lower tier first; marks peer and unplaced links.
pub(super) fn orient(links: Vec<SwitchLink>, switches: &[Switch]) -> Vec<SwitchLink> {
    links
        .into_iter()
        .map(|mut l| {
            let ta = switches[l.lower.switch.0 as usize].tier;
            let tb = switches[l.upper.switch.0 as usize].tier;
            l.kind = match (ta, tb) {
                (Some(a), Some(b)) if a == b => LinkKind::Peer,
                (Some(a), Some(b)) => {
                    if a > b {
                        std::mem::swap(&mut l.lower, &mut l.upper);
                    }
                    LinkKind::Uplink
                }
                _ => LinkKind::Unplaced,
            };
            l
        })
        .collect()
}
