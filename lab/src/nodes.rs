//! Simulated SR-IOV nodes: each NIC a physical function with an RDMA device in the node's own
//! sysfs tree, each VF a real macvlan on it (bridge mode, so VFs of one NIC reach each other
//! as through the NIC's embedded switch) described as that PF's VF. The agent and the CNI read
//! the tree through their `sysfsRoot` settings, as they read `/sys` on a real node.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hostnet::sriov::fake::FakeSysfs;
use spinel_wire::MacAddr;

use crate::layout::{FABRIC_MTU, Nic, Node};
use crate::namespaces::Fabric;

/// The driver the VFs are bound to (a kernel driver: the CNI refuses userspace ones).
const VF_DRIVER: &str = "mlx5_core";

/// Builds `node`'s VFs and its sysfs tree at `sysfs_root`.
pub fn build(fabric: &mut Fabric, node: &Node, sysfs_root: &Path) -> anyhow::Result<()> {
    let sysfs = FakeSysfs::at(sysfs_root);
    for nic in &node.nics {
        let vfs = nic.vfs.len() as u32;
        sysfs
            .try_add_pf(&nic.pci, &nic.ifname, vfs, vfs.max(8))
            .and_then(|()| sysfs.try_add_rdma(&nic.pci, &nic.rdma))
            .with_context(|| format!("{}: sysfs of {}", node.name, nic.ifname))?;
        roce_port(sysfs_root, nic)
            .with_context(|| format!("{}: RoCE port of {}", node.name, nic.ifname))?;
        let pf = fabric.index(&node.name, &nic.ifname)?;
        for vf in &nic.vfs {
            let mac: MacAddr = vf
                .mac
                .parse()
                .with_context(|| format!("VF MAC {}", vf.mac))?;
            let ns = fabric.namespace(&node.name)?.as_fd().try_clone_to_owned()?;
            fabric
                .socket(&node.name)?
                .create_macvlan(pf, &vf.ifname, ns.as_fd(), Some(FABRIC_MTU), Some(mac))
                .with_context(|| format!("{}: VF {}", node.name, vf.ifname))?;
            // No RDMA device under the VF: this kernel has no RDMA subsystem for the CNI to
            // move one with (the kernel tier covers that with rdma_rxe).
            sysfs
                .try_add_vf(&nic.pci, vf.index, &vf.pci, Some(&vf.ifname), VF_DRIVER)
                .with_context(|| format!("{}: sysfs of {}", node.name, vf.ifname))?;
        }
    }
    Ok(())
}

/// What a RoCE NIC's driver shows in sysfs and the agent's health reads: a 200G link, port 1 of
/// the PF's RDMA device active on Ethernet, and the RoCE v2 GID of the NIC's address (index 3,
/// where mlx5 puts the first IPv4 RoCE v2 entry).
fn roce_port(sysfs_root: &Path, nic: &Nic) -> std::io::Result<()> {
    let net = sysfs_root.join("class/net").join(&nic.ifname);
    std::fs::create_dir_all(&net)?;
    std::fs::write(net.join("speed"), "200000\n")?;
    let port = sysfs_root
        .join("class/infiniband")
        .join(&nic.rdma)
        .join("ports/1");
    for sub in [
        "gids",
        "gid_attrs/types",
        "gid_attrs/ndevs",
        "hw_counters",
        "counters",
    ] {
        std::fs::create_dir_all(port.join(sub))?;
    }
    std::fs::write(port.join("state"), "4: ACTIVE\n")?;
    std::fs::write(port.join("link_layer"), "Ethernet\n")?;
    let [a, b, c, d] = nic.address.addr().octets();
    let gid = format!("0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}\n");
    std::fs::write(port.join("gids/3"), gid)?;
    std::fs::write(port.join("gid_attrs/types/3"), "RoCE v2\n")?;
    std::fs::write(port.join("gid_attrs/ndevs/3"), format!("{}\n", nic.ifname))
}

/// Where node `name`'s files live under the lab's state directory.
#[derive(Clone, Debug)]
pub struct NodeDirs {
    /// The node's directory.
    pub root: PathBuf,
}

impl NodeDirs {
    /// Node `name` under `nodes_dir`.
    pub fn new(nodes_dir: &Path, name: &str) -> Self {
        Self {
            root: nodes_dir.join(name),
        }
    }
    /// Its sysfs tree.
    pub fn sysfs(&self) -> PathBuf {
        self.root.join("sys")
    }
    /// The CNI's state directory (journal, RoCE records).
    pub fn cni_state(&self) -> PathBuf {
        self.root.join("cni")
    }
    /// host-local's lease directory.
    pub fn ipam(&self) -> PathBuf {
        self.root.join("ipam")
    }
    /// The CNI's node settings file (root-owned on a real node).
    pub fn cni_settings(&self) -> PathBuf {
        self.root.join("spinel-node.json")
    }
    /// Where the CNI publishes each attachment's RoCE record (the agent reads them).
    pub fn roce_info(&self) -> PathBuf {
        self.root.join("roce")
    }
    /// Where the CNI records the VF attribute requests it would send to the PF (no kernel
    /// here has SR-IOV).
    pub fn vf_requests(&self) -> PathBuf {
        self.root.join("vf-requests")
    }
    /// The agent's configuration for this node.
    pub fn agent_config(&self) -> PathBuf {
        self.root.join("agent.yaml")
    }
    /// The CNI's log.
    pub fn cni_log(&self) -> PathBuf {
        self.root.join("cni.log")
    }
}

/// Writes the CNI's node settings for a lab node: its own state, sysfs and RoCE record
/// directories, VF attribute requests recorded rather than sent.
pub fn write_cni_settings(dirs: &NodeDirs) -> anyhow::Result<()> {
    for dir in [
        dirs.cni_state(),
        dirs.ipam(),
        dirs.roce_info(),
        dirs.vf_requests(),
    ] {
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let settings = serde_json::json!({
        "stateDir": dirs.cni_state(),
        "sysfsRoot": dirs.sysfs(),
        "roceInfoDir": dirs.roce_info(),
        "recordVfRequestsTo": dirs.vf_requests(),
        "logFile": dirs.cni_log(),
        "logLevel": "info",
    });
    crate::state::write_atomically(&dirs.cni_settings(), &serde_json::to_vec_pretty(&settings)?)
}
