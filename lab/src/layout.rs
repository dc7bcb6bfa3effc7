//! The lab's fabric on paper: which switches and nodes exist, how they are cabled, and every
//! name and address, computed from a size before anything is created. Pure, so the whole
//! layout is tested without root.
//!
//! The fabric is rail-optimised and routed: rail group `g` has one leaf per rail
//! (`leaf<g>-r<r>`); node NIC `rail<r>` is cabled to its group's rail-`r` leaf; every leaf has
//! an uplink to every spine. Each leaf routes its own subnet (one per leaf per rail, a bridge
//! with the gateway address over its node ports) and reaches the others through the spines
//! over point-to-point /31 links, as a routed RoCE fabric does.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

/// Most namespaces a lab may have: a few hundred run on a 2-core machine.
pub const MAX_NAMESPACES: u32 = 400;
/// Most nodes under one leaf: each node takes a block of 16 addresses of the leaf's /22.
pub const MAX_NODES_PER_LEAF: u32 = 62;
/// Most VFs per NIC: a node's block holds its own address and 14 for pods.
pub const MAX_VFS_PER_RAIL: u32 = 14;
/// MTU of every fabric link (RoCE's 4096-octet payload plus headers fits).
pub const FABRIC_MTU: u32 = 9000;
/// The bridge on every leaf that joins its node ports and holds the gateway address.
pub const LEAF_BRIDGE: &str = "br0";

/// How big the lab is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabSize {
    /// Spine switches.
    pub spines: u32,
    /// Rail groups (one leaf per rail in each).
    pub rail_groups: u32,
    /// RoCE NICs per node, one per rail.
    pub rails: u32,
    /// GPU nodes, spread evenly over the rail groups.
    pub nodes: u32,
    /// VFs on each NIC.
    pub vfs_per_rail: u32,
    /// GPUs per node (the `nvidia.com/gpu` capacity the lab gives its nodes).
    pub gpus_per_node: u32,
}

impl Default for LabSize {
    /// The issue's default: 2 spines, 2 rail groups of 2 leaves, 8 nodes with 2 rails.
    fn default() -> Self {
        Self {
            spines: 2,
            rail_groups: 2,
            rails: 2,
            nodes: 8,
            vfs_per_rail: 4,
            gpus_per_node: 2,
        }
    }
}

/// A size the lab cannot build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// A count is zero or above its limit.
    #[error("{what} must be between {min} and {max}, not {value}")]
    OutOfRange {
        /// Which count.
        what: &'static str,
        /// Its value.
        value: u32,
        /// Smallest allowed.
        min: u32,
        /// Largest allowed.
        max: u32,
    },
    /// Too many namespaces in all.
    #[error(
        "{namespaces} namespaces ({switches} switches, {nodes} nodes) is more than the lab runs \
         ({MAX_NAMESPACES})"
    )]
    TooBig {
        /// Switches plus nodes.
        namespaces: u32,
        /// Switches.
        switches: u32,
        /// Nodes.
        nodes: u32,
    },
}

impl LabSize {
    /// Checks every count, so the plan never overflows an address block or a name.
    pub fn validate(&self) -> Result<(), SizeError> {
        let range = |what, value, min, max| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(SizeError::OutOfRange {
                    what,
                    value,
                    min,
                    max,
                })
            }
        };
        range("spines", self.spines, 1, 16)?;
        range("rail groups", self.rail_groups, 1, 64)?;
        range("rails", self.rails, 1, 8)?;
        range("VFs per rail", self.vfs_per_rail, 1, MAX_VFS_PER_RAIL)?;
        range("GPUs per node", self.gpus_per_node, 1, 16)?;
        range(
            "nodes",
            self.nodes,
            self.rail_groups,
            self.rail_groups * MAX_NODES_PER_LEAF,
        )?;
        let switches = self.spines + self.rail_groups * self.rails;
        if switches + self.nodes > MAX_NAMESPACES {
            return Err(SizeError::TooBig {
                namespaces: switches + self.nodes,
                switches,
                nodes: self.nodes,
            });
        }
        Ok(())
    }
}

/// What a switch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Top of the fabric.
    Spine,
    /// Top of a rail in a rail group.
    Leaf,
}

/// One switch: a namespace that forwards IP.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Switch {
    /// Name (namespace, LLDP system name).
    pub name: String,
    /// Spine or leaf.
    pub role: Role,
    /// Leaves: the rail group (0-based).
    pub group: Option<u32>,
    /// Leaves: the rail.
    pub rail: Option<u32>,
    /// Leaves: the subnet of its rail in its group; the gateway is its first address.
    pub subnet: Option<Ipv4Net>,
}

