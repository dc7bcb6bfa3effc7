//! The RoCE side of an attachment: the VF's RDMA device (moved into the pod when the node runs
//! in exclusive mode), the RoCE v2 GID index of the pod's address, and publishing both where
//! workloads read them: the CNI result, a per-attachment file, and NCCL hints.

use std::fs;
use std::net::IpAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hostnet::netns::NetNs;
use hostnet::rdma::gid::{GidError, GidMatch, GidQuery, RdmaSysfs};
use hostnet::rdma::{NetnsMode, RdmaError, RdmaSocket};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::{NetnsRequirement, Rdma};
use crate::journal::AttachmentKey;
use crate::spec::{CniError, ErrorCode};

/// What workloads need to use one RoCE interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoceInfo {
    /// The pod interface.
    pub netdev: String,
    /// Its RDMA device.
    pub rdma_device: String,
    /// The device's port.
    pub port: u32,
    /// The RoCE v2 GID index of the interface's address.
    pub gid_index: u32,
    /// That GID.
    pub gid: String,
    /// The address it belongs to.
    pub address: IpAddr,
    /// `exclusive` or `shared`.
    pub netns_mode: String,
}

impl RoceInfo {
    /// NCCL settings for this interface alone (`NCCL_IB_HCA` with `=` for an exact match, so
    /// `mlx5_1` does not also select `mlx5_10`).
    pub fn nccl_env(&self) -> Vec<(String, String)> {
        vec![
            (
                "NCCL_IB_HCA".into(),
                format!("={}:{}", self.rdma_device, self.port),
            ),
            ("NCCL_IB_GID_INDEX".into(), self.gid_index.to_string()),
            ("NCCL_SOCKET_IFNAME".into(), format!("={}", self.netdev)),
        ]
    }

    /// The extra key added to the CNI result's interface entry.
    pub fn result_value(&self) -> Value {
        json!({
            "rdmaDevice": self.rdma_device,
            "port": self.port,
            "gidIndex": self.gid_index,
            "gid": self.gid,
            "netnsMode": self.netns_mode,
            "ncclEnv": self.nccl_env().into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        })
    }
}

fn rdma_error(what: String, e: &RdmaError) -> CniError {
    CniError::caused(ErrorCode::Kernel, what, e)
}

/// The node's RDMA namespace mode, checked against what the network requires.
pub fn netns_mode(requirement: NetnsRequirement) -> Result<NetnsMode, CniError> {
    let mut sock = RdmaSocket::open()
        .map_err(|e| rdma_error("cannot open an RDMA netlink socket".into(), &e))?;
    let mode = sock.netns_mode().map_err(|e| {
        rdma_error(
            "cannot read the RDMA namespace mode (rdma system show)".into(),
            &e,
        )
    })?;
    let fits = matches!(
        (requirement, mode),
        (NetnsRequirement::Any, _)
            | (NetnsRequirement::Exclusive, NetnsMode::Exclusive)
            | (NetnsRequirement::Shared, NetnsMode::Shared)
    );
    if fits {
        Ok(mode)
    } else {
        Err(CniError::new(
            ErrorCode::Device,
            format!(
                "rdma.netnsMode: the network needs {} mode but the node's RDMA subsystem is {}; set it with `options ib_core netns_mode={}` and reboot, or `rdma system set netns {}` while no other namespace exists",
                mode_name_req(requirement),
                mode_name(mode),
                if requirement == NetnsRequirement::Exclusive {
                    0
                } else {
                    1
                },
                mode_name_req(requirement)
            ),
        ))
    }
}

fn mode_name(mode: NetnsMode) -> &'static str {
    match mode {
        NetnsMode::Exclusive => "exclusive",
        NetnsMode::Shared => "shared",
    }
}

fn mode_name_req(r: NetnsRequirement) -> &'static str {
    match r {
        NetnsRequirement::Any => "any",
        NetnsRequirement::Exclusive => "exclusive",
        NetnsRequirement::Shared => "shared",
    }
}

/// `exclusive` or `shared`, as the result and the journal spell it.
pub fn mode_label(mode: NetnsMode) -> String {
    mode_name(mode).to_owned()
}

/// Moves the RDMA devices `names` from the calling namespace into `to` (exclusive mode).
pub fn move_devices(names: &[String], to: &NetNs) -> Result<(), CniError> {
    let mut sock = RdmaSocket::open()
        .map_err(|e| rdma_error("cannot open an RDMA netlink socket".into(), &e))?;
    for name in names {
        let dev = sock
            .device_by_name(name)
            .map_err(|e| rdma_error(format!("RDMA device {name} of the VF"), &e))?;
        sock.move_device(&dev, to)
            .map_err(|e| rdma_error(format!("cannot move RDMA device {name} into the pod"), &e))?;
    }
    Ok(())
}

