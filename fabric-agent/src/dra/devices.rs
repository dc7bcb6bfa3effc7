//! The devices the node publishes, from what the agent knows: its NICs and their PCI
//! functions ([`super::inventory`]), each NIC's place in the fabric, and which NICs are
//! shielded ([`super::taints`]). Pure, so every rule is tested without a cluster.
//!
//! **A NIC's place.** The node's labels (the controller's answer in its `NodeFabric` status)
//! say which leaf serves each rail (`rail-<k>`) and which domains enclose the node
//! (`tier-<n>`); the NIC's LLDP neighbour says which leaf it is cabled to. A NIC whose
//! neighbour is the leaf of exactly one rail is on that rail. When one leaf serves several
//! rails (a fabric that is not rail-optimised), the node's NICs on that leaf take its rails
//! in natural name order if their numbers agree. A NIC the cabling check puts on the wrong
//! leaf group, or whose leaf is not one of the node's, gets no rail and no tier: a claim that
//! constrains either never lands on it, rather than on a guess.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::resource::v1::{Device, DeviceAttribute, DeviceTaint};
use spinel_api::crd::HealthFinding;
use spinel_api::dra;
use spinel_api::labels::LabelOptions;
use spinel_node::nics::RoceNic;
use spinel_wire::neighbor::NeighborTable;
use topo_discovery::fabric::names::{natural_cmp, sanitize_segment};

use super::inventory::{Function, Inventory};

/// Where one NIC sits in the fabric.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NicPosition {
    /// The rail it serves.
    pub rail: Option<u16>,
    /// The id of the leaf it is cabled to (the fabric model's switch id).
    pub leaf: Option<String>,
    /// The enclosing domains, tier 1 first.
    pub tiers: Vec<(u8, String)>,
}

/// The rail labels of the node: (rail, leaf id).
fn rails(labels: &BTreeMap<String, String>, options: &LabelOptions) -> Vec<(u16, String)> {
    let prefix = format!("{}rail-", options.prefix);
    labels
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.parse().ok()?, v.clone())))
        .collect()
}

/// Whether switch id `id` names the switch whose LLDP system name is `system`: its last
/// path segment is the name's segment (or the segment of its first DNS label, as the fabric
/// model shortens unambiguous FQDNs).
fn names_switch(id: &str, system: &str) -> bool {
    let last = id.rsplit('.').next().unwrap_or(id);
    let first_label = system.split('.').next().unwrap_or(system);
    last == sanitize_segment(system) || last == sanitize_segment(first_label)
}

/// Every NIC's place, from the node's labels and LLDP table and the NICs' findings.
pub fn positions(
    nics: &[RoceNic],
    table: Option<&NeighborTable>,
    labels: &BTreeMap<String, String>,
    options: &LabelOptions,
    findings: &[HealthFinding],
) -> BTreeMap<String, NicPosition> {
    let rails = rails(labels, options);
    let mut tiers: Vec<(u8, String)> = labels
        .iter()
        .filter_map(|(k, v)| Some((options.tier_of_key(k)?, v.clone())))
        .filter(|(t, _)| *t <= dra::MAX_TIERS)
        .collect();
    tiers.sort();
    // Each NIC's leaf: the first rail leaf one of its neighbours names.
    let mut leaf_of: BTreeMap<String, String> = BTreeMap::new();
    for nic in nics {
        let name = nic.name.as_str();
        let Some(port) = table.and_then(|t| t.ports.iter().find(|p| p.port == name)) else {
            continue;
        };
        let leaf = port.neighbors.iter().find_map(|n| {
            let system = n.system_name.as_deref()?;
            rails
                .iter()
                .find(|(_, id)| names_switch(id, system))
                .map(|(_, id)| id.clone())
        });
        if let Some(leaf) = leaf {
            leaf_of.insert(name.to_owned(), leaf);
        }
    }
    let miscabled: BTreeSet<&str> = findings
        .iter()
        .filter(|f| f.reason == "WrongLeafGroup")
        .filter_map(|f| f.nic.as_deref())
        .collect();
    let mut out = BTreeMap::new();
    for nic in nics {
        let name = nic.name.as_str();
        let mut position = NicPosition::default();
        if let Some(leaf) = leaf_of.get(name) {
            position.leaf = Some(leaf.clone());
            if !miscabled.contains(name) {
                let mut rails_of_leaf: Vec<u16> = rails
                    .iter()
                    .filter(|(_, id)| id == leaf)
                    .map(|(r, _)| *r)
                    .collect();
                rails_of_leaf.sort_unstable();
                let mut on_leaf: Vec<&str> = leaf_of
                    .iter()
                    .filter(|(n, l)| *l == leaf && !miscabled.contains(n.as_str()))
                    .map(|(n, _)| n.as_str())
                    .collect();
                on_leaf.sort_by(|a, b| natural_cmp(a, b));
                if rails_of_leaf.len() == on_leaf.len() {
                    position.rail = on_leaf
                        .iter()
                        .position(|n| *n == name)
                        .map(|i| rails_of_leaf[i]);
                }
                position.tiers = tiers.clone();
            }
        }
        out.insert(name.to_owned(), position);
    }
    out
}

