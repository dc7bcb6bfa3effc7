//! Captures of neighbours only (`lldpcli show neighbors`) carry nothing about the box that
//! made them: their observer's name is a stand-in taken from the file (or ConfigMap key). When
//! that name is not the box's (a management IP, an inventory id, `lf1a.json0.json`), the box
//! would appear twice, once under the file's name and once as its neighbours see it, and a
//! correct fabric would look miswired. So before inference each stand-in is matched to the
//! chassis its cabling shows:
//!
//! the capture X lists neighbour T on its port P, and T's own table lists, on the port X saw
//! (by Port ID, Port Description or T's advertised Port IDs), a neighbour Y whose port is P
//! (or that names no port X has): then X is Y. Chassis ID and port both line up; a capture of
//! neighbours only holds nothing X itself advertises, so DCBX settings cannot be compared.
//!
//! Tables whose box is known (their own chassis ID, or a name of their own that one chassis
//! goes by) anchor the matching; each stand-in placed becomes an anchor in turn (hosts place
//! leaves, leaves place spines). A stand-in that cabling cannot place is matched by its name,
//! as before, and cabling may overrule that name later (a file named like another box).

use std::fmt;

use rustc_hash::FxHashMap;

use crate::fabric::names::natural_cmp;
use crate::fabric::raw::{Interner, NONE, RawTables};

use super::identity::sightings;
use super::naming::NameIndex;

/// What was decided about one capture of neighbours only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandInNote {
    /// Where the capture came from (a file, a ConfigMap key).
    pub source: String,
    /// The name it stood under (from its file name).
    pub stand_in: String,
    /// The box it is: the name it now goes by, or `None` when nothing places it and it keeps
    /// its stand-in name.
    pub name: Option<String>,
    /// Why, for people.
    pub why: String,
}

impl fmt::Display for StandInNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.source, self.why)
    }
}

/// A capture that cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndecidedStandIn {
    /// Where it came from.
    pub source: String,
    /// The boxes it could be (their names), none when nothing fits.
    pub candidates: Vec<String>,
    /// Why, for people.
    pub why: String,
}

/// Captures whose box cannot be decided, or that are one box twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct StandInError {
    /// Every capture that could not be placed, in source order.
    pub undecided: Vec<UndecidedStandIn>,
}

impl fmt::Display for StandInError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot tell which box {} of the captures of neighbours only {} (no verdict on \
             the cabling is built on a naming mismatch): ",
            self.undecided.len(),
            if self.undecided.len() == 1 {
                "is"
            } else {
                "are"
            }
        )?;
        for (i, u) in self.undecided.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{}: {}", u.source, u.why)?;
        }
        f.write_str(
            ". Capture `lldpcli -f json0 show interfaces details` into the same file (it names \
             the box), or name it with NAME=FILE",
        )
    }
}

/// How a stand-in was placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placed {
    No,
    ByName(u32),
    ByCabling(u32),
}

impl Placed {
    fn chassis(self) -> Option<u32> {
        match self {
            Placed::No => None,
            Placed::ByName(c) | Placed::ByCabling(c) => Some(c),
        }
    }
}

/// What one anchor's table says back: the evidence for one candidate.
struct Evidence {
    /// The port of the capture.
    port: u32,
    /// The anchor's observer.
    anchor: u32,
    /// The anchor's port.
    anchor_port: u32,
    /// The far end named the capture's port (not merely "no port of the capture").
    port_matches: bool,
}

/// The capture, indexed: neighbours per observer, ports per observer, advertised Port IDs.
struct View<'a> {
    raw: &'a RawTables,
    neighbors_of: Vec<Vec<u32>>,
    ports_of: Vec<Vec<u32>>,
}

impl<'a> View<'a> {
    fn new(raw: &'a RawTables) -> Self {
        let n = raw.observers.len();
        let mut neighbors_of = vec![Vec::new(); n];
        for (i, nb) in raw.neighbors.iter().enumerate() {
            neighbors_of[nb.observer as usize].push(i as u32);
        }
        let mut ports_of = vec![Vec::new(); n];
        for p in &raw.ports {
            ports_of[p.observer as usize].push(p.port);
        }
        for p in &mut ports_of {
            p.sort_unstable();
            p.dedup();
        }
        Self {
            raw,
            neighbors_of,
            ports_of,
        }
    }

