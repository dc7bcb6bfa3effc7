//! The intent resolved into what each switch and host must have: effective MTU and PFC per
//! switch, every port (including those only the other end of a link lists) with its peer,
//! speed, cable length and rail network, and every host's NICs.
//!
//! Ports are kept in natural name order (`Ethernet2` before `Ethernet10`), so everything
//! rendered from a plan is the same whatever order the intent was written in.

use std::collections::{BTreeMap, HashMap, HashSet};

use ipnet::Ipv4Net;

use crate::intent::software::Software;
use crate::intent::{Intent, Network, Switch, SwitchRole};
use crate::qos::QosPlan;

/// Default port speed when neither the port nor the switch names one, Gb/s.
pub const DEFAULT_SPEED_GBPS: u32 = 400;

/// The resolved fabric.
#[derive(Debug, Clone)]
pub struct FabricPlan<'a> {
    /// The intent.
    pub intent: &'a Intent,
    /// The lossless chain.
    pub qos: QosPlan,
    /// One per switch, in the intent's order.
    pub switches: Vec<SwitchPlan<'a>>,
    /// Host name → its NICs, NICs in natural name order.
    pub hosts: BTreeMap<&'a str, Vec<NicPlan<'a>>>,
    by_name: HashMap<&'a str, usize>,
}

/// One switch's effective settings and ports.
#[derive(Debug, Clone)]
pub struct SwitchPlan<'a> {
    /// The switch as written.
    pub switch: &'a Switch,
    /// Its software release; `None` when the intent's is unknown (validation reports it, and
    /// nothing is rendered for it).
    pub software: Option<Software>,
    /// Port MTU.
    pub mtu: u16,
    /// PFC priorities, ascending.
    pub pfc: Vec<u8>,
    /// Every port, natural name order.
    pub ports: Vec<PortPlan<'a>>,
    /// Neighbour-table entries the leaf's rail networks need, with headroom (0 elsewhere).
    pub neighbor_entries: u64,
    /// The same per rail network: (rail, entries).
    rail_entries: Vec<(&'a str, u64)>,
}

/// One switch port.
#[derive(Debug, Clone)]
pub struct PortPlan<'a> {
    /// Port name.
    pub name: &'a str,
    /// Speed, Gb/s.
    pub speed_gbps: u32,
    /// Cable length for the PFC headroom, metres.
    pub cable_m: u16,
    /// Routed address (switch links).
    pub address: Option<Ipv4Net>,
    /// What is cabled to it.
    pub peer: PortPeer<'a>,
}

/// The far end of a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortPeer<'a> {
    /// A host NIC, on the rail network the leaf serves it with.
    Host {
        /// Host name.
        host: &'a str,
        /// NIC name.
        nic: &'a str,
        /// The rail network (VLAN, subnet, gateway), when the leaf has one for it.
        network: Option<&'a Network>,
    },
    /// Another switch's port.
    Switch {
        /// Switch name.
        switch: &'a str,
        /// Its port.
        port: &'a str,
    },
}

/// One NIC of a host, as the leaves describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicPlan<'a> {
    /// NIC name.
    pub nic: &'a str,
    /// The leaf it is cabled to.
    pub switch: &'a str,
    /// The leaf's port.
    pub port: &'a str,
    /// Its rail network on that leaf.
    pub network: Option<&'a Network>,
}

