//! Synthetic rail-optimised intents for benchmarks and scale tests: leaf groups of one leaf
//! per rail, hosts with one NIC per rail, pods of leaf groups under their own spines, OSes
//! mixed. Built in memory, so a 32,000-host intent needs no YAML on disk (its YAML form is
//! available for measuring the parser too).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::intent::software::EosPlatform;
use crate::intent::{
    ArpPolicy, Intent, Network, Peer, Port, Ports, Rail, RoceProfile, SCHEMA, Switch, SwitchOs,
    SwitchRole,
};

/// Shape of a synthetic fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Hosts.
    pub hosts: usize,
    /// NICs per host, and leaves per group.
    pub rails: usize,
    /// Hosts per leaf group (host ports per leaf).
    pub hosts_per_group: usize,
    /// Leaf groups per pod.
    pub groups_per_pod: usize,
    /// Spines per pod; every leaf of the pod links to each.
    pub spines_per_pod: usize,
}

impl Spec {
    /// The benchmark shape: 32,000 hosts with 8 rails, 160 hosts per leaf, 8 groups and 16
    /// spines per pod: 1,600 leaves and 400 spines (2,000 switches), 256,000 host ports and
    /// 25,600 switch links.
    pub fn benchmark() -> Self {
        Self {
            hosts: 32_000,
            rails: 8,
            hosts_per_group: 160,
            groups_per_pod: 8,
            spines_per_pod: 16,
        }
    }

    /// Leaf groups.
    pub fn groups(&self) -> usize {
        self.hosts.div_ceil(self.hosts_per_group.max(1))
    }

    /// Pods.
    pub fn pods(&self) -> usize {
        self.groups().div_ceil(self.groups_per_pod.max(1))
    }
}

fn os_of(i: usize) -> SwitchOs {
    [SwitchOs::Sonic, SwitchOs::Cumulus, SwitchOs::Eos][i % 3]
}

fn port_name(os: SwitchOs, index: usize) -> String {
    match os {
        SwitchOs::Sonic => format!("Ethernet{}", index * 4),
        SwitchOs::Cumulus => format!("swp{}", index + 1),
        SwitchOs::Eos => format!("Ethernet{}/1", index + 1),
    }
}

/// The intent for `spec`.
pub fn intent(spec: &Spec) -> Intent {
    let rails: Vec<Rail> = (0..spec.rails)
        .map(|r| Rail {
            name: format!("rail{r}"),
            nic: Some(format!("eth{r}")),
        })
        .collect();
    let mut switches = Vec::new();
    let spines_total = spec.pods() * spec.spines_per_pod;
    let spine_os = |s: usize| {
        if s.is_multiple_of(2) {
            SwitchOs::Sonic
        } else {
            SwitchOs::Eos
        }
    };
    // Per spine, the next free port.
    let mut spine_ports = vec![0usize; spines_total];
    let mut link = 0u32;
    for g in 0..spec.groups() {
        let pod = g / spec.groups_per_pod.max(1);
        let first_host = g * spec.hosts_per_group;
        let hosts = spec.hosts_per_group.min(spec.hosts - first_host);
        for r in 0..spec.rails {
            let leaf = g * spec.rails + r;
            let os = os_of(leaf);
            let mut ports = Vec::with_capacity(hosts + spec.spines_per_pod);
            for h in 0..hosts {
                ports.push(Port {
                    name: port_name(os, h),
                    peer: Peer {
                        system: format!("node{:05}", first_host + h),
                        interface: format!("eth{r}"),
                    },
                    speed_gbps: None,
                    address: None,
                });
            }
            for s in 0..spec.spines_per_pod {
                let spine = pod * spec.spines_per_pod + s;
                let sp_port = spine_ports[spine];
                spine_ports[spine] += 1;
                let addr = u32::from(Ipv4Addr::new(172, 16, 0, 0)) + 2 * link;
                link += 1;
                ports.push(Port {
                    name: port_name(os, hosts + s),
                    peer: Peer {
                        system: format!("spine{spine:04}"),
                        interface: port_name(spine_os(spine), sp_port),
                    },
                    speed_gbps: None,
                    address: Ipv4Net::new(Ipv4Addr::from(addr), 31).ok(),
                });
            }
            let subnet = Ipv4Net::new(
                Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 0)) + (leaf as u32) * 4096),
                20,
            )
            .unwrap_or_default();
            switches.push(Switch {
                name: format!("leaf{leaf:04}"),
                role: SwitchRole::Leaf,
                os,
                version: release(os, leaf),
                platform: platform(os, true),
                networks: vec![Network {
                    rail: format!("rail{r}"),
                    vlan: 100 + r as u16,
                    subnet,
                    gateway: subnet.hosts().next().unwrap_or(subnet.addr()),
                }],
                ports: Ports(ports),
                speed_gbps: Some(200),
                buffer_bytes: Some(160 * 1024 * 1024),
                neighbor_capacity: None,
                mtu: None,
                pfc_priorities: None,
            });
        }
    }
    for spine in 0..spines_total {
        switches.push(Switch {
            name: format!("spine{spine:04}"),
            role: SwitchRole::Spine,
            os: spine_os(spine),
            version: release(spine_os(spine), spine),
            platform: platform(spine_os(spine), false),
            networks: Vec::new(),
            ports: Ports::default(),
            speed_gbps: Some(200),
            buffer_bytes: Some(160 * 1024 * 1024),
            neighbor_capacity: None,
            mtu: None,
            pfc_priorities: None,
        });
    }
    Intent {
        schema: SCHEMA.into(),
        fabric: "synthetic".into(),
        roce: RoceProfile::default(),
        arp: ArpPolicy::default(),
        rails,
        switches,
    }
}

/// A release for a synthetic switch: Cumulus alternates 5.12 and 5.15 (both NVUE syntaxes),
/// EOS runs 4.33, SONiC has none.
pub fn release(os: SwitchOs, index: usize) -> Option<String> {
    match os {
        SwitchOs::Sonic => None,
        SwitchOs::Cumulus if index.is_multiple_of(2) => Some("5.15".into()),
        SwitchOs::Cumulus => Some("5.12".into()),
        SwitchOs::Eos => Some("4.33".into()),
    }
}

/// The EOS platform family of a synthetic switch: Trident/Tomahawk leaves, Jericho spines.
pub fn platform(os: SwitchOs, leaf: bool) -> Option<EosPlatform> {
    match (os, leaf) {
        (SwitchOs::Eos, true) => Some(EosPlatform::Strata),
        (SwitchOs::Eos, false) => Some(EosPlatform::Sand),
        _ => None,
    }
}
