//! Which interfaces are the node's RoCE NICs, and what the kernel says about them.
//!
//! A RoCE NIC is a network interface that sysfs shows as a PCI physical function with an RDMA
//! device. VFs (they belong to pods), switchdev representors (host-side stand-ins for pods'
//! ports) and virtual interfaces are never RoCE NICs, even when an operator names them: the
//! agent listens for LLDP only where a switch, not a pod, is on the other end.

use std::net::IpAddr;

use hostnet::ifname::IfName;
use hostnet::netlink::{Link, NetlinkError, RouteSocket};
use hostnet::sriov::{PciAddress, Sysfs};
use ipnet::IpNet;
use spinel_wire::MacAddr;

/// How the node's RoCE NICs are chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NicSelection {
    /// Every physical function with an RDMA device.
    Auto,
    /// These interfaces (each still checked).
    Names(Vec<IfName>),
    /// Interfaces whose names match this pattern (`*` matches any run of characters), checked.
    Pattern(String),
}

/// One RoCE NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoceNic {
    /// The netdev.
    pub name: IfName,
    /// Its interface index in the host namespace.
    pub index: u32,
    /// Its PCI function.
    pub pci: PciAddress,
    /// Its RDMA device (the first, when a function has several).
    pub rdma_device: Option<String>,
    /// Its MAC.
    pub mac: Option<MacAddr>,
    /// Its MTU.
    pub mtu: u32,
    /// Whether the link has carrier.
    pub carrier: bool,
    /// Link speed in Mbit/s, when the driver reports one.
    pub speed_mbps: Option<u32>,
    /// Its addresses, link-local IPv6 excluded.
    pub addresses: Vec<IpNet>,
}

/// An interface that was considered and refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The interface.
    pub name: String,
    /// Why it is not a RoCE NIC.
    pub reason: String,
}

/// True when `name` matches `pattern`, whose `*` matches any run of characters.
pub fn matches_pattern(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i == parts.len() - 1 {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Why `name` is not a RoCE NIC, or its PCI function and RDMA devices.
fn classify(sysfs: &Sysfs, name: &str) -> Result<(PciAddress, Vec<String>), String> {
    if sysfs.is_representor(name) {
        return Err("a switchdev representor stands for a pod's port, not a cable".into());
    }
    match sysfs.function_of(name) {
        Ok((_, true)) => Err("a VF belongs to a pod".into()),
        Ok((pci, false)) => {
            let rdma = sysfs.rdma_devices_of(&pci).unwrap_or_default();
            if rdma.is_empty() {
                Err(format!("PCI function {pci} has no RDMA device"))
            } else {
                Ok((pci, rdma))
            }
        }
        Err(_) => Err("not a PCI function (a virtual or pod-facing interface)".into()),
    }
}

/// The node's RoCE NICs in the namespace `host` looks at, and the interfaces the selection
/// named but that are not RoCE NICs.
pub fn discover(
    sysfs: &Sysfs,
    host: &mut RouteSocket,
    selection: &NicSelection,
) -> Result<(Vec<RoceNic>, Vec<Refused>), NetlinkError> {
    let links = host.links()?;
    let addresses = host.addresses(None)?;
    let wanted = |l: &Link| match selection {
        NicSelection::Auto => l.name != "lo",
        NicSelection::Names(names) => names.iter().any(|n| *n == l.name),
        NicSelection::Pattern(p) => matches_pattern(p, &l.name),
    };
    let mut nics = Vec::new();
    let mut refused = Vec::new();
    for link in links.iter().filter(|l| wanted(l)) {
        let Ok(name) = link.name.parse::<IfName>() else {
            continue; // Not a name the kernel gives (it never gives one): nothing to use.
        };
        match classify(sysfs, &link.name) {
            Ok((pci, rdma)) => nics.push(RoceNic {
                name,
                index: link.index,
                pci,
                rdma_device: rdma.into_iter().next(),
                mac: link.mac,
                mtu: link.mtu,
                carrier: link.carrier,
                speed_mbps: sysfs
                    .netdev_attribute(&link.name, "speed")
                    .and_then(|s| s.parse::<i64>().ok())
                    .and_then(|s| u32::try_from(s).ok()),
                addresses: addresses
                    .iter()
                    .filter(|a| a.index == link.index && !is_link_local(a.net.addr()))
                    .map(|a| a.net)
                    .collect(),
            }),
            // Auto-detection passes over every other interface silently: most are not NICs.
            Err(_) if *selection == NicSelection::Auto => {}
            Err(reason) => refused.push(Refused {
                name: link.name.clone(),
                reason,
            }),
        }
    }
    if let NicSelection::Names(names) = selection {
        for name in names
            .iter()
            .filter(|n| !links.iter().any(|l| **n == l.name))
        {
            refused.push(Refused {
                name: name.to_string(),
                reason: "no such interface in the host namespace".into(),
            });
        }
    }
    nics.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((nics, refused))
}

fn is_link_local(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80)
}

#[cfg(test)]
mod tests {
    use hostnet::sriov::fake::FakeSysfs;

    use super::*;

    #[test]
    fn patterns_match_like_shell_stars() {
        for (p, n, want) in [
            ("ens*", "ens1f0np0", true),
            ("ens*np*", "ens1f0np0", true),
            ("ens*np1", "ens1f0np0", false),
            ("*np0", "ens1f0np0", true),
            ("eth0", "eth0", true),
            ("eth0", "eth01", false),
            ("*", "anything", true),
        ] {
            assert_eq!(matches_pattern(p, n), want, "{p} {n}");
        }
    }

    #[test]
    fn only_physical_functions_with_rdma_are_roce_nics() {
        let sys = FakeSysfs::new();
        sys.add_pf("0000:3b:00.0", "ens1f0np0", 2, 8);
        sys.add_rdma("0000:3b:00.0", "mlx5_0");
        sys.add_pf("0000:5e:00.0", "eno1", 0, 0);
        sys.add_vf(
            "0000:3b:00.0",
            0,
            "0000:3b:00.2",
            Some("ens1f0v0"),
            "mlx5_core",
        );
        let sysfs = Sysfs::new(sys.root());
        assert!(classify(&sysfs, "ens1f0np0").is_ok());
        assert!(
            classify(&sysfs, "eno1")
                .unwrap_err()
                .contains("no RDMA device")
        );
        assert!(classify(&sysfs, "ens1f0v0").unwrap_err().contains("VF"));
        assert!(
            classify(&sysfs, "veth0")
                .unwrap_err()
                .contains("not a PCI function")
        );
    }
}