impl<'a> FabricPlan<'a> {
    /// Resolves `intent`. Never fails: inconsistencies are [`crate::intent::validate`]'s to
    /// report; here they resolve to "unknown" (`None`) rather than to a guess.
    pub fn new(intent: &'a Intent) -> Self {
        let qos = QosPlan::new(&intent.roce);
        let by_name: HashMap<&str, usize> = intent
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
        let mut switches: Vec<SwitchPlan<'a>> = intent
            .switches
            .iter()
            .map(|s| SwitchPlan {
                switch: s,
                software: Software::of(s).ok(),
                mtu: s.mtu.unwrap_or(intent.roce.mtu.switch),
                pfc: crate::qos::sorted_unique(
                    s.pfc_priorities
                        .as_deref()
                        .unwrap_or(&intent.roce.pfc.priorities),
                ),
                ports: Vec::with_capacity(s.ports.len()),
                neighbor_entries: 0,
                rail_entries: Vec::new(),
            })
            .collect();
        let mut hosts: BTreeMap<&str, Vec<NicPlan<'a>>> = BTreeMap::new();
        // Port names already planned per switch (a port listed twice, or implied and listed).
        let mut seen: Vec<HashSet<&str>> = vec![HashSet::new(); intent.switches.len()];
        for (i, s) in intent.switches.iter().enumerate() {
            for p in s.ports.iter() {
                let speed_gbps = p.speed_gbps.or(s.speed_gbps).unwrap_or(DEFAULT_SPEED_GBPS);
                let (peer, cable_m) = match by_name.get(p.peer.system.as_str()) {
                    Some(&j) => {
                        // A link listed only here still gives the other switch its port.
                        add_implied_port(&mut switches, intent, j, p, &s.name, speed_gbps);
                        let peer = PortPeer::Switch {
                            switch: &intent.switches[j].name,
                            port: &p.peer.interface,
                        };
                        (peer, intent.roce.buffer.uplink_cable_m)
                    }
                    None => {
                        let network = rail_network(intent, s, &p.peer.interface);
                        hosts.entry(&p.peer.system).or_default().push(NicPlan {
                            nic: &p.peer.interface,
                            switch: &s.name,
                            port: &p.name,
                            network,
                        });
                        let peer = PortPeer::Host {
                            host: &p.peer.system,
                            nic: &p.peer.interface,
                            network,
                        };
                        (peer, intent.roce.buffer.host_cable_m)
                    }
                };
                if !seen[i].insert(p.name.as_str()) {
                    continue;
                }
                switches[i].ports.push(PortPlan {
                    name: &p.name,
                    speed_gbps,
                    cable_m,
                    address: p.address,
                    peer,
                });
            }
        }
        for sp in &mut switches {
            sp.ports.sort_by(|a, b| natural_cmp(a.name, b.name));
            sp.neighbor_entries = neighbor_entries(intent, sp);
            sp.rail_entries = sp
                .switch
                .networks
                .iter()
                .map(|n| (n.rail.as_str(), count_network_entries(intent, sp, &n.rail)))
                .collect();
        }
        for nics in hosts.values_mut() {
            nics.sort_by(|a, b| natural_cmp(a.nic, b.nic));
        }
        Self {
            intent,
            qos,
            switches,
            hosts,
            by_name,
        }
    }

    /// The plan of the switch called `name`.
    pub fn switch(&self, name: &str) -> Option<&SwitchPlan<'a>> {
        self.by_name.get(name).map(|&i| &self.switches[i])
    }

    /// The NIC `nic` of host `host`.
    pub fn nic(&self, host: &str, nic: &str) -> Option<&NicPlan<'a>> {
        self.hosts.get(host)?.iter().find(|n| n.nic == nic)
    }
}

impl<'a> SwitchPlan<'a> {
    /// The port called `name`.
    pub fn port(&self, name: &str) -> Option<&PortPlan<'a>> {
        self.ports.iter().find(|p| p.name == name)
    }

    /// Neighbour entries the rail network of `rail` needs on this leaf, with headroom.
    pub fn network_entries(&self, intent: &Intent, rail: &str) -> u64 {
        let hosts = self
            .ports
            .iter()
            .filter(
                |p| matches!(&p.peer, PortPeer::Host { network: Some(n), .. } if n.rail == rail),
            )
            .count() as u64;
        (addresses_needed(intent, hosts) * (100 + u64::from(intent.arp.headroom_percent)))
            .div_ceil(100)
    }

    /// The rail networks (leaves), in VLAN order.
    pub fn networks(&self) -> Vec<&'a Network> {
        let mut n: Vec<&Network> = self.switch.networks.iter().collect();
        n.sort_by_key(|n| n.vlan);
        n
    }
}