impl Switch {
    /// A leaf's gateway address (`subnet`'s first host) with the subnet's prefix.
    pub fn gateway(&self) -> Option<Ipv4Net> {
        let subnet = self.subnet?;
        Ipv4Net::new(nth(subnet.network(), 1), subnet.prefix_len()).ok()
    }
}

/// One NIC of a node: a simulated SR-IOV physical function cabled to a leaf.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Nic {
    /// Rail.
    pub rail: u32,
    /// Netdev name on the node (`rail<r>`).
    pub ifname: String,
    /// PCI address of the PF (each node has its own sysfs, so nodes repeat them).
    pub pci: String,
    /// RDMA device of the PF.
    pub rdma: String,
    /// The leaf it is cabled to and the leaf's port.
    pub leaf: String,
    /// The leaf's port.
    pub leaf_port: String,
    /// The node's own address on this rail (with the leaf subnet's prefix).
    pub address: Ipv4Net,
    /// First and last address host-local hands to pods on this NIC.
    pub pod_range: (Ipv4Addr, Ipv4Addr),
    /// The leaf's gateway address.
    pub gateway: Ipv4Addr,
    /// The VFs: PCI address, netdev name, MAC.
    pub vfs: Vec<Vf>,
}

/// One simulated VF: a real macvlan on the PF, described as a VF in the node's sysfs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Vf {
    /// Index under the PF.
    pub index: u32,
    /// PCI address.
    pub pci: String,
    /// Netdev name on the node.
    pub ifname: String,
    /// MAC on the node before any attachment.
    pub mac: String,
    /// RDMA device.
    pub rdma: String,
}

/// One GPU node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// Name (namespace, Kubernetes Node).
    pub name: String,
    /// Rail group (0-based).
    pub group: u32,
    /// Position under its leaves (0-based).
    pub slot: u32,
    /// NICs, one per rail.
    pub nics: Vec<Nic>,
}

/// One cable: `a:a_port` to `b:b_port`, with addresses when it is a routed link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cable {
    /// Lower end (a node, or a leaf for an uplink).
    pub a: String,
    /// Its port.
    pub a_port: String,
    /// Upper end (a leaf, or a spine).
    pub b: String,
    /// Its port.
    pub b_port: String,
    /// Uplinks: the /31 of each end.
    pub p2p: Option<(Ipv4Net, Ipv4Net)>,
}

/// The whole lab on paper.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The size it was computed from.
    pub size: LabSize,
    /// Spines first, then leaves by group and rail.
    pub switches: Vec<Switch>,
    /// Nodes in name order.
    pub nodes: Vec<Node>,
    /// Node cables, then uplinks.
    pub cables: Vec<Cable>,
}

/// `base + n`.
fn nth(base: Ipv4Addr, n: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(base) + n)
}

/// Leaf `leaf<g+1>-r<r>`.
pub fn leaf_name(group: u32, rail: u32) -> String {
    format!("leaf{}-r{rail}", group + 1)
}

/// The subnet of rail `rail` in rail group `group`: `10.(100+rail).(4*group).0/22`.
fn leaf_subnet(group: u32, rail: u32) -> Ipv4Net {
    let base = Ipv4Addr::new(10, 100 + rail as u8, (4 * group) as u8, 0);
    Ipv4Net::new(base, 22).unwrap_or_default()
}

/// PCI address of VF `index` of the PF on bus `bus`: functions 2-7 of device 0, then 8 per
/// device, as a ConnectX PF lays them out.
fn vf_pci(bus: u32, index: u32) -> String {
    let n = index + 2;
    format!("0000:{bus:02x}:{:02x}.{}", n / 8, n % 8)
}

impl Plan {
    /// Lays out a lab of `size` (validated first).
    pub fn new(size: LabSize) -> Result<Self, SizeError> {
        size.validate()?;
        let spines = (0..size.spines).map(|s| Switch {
            name: format!("spine{}", s + 1),
            role: Role::Spine,
            group: None,
            rail: None,
            subnet: None,
        });
        let leaves = (0..size.rail_groups).flat_map(|g| {
            (0..size.rails).map(move |r| Switch {
                name: leaf_name(g, r),
                role: Role::Leaf,
                group: Some(g),
                rail: Some(r),
                subnet: Some(leaf_subnet(g, r)),
            })
        });
        let switches: Vec<Switch> = spines.chain(leaves).collect();
        let mut plan = Self {
            size,
            switches,
            nodes: Vec::new(),
            cables: Vec::new(),
        };
        plan.place_nodes();
        plan.cable_uplinks();
        Ok(plan)
    }

