//! A fake sysfs tree with the SR-IOV layout, for tests and the demo (feature `fake-sysfs`).
//!
//! Only the PCI/SR-IOV structure is fake; the netdev names it lists are meant to be real
//! kernel interfaces (veth, macvlan) that stand in for VFs.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// Builds `<root>/bus/pci/devices/...` and `<root>/class/net/...` like the kernel does.
pub struct FakeSysfs {
    _dir: Option<tempfile::TempDir>,
    root: PathBuf,
}

impl Default for FakeSysfs {
    fn default() -> Self {
        Self::new()
    }
}

#[allow(clippy::expect_used)] // a fixture builder fails loudly
impl FakeSysfs {
    /// A new tree in a temporary directory removed on drop.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("create fake sysfs");
        let root = dir.path().to_owned();
        Self {
            _dir: Some(dir),
            root,
        }
    }

    /// A new tree at `root` (kept after drop).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        fs::create_dir_all(&root).expect("create fake sysfs root");
        Self { _dir: None, root }
    }

    /// The tree's root, to hand to [`super::Sysfs::new`].
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn dev(&self, pci: &str) -> PathBuf {
        self.root.join("bus/pci/devices").join(pci)
    }

    /// Adds a PF with netdev `name`.
    pub fn add_pf(&self, pci: &str, name: &str, num_vfs: u32, total_vfs: u32) {
        let dev = self.dev(pci);
        fs::create_dir_all(dev.join("net").join(name)).expect("pf dir");
        fs::write(dev.join("sriov_numvfs"), format!("{num_vfs}\n")).expect("numvfs");
        fs::write(dev.join("sriov_totalvfs"), format!("{total_vfs}\n")).expect("totalvfs");
        let class = self.root.join("class/net").join(name);
        fs::create_dir_all(&class).expect("class dir");
        symlink(
            format!("../../../bus/pci/devices/{pci}"),
            class.join("device"),
        )
        .expect("device link");
    }

    /// Adds VF `index` of the PF at `pf_pci`, with an optional netdev and a driver.
    pub fn add_vf(&self, pf_pci: &str, index: u32, pci: &str, netdev: Option<&str>, driver: &str) {
        let dev = self.dev(pci);
        fs::create_dir_all(&dev).expect("vf dir");
        symlink(format!("../{pf_pci}"), dev.join("physfn")).expect("physfn");
        symlink(
            format!("../{pci}"),
            self.dev(pf_pci).join(format!("virtfn{index}")),
        )
        .expect("virtfn");
        let drivers = self.root.join("bus/pci/drivers").join(driver);
        fs::create_dir_all(&drivers).expect("driver dir");
        symlink(
            format!("../../../bus/pci/drivers/{driver}"),
            dev.join("driver"),
        )
        .expect("driver link");
        if let Some(name) = netdev {
            self.set_vf_netdev(pci, Some(name));
        }
    }

    /// Replaces the VF's netdev entry, under the device and in `class/net` (what the kernel
    /// does on rename or namespace change).
    pub fn set_vf_netdev(&self, pci: &str, netdev: Option<&str>) {
        let net = self.dev(pci).join("net");
        for old in fs::read_dir(&net).into_iter().flatten().flatten() {
            let _ = fs::remove_dir_all(self.root.join("class/net").join(old.file_name()));
        }
        let _ = fs::remove_dir_all(&net);
        if let Some(name) = netdev {
            fs::create_dir_all(net.join(name)).expect("vf net dir");
            let class = self.root.join("class/net").join(name);
            fs::create_dir_all(&class).expect("class dir");
            symlink(
                format!("../../../bus/pci/devices/{pci}"),
                class.join("device"),
            )
            .expect("device link");
        }
    }

    /// Adds an RDMA device to the function at `pci`.
    pub fn add_rdma(&self, pci: &str, rdma: &str) {
        fs::create_dir_all(self.dev(pci).join("infiniband").join(rdma)).expect("infiniband dir");
    }
}