/// The taint effect of a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// New claims do not get the device.
    NoSchedule,
    /// Pods using it are evicted too.
    NoExecute,
}

impl Effect {
    fn as_str(self) -> &'static str {
        match self {
            Self::NoSchedule => "NoSchedule",
            Self::NoExecute => "NoExecute",
        }
    }
}

/// Per NIC, the reasons its devices are tainted for, with their effect.
pub type NicTaints = BTreeMap<String, BTreeMap<String, Effect>>;

/// What the devices are made of.
pub struct Inputs<'a> {
    /// The NICs.
    pub nics: &'a [RoceNic],
    /// Their PCI functions.
    pub inventory: &'a Inventory,
    /// Their places.
    pub positions: &'a BTreeMap<String, NicPosition>,
    /// Their taints.
    pub taints: &'a NicTaints,
    /// Publish VFs.
    pub vfs: bool,
    /// Publish PFs.
    pub pfs: bool,
}

fn string(v: &str) -> DeviceAttribute {
    DeviceAttribute {
        string: Some(v.chars().take(dra::MAX_ATTRIBUTE_VALUE_LEN).collect()),
        ..DeviceAttribute::default()
    }
}

fn int(v: i64) -> DeviceAttribute {
    DeviceAttribute {
        int: Some(v),
        ..DeviceAttribute::default()
    }
}

/// The attributes every device of `nic` shares, plus those of `function`.
fn attributes(
    nic: &RoceNic,
    function: &Function,
    position: Option<&NicPosition>,
) -> BTreeMap<String, DeviceAttribute> {
    let mut a = BTreeMap::new();
    let pci = function.pci.as_str();
    a.insert(dra::ATTR_PCI_BUS_ID.to_owned(), string(pci));
    a.insert(dra::ATTR_PCI_ADDRESS.to_owned(), string(pci));
    if let Some(root) = &function.pcie_root {
        a.insert(dra::ATTR_PCIE_ROOT.to_owned(), string(root));
    }
    if let Some(numa) = function.numa_node {
        a.insert(dra::ATTR_NUMA_NODE.to_owned(), int(numa));
    }
    if let Some(rdma) = &function.rdma_device {
        a.insert(dra::ATTR_RDMA_DEVICE.to_owned(), string(rdma));
    }
    a.insert(dra::ATTR_PF_NAME.to_owned(), string(nic.name.as_str()));
    a.insert(dra::ATTR_MTU.to_owned(), int(i64::from(nic.mtu)));
    if let Some(speed) = nic.speed_mbps {
        a.insert(dra::ATTR_LINK_SPEED.to_owned(), int(i64::from(speed)));
    }
    if let Some(p) = position {
        if let Some(rail) = p.rail {
            a.insert(dra::ATTR_RAIL.to_owned(), int(i64::from(rail)));
        }
        if let Some(leaf) = &p.leaf {
            a.insert(dra::ATTR_LEAF.to_owned(), string(leaf));
        }
        for (tier, id) in &p.tiers {
            a.insert(dra::tier_attribute(*tier), string(id));
        }
    }
    a
}

fn taints(of: Option<&BTreeMap<String, Effect>>) -> Option<Vec<DeviceTaint>> {
    let of = of.filter(|t| !t.is_empty())?;
    Some(
        of.iter()
            .map(|(reason, effect)| DeviceTaint {
                key: dra::taint_key(reason),
                value: None,
                effect: effect.as_str().to_owned(),
                time_added: None,
            })
            .collect(),
    )
}