    /// Nodes spread evenly over the groups in contiguous runs (node01-04 in group 1, ...).
    fn place_nodes(&mut self) {
        let size = self.size;
        let mut slots = vec![0u32; size.rail_groups as usize];
        for i in 0..size.nodes {
            let group = i * size.rail_groups / size.nodes;
            let slot = slots[group as usize];
            slots[group as usize] += 1;
            let name = format!("node{:02}", i + 1);
            let nics = (0..size.rails)
                .map(|rail| self.nic(&name, group, slot, rail))
                .collect();
            self.nodes.push(Node {
                name,
                group,
                slot,
                nics,
            });
        }
    }

    /// NIC `rail` of the node in `slot` of `group`, and its cable.
    fn nic(&mut self, node: &str, group: u32, slot: u32, rail: u32) -> Nic {
        let size = self.size;
        let subnet = leaf_subnet(group, rail);
        let block = nth(subnet.network(), 16 * (slot + 1));
        let bus = 0x3b + rail;
        let ifname = format!("rail{rail}");
        let leaf = leaf_name(group, rail);
        let leaf_port = format!("swp{}", slot + 1);
        let node_number = node.trim_start_matches("node").parse::<u32>().unwrap_or(0);
        let vfs = (0..size.vfs_per_rail)
            .map(|index| Vf {
                index,
                pci: vf_pci(bus, index),
                ifname: format!("{ifname}v{index}"),
                mac: format!(
                    "02:5f:{:02x}:{:02x}:{rail:02x}:{index:02x}",
                    node_number / 256,
                    node_number % 256
                ),
                rdma: format!("mlx5_{}", size.rails + rail * size.vfs_per_rail + index),
            })
            .collect();
        self.cables.push(Cable {
            a: node.to_owned(),
            a_port: ifname.clone(),
            b: leaf.clone(),
            b_port: leaf_port.clone(),
            p2p: None,
        });
        Nic {
            rail,
            ifname,
            pci: format!("0000:{bus:02x}:00.0"),
            rdma: format!("mlx5_{rail}"),
            leaf,
            leaf_port,
            address: Ipv4Net::new(block, subnet.prefix_len()).unwrap_or_default(),
            pod_range: (nth(block, 1), nth(block, MAX_VFS_PER_RAIL)),
            gateway: nth(subnet.network(), 1),
            vfs,
        }
    }

    /// Every leaf to every spine, leaf port `swp<nodes under it + s + 1>`, spine port
    /// `swp<leaf number>`, each link a /31 out of 172.16.0.0/16.
    fn cable_uplinks(&mut self) {
        let size = self.size;
        let per_group = |g: u32| self.nodes.iter().filter(|n| n.group == g).count() as u32;
        let leaves: Vec<(String, u32)> = self
            .switches
            .iter()
            .filter(|s| s.role == Role::Leaf)
            .map(|s| (s.name.clone(), per_group(s.group.unwrap_or(0))))
            .collect();
        for (l, (leaf, downlinks)) in leaves.iter().enumerate() {
            for s in 0..size.spines {
                let k = l as u32 * size.spines + s;
                let base = nth(Ipv4Addr::new(172, 16, 0, 0), 2 * k);
                let p2p = |ip| Ipv4Net::new(ip, 31).unwrap_or_default();
                self.cables.push(Cable {
                    a: leaf.clone(),
                    a_port: format!("swp{}", downlinks + s + 1),
                    b: format!("spine{}", s + 1),
                    b_port: format!("swp{}", l + 1),
                    p2p: Some((p2p(base), p2p(nth(base, 1)))),
                });
            }
        }
    }

    /// A switch by name.
    pub fn switch(&self, name: &str) -> Option<&Switch> {
        self.switches.iter().find(|s| s.name == name)
    }

    /// A node by name.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The uplinks (cables with /31 addresses).
    pub fn uplinks(&self) -> impl Iterator<Item = &Cable> {
        self.cables.iter().filter(|c| c.p2p.is_some())
    }

    /// Every namespace the lab creates: switches, then nodes.
    pub fn namespaces(&self) -> impl Iterator<Item = &str> {
        self.switches
            .iter()
            .map(|s| s.name.as_str())
            .chain(self.nodes.iter().map(|n| n.name.as_str()))
    }