/// Moves the RDMA devices `names` from `pod` back to `host`; devices already gone from the
/// pod (returned by the kernel when it died, or never moved) are left alone.
pub fn return_devices(names: &[String], pod: &NetNs, host: &NetNs) -> Result<(), String> {
    let mut sock =
        RdmaSocket::open_in(pod).map_err(|e| format!("open an RDMA socket in the pod: {e}"))?;
    for name in names {
        match sock.device_by_name(name) {
            Ok(dev) => sock
                .move_device(&dev, host)
                .map_err(|e| format!("move RDMA device {name} back: {e}"))?,
            Err(e) => tracing::debug!(device = %name, "RDMA device not in the pod: {e}"),
        }
    }
    Ok(())
}

/// Finds the RoCE v2 GID of `addr` on `netdev` among `devices`, reading sysfs under `root`,
/// waiting up to `timeout` because the kernel fills the table after the address is added.
pub fn resolve_gid(
    root: &Path,
    devices: &[String],
    netdev: &str,
    addr: IpAddr,
    timeout: Duration,
) -> Result<GidMatch, GidError> {
    // A VF has one RDMA device; with several, netdev and address still pick the entry.
    let device = match devices {
        [one] => Some(one.clone()),
        _ => None,
    };
    let query = GidQuery {
        device,
        netdev: netdev.to_owned(),
        addr,
    };
    RdmaSysfs::new(root).resolve_wait(&query, timeout, Duration::from_millis(10))
}

/// Maps a GID failure: "not there yet" is "try again later".
pub fn gid_error(e: GidError) -> CniError {
    let code = if e.is_retryable() {
        ErrorCode::TryAgainLater
    } else {
        ErrorCode::Device
    };
    CniError::caused(code, "cannot find the RoCE v2 GID of the pod's address", &e)
}

/// The per-attachment files under `dir`: `<containerID>/<ifname>.json` and `.env`.
fn info_paths(dir: &Path, key: &AttachmentKey) -> (PathBuf, PathBuf) {
    let base = dir.join(&key.container_id);
    (
        base.join(format!("{}.json", key.ifname)),
        base.join(format!("{}.env", key.ifname)),
    )
}

/// Writes the attachment's RoCE details where workloads (and `spinelctl nccl-env`) read them.
pub fn publish(dir: &Path, key: &AttachmentKey, info: &RoceInfo) -> Result<(), CniError> {
    let (json_path, env_path) = info_paths(dir, key);
    let fail = |p: &Path, e: std::io::Error| {
        CniError::new(ErrorCode::Io, format!("cannot write {}: {e}", p.display()))
    };
    if let Some(parent) = json_path.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(|e| fail(parent, e))?;
    }
    let json =
        serde_json::to_vec_pretty(info).map_err(|e| fail(&json_path, std::io::Error::other(e)))?;
    fs::write(&json_path, json).map_err(|e| fail(&json_path, e))?;
    let env: String = info
        .nccl_env()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    fs::write(&env_path, env).map_err(|e| fail(&env_path, e))
}

/// Removes the attachment's published files (and its container directory when empty).
pub fn unpublish(dir: &Path, key: &AttachmentKey) {
    let (json_path, env_path) = info_paths(dir, key);
    let _ = fs::remove_file(&json_path);
    let _ = fs::remove_file(&env_path);
    if let Some(parent) = json_path.parent() {
        let _ = fs::remove_dir(parent);
    }
}

