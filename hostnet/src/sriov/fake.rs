//! A fake sysfs tree with the SR-IOV layout, for tests and the demo (feature `fake-sysfs`).
//!
//! Only the PCI/SR-IOV structure is fake; the netdev names it lists are meant to be real
//! kernel interfaces (veth, macvlan) that stand in for VFs.

use std::fs;
use std::io;
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

    /// Adds a PF with netdev `name`.
    pub fn add_pf(&self, pci: &str, name: &str, num_vfs: u32, total_vfs: u32) {
        self.try_add_pf(pci, name, num_vfs, total_vfs)
            .expect("fake sysfs: add PF");
    }

    /// Adds VF `index` of the PF at `pf_pci`, with an optional netdev and a driver.
    pub fn add_vf(&self, pf_pci: &str, index: u32, pci: &str, netdev: Option<&str>, driver: &str) {
        self.try_add_vf(pf_pci, index, pci, netdev, driver)
            .expect("fake sysfs: add VF");
    }

    /// Replaces the VF's netdev entry, under the device and in `class/net` (what the kernel
    /// does on rename or namespace change).
    pub fn set_vf_netdev(&self, pci: &str, netdev: Option<&str>) {
        self.try_set_vf_netdev(pci, netdev)
            .expect("fake sysfs: set VF netdev");
    }

    /// Binds VF `pci` to `driver`, or unbinds it (`None`), as `echo BDF > .../unbind` and a
    /// `driver_override` rebind do.
    pub fn set_vf_driver(&self, pci: &str, driver: Option<&str>) {
        self.try_set_vf_driver(pci, driver)
            .expect("fake sysfs: set VF driver");
    }

    /// Adds an RDMA device to the function at `pci`.
    pub fn add_rdma(&self, pci: &str, rdma: &str) {
        self.try_add_rdma(pci, rdma)
            .expect("fake sysfs: add RDMA device");
    }
}

/// The fallible builders, for callers that report errors instead of panicking (the lab). The
/// names are the caller's: they become path components, so they are checked first.
impl FakeSysfs {
    /// [`FakeSysfs::add_pf`], returning the error.
    pub fn try_add_pf(
        &self,
        pci: &str,
        name: &str,
        num_vfs: u32,
        total_vfs: u32,
    ) -> io::Result<()> {
        let dev = self.dev(pci)?;
        fs::create_dir_all(dev.join("net").join(component(name)?))?;
        fs::write(dev.join("sriov_numvfs"), format!("{num_vfs}\n"))?;
        fs::write(dev.join("sriov_totalvfs"), format!("{total_vfs}\n"))?;
        self.link_class(name, pci)
    }

    /// [`FakeSysfs::add_vf`], returning the error.
    pub fn try_add_vf(
        &self,
        pf_pci: &str,
        index: u32,
        pci: &str,
        netdev: Option<&str>,
        driver: &str,
    ) -> io::Result<()> {
        let dev = self.dev(pci)?;
        fs::create_dir_all(&dev)?;
        symlink(format!("../{pf_pci}"), dev.join("physfn"))?;
        symlink(
            format!("../{pci}"),
            self.dev(pf_pci)?.join(format!("virtfn{index}")),
        )?;
        let drivers = self.root.join("bus/pci/drivers").join(component(driver)?);
        fs::create_dir_all(&drivers)?;
        symlink(
            format!("../../../bus/pci/drivers/{driver}"),
            dev.join("driver"),
        )?;
        if let Some(name) = netdev {
            self.try_set_vf_netdev(pci, Some(name))?;
        }
        Ok(())
    }

    /// [`FakeSysfs::set_vf_driver`], returning the error.
    pub fn try_set_vf_driver(&self, pci: &str, driver: Option<&str>) -> io::Result<()> {
        let dev = self.dev(pci)?;
        match fs::remove_file(dev.join("driver")) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        if let Some(driver) = driver {
            fs::create_dir_all(self.root.join("bus/pci/drivers").join(component(driver)?))?;
            symlink(
                format!("../../../bus/pci/drivers/{driver}"),
                dev.join("driver"),
            )?;
        }
        Ok(())
    }

    /// [`FakeSysfs::set_vf_netdev`], returning the error.
    pub fn try_set_vf_netdev(&self, pci: &str, netdev: Option<&str>) -> io::Result<()> {
        let net = self.dev(pci)?.join("net");
        for old in fs::read_dir(&net).into_iter().flatten().flatten() {
            let _ = fs::remove_dir_all(self.root.join("class/net").join(old.file_name()));
        }
        let _ = fs::remove_dir_all(&net);
        if let Some(name) = netdev {
            fs::create_dir_all(net.join(component(name)?))?;
            self.link_class(name, pci)?;
        }
        Ok(())
    }

    /// [`FakeSysfs::add_rdma`], returning the error.
    pub fn try_add_rdma(&self, pci: &str, rdma: &str) -> io::Result<()> {
        fs::create_dir_all(self.dev(pci)?.join("infiniband").join(component(rdma)?))
    }

    fn dev(&self, pci: &str) -> io::Result<PathBuf> {
        Ok(self.root.join("bus/pci/devices").join(component(pci)?))
    }

    /// `class/net/<name>/device` → the function's directory.
    fn link_class(&self, name: &str, pci: &str) -> io::Result<()> {
        let class = self.root.join("class/net").join(component(name)?);
        fs::create_dir_all(&class)?;
        symlink(
            format!("../../../bus/pci/devices/{pci}"),
            class.join("device"),
        )
    }
}

/// `name` as one path component, or an error.
fn component(name: &str) -> io::Result<&str> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} cannot be a sysfs path component"),
        ));
    }
    Ok(name)
}
