//! What was observed where: hosts by name, switch ports and the Port IDs that resolve to them,
//! and every sighting as an integer record (a host NIC's candidate neighbours, a switch's view of
//! another switch, a host seen only from its leaf).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use spinel_wire::neighbor::PortIdSubtype;

use crate::fabric::model::PortRef;
use crate::fabric::raw::{Interner, NONE, RawAdvertised, RawNeighbor, RawObserver, RawPort, key};

use super::identity::{Evidence, canonical};
use super::select::NicFilter;

const PORT_SUBTYPES: [PortIdSubtype; 7] = [
    PortIdSubtype::InterfaceAlias,
    PortIdSubtype::PortComponent,
    PortIdSubtype::MacAddress,
    PortIdSubtype::NetworkAddress,
    PortIdSubtype::InterfaceName,
    PortIdSubtype::AgentCircuitId,
    PortIdSubtype::Local,
];

/// Short subtype names used in unresolved port names (`local:Eth1/1`), as lldpd prints them.
fn port_subtype_label(subtype: u8) -> &'static str {
    match PORT_SUBTYPES.get(subtype as usize) {
        Some(PortIdSubtype::InterfaceAlias) => "ifalias",
        Some(PortIdSubtype::PortComponent) => "component",
        Some(PortIdSubtype::MacAddress) => "mac",
        Some(PortIdSubtype::NetworkAddress) => "ip",
        Some(PortIdSubtype::InterfaceName) => "ifname",
        Some(PortIdSubtype::AgentCircuitId) => "circuit",
        Some(PortIdSubtype::Local) | None => "local",
    }
}

pub(super) fn is_ifname(subtype: u8) -> bool {
    PORT_SUBTYPES.get(subtype as usize) == Some(&PortIdSubtype::InterfaceName)
}

/// What a table's observer turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ObserverIs {
    /// Host index.
    Host(u32),
    /// Switch index.
    Switch(u32),
}

/// Hosts by name, in the order they were first met (an index, not an output order).
#[derive(Debug, Default)]
pub(super) struct HostNames {
    /// Name to host index.
    pub index: FxHashMap<u32, u32>,
    /// Per host: its name.
    pub names: Vec<u32>,
    /// Per host: it gave a table of its own.
    pub own_table: Vec<bool>,
}

impl HostNames {
    /// The host named `name`, added on first sight.
    fn get_or_add(&mut self, name: u32) -> u32 {
        *self.index.entry(name).or_insert_with(|| {
            self.names.push(name);
            self.own_table.push(false);
            (self.names.len() - 1) as u32
        })
    }
}

/// Phase 7 output: each table's observer as a host or a switch.
#[derive(Debug)]
pub(super) struct Observers {
    /// Per observer.
    pub is: Vec<ObserverIs>,
    /// The hosts named by their own tables (more join from leaf sightings).
    pub hosts: HostNames,
}

/// Phase 7 (reads entities, classification, switches): tables of hosts name hosts (in the
/// caller's spelling when the caller named them); the others are their switch's.
pub(super) fn observers(
    observers: &[RawObserver],
    of_observer: &[u32],
    is_switch: &[bool],
    switch_of_entity: &[u32],
    ev: &Evidence,
    strings: &Interner,
) -> Observers {
    let mut hosts = HostNames::default();
    let is = observers
        .iter()
        .zip(of_observer)
        .map(|(o, &e)| {
            if e == NONE || !is_switch[e as usize] {
                let h = hosts.get_or_add(canonical(ev, strings, o.name));
                hosts.own_table[h as usize] = true;
                ObserverIs::Host(h)
            } else {
                ObserverIs::Switch(switch_of_entity[e as usize])
            }
        })
        .collect();
    Observers { is, hosts }
}