fn add_implied_port<'a>(
    switches: &mut [SwitchPlan<'a>],
    intent: &'a Intent,
    peer_index: usize,
    port: &'a crate::intent::Port,
    this_switch: &'a str,
    speed_gbps: u32,
) {
    let peer = &intent.switches[peer_index];
    if peer.ports.iter().any(|q| q.name == port.peer.interface) {
        return;
    }
    let target = &mut switches[peer_index];
    if target.ports.iter().any(|q| q.name == port.peer.interface) {
        return;
    }
    target.ports.push(PortPlan {
        name: &port.peer.interface,
        speed_gbps,
        cable_m: intent.roce.buffer.uplink_cable_m,
        address: port.address.and_then(other_end),
        peer: PortPeer::Switch {
            switch: this_switch,
            port: &port.name,
        },
    });
}

/// The other address of a point-to-point /31 (or /30) link.
pub fn other_end(net: Ipv4Net) -> Option<Ipv4Net> {
    let addr = u32::from(net.addr());
    let other = match net.prefix_len() {
        31 => addr ^ 1,
        30 => match addr & 3 {
            1 => addr + 1,
            2 => addr - 1,
            _ => return None,
        },
        _ => return None,
    };
    Ipv4Net::new(other.into(), net.prefix_len()).ok()
}

/// The rail network a leaf serves `nic` with: its only network, or the one whose rail names
/// that NIC.
pub fn rail_network<'a>(intent: &'a Intent, leaf: &'a Switch, nic: &str) -> Option<&'a Network> {
    match leaf.networks.as_slice() {
        [only] => Some(only),
        networks => networks.iter().find(|n| {
            intent
                .rails
                .iter()
                .any(|r| r.name == n.rail && r.nic.as_deref() == Some(nic))
        }),
    }
}

fn count_network_entries(intent: &Intent, sp: &SwitchPlan<'_>, rail: &str) -> u64 {
    let hosts = sp
        .ports
        .iter()
        .filter(|p| matches!(&p.peer, PortPeer::Host { network: Some(n), .. } if n.rail == rail))
        .count() as u64;
    (addresses_needed(intent, hosts) * (100 + u64::from(intent.arp.headroom_percent))).div_ceil(100)
}

/// Entries a leaf's neighbour table needs: every host NIC on its rail networks and the pods
/// behind it, plus the policy's headroom.
fn neighbor_entries(intent: &Intent, sp: &SwitchPlan<'_>) -> u64 {
    if sp.switch.role != SwitchRole::Leaf {
        return 0;
    }
    let host_ports = sp
        .ports
        .iter()
        .filter(|p| matches!(p.peer, PortPeer::Host { .. }))
        .count() as u64;
    let per_host = 1 + u64::from(intent.arp.pods_per_host);
    (host_ports * per_host * (100 + u64::from(intent.arp.headroom_percent))).div_ceil(100)
}

/// Addresses one rail network on one leaf needs: its hosts' NICs and their pods.
pub fn addresses_needed(intent: &Intent, hosts: u64) -> u64 {
    hosts * (1 + u64::from(intent.arp.pods_per_host))
}

/// Natural order (`swp2` < `swp10`), the fabric model's: one order for names everywhere.
pub use topo_discovery::fabric::names::natural_cmp;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut v = vec![
            "swp10",
            "swp2",
            "swp1",
            "Ethernet1/10",
            "Ethernet1/2",
            "swp02",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            [
                "Ethernet1/2",
                "Ethernet1/10",
                "swp1",
                "swp02",
                "swp2",
                "swp10"
            ]
        );
    }

    #[test]
    fn point_to_point_partner() {
        let a: Ipv4Net = "10.254.0.0/31".parse().unwrap_or_default();
        assert_eq!(other_end(a), "10.254.0.1/31".parse().ok());
        let b: Ipv4Net = "10.254.0.2/30".parse().unwrap_or_default();
        assert_eq!(other_end(b), "10.254.0.1/30".parse().ok());
        let c: Ipv4Net = "10.0.0.1/24".parse().unwrap_or_default();
        assert_eq!(other_end(c), None);
    }
}
