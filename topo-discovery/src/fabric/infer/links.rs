//! Switch links (one per cable, seen from one end or both) and free ports.

use std::sync::Arc;

use crate::fabric::model::{LinkEnd, LinkKind, PortRef, Switch, SwitchIdx, SwitchLink};
use crate::fabric::names::natural_cmp;
use crate::fabric::raw::{Interner, NONE, RawNeighbor, hi, key, lo};

use super::observe::{PortMaps, SwitchSighting};

/// A switch sighting with the far port resolved.
struct Seen {
    from: u32,
    from_port: u32,
    to: u32,
    to_port: PortRef,
    /// Interned name of the far port when resolved, else [`NONE`].
    to_sym: u32,
    /// Interned Port Description of the far port, or [`NONE`].
    to_descr: u32,
}

/// Phase 13 (reads switch sightings and port maps): pairs each cable's observations from its
/// two ends. An observation from switch A says "my port p sees B's port q"; one from B says "my
/// port q sees A's port p". They are the same cable when either end's port matches what the
/// other side reported; with neither end resolvable, when each side's Port Description names
/// the other's port (lldpd's default). What remains unmatched is a cable seen from one end only.
/// Adds both ends' ports to `used`.
pub(super) fn switch_links(
    mut sightings: Vec<SwitchSighting>,
    neighbors: &[RawNeighbor],
    ports: &PortMaps,
    strings: &Interner,
    used: &mut Vec<u64>,
) -> Vec<SwitchLink> {
    sightings.sort_unstable_by_key(|s| (s.from.min(s.to), s.from.max(s.to), s.from, s.from_port));
    let mut links = Vec::with_capacity(sightings.len() / 2 + 1);
    // Buffers reused across switch pairs: most pairs have one or two sightings.
    let mut seen: Vec<Seen> = Vec::new();
    let mut hi_used: Vec<bool> = Vec::new();
    for pair in sightings.chunk_by(|a, b| {
        (a.from.min(a.to), a.from.max(a.to)) == (b.from.min(b.to), b.from.max(b.to))
    }) {
        let lo_sw = pair[0].from.min(pair[0].to);
        seen.clear();
        seen.extend(pair.iter().map(|s| {
            let n = &neighbors[s.src as usize];
            let (to_port, to_sym) = ports.resolve(strings, s.to, n);
            Seen {
                from: s.from,
                from_port: s.from_port,
                to: s.to,
                to_port,
                to_sym,
                to_descr: n.port_descr,
            }
        }));
        seen.sort_by(|a, b| {
            a.from
                .cmp(&b.from)
                .then_with(|| natural_cmp(strings.get(a.from_port), strings.get(b.from_port)))
                .then_with(|| natural_cmp(&a.to_port.name, &b.to_port.name))
        });
        seen.dedup_by(|a, b| {
            a.from == b.from && a.from_port == b.from_port && a.to_port.name == b.to_port.name
        });
        // Sorted by observer first, so the lower switch's sightings come first.
        let split = seen.partition_point(|x| x.from == lo_sw);
        let (from_lo, from_hi) = seen.split_at(split);
        hi_used.clear();
        hi_used.resize(from_hi.len(), false);
        pair_up(from_lo, from_hi, &mut hi_used, strings, used, &mut links);
    }
    links
}

/// Matches the lower switch's sightings of a pair with the upper one's; unmatched ones stay
/// links seen from one end.
fn pair_up(
    from_lo: &[Seen],
    from_hi: &[Seen],
    hi_used: &mut [bool],
    strings: &Interner,
    used: &mut Vec<u64>,
    links: &mut Vec<SwitchLink>,
) {
    for a in from_lo {
        let matched = from_hi.iter().enumerate().position(|(i, b)| {
            !hi_used[i]
                && ((a.to_sym != NONE && a.to_sym == b.from_port)
                    || (b.to_sym != NONE && b.to_sym == a.from_port)
                    || (a.to_sym == NONE
                        && b.to_sym == NONE
                        && a.to_descr == b.from_port
                        && b.to_descr == a.from_port))
        });
        used.push(key(a.from, a.from_port));
        let upper = match matched {
            Some(i) => {
                hi_used[i] = true;
                used.push(key(a.to, from_hi[i].from_port));
                PortRef {
                    name: strings.get(from_hi[i].from_port).clone(),
                    resolved: true,
                    description: a.to_port.description.clone(),
                }
            }
            None => {
                if a.to_sym != NONE {
                    used.push(key(a.to, a.to_sym));
                }
                a.to_port.clone()
            }
        };
        links.push(SwitchLink {
            lower: LinkEnd {
                switch: SwitchIdx(a.from),
                port: own_port(strings.get(a.from_port)),
            },
            upper: LinkEnd {
                switch: SwitchIdx(a.to),
                port: upper,
            },
            kind: LinkKind::Unplaced,
        });
    }
    for (i, b) in from_hi.iter().enumerate() {
        if hi_used[i] {
            continue;
        }
        used.push(key(b.from, b.from_port));
        if b.to_sym != NONE {
            used.push(key(b.to, b.to_sym));
        }
        links.push(SwitchLink {
            lower: LinkEnd {
                switch: SwitchIdx(b.to),
                port: b.to_port.clone(),
            },
            upper: LinkEnd {
                switch: SwitchIdx(b.from),
                port: own_port(strings.get(b.from_port)),
            },
            kind: LinkKind::Unplaced,
        });
    }
}

fn own_port(name: &Arc<str>) -> PortRef {
    PortRef {
        name: name.clone(),
        resolved: true,
        description: None,
    }
}

/// Phase 14 (reads listed, busy and used ports): free ports are listed in the switch's own
/// table with no neighbour, and are not the far end of any cable seen from elsewhere (a
/// listening host is invisible to its leaf). Sets each switch's `free_ports`.
pub(super) fn free_ports(
    listed: &[u64],
    busy: &[u64],
    mut used: Vec<u64>,
    strings: &Interner,
    switches: &mut [Switch],
) {
    used.sort_unstable();
    used.dedup();
    let mut free: Vec<(u32, Arc<str>)> = Vec::new();
    let (mut bi, mut ui) = (0usize, 0usize);
    for &k in listed {
        while bi < busy.len() && busy[bi] < k {
            bi += 1;
        }
        while ui < used.len() && used[ui] < k {
            ui += 1;
        }
        if busy.get(bi) != Some(&k) && used.get(ui) != Some(&k) {
            free.push((hi(k), strings.get(lo(k)).clone()));
        }
    }
    free.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| natural_cmp(&a.1, &b.1)));
    for (sw, port) in free {
        switches[sw as usize].free_ports.push(port);
    }
}