    /// The ports of observer `o` that a neighbour's Port ID (value, description, or what `o`
    /// advertises) names.
    fn ports_named(&self, o: u32, subtype: u8, value: u32, descr: u32) -> Vec<u32> {
        let ports = &self.ports_of[o as usize];
        let mut out: Vec<u32> = [value, descr]
            .into_iter()
            .filter(|&s| s != NONE && ports.binary_search(&s).is_ok())
            .collect();
        out.extend(
            self.raw
                .advertised
                .iter()
                .filter(|a| a.observer == o && a.subtype == subtype && a.value == value)
                .map(|a| a.port),
        );
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Candidates for stand-in `x`: chassis that anchors see at the far end of `x`'s cables.
    fn candidates(&self, x: u32, anchors: &FxHashMap<u32, Vec<u32>>) -> FxHashMap<u32, Evidence> {
        let mut found: FxHashMap<u32, Evidence> = FxHashMap::default();
        let own_ports = &self.ports_of[x as usize];
        for &i in &self.neighbors_of[x as usize] {
            let n = &self.raw.neighbors[i as usize];
            let Some(tables) = anchors.get(&n.chassis) else {
                continue;
            };
            for &t in tables.iter().filter(|&&t| t != x) {
                for q in self.ports_named(t, n.port_subtype, n.port_value, n.port_descr) {
                    for &j in &self.neighbors_of[t as usize] {
                        let m = &self.raw.neighbors[j as usize];
                        if m.port != q || m.chassis == n.chassis {
                            continue;
                        }
                        let port_matches = m.port_value == n.port || m.port_descr == n.port;
                        let names_other = [m.port_value, m.port_descr].iter().any(|&s| {
                            s != NONE && s != n.port && own_ports.binary_search(&s).is_ok()
                        });
                        if !port_matches && names_other {
                            continue; // that cable ends on another port of x: not this one
                        }
                        let e = Evidence {
                            port: n.port,
                            anchor: t,
                            anchor_port: q,
                            port_matches,
                        };
                        match found.get(&m.chassis) {
                            Some(old) if old.port_matches || !port_matches => {}
                            _ => {
                                found.insert(m.chassis, e);
                            }
                        }
                    }
                }
            }
        }
        // Port-confirmed candidates outweigh chassis-only ones (a stale entry, a hub).
        if found.values().any(|e| e.port_matches) {
            found.retain(|_, e| e.port_matches);
        }
        found
    }

    /// Candidates for stand-in `x` from other captures whose box is not known either: a
    /// capture T whose port q sees a neighbour on `x`'s port p, where `x`'s port p sees a
    /// neighbour on T's port q. Each such pair says which chassis `x` is (what T sees); when
    /// every pair says the same, that is `x` (switch port numbers tell symmetric leaves apart).
    fn mutual(&self, x: u32, unplaced: &FxHashMap<u32, Vec<u32>>) -> FxHashMap<u32, Evidence> {
        let mut found: FxHashMap<u32, Evidence> = FxHashMap::default();
        for &i in &self.neighbors_of[x as usize] {
            let n = &self.raw.neighbors[i as usize];
            for q in [n.port_value, n.port_descr] {
                let Some(far) = (q != NONE).then(|| unplaced.get(&q)).flatten() else {
                    continue;
                };
                for &j in far {
                    let m = &self.raw.neighbors[j as usize];
                    if m.observer == x || m.chassis == n.chassis {
                        continue;
                    }
                    if m.port_value == n.port || m.port_descr == n.port {
                        found.entry(m.chassis).or_insert(Evidence {
                            port: n.port,
                            anchor: m.observer,
                            anchor_port: q,
                            port_matches: true,
                        });
                    }
                }
            }
        }
        found
    }
}

/// Neighbours of the stand-ins not placed yet, by the port of the stand-in that sees them.
fn unplaced_ports(
    raw: &RawTables,
    view: &View<'_>,
    stand_ins: &[u32],
    placed: &[Placed],
) -> FxHashMap<u32, Vec<u32>> {
    let mut by_port: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for &x in stand_ins
        .iter()
        .filter(|&&x| placed[x as usize] == Placed::No)
    {
        for &i in &view.neighbors_of[x as usize] {
            by_port
                .entry(raw.neighbors[i as usize].port)
                .or_default()
                .push(i);
        }
    }
    by_port
}

/// See the module documentation. Renames and gives a chassis to every stand-in placed.
pub(crate) fn resolve_stand_ins(raw: &mut RawTables) -> Result<Vec<StandInNote>, StandInError> {
    let stand_ins: Vec<u32> = (0..raw.observers.len() as u32)
        .filter(|&o| raw.observers[o as usize].stand_in != NONE)
        .collect();
    if stand_ins.is_empty() {
        return Ok(Vec::new());
    }
    let seen = sightings(
        &raw.neighbors,
        &raw.observers,
        raw.chassis.len(),
        &raw.strings,
    );
    let mut by_name: NameIndex<u32> = NameIndex::default();
    for (c, &name) in seen.elected.iter().enumerate() {
        if name != NONE {
            by_name.insert(raw.strings.get(name), c as u32);
        }
    }
    let view = View::new(raw);
    // Anchors: tables whose box is known, by chassis.
    let mut anchors: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for (o, ob) in raw.observers.iter().enumerate() {
        let chassis = if ob.chassis != NONE {
            Some(ob.chassis)
        } else if ob.stand_in == NONE {
            match by_name.lookup(raw.strings.get(ob.name)) {
                [only] => Some(*only),
                _ => None,
            }
        } else {
            None
        };
        if let Some(c) = chassis {
            anchors.entry(c).or_default().push(o as u32);
        }
    }
    let mut placed: Vec<Placed> = vec![Placed::No; raw.observers.len()];
    let mut why: FxHashMap<u32, String> = FxHashMap::default();
    let mut ambiguous: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    let rounds = 2 * stand_ins.len() + 2;
    for _ in 0..rounds {
        let mut changed = false;
        ambiguous.clear();
        let unplaced = unplaced_ports(raw, &view, &stand_ins, &placed);
        for &x in &stand_ins {
            let mut found = view.candidates(x, &anchors);
            if found.is_empty() && placed[x as usize] == Placed::No {
                found = view.mutual(x, &unplaced);
            }
            let mut ys: Vec<u32> = found.keys().copied().collect();
            ys.sort_unstable();
            match ys.as_slice() {
                [] => {}
                [y] => {
                    // Cabling agrees with where x stands: nothing to change.
                    if placed[x as usize].chassis() == Some(*y) {
                        continue;
                    }
                    unplace(&mut anchors, &mut placed, x);
                    // A stand-in placed by name on y yields to cabling.
                    for &other in &stand_ins {
                        if other != x && placed[other as usize] == Placed::ByName(*y) {
                            unplace(&mut anchors, &mut placed, other);
                        }
                    }
                    placed[x as usize] = Placed::ByCabling(*y);
                    anchors.entry(*y).or_default().push(x);
                    why.insert(x, cabling_note(raw, &seen.elected, *y, &found[y]));
                    changed = true;
                }
                _ => {
                    ambiguous.insert(x, ys);
                }
            }
        }
        if changed {
            continue;
        }
        // Cabling stalls: place what is left by name, when one unclaimed chassis goes by it.
        for &x in &stand_ins {
            if placed[x as usize] != Placed::No || ambiguous.contains_key(&x) {
                continue;
            }
            if let [c] = by_name.lookup(raw.strings.get(raw.observers[x as usize].name))
                && !anchors.contains_key(c)
            {
                placed[x as usize] = Placed::ByName(*c);
                anchors.entry(*c).or_default().push(x);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let undecided = undecided(
        raw,
        &seen.elected,
        &view,
        &stand_ins,
        &placed,
        &ambiguous,
        &anchors,
    );
    if !undecided.is_empty() {
        return Err(StandInError { undecided });
    }
    Ok(apply(raw, &stand_ins, &placed, &seen.elected, &why))
}

fn unplace(anchors: &mut FxHashMap<u32, Vec<u32>>, placed: &mut [Placed], x: u32) {
    if let Some(c) = placed[x as usize].chassis()
        && let Some(list) = anchors.get_mut(&c)
    {
        list.retain(|&o| o != x);
        if list.is_empty() {
            anchors.remove(&c);
        }
    }
    placed[x as usize] = Placed::No;
}

/// The box a chassis is, for people: the name most observers give it, else its chassis ID.
fn box_name(raw: &RawTables, elected: &[u32], c: u32) -> String {
    match elected.get(c as usize) {
        Some(&n) if n != NONE => raw.strings.get(n).to_string(),
        _ => format!("chassis {}", raw.strings.get(raw.chassis[c as usize].1)),
    }
}

fn source_of(raw: &RawTables, o: u32) -> String {
    raw.strings
        .get(raw.observers[o as usize].stand_in)
        .to_string()
}

fn cabling_note(raw: &RawTables, elected: &[u32], y: u32, e: &Evidence) -> String {
    let s = &raw.strings;
    let anchor = s.get(raw.observers[e.anchor as usize].name);
    format!(
        "it is {} (chassis {}) by its cabling: its port {} sees {anchor}, and {anchor}'s port {} \
         sees {}{}",
        box_name(raw, elected, y),
        s.get(raw.chassis[y as usize].1),
        s.get(e.port),
        s.get(e.anchor_port),
        box_name(raw, elected, y),
        if e.port_matches {
            format!(" on port {}", s.get(e.port))
        } else {
            String::new()
        }
    )
}

/// Stand-ins that cannot be placed: two candidates; two captures of one box; none while the
/// capture is cabled to boxes that are described (they would show it under another name).
fn undecided(
    raw: &RawTables,
    elected: &[u32],
    view: &View<'_>,
    stand_ins: &[u32],
    placed: &[Placed],
    ambiguous: &FxHashMap<u32, Vec<u32>>,
    anchors: &FxHashMap<u32, Vec<u32>>,
) -> Vec<UndecidedStandIn> {
    let name = |c: u32| box_name(raw, elected, c);
    let mut out = Vec::new();
    for &x in stand_ins {
        let source = source_of(raw, x);
        if let Some(ys) = ambiguous
            .get(&x)
            .filter(|_| placed[x as usize] == Placed::No)
        {
            let mut candidates: Vec<String> = ys.iter().map(|&y| name(y)).collect();
            candidates.sort_by(|a, b| natural_cmp(a, b));
            out.push(UndecidedStandIn {
                source,
                why: format!(
                    "its cabling fits {} boxes ({})",
                    candidates.len(),
                    candidates.join(", ")
                ),
                candidates,
            });
            continue;
        }
        match placed[x as usize].chassis() {
            Some(c) => {
                let mut twins: Vec<String> = anchors
                    .get(&c)
                    .into_iter()
                    .flatten()
                    .filter(|&&o| o != x)
                    .map(|&o| match raw.observers[o as usize].stand_in {
                        NONE => raw.strings.get(raw.observers[o as usize].name).to_string(),
                        s => raw.strings.get(s).to_string(),
                    })
                    .collect();
                if twins.is_empty() {
                    continue;
                }
                twins.sort_by(|a, b| natural_cmp(a, b));
                out.push(UndecidedStandIn {
                    source,
                    candidates: vec![name(c)],
                    why: format!(
                        "it is {} by its cabling, and so is {}: one box, several captures \
                         (refused, as a concatenation of captures is)",
                        name(c),
                        twins.join(", ")
                    ),
                });
            }
            None => {
                let described = view.neighbors_of[x as usize]
                    .iter()
                    .any(|&i| anchors.contains_key(&raw.neighbors[i as usize].chassis));
                if described {
                    out.push(UndecidedStandIn {
                        source,
                        candidates: Vec::new(),
                        why: format!(
                            "its name {} is no box's, and no described neighbour sees it back \
                             on the ports it lists",
                            raw.strings.get(raw.observers[x as usize].name)
                        ),
                    });
                }
            }
        }
    }
    out
}

/// Gives each placed stand-in its chassis and the name its box goes by (the stand-in name
/// when it already denotes that box, as `leaf1` does `leaf1.fab.example`).
fn apply(
    raw: &mut RawTables,
    stand_ins: &[u32],
    placed: &[Placed],
    elected: &[u32],
    why: &FxHashMap<u32, String>,
) -> Vec<StandInNote> {
    let mut notes = Vec::new();
    for &x in stand_ins {
        let source = source_of(raw, x);
        let stand_in = raw.strings.get(raw.observers[x as usize].name).to_string();
        let Some(c) = placed[x as usize].chassis() else {
            notes.push(StandInNote {
                source,
                why: format!(
                    "neighbours only, and no other capture shows the box: named {stand_in} \
                     after the file; capture `show interfaces details` into it too, or name \
                     it with {stand_in}=FILE"
                ),
                stand_in,
                name: None,
            });
            continue;
        };
        let goes_by = elected.get(c as usize).copied().unwrap_or(NONE);
        let keep = goes_by == NONE || same_or_short(&raw.strings, &stand_in, goes_by);
        let name = if keep {
            stand_in.clone()
        } else {
            raw.strings.get(goes_by).to_string()
        };
        let why = match placed[x as usize] {
            Placed::ByCabling(_) if keep => format!(
                "neighbours only: named {stand_in} after the file, as its neighbours call it, \
                 and its cabling agrees ({}); capture `show interfaces details` into it too, or \
                 name it with {stand_in}=FILE",
                why.get(&x).map_or("", String::as_str)
            ),
            Placed::ByCabling(_) => format!(
                "neighbours only, stood for {stand_in} (its file's name): {}",
                why.get(&x).map_or("", String::as_str)
            ),
            _ => format!(
                "neighbours only: named {stand_in} after the file, as its neighbours call it; \
                 capture `show interfaces details` into it too, or name it with \
                 {stand_in}=FILE"
            ),
        };
        let ob = &mut raw.observers[x as usize];
        ob.chassis = c;
        if !keep {
            ob.name = goes_by;
        }
        notes.push(StandInNote {
            source,
            stand_in,
            name: Some(name),
            why,
        });
    }
    notes
}

fn same_or_short(strings: &Interner, stand_in: &str, name: u32) -> bool {
    super::naming::same_system(stand_in, strings.get(name))
}
