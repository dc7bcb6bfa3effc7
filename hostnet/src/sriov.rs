//! The SR-IOV model, read from sysfs under a configurable root.
//!
//! Layout relied on (all under `<root>/bus/pci/devices/<bdf>/`):
//! `physfn` (VF → PF link), `virtfnN` (PF → VF links), `net/<ifname>`, `driver` (link to the
//! bound driver), `infiniband/<rdma dev>`, `sriov_numvfs`, `sriov_totalvfs`; and
//! `<root>/class/net/<ifname>/device` (netdev → PCI function).
//!
//! Every name taken from input or from a directory listing is validated before it becomes part
//! of a path, and every missing or odd entry is reported with the path and what to check.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[cfg(any(test, feature = "fake-sysfs"))]
pub mod fake;
pub mod pf_control;

/// Drivers that take a VF away from the kernel network stack (DPDK and friends).
pub const USERSPACE_DRIVERS: [&str; 3] = ["vfio-pci", "uio_pci_generic", "igb_uio"];

/// A PCI function address in canonical form `dddd:bb:dd.f` (lowercase hex).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciAddress(String);

/// A string that is not a PCI function address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a PCI address (want domain:bus:device.function like 0000:3b:02.1)")]
pub struct ParsePciError(String);

impl FromStr for PciAddress {
    type Err = ParsePciError;

    /// Accepts `dddd:bb:dd.f` and the short `bb:dd.f` (domain 0000), any hex case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParsePciError(s.chars().take(64).collect());
        let full = match s.len() {
            12 => s.to_ascii_lowercase(),
            7 => format!("0000:{}", s.to_ascii_lowercase()),
            _ => return Err(err()),
        };
        let b = full.as_bytes();
        let hex = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_hexdigit);
        let ok = hex(0..4)
            && b[4] == b':'
            && hex(5..7)
            && b[7] == b':'
            && hex(8..10)
            && b[10] == b'.'
            && (b'0'..=b'7').contains(&b[11]);
        if ok { Ok(Self(full)) } else { Err(err()) }
    }
}