/// Phase 9 output: switch ports and Port ID aliases.
#[derive(Debug, Default)]
pub(super) struct PortMaps {
    /// `key(switch, port)` of every port a switch's own table lists, sorted.
    pub listed: Vec<u64>,
    /// (switch, Port ID subtype, value) to the switch's interface name.
    alias: FxHashMap<(u32, u8, u32), u32>,
}

/// Phase 9 (reads ports and advertised Port IDs): the ports each switch lists, and what it
/// advertises on them.
pub(super) fn port_maps(
    ports: &[RawPort],
    advertised: &[RawAdvertised],
    observer_is: &[ObserverIs],
) -> PortMaps {
    let mut listed: Vec<u64> = ports
        .iter()
        .filter_map(|p| match observer_is[p.observer as usize] {
            ObserverIs::Switch(sw) => Some(key(sw, p.port)),
            ObserverIs::Host(_) => None,
        })
        .collect();
    listed.sort_unstable();
    listed.dedup();
    let mut alias = FxHashMap::default();
    for a in advertised {
        if let ObserverIs::Switch(sw) = observer_is[a.observer as usize] {
            alias.entry((sw, a.subtype, a.value)).or_insert(a.port);
        }
    }
    PortMaps { listed, alias }
}

impl PortMaps {
    /// A neighbour's Port ID as switch `sw`'s interface, with its interned name ([`NONE`] when
    /// unresolved). Order: ifname Port ID; the switch's advertised-port map (alias, MAC); a
    /// Port Description naming one of its ports (lldpd's default); else `<subtype>:<value>`.
    pub(super) fn resolve(&self, strings: &Interner, sw: u32, n: &RawNeighbor) -> (PortRef, u32) {
        let descr = (n.port_descr != NONE).then(|| strings.get(n.port_descr).clone());
        let found = if is_ifname(n.port_subtype) {
            Some(n.port_value)
        } else if let Some(&port) = self.alias.get(&(sw, n.port_subtype, n.port_value)) {
            Some(port)
        } else if n.port_descr != NONE && self.listed.binary_search(&key(sw, n.port_descr)).is_ok()
        {
            Some(n.port_descr)
        } else {
            None
        };
        match found {
            Some(sym) => (
                PortRef {
                    name: strings.get(sym).clone(),
                    resolved: true,
                    description: descr,
                },
                sym,
            ),
            None => (
                PortRef {
                    name: Arc::from(format!(
                        "{}:{}",
                        port_subtype_label(n.port_subtype),
                        strings.get(n.port_value)
                    )),
                    resolved: false,
                    description: descr,
                },
                NONE,
            ),
        }
    }
}

/// A NIC's neighbour before ports are resolved: only the chosen one is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    /// `key(host, nic)`.
    pub slot: u64,
    /// Switch index, or [`NONE`] when the neighbour is not a switch.
    pub switch: u32,
    /// Index into the neighbours, or [`NONE`] for a host seen from its leaf.
    pub src: u32,
    /// For a host seen from its leaf: the leaf's own port.
    pub own_port: u32,
}

/// One switch's view of a cable to another switch.
#[derive(Debug, Clone, Copy)]
pub(super) struct SwitchSighting {
    /// The observing switch.
    pub from: u32,
    /// Its port.
    pub from_port: u32,
    /// The switch it sees.
    pub to: u32,
    /// Index into the neighbours.
    pub src: u32,
}

/// Phase 10 output: every observation as integer records.
#[derive(Debug, Default)]
pub(super) struct Observations {
    /// `key(host, nic)` of every host NIC, sorted.
    pub slots: Vec<u64>,
    /// Candidate neighbours per NIC, sorted by slot.
    pub candidates: Vec<Candidate>,
    /// Switch-to-switch sightings.
    pub sightings: Vec<SwitchSighting>,
    /// `key(switch, port)` of switch ports with a neighbour, sorted.
    pub busy: Vec<u64>,
}

