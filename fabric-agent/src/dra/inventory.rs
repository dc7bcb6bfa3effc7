//! The PCI side of the node's RoCE NICs, read from sysfs on a plain thread: each PF and its
//! VFs with their PCIe root complex, NUMA node and RDMA device.
//!
//! The PCIe root is derived as `k8s.io/dynamic-resource-allocation/deviceattribute` derives
//! the standard `resource.kubernetes.io/pcieRoot`: `bus/pci/devices/<bdf>` links to
//! `devices/pci<domain>:<bus>/.../<bdf>`, and the first component under `devices/` is the
//! root. (Reading it belongs in `hostnet` beside the rest of the SR-IOV model; it is here
//! until that crate grows it.)

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hostnet::sriov::{Driver, PciAddress, Sysfs};
use spinel_node::nics::RoceNic;
use tokio::sync::watch;

use crate::report::Observation;

/// One PCI function as DRA describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its address.
    pub pci: PciAddress,
    /// Its PCIe root complex (`pci0000:3a`), when sysfs shows the device tree.
    pub pcie_root: Option<String>,
    /// Its NUMA node, when the platform reports one (`numa_node` is -1 otherwise).
    pub numa_node: Option<i64>,
    /// Its RDMA device.
    pub rdma_device: Option<String>,
}

/// One VF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vf {
    /// Its index on the PF.
    pub index: u32,
    /// The function.
    pub function: Function,
}

/// A NIC's functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicFunctions {
    /// The PF.
    pub pf: Function,
    /// Its VFs bound to a kernel network driver (a VF on vfio-pci or unbound is no RoCE
    /// interface the CNI could attach), by index.
    pub vfs: Vec<Vf>,
}

/// Every RoCE NIC's functions, by NIC name.
pub type Inventory = BTreeMap<String, NicFunctions>;

/// The PCIe root complex of the function at `pci`, from the target of its
/// `bus/pci/devices/<bdf>` link; `None` when the link is missing or not into `devices/pci*`.
pub fn pcie_root(sysfs_root: &Path, pci: &PciAddress) -> Option<String> {
    let link = Path::new("bus/pci/devices").join(pci.as_str());
    let target = std::fs::read_link(sysfs_root.join(&link)).ok()?;
    // Resolve the relative target lexically from the link's directory, as the kernel's
    // links are relative (`../../../devices/pci0000:3a/...`).
    let mut resolved: Vec<std::ffi::OsString> = Vec::new();
    let base = if target.is_absolute() {
        PathBuf::new()
    } else {
        PathBuf::from("bus/pci/devices")
    };
    for c in base.join(&target).components() {
        match c {
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(s) => resolved.push(s.to_owned()),
            _ => {}
        }
    }
    // An absolute target names the real /sys: drop everything up to `devices`.
    let start = resolved.iter().position(|c| c == "devices")?;
    let mut rest = resolved[start + 1..].iter();
    let root = rest.next()?.to_str()?;
    let last = resolved.last()?.to_str()?;
    (root.starts_with("pci") && last == pci.as_str()).then(|| root.to_owned())
}

/// The NUMA node of the function at `pci`; `None` when unknown (-1) or unreadable.
pub fn numa_node(sysfs_root: &Path, pci: &PciAddress) -> Option<i64> {
    let path = sysfs_root
        .join("bus/pci/devices")
        .join(pci.as_str())
        .join("numa_node");
    let n: i64 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
    (n >= 0).then_some(n)
}

/// Reads the NICs' functions. `known_rdma` keeps each VF's RDMA device once seen: in the
/// RDMA subsystem's exclusive mode it leaves the host's view while a pod holds the VF, and a
/// device's published facts must not change with its use.
pub fn read(
    sysfs: &Sysfs,
    nics: &[RoceNic],
    known_rdma: &mut HashMap<PciAddress, String>,
) -> Inventory {
    let root = sysfs.root();
    let function = |pci: &PciAddress, rdma: Option<String>| Function {
        pci: pci.clone(),
        pcie_root: pcie_root(root, pci),
        numa_node: numa_node(root, pci),
        rdma_device: rdma,
    };
    let mut out = Inventory::new();
    for nic in nics {
        let mut vfs = Vec::new();
        match sysfs.pf(&nic.name) {
            Ok(pf) => match sysfs.vfs_of(&pf) {
                Ok(list) => {
                    for (index, pci) in list {
                        match sysfs.vf(&pci) {
                            Ok(vf) if matches!(vf.driver, Driver::Kernel(_)) => {
                                let rdma = match vf.rdma_devices.into_iter().next() {
                                    Some(dev) => {
                                        known_rdma.insert(pci.clone(), dev.clone());
                                        Some(dev)
                                    }
                                    None => known_rdma.get(&pci).cloned(),
                                };
                                vfs.push(Vf {
                                    index,
                                    function: function(&pci, rdma),
                                });
                            }
                            Ok(_) => {}
                            Err(e) => tracing::warn!(nic = %nic.name, %pci, "cannot read VF: {e}"),
                        }
                    }
                }
                Err(e) => tracing::warn!(nic = %nic.name, "cannot list the VFs: {e}"),
            },
            Err(e) => tracing::warn!(nic = %nic.name, "cannot read the PF: {e}"),
        }
        out.insert(
            nic.name.to_string(),
            NicFunctions {
                pf: function(&nic.pci, nic.rdma_device.clone()),
                vfs,
            },
        );
    }
    out
}