/// NCCL settings for all of a pod's RoCE interfaces together. `NCCL_IB_HCA` lists each device
/// and port with `=` (exact names); `NCCL_IB_GID_INDEX` is one value for every HCA, so when
/// the interfaces' indices differ (shared-mode pods, mixed tables) it is left to NCCL's own
/// selection, restricted to RoCE v2 GIDs of the pod's address family.
pub fn nccl_env_for(infos: &[RoceInfo]) -> Vec<(String, String)> {
    let mut infos: Vec<&RoceInfo> = infos.iter().collect();
    infos.sort_by(|a, b| a.netdev.cmp(&b.netdev));
    if infos.is_empty() {
        return Vec::new();
    }
    let hcas = infos
        .iter()
        .map(|i| format!("{}:{}", i.rdma_device, i.port))
        .collect::<Vec<_>>()
        .join(",");
    let ifnames = infos
        .iter()
        .map(|i| i.netdev.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let mut env = vec![("NCCL_IB_HCA".to_owned(), format!("={hcas}"))];
    let first = infos[0].gid_index;
    if infos.iter().all(|i| i.gid_index == first) {
        env.push(("NCCL_IB_GID_INDEX".into(), first.to_string()));
    } else {
        env.push(("NCCL_IB_GID_INDEX".into(), "-1".into()));
        env.push(("NCCL_IB_ROCE_VERSION_NUM".into(), "2".into()));
        let family = if infos.iter().all(|i| i.address.is_ipv4()) {
            "AF_INET"
        } else {
            "AF_INET6"
        };
        env.push(("NCCL_IB_ADDR_FAMILY".into(), family.into()));
    }
    env.push(("NCCL_SOCKET_IFNAME".into(), format!("={ifnames}")));
    env
}

/// The RoCE interfaces among `addresses` (pod netdev, address): each one whose address has a
/// RoCE v2 GID on that netdev in any RDMA device under the sysfs at `root`.
pub fn discover(
    root: &Path,
    addresses: &[(String, IpAddr)],
    mode: &str,
) -> Result<Vec<RoceInfo>, GidError> {
    let sysfs = RdmaSysfs::new(root);
    let mut out: Vec<RoceInfo> = Vec::new();
    for (netdev, addr) in addresses {
        if out.iter().any(|i| &i.netdev == netdev) {
            continue;
        }
        let query = GidQuery {
            device: None,
            netdev: netdev.clone(),
            addr: *addr,
        };
        if let Some(found) = sysfs.resolve(&query)? {
            out.push(RoceInfo {
                netdev: netdev.clone(),
                rdma_device: found.port.device,
                port: found.port.port,
                gid_index: found.index,
                gid: found.gid.to_string(),
                address: *addr,
                netns_mode: mode.to_owned(),
            });
        }
    }
    Ok(out)
}

/// The configured GID policy in force for a VF with `devices`.
pub fn wants_gid(rdma: &Rdma, devices: &[String]) -> bool {
    !devices.is_empty() && rdma.gid != crate::config::GidPolicy::Off
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(netdev: &str, dev: &str, index: u32) -> RoceInfo {
        RoceInfo {
            netdev: netdev.into(),
            rdma_device: dev.into(),
            port: 1,
            gid_index: index,
            gid: String::new(),
            address: "10.0.0.1".parse().unwrap(),
            netns_mode: "shared".into(),
        }
    }

    #[test]
    fn pod_wide_hints() {
        let same = nccl_env_for(&[info("net2", "mlx5_4", 3), info("net1", "mlx5_3", 3)]);
        assert_eq!(same[0].1, "=mlx5_3:1,mlx5_4:1");
        assert_eq!(same[1], ("NCCL_IB_GID_INDEX".into(), "3".into()));
        assert_eq!(same.last().unwrap().1, "=net1,net2");
        let mixed = nccl_env_for(&[info("net1", "mlx5_3", 3), info("net2", "mlx5_4", 5)]);
        assert_eq!(mixed[1].1, "-1", "NCCL chooses per HCA when indices differ");
        assert!(mixed.contains(&("NCCL_IB_ROCE_VERSION_NUM".into(), "2".into())));
        assert!(nccl_env_for(&[]).is_empty());
    }

    #[test]
    fn nccl_hints_match_exactly() {
        let info = RoceInfo {
            netdev: "net1".into(),
            rdma_device: "mlx5_1".into(),
            port: 1,
            gid_index: 3,
            gid: "::ffff:10.56.0.5".into(),
            address: "10.56.0.5".parse().unwrap(),
            netns_mode: "exclusive".into(),
        };
        let env = info.nccl_env();
        assert_eq!(env[0], ("NCCL_IB_HCA".into(), "=mlx5_1:1".into()));
        assert_eq!(env[1], ("NCCL_IB_GID_INDEX".into(), "3".into()));
        assert_eq!(info.result_value()["gidIndex"], 3);
        let dir = tempfile::tempdir().unwrap();
        let key = AttachmentKey {
            container_id: "c1".into(),
            ifname: "net1".into(),
        };
        publish(dir.path(), &key, &info).unwrap();
        let text = fs::read_to_string(dir.path().join("c1/net1.env")).unwrap();
        assert!(text.contains("NCCL_IB_GID_INDEX=3\n"), "{text}");
        unpublish(dir.path(), &key);
        assert!(!dir.path().join("c1").exists());
    }
}