impl PciAddress {
    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for PciAddress {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for PciAddress {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

pub use crate::ifname::is_valid_ifname;

/// The driver a PCI function is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "name")]
pub enum Driver {
    /// No driver bound.
    Unbound,
    /// A kernel network driver (mlx5_core, ice, ...): the VF has a netdev.
    Kernel(String),
    /// A userspace I/O driver (vfio-pci, ...): no netdev, the pod drives the device itself.
    Userspace(String),
}

/// One SR-IOV virtual function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualFunction {
    /// The VF's PCI address.
    pub pci: PciAddress,
    /// Its physical function.
    pub pf: PhysicalFunction,
    /// Its index on the PF (the `N` of `virtfnN`, the `vf N` of `ip link set PF vf N`).
    pub index: u32,
    /// Its netdevs as sysfs shows them (empty when bound to a userspace driver or when the
    /// netdev is in another namespace).
    pub netdevs: Vec<String>,
    /// The bound driver.
    pub driver: Driver,
    /// Its RDMA devices (`mlx5_3`, ...).
    pub rdma_devices: Vec<String>,
}

/// A physical function with SR-IOV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicalFunction {
    /// The PF's PCI address.
    pub pci: PciAddress,
    /// The PF's netdev name.
    pub name: String,
    /// `sriov_numvfs`: VFs currently enabled.
    pub num_vfs: u32,
    /// `sriov_totalvfs`: VFs the device supports.
    pub total_vfs: u32,
}

/// Something in sysfs is missing or not what SR-IOV needs.
#[derive(Debug, thiserror::Error)]
pub enum SriovError {
    /// No such PCI device.
    #[error("PCI device {pci} not found at {path}; check the deviceID the device plugin passed")]
    DeviceNotFound {
        /// The address looked up.
        pci: PciAddress,
        /// Where it was expected.
        path: PathBuf,
    },
    /// The device has no `physfn` link.
    #[error(
        "PCI device {pci} is not an SR-IOV virtual function (no {path}); pass a VF's address, not a PF's"
    )]
    NotAVf {
        /// The address looked up.
        pci: PciAddress,
        /// The missing link.
        path: PathBuf,
    },
    /// No netdev with that name has a PCI device behind it.
    #[error("network interface {name:?} not found or not a PCI device ({path}); check pfName")]
    PfNotFound {
        /// The PF name.
        name: String,
        /// Where it was expected.
        path: PathBuf,
    },
    /// The PF has SR-IOV disabled or too few VFs.
    #[error("PF {pf} has no VF {index}: sriov_numvfs is {num_vfs}; enable VFs (echo N > {path})")]
    NoSuchVf {
        /// The PF name.
        pf: String,
        /// The VF index asked for.
        index: u32,
        /// VFs enabled.
        num_vfs: u32,
        /// The sriov_numvfs file.
        path: PathBuf,
    },
    /// A file that must be there is unreadable or malformed.
    #[error("unexpected sysfs content at {path}: {what}")]
    Malformed {
        /// The file or link.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
    /// I/O failure reading sysfs.
    #[error("cannot read {path}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// Reads the SR-IOV model from a sysfs tree (`/sys` in production).
#[derive(Debug, Clone)]
pub struct Sysfs {
    root: PathBuf,
}

impl Sysfs {
    /// A model over the sysfs tree at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The tree's root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn device_dir(&self, pci: &PciAddress) -> PathBuf {
        self.root.join("bus/pci/devices").join(pci.as_str())
    }

    /// The virtual function at `pci`.
    pub fn vf(&self, pci: &PciAddress) -> Result<VirtualFunction, SriovError> {
        let dir = self.device_dir(pci);
        if !dir.exists() {
            return Err(SriovError::DeviceNotFound {
                pci: pci.clone(),
                path: dir,
            });
        }
        let physfn = dir.join("physfn");
        let pf_pci = match link_target_name(&physfn) {
            Ok(name) => parse_pci(&physfn, &name)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(SriovError::NotAVf {
                    pci: pci.clone(),
                    path: physfn,
                });
            }
            Err(source) => {
                return Err(SriovError::Io {
                    path: physfn,
                    source,
                });
            }
        };
        let pf = self.pf_at(&pf_pci)?;
        let index = self.vf_index(&pf, pci)?;
        Ok(VirtualFunction {
            pci: pci.clone(),
            index,
            netdevs: self.list_names(&dir.join("net"))?,
            driver: self.driver(&dir)?,
            rdma_devices: self.list_names(&dir.join("infiniband"))?,
            pf,
        })
    }

    /// VF number `index` of the PF whose netdev is `pf_name`.
    pub fn vf_of_pf(&self, pf_name: &str, index: u32) -> Result<VirtualFunction, SriovError> {
        let pf = self.pf(pf_name)?;
        let link = self.device_dir(&pf.pci).join(format!("virtfn{index}"));
        match link_target_name(&link) {
            Ok(name) => self.vf(&parse_pci(&link, &name)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(SriovError::NoSuchVf {
                pf: pf.name,
                index,
                num_vfs: pf.num_vfs,
                path: self.device_dir(&pf.pci).join("sriov_numvfs"),
            }),
            Err(source) => Err(SriovError::Io { path: link, source }),
        }
    }

    /// The physical function whose netdev is `name`.
    pub fn pf(&self, name: &str) -> Result<PhysicalFunction, SriovError> {
        let path = if is_valid_ifname(name) {
            self.root.join("class/net").join(name).join("device")
        } else {
            return Err(SriovError::PfNotFound {
                name: name.chars().take(32).collect(),
                path: self.root.join("class/net"),
            });
        };
        let pci = match link_target_name(&path) {
            Ok(target) => parse_pci(&path, &target)?,
            Err(_) => {
                return Err(SriovError::PfNotFound {
                    name: name.to_owned(),
                    path,
                });
            }
        };
        self.pf_at(&pci)
    }

    /// The PCI function behind network interface `name`, and whether it is a VF (it has a
    /// `physfn` link) or a physical function.
    pub fn function_of(&self, name: &str) -> Result<(PciAddress, bool), SriovError> {
        let not_found = |path: PathBuf| SriovError::PfNotFound {
            name: name.chars().take(32).collect(),
            path,
        };
        if !is_valid_ifname(name) {
            return Err(not_found(self.root.join("class/net")));
        }
        let path = self.root.join("class/net").join(name).join("device");
        let target = link_target_name(&path).map_err(|_| not_found(path.clone()))?;
        let pci = parse_pci(&path, &target)?;
        let is_vf = self.device_dir(&pci).join("physfn").exists();
        Ok((pci, is_vf))
    }

    /// A small attribute of network interface `name` (`class/net/<name>/<attribute>`), trimmed;
    /// `None` when the interface or the attribute is not there, or the driver refuses to say
    /// (reading `speed` of a link without carrier fails with EINVAL).
    pub fn netdev_attribute(&self, name: &str, attribute: &str) -> Option<String> {
        if !is_valid_ifname(name)
            || !attribute
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_')
        {
            return None;
        }
        let text =
            fs::read_to_string(self.root.join("class/net").join(name).join(attribute)).ok()?;
        Some(text.trim().to_owned()).filter(|t| !t.is_empty())
    }

    /// Whether `name` is a switchdev representor (its `phys_port_name` names a VF or a
    /// subfunction of a PF, as `pf0vf3` or `c1pf0sf2`): a host-side stand-in for a pod's port.
    pub fn is_representor(&self, name: &str) -> bool {
        self.netdev_attribute(name, "phys_port_name")
            .is_some_and(|p| {
                let p = p.trim_start_matches(|c: char| c == 'c' || c.is_ascii_digit());
                p.starts_with("pf") && (p.contains("vf") || p.contains("sf"))
            })
    }

    /// The physical function at `pci`.
    pub fn pf_at(&self, pci: &PciAddress) -> Result<PhysicalFunction, SriovError> {
        let dir = self.device_dir(pci);
        let names = self.list_names(&dir.join("net"))?;
        let name = names
            .into_iter()
            .next()
            .ok_or_else(|| SriovError::Malformed {
                path: dir.join("net"),
                what: format!("PF {pci} has no network interface"),
            })?;
        Ok(PhysicalFunction {
            pci: pci.clone(),
            name,
            num_vfs: read_u32(&dir.join("sriov_numvfs"))?,
            total_vfs: read_u32(&dir.join("sriov_totalvfs"))?,
        })
    }

    /// The driver bound to the PCI function at `pci` (a PF's, to name it in messages).
    pub fn driver_of(&self, pci: &PciAddress) -> Result<Driver, SriovError> {
        self.driver(&self.device_dir(pci))
    }

    /// The RDMA devices of the PCI function at `pci` (`infiniband/` under its sysfs entry).
    pub fn rdma_devices_of(&self, pci: &PciAddress) -> Result<Vec<String>, SriovError> {
        self.list_names(&self.device_dir(pci).join("infiniband"))
    }

    /// Every VF of `pf`, by index.
    pub fn vfs_of(&self, pf: &PhysicalFunction) -> Result<Vec<(u32, PciAddress)>, SriovError> {
        let dir = self.device_dir(&pf.pci);
        let entries = fs::read_dir(&dir).map_err(|source| SriovError::Io {
            path: dir.clone(),
            source,
        })?;
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(index) = name
                .to_str()
                .and_then(|n| n.strip_prefix("virtfn"))
                .and_then(|n| n.parse().ok())
            else {
                continue;
            };
            let link = entry.path();
            let target = link_target_name(&link).map_err(|source| SriovError::Io {
                path: link.clone(),
                source,
            })?;
            out.push((index, parse_pci(&link, &target)?));
        }
        out.sort();
        Ok(out)
    }

    fn vf_index(&self, pf: &PhysicalFunction, vf: &PciAddress) -> Result<u32, SriovError> {
        self.vfs_of(pf)?
            .into_iter()
            .find_map(|(i, pci)| (pci == *vf).then_some(i))
            .ok_or_else(|| SriovError::Malformed {
                path: self.device_dir(&pf.pci),
                what: format!("PF {} has no virtfnN link to VF {vf}", pf.pci),
            })
    }

    fn driver(&self, dir: &Path) -> Result<Driver, SriovError> {
        let link = dir.join("driver");
        match link_target_name(&link) {
            Ok(name) if USERSPACE_DRIVERS.contains(&name.as_str()) => Ok(Driver::Userspace(name)),
            Ok(name) => Ok(Driver::Kernel(name)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Driver::Unbound),
            Err(source) => Err(SriovError::Io { path: link, source }),
        }
    }

    /// Sorted valid names in a directory; a missing directory is an empty list.
    fn list_names(&self, dir: &Path) -> Result<Vec<String>, SriovError> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(SriovError::Io {
                    path: dir.to_owned(),
                    source,
                });
            }
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            // Directory entries cannot hold '/'; `.`, `..` and oversized names are refused.
            .filter(|n| !n.is_empty() && n.len() < 64 && n != "." && n != "..")
            .collect();
        names.sort();
        Ok(names)
    }
}