/// The node's devices, sorted by name.
pub fn devices(inputs: &Inputs<'_>) -> Vec<Device> {
    let mut out = Vec::new();
    for nic in inputs.nics {
        let name = nic.name.as_str();
        let Some(functions) = inputs.inventory.get(name) else {
            continue;
        };
        let position = inputs.positions.get(name);
        let taints = taints(inputs.taints.get(name));
        if inputs.pfs {
            let mut a = attributes(nic, &functions.pf, position);
            a.insert(dra::ATTR_KIND.to_owned(), string("pf"));
            out.push(Device {
                name: dra::pf_device_name(functions.pf.pci.as_str()),
                attributes: Some(a),
                // Shared RDMA: every pod of the network uses the PF's RDMA device.
                allow_multiple_allocations: Some(true),
                taints: taints.clone(),
                ..Device::default()
            });
        }
        if inputs.vfs {
            for vf in &functions.vfs {
                let mut a = attributes(nic, &vf.function, position);
                a.insert(dra::ATTR_KIND.to_owned(), string("vf"));
                a.insert(dra::ATTR_VF_INDEX.to_owned(), int(i64::from(vf.index)));
                a.insert(
                    dra::ATTR_MULTUS_DEVICE_ID.to_owned(),
                    string(vf.function.pci.as_str()),
                );
                if let Some(rail) = position.and_then(|p| p.rail) {
                    a.insert(
                        dra::ATTR_MULTUS_RESOURCE_NAME.to_owned(),
                        string(&dra::rail_resource_name(rail)),
                    );
                }
                out.push(Device {
                    name: dra::vf_device_name(vf.function.pci.as_str()),
                    attributes: Some(a),
                    taints: taints.clone(),
                    ..Device::default()
                });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use spinel_wire::neighbor::{
        ChassisId, ChassisIdSubtype, Neighbor, Observer, PortId, PortIdSubtype, PortNeighbors,
    };

    use super::*;
    use crate::dra::inventory::{NicFunctions, Vf};

    pub(crate) fn nic(name: &str, pci: &str) -> RoceNic {
        RoceNic {
            name: name.parse().unwrap(),
            index: 2,
            pci: pci.parse().unwrap(),
            rdma_device: Some("mlx5_0".into()),
            mac: None,
            mtu: 9000,
            carrier: true,
            speed_mbps: Some(400_000),
            addresses: Vec::new(),
        }
    }

    pub(crate) fn table(ports: &[(&str, &str)]) -> NeighborTable {
        NeighborTable {
            schema: spinel_wire::neighbor::SCHEMA.into(),
            observer: Observer {
                name: "n1".into(),
                chassis_id: None,
                role: None,
            },
            ports: ports
                .iter()
                .map(|(port, system)| {
                    let mut n = Neighbor::new(
                        ChassisId {
                            subtype: ChassisIdSubtype::MacAddress,
                            value: "0c:42:a1:00:00:01".into(),
                        },
                        PortId {
                            subtype: PortIdSubtype::InterfaceName,
                            value: "Ethernet0".into(),
                        },
                        120,
                    );
                    n.system_name = Some((*system).into());
                    PortNeighbors {
                        port: (*port).into(),
                        neighbors: vec![n],
                        counters: None,
                    }
                })
                .collect(),
        }
    }

    pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (format!("fabric.spinel.dev/{k}"), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn each_nic_takes_the_rail_of_its_leaf_and_the_node_s_domains() {
        let nics = [
            nic("ens1np0", "0000:3b:00.0"),
            nic("ens2np0", "0000:5e:00.0"),
            nic("ens3np0", "0000:86:00.0"),
        ];
        let t = table(&[
            ("ens1np0", "Leaf-B1"),
            ("ens2np0", "leaf-a1.fab.example"),
            ("ens3np0", "leaf09"),
        ]);
        let l = labels(&[
            ("tier-1", "spine1-2.leaf-a1-b1"),
            ("tier-2", "spine1-2"),
            ("rail-0", "spine1-2.leaf-a1-b1.leaf-a1"),
            ("rail-1", "spine1-2.leaf-a1-b1.leaf-b1"),
            ("rails", "2"),
        ]);
        let p = positions(&nics, Some(&t), &l, &LabelOptions::default(), &[]);
        assert_eq!(p["ens1np0"].rail, Some(1));
        assert_eq!(
            p["ens1np0"].leaf.as_deref(),
            Some("spine1-2.leaf-a1-b1.leaf-b1")
        );
        assert_eq!(p["ens2np0"].rail, Some(0), "an FQDN's first label");
        assert_eq!(
            p["ens2np0"].tiers,
            vec![
                (1, "spine1-2.leaf-a1-b1".to_owned()),
                (2, "spine1-2".to_owned())
            ]
        );
        assert_eq!(
            p["ens3np0"],
            NicPosition::default(),
            "leaf09 is none of the node's"
        );
        // The cabling check says ens1np0 is on the wrong leaf group: no rail, no tier.
        let wrong = [HealthFinding {
            nic: Some("ens1np0".into()),
            reason: "WrongLeafGroup".into(),
            message: "x".into(),
        }];
        let p = positions(&nics, Some(&t), &l, &LabelOptions::default(), &wrong);
        assert_eq!(p["ens1np0"].rail, None);
        assert!(p["ens1np0"].tiers.is_empty());
        assert_eq!(p["ens2np0"].rail, Some(0));
    }

    #[test]
    fn one_leaf_for_every_rail_assigns_rails_in_name_order_when_counts_agree() {
        let nics = [nic("ens10", "0000:3b:00.0"), nic("ens9", "0000:5e:00.0")];
        let t = table(&[("ens10", "leaf1"), ("ens9", "leaf1")]);
        let l = labels(&[
            ("tier-1", "leaf1"),
            ("rail-0", "leaf1"),
            ("rail-1", "leaf1"),
        ]);
        let p = positions(&nics, Some(&t), &l, &LabelOptions::default(), &[]);
        assert_eq!((p["ens9"].rail, p["ens10"].rail), (Some(0), Some(1)));
        let l = labels(&[("tier-1", "leaf1"), ("rail-0", "leaf1")]);
        let p = positions(&nics, Some(&t), &l, &LabelOptions::default(), &[]);
        assert_eq!((p["ens9"].rail, p["ens10"].rail), (None, None), "no guess");
        assert_eq!(p["ens9"].leaf.as_deref(), Some("leaf1"));
    }

    fn function(pci: &str, rdma: &str) -> Function {
        Function {
            pci: pci.parse().unwrap(),
            pcie_root: Some("pci0000:3a".into()),
            numa_node: Some(0),
            rdma_device: Some(rdma.into()),
        }
    }

    #[test]
    fn a_vf_device_carries_every_attribute_and_its_nic_s_taints() {
        let nics = [nic("ens1np0", "0000:3b:00.0")];
        let mut inventory = Inventory::new();
        inventory.insert(
            "ens1np0".into(),
            NicFunctions {
                pf: function("0000:3b:00.0", "mlx5_0"),
                vfs: vec![Vf {
                    index: 3,
                    function: function("0000:3b:00.5", "mlx5_5"),
                }],
            },
        );
        let mut positions = BTreeMap::new();
        positions.insert(
            "ens1np0".to_owned(),
            NicPosition {
                rail: Some(2),
                leaf: Some("sp.lg.leaf3".into()),
                tiers: vec![(1, "sp.lg".into()), (2, "sp".into())],
            },
        );
        let inputs = |taints| Inputs {
            nics: &nics,
            inventory: &inventory,
            positions: &positions,
            taints,
            vfs: true,
            pfs: true,
        };
        let none = NicTaints::new();
        let d = devices(&inputs(&none));
        assert_eq!(
            d.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["pf-0000-3b-00-0", "vf-0000-3b-00-5"]
        );
        let vf = d[1].attributes.as_ref().unwrap();
        let s = |k: &str| vf[k].string.clone().unwrap();
        let i = |k: &str| vf[k].int.unwrap();
        assert_eq!(s(dra::ATTR_PCIE_ROOT), "pci0000:3a");
        assert_eq!(i(dra::ATTR_NUMA_NODE), 0);
        assert_eq!((i(dra::ATTR_RAIL), i(dra::ATTR_VF_INDEX)), (2, 3));
        assert_eq!(s(dra::ATTR_LEAF), "sp.lg.leaf3");
        assert_eq!(s(&dra::tier_attribute(1)), "sp.lg");
        assert_eq!(s(&dra::tier_attribute(2)), "sp");
        assert_eq!(s(dra::ATTR_PF_NAME), "ens1np0");
        assert_eq!(s(dra::ATTR_RDMA_DEVICE), "mlx5_5");
        assert_eq!((i(dra::ATTR_LINK_SPEED), i(dra::ATTR_MTU)), (400_000, 9000));
        assert_eq!(s(dra::ATTR_MULTUS_DEVICE_ID), "0000:3b:00.5");
        assert_eq!(s(dra::ATTR_MULTUS_RESOURCE_NAME), "roce.spinel.dev/rail2");
        assert_eq!(s(dra::ATTR_KIND), "vf");
        assert!(vf.len() <= dra::MAX_ATTRIBUTES_PER_DEVICE);
        assert!(d.iter().all(|d| d.taints.is_none()));
        assert_eq!(
            d[0].allow_multiple_allocations,
            Some(true),
            "a PF is shared"
        );

        let mut taints = NicTaints::new();
        taints.insert(
            "ens1np0".into(),
            [("LinkDown".to_owned(), Effect::NoExecute)].into(),
        );
        let d = devices(&inputs(&taints));
        for dev in &d {
            let t = dev.taints.as_ref().unwrap();
            assert_eq!(
                (t[0].key.as_str(), t[0].effect.as_str()),
                ("roce.spinel.dev/LinkDown", "NoExecute")
            );
        }
    }
}
