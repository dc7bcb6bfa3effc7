//! What a full inference leaves behind for the incremental model ([`super::live`]): the
//! intermediate facts that the model's outputs no longer show (ports the switches list, NICs
//! before lone ones are dropped, links before NICs on non-leaves are taken off).

use std::sync::Arc;

use rustc_hash::FxHashMap;
use spinel_wire::neighbor::{PortId, PortIdSubtype};

use crate::fabric::ingest::AdvertisedPort;
use crate::fabric::model::{Host, SwitchLink};
use crate::fabric::names::natural_cmp;
use crate::fabric::raw::{Interner, NONE, RawAdvertised, RawObserver, RawPort, caps, hi, lo};

use super::identity::Evidence;
use super::observe::ObserverIs;

const PORT_SUBTYPES: [PortIdSubtype; 7] = [
    PortIdSubtype::InterfaceAlias,
    PortIdSubtype::PortComponent,
    PortIdSubtype::MacAddress,
    PortIdSubtype::NetworkAddress,
    PortIdSubtype::InterfaceName,
    PortIdSubtype::AgentCircuitId,
    PortIdSubtype::Local,
];

/// A switch's own tables: the ports they list and the Port IDs it advertises on them.
#[derive(Debug, Clone, Default)]
pub(crate) struct SwitchPorts {
    pub listed: Vec<Arc<str>>,
    pub advertised: Vec<AdvertisedPort>,
}

/// Facts of one full inference, by final switch index.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    /// Per switch: its own tables' ports and advertised Port IDs.
    pub ports: Vec<SwitchPorts>,
    /// Per switch: a table of its own says it is a switch (a stated role, or Bridge), so no
    /// host's sightings bear on what it is or what it is called.
    pub anchored: Vec<bool>,
    /// Per switch: the ports it lists that neither a neighbour nor a switch link uses.
    pub spare: Vec<Vec<Arc<str>>>,
    /// (switch, port) to the host NICs cabled there.
    pub host_used: FxHashMap<(u32, Arc<str>), u32>,
    /// NIC name to the hosts that have one so named (before lone NICs are dropped).
    pub nic_hosts: FxHashMap<Arc<str>, u32>,
    /// Hosts with at least one NIC.
    pub with_nics: usize,
    /// Per switch: distinct hosts cabled to it (before NICs on non-leaves are taken off).
    pub hosts_pre: Vec<u32>,
    /// No host table claims a chassis and every other table has its chassis ID: host
    /// sightings cannot change who is who.
    pub eligible: bool,
}

impl Trace {
    /// Phase 7 facts: each switch's own ports, and whether its table anchors it.
    pub(super) fn switches(
        &mut self,
        n_switches: usize,
        observers: &[RawObserver],
        is: &[ObserverIs],
        of_observer: &[u32],
        ev: &Evidence,
        raw: (&[RawPort], &[RawAdvertised], &Interner),
    ) {
        let (ports, advertised, strings) = raw;
        self.ports = vec![SwitchPorts::default(); n_switches];
        self.anchored = vec![false; n_switches];
        self.eligible = observers
            .iter()
            .all(|o| (o.role == Some(spinel_wire::neighbor::Role::Host)) == (o.chassis == NONE));
        for (o, is) in is.iter().enumerate() {
            if let ObserverIs::Switch(sw) = is {
                let e = of_observer[o] as usize;
                self.anchored[*sw as usize] |=
                    ev.explicit_switch[e] || ev.own_caps[e] & caps::BRIDGE != 0;
            }
        }
        for p in ports {
            if let ObserverIs::Switch(sw) = is[p.observer as usize] {
                self.ports[sw as usize]
                    .listed
                    .push(strings.get(p.port).clone());
            }
        }
        for a in advertised {
            if let ObserverIs::Switch(sw) = is[a.observer as usize] {
                self.ports[sw as usize].advertised.push(AdvertisedPort {
                    port: strings.get(a.port).to_string(),
                    port_id: PortId {
                        subtype: PORT_SUBTYPES
                            .get(a.subtype as usize)
                            .copied()
                            .unwrap_or(PortIdSubtype::Local),
                        value: strings.get(a.value).to_string(),
                    },
                });
            }
        }
    }

    /// Phase 11 facts: NIC names per host and the switch ports host NICs use.
    pub(super) fn hosts(&mut self, hosts: &[Host], used: &[u64], strings: &Interner) {
        for h in hosts {
            if !h.nics.is_empty() {
                self.with_nics += 1;
            }
            for nic in &h.nics {
                *self.nic_hosts.entry(nic.name.clone()).or_default() += 1;
            }
        }
        for &k in used {
            *self
                .host_used
                .entry((hi(k), strings.get(lo(k)).clone()))
                .or_default() += 1;
        }
    }

    /// Phase 14 facts: the ports no neighbour and no switch link uses, per switch; and the
    /// hosts on each switch before phase 15.
    pub(super) fn ports_left(
        &mut self,
        n_switches: usize,
        listed: &[u64],
        busy: &[u64],
        links: &[SwitchLink],
        hosts: &[Host],
        strings: &Interner,
    ) {
        let mut link_used: FxHashMap<u32, Vec<Arc<str>>> = FxHashMap::default();
        for l in links {
            for end in [&l.lower, &l.upper] {
                if end.port.resolved {
                    link_used
                        .entry(end.switch.0)
                        .or_default()
                        .push(end.port.name.clone());
                }
            }
        }
        self.spare = vec![Vec::new(); n_switches];
        for &k in listed {
            if busy.binary_search(&k).is_ok() {
                continue;
            }
            let port = strings.get(lo(k));
            let sw = hi(k);
            if link_used
                .get(&sw)
                .is_some_and(|u| u.iter().any(|p| **p == **port))
            {
                continue;
            }
            self.spare[sw as usize].push(port.clone());
        }
        for s in &mut self.spare {
            s.sort_by(|a, b| natural_cmp(a, b));
        }
        self.hosts_pre = super::tiers::hosts_on(n_switches, hosts);
    }
}