    /// The ports of `switch` that face nodes or spines, in cabling order.
    pub fn ports_of(&self, switch: &str) -> Vec<&str> {
        self.cables
            .iter()
            .filter_map(|c| {
                if c.b == switch {
                    Some(c.b_port.as_str())
                } else if c.a == switch {
                    Some(c.a_port.as_str())
                } else {
                    None
                }
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn default_lab_is_the_issues_fabric() {
        let plan = Plan::new(LabSize::default()).unwrap();
        let names: Vec<&str> = plan.switches.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "spine1", "spine2", "leaf1-r0", "leaf1-r1", "leaf2-r0", "leaf2-r1"
            ]
        );
        assert_eq!(plan.nodes.len(), 8);
        let groups: Vec<u32> = plan.nodes.iter().map(|n| n.group).collect();
        assert_eq!(groups, [0, 0, 0, 0, 1, 1, 1, 1]);
        // 8 nodes x 2 rails + 4 leaves x 2 spines.
        assert_eq!(plan.cables.len(), 16 + 8);
        let n5 = plan.node("node05").unwrap();
        assert_eq!(n5.nics[1].leaf, "leaf2-r1");
        assert_eq!(n5.nics[1].leaf_port, "swp1");
        assert_eq!(n5.nics[1].address.to_string(), "10.101.4.16/22");
        assert_eq!(n5.nics[1].gateway, Ipv4Addr::new(10, 101, 4, 1));
        assert_eq!(
            n5.nics[1].pod_range,
            (Ipv4Addr::new(10, 101, 4, 17), Ipv4Addr::new(10, 101, 4, 30))
        );
        assert_eq!(
            plan.ports_of("leaf1-r0"),
            ["swp1", "swp2", "swp3", "swp4", "swp5", "swp6"]
        );
        assert_eq!(plan.ports_of("spine2"), ["swp1", "swp2", "swp3", "swp4"]);
    }

    #[test]
    fn no_address_name_or_mac_is_handed_out_twice() {
        for size in [
            LabSize::default(),
            LabSize {
                nodes: 64,
                ..LabSize::default()
            },
            LabSize {
                spines: 4,
                rail_groups: 8,
                rails: 8,
                nodes: 248,
                vfs_per_rail: MAX_VFS_PER_RAIL,
                gpus_per_node: 8,
            },
        ] {
            let plan = Plan::new(size).unwrap();
            let mut addresses = HashSet::new();
            let mut macs = HashSet::new();
            for nic in plan.nodes.iter().flat_map(|n| &n.nics) {
                let subnet = plan.switch(&nic.leaf).unwrap().subnet.unwrap();
                assert!(subnet.contains(&nic.address.addr()));
                assert!(subnet.contains(&nic.pod_range.1));
                assert!(addresses.insert(nic.address.addr()));
                let (first, last) = (u32::from(nic.pod_range.0), u32::from(nic.pod_range.1));
                for a in first..=last {
                    assert!(addresses.insert(Ipv4Addr::from(a)), "{a} twice");
                }
                for vf in &nic.vfs {
                    assert!(macs.insert(vf.mac.clone()), "{} twice", vf.mac);
                    assert!(hostnet::sriov::is_valid_ifname(&vf.ifname));
                }
            }
            for c in plan.uplinks() {
                let (a, b) = c.p2p.unwrap();
                assert!(addresses.insert(a.addr()) && addresses.insert(b.addr()));
                assert!(hostnet::sriov::is_valid_ifname(&c.a_port));
            }
            let names: HashSet<&str> = plan.namespaces().collect();
            assert_eq!(names.len(), plan.switches.len() + plan.nodes.len());
        }
    }

    #[test]
    fn sizes_out_of_range_are_refused_with_the_count_named() {
        let bad = LabSize {
            nodes: 1,
            ..LabSize::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            "nodes must be between 2 and 124, not 1"
        );
        let huge = LabSize {
            spines: 16,
            rail_groups: 64,
            rails: 8,
            nodes: 64,
            ..LabSize::default()
        };
        assert!(matches!(huge.validate(), Err(SizeError::TooBig { .. })));
        let vfs = LabSize {
            vfs_per_rail: 15,
            ..LabSize::default()
        };
        assert!(
            vfs.validate()
                .unwrap_err()
                .to_string()
                .contains("VFs per rail")
        );
    }
}