fn link_target_name(link: &Path) -> io::Result<String> {
    let target = fs::read_link(link)?;
    target
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "link target has no file name"))
}

fn parse_pci(path: &Path, text: &str) -> Result<PciAddress, SriovError> {
    text.parse()
        .map_err(|e: ParsePciError| SriovError::Malformed {
            path: path.to_owned(),
            what: e.to_string(),
        })
}

fn read_u32(path: &Path) -> Result<u32, SriovError> {
    let text = fs::read_to_string(path).map_err(|source| SriovError::Io {
        path: path.to_owned(),
        source,
    })?;
    text.trim().parse().map_err(|_| SriovError::Malformed {
        path: path.to_owned(),
        what: format!("expected a number, found {:?}", text.trim()),
    })
}

#[cfg(test)]
mod tests {
    use super::fake::FakeSysfs;
    use super::*;

    fn pci(s: &str) -> PciAddress {
        s.parse().unwrap()
    }

    #[test]
    fn pci_addresses_are_validated_and_canonical() {
        assert_eq!(pci("0000:3B:02.1").as_str(), "0000:3b:02.1");
        assert_eq!(pci("3b:02.1").as_str(), "0000:3b:02.1");
        for bad in [
            "",
            "0000:3b:02.8",
            "0000:3b:02",
            "../../etc",
            "0000:3b:02.1/..",
            "0000:3g:02.1",
            "00000:3b:02.1",
        ] {
            assert!(bad.parse::<PciAddress>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn reads_a_vf_and_its_pf() {
        let tree = FakeSysfs::new();
        tree.add_pf("0000:3b:00.0", "ens1f0", 4, 8);
        tree.add_vf(
            "0000:3b:00.0",
            2,
            "0000:3b:00.4",
            Some("ens1f0v2"),
            "mlx5_core",
        );
        tree.add_rdma("0000:3b:00.4", "mlx5_4");
        let sysfs = Sysfs::new(tree.root());
        let vf = sysfs.vf(&pci("0000:3b:00.4")).unwrap();
        assert_eq!(vf.index, 2);
        assert_eq!(vf.pf.name, "ens1f0");
        assert_eq!((vf.pf.num_vfs, vf.pf.total_vfs), (4, 8));
        assert_eq!(vf.netdevs, ["ens1f0v2"]);
        assert_eq!(vf.driver, Driver::Kernel("mlx5_core".into()));
        assert_eq!(vf.rdma_devices, ["mlx5_4"]);
        assert_eq!(sysfs.vf_of_pf("ens1f0", 2).unwrap(), vf);
    }

    #[test]
    fn userspace_driver_and_missing_netdev() {
        let tree = FakeSysfs::new();
        tree.add_pf("0000:3b:00.0", "ens1f0", 1, 8);
        tree.add_vf("0000:3b:00.0", 0, "0000:3b:00.2", None, "vfio-pci");
        let vf = Sysfs::new(tree.root()).vf(&pci("0000:3b:00.2")).unwrap();
        assert_eq!(vf.driver, Driver::Userspace("vfio-pci".into()));
        assert!(vf.netdevs.is_empty());
    }

    #[test]
    fn clear_errors_for_missing_and_odd_entries() {
        let tree = FakeSysfs::new();
        tree.add_pf("0000:3b:00.0", "ens1f0", 1, 8);
        tree.add_vf("0000:3b:00.0", 0, "0000:3b:00.2", Some("v0"), "mlx5_core");
        let sysfs = Sysfs::new(tree.root());
        let e = sysfs.vf(&pci("0000:99:00.1")).unwrap_err();
        assert!(matches!(e, SriovError::DeviceNotFound { .. }), "{e}");
        let e = sysfs.vf(&pci("0000:3b:00.0")).unwrap_err();
        assert!(matches!(e, SriovError::NotAVf { .. }), "{e}");
        assert!(e.to_string().contains("not an SR-IOV virtual function"));
        let e = sysfs.vf_of_pf("ens1f0", 5).unwrap_err();
        assert!(matches!(e, SriovError::NoSuchVf { num_vfs: 1, .. }), "{e}");
        let e = sysfs.pf("nope0").unwrap_err();
        assert!(matches!(e, SriovError::PfNotFound { .. }), "{e}");
        let e = sysfs.pf("../../etc").unwrap_err();
        assert!(matches!(e, SriovError::PfNotFound { .. }), "{e}");
        std::fs::write(
            tree.root()
                .join("bus/pci/devices/0000:3b:00.0/sriov_numvfs"),
            "lots\n",
        )
        .unwrap();
        let e = sysfs.vf(&pci("0000:3b:00.2")).unwrap_err();
        assert!(matches!(e, SriovError::Malformed { .. }), "{e}");
        assert!(e.to_string().contains("lots"), "{e}");
    }

    #[test]
    fn interface_names() {
        for ok in ["eth0", "ens1f0v12", "net1", "a.b-c_d", "123456789012345"] {
            assert!(is_valid_ifname(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a:b",
            "a b",
            "1234567890123456",
            "x\0",
        ] {
            assert!(!is_valid_ifname(bad), "{bad:?}");
        }
    }
}