/// Reads the inventory of the observed NICs every `period` until `stop` is set, publishing
/// changes on `out`.
pub fn watch(
    sysfs: Sysfs,
    observation: Arc<watch::Sender<Observation>>,
    out: watch::Sender<Inventory>,
    period: Duration,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("dra-inventory".into())
        .spawn(move || {
            let mut known_rdma = HashMap::new();
            while !stop.load(Ordering::Relaxed) {
                let nics = observation.borrow().nics.clone();
                let inventory = read(&sysfs, &nics, &mut known_rdma);
                out.send_if_modified(|current| {
                    let changed = *current != inventory;
                    *current = inventory;
                    changed
                });
                std::thread::sleep(period);
            }
        })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use hostnet::sriov::fake::FakeSysfs;

    use super::*;

    /// Moves the fake tree's device directories under `devices/<root>/<bridge>/` and links them
    /// back, as the kernel lays sysfs out.
    pub(crate) fn under_root(sys: &Path, bdfs: &[&str], root: &str, numa: i64) {
        let bridge = sys.join("devices").join(root).join("0000:3a:00.0");
        std::fs::create_dir_all(&bridge).unwrap();
        for bdf in bdfs {
            let link = sys.join("bus/pci/devices").join(bdf);
            std::fs::rename(&link, bridge.join(bdf)).unwrap();
            std::fs::write(bridge.join(bdf).join("numa_node"), format!("{numa}\n")).unwrap();
            symlink(format!("../../../devices/{root}/0000:3a:00.0/{bdf}"), &link).unwrap();
        }
    }

    #[test]
    fn pcie_root_and_numa_come_from_the_device_tree() {
        let sys = FakeSysfs::new();
        sys.add_pf("0000:3b:00.0", "ens1f0np0", 2, 8);
        sys.add_rdma("0000:3b:00.0", "mlx5_0");
        sys.add_vf(
            "0000:3b:00.0",
            0,
            "0000:3b:00.2",
            Some("ens1f0v0"),
            "mlx5_core",
        );
        sys.add_vf("0000:3b:00.0", 1, "0000:3b:00.3", None, "vfio-pci");
        sys.add_rdma("0000:3b:00.2", "mlx5_2");
        let root = sys.root().to_owned();
        let pci = |s: &str| s.parse::<PciAddress>().unwrap();
        assert_eq!(
            pcie_root(&root, &pci("0000:3b:00.0")),
            None,
            "no tree: unknown"
        );
        under_root(
            &root,
            &["0000:3b:00.0", "0000:3b:00.2", "0000:3b:00.3"],
            "pci0000:3a",
            1,
        );
        assert_eq!(
            pcie_root(&root, &pci("0000:3b:00.2")).as_deref(),
            Some("pci0000:3a")
        );
        assert_eq!(numa_node(&root, &pci("0000:3b:00.2")), Some(1));
        std::fs::write(root.join("bus/pci/devices/0000:3b:00.2/numa_node"), "-1\n").unwrap();
        assert_eq!(numa_node(&root, &pci("0000:3b:00.2")), None);

        let sysfs = Sysfs::new(&root);
        let nic = RoceNic {
            name: "ens1f0np0".parse().unwrap(),
            index: 2,
            pci: pci("0000:3b:00.0"),
            rdma_device: Some("mlx5_0".into()),
            mac: None,
            mtu: 9000,
            carrier: true,
            speed_mbps: Some(200_000),
            addresses: Vec::new(),
        };
        let mut known = HashMap::new();
        let inv = read(&sysfs, std::slice::from_ref(&nic), &mut known);
        let f = &inv["ens1f0np0"];
        assert_eq!(f.pf.pcie_root.as_deref(), Some("pci0000:3a"));
        assert_eq!(f.vfs.len(), 1, "the vfio-pci VF is no RoCE interface");
        assert_eq!(f.vfs[0].function.rdma_device.as_deref(), Some("mlx5_2"));
        // Exclusive mode: the RDMA device leaves with the VF; the published fact stays.
        std::fs::remove_dir_all(root.join("bus/pci/devices/0000:3b:00.2/infiniband")).unwrap();
        let again = read(&sysfs, &[nic], &mut known);
        assert_eq!(again, inv);
    }
}