/// The parts of the inputs phase 10 reads.
pub(super) struct ObservationInputs<'a> {
    pub ports: &'a [RawPort],
    pub neighbors: &'a [RawNeighbor],
    pub observer_is: &'a [ObserverIs],
    pub switch_of_entity: &'a [u32],
    pub host_name_of_entity: &'a [u32],
}

/// Phase 10 (reads ports, neighbours, observers, the NIC selection): host NICs and what they
/// see, switch sightings, busy switch ports; hosts seen only from their leaves join `hosts`.
/// NICs the selection leaves out are not observed at all.
pub(super) fn observations(
    input: &ObservationInputs<'_>,
    hosts: &mut HostNames,
    nics: &mut NicFilter<'_>,
    strings: &mut Interner,
) -> Observations {
    let mut obs = Observations::default();
    let mut side: Vec<(u32, u32, u32)> = Vec::new(); // (host, neighbour index, leaf)
    for p in input.ports {
        if let ObserverIs::Host(h) = input.observer_is[p.observer as usize]
            && is_fabric_nic(nics, strings, hosts, h, p.port)
        {
            obs.slots.push(key(h, p.port));
        }
    }
    for (i, n) in input.neighbors.iter().enumerate() {
        let target = input.switch_of_entity[n.chassis as usize];
        match input.observer_is[n.observer as usize] {
            ObserverIs::Host(h) => {
                if !is_fabric_nic(nics, strings, hosts, h, n.port) {
                    continue;
                }
                let slot = key(h, n.port);
                obs.slots.push(slot);
                obs.candidates.push(Candidate {
                    slot,
                    switch: target,
                    src: i as u32,
                    own_port: NONE,
                });
            }
            ObserverIs::Switch(sw) => {
                obs.busy.push(key(sw, n.port));
                if target != NONE {
                    if target != sw {
                        obs.sightings.push(SwitchSighting {
                            from: sw,
                            from_port: n.port,
                            to: target,
                            src: i as u32,
                        });
                    }
                    continue;
                }
                let name = input.host_name_of_entity[n.chassis as usize];
                if name != NONE {
                    side.push((hosts.get_or_add(name), i as u32, sw));
                }
            }
        }
    }
    seen_from_leaves(&side, input.neighbors, hosts, nics, strings, &mut obs);
    obs.slots.sort_unstable();
    obs.slots.dedup();
    obs.candidates.sort_unstable_by_key(|c| c.slot);
    obs.busy.sort_unstable();
    obs.busy.dedup();
    obs
}

/// Hosts seen only from their leaves: the NIC is the Port ID (ifname) or its description. A
/// host's own table is authoritative, so these only fill in hosts without one.
fn seen_from_leaves(
    side: &[(u32, u32, u32)],
    neighbors: &[RawNeighbor],
    hosts: &HostNames,
    nics: &mut NicFilter<'_>,
    strings: &mut Interner,
    obs: &mut Observations,
) {
    for &(h, i, sw) in side {
        if hosts.own_table[h as usize] {
            continue;
        }
        let n = &neighbors[i as usize];
        let nic = if is_ifname(n.port_subtype) {
            n.port_value
        } else if n.port_descr != NONE {
            n.port_descr
        } else {
            let label = format!(
                "{}:{}",
                port_subtype_label(n.port_subtype),
                strings.get(n.port_value)
            );
            strings.intern(&label)
        };
        if !is_fabric_nic(nics, strings, hosts, h, nic) {
            continue;
        }
        let slot = key(h, nic);
        obs.slots.push(slot);
        obs.candidates.push(Candidate {
            slot,
            switch: sw,
            src: NONE,
            own_port: n.port,
        });
    }
}

/// Whether host `h`'s NIC `nic` takes part: the selection says so, or says nothing.
fn is_fabric_nic(
    nics: &mut NicFilter<'_>,
    strings: &Interner,
    hosts: &HostNames,
    h: u32,
    nic: u32,
) -> bool {
    nics.selects(strings, strings.get(hosts.names[h as usize]), nic) != Some(false)
}
