//! RoCE facts of an interface: its RDMA device, port and RoCE v2 GID index, and the NCCL
//! settings that follow from them. The CNI publishes them per attachment in a
//! [`Record`](crate::attachment_record::Record).

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use hostnet::rdma::NetnsMode;
use hostnet::rdma::gid::{GidError, GidMatch, GidQuery, RdmaSysfs};
use serde::{Deserialize, Serialize};

/// What workloads need to use one RoCE interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoceInfo {
    /// The interface (in the pod, for a pod attachment).
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
    /// The node's RDMA namespace mode, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns_mode: Option<NetnsMode>,
}

impl RoceInfo {
    /// The facts of `found` for `netdev`'s address `address`.
    pub fn from_gid(
        netdev: &str,
        address: IpAddr,
        found: GidMatch,
        netns_mode: Option<NetnsMode>,
    ) -> Self {
        Self {
            netdev: netdev.to_owned(),
            rdma_device: found.port.device,
            port: found.port.port,
            gid_index: found.index,
            gid: found.gid.to_string(),
            address,
            netns_mode,
        }
    }

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
}

/// NCCL settings for all of a pod's RoCE interfaces together. `NCCL_IB_HCA` lists each device
/// and port with `=` (exact names); `NCCL_IB_GID_INDEX` is one value for every HCA, so when
/// the interfaces' indices differ (shared-mode pods, mixed tables) it is left to NCCL's own
/// selection, restricted to RoCE v2 GIDs of the pod's address family.
pub fn nccl_env_for(infos: &[RoceInfo]) -> Vec<(String, String)> {
    let mut infos: Vec<&RoceInfo> = infos.iter().collect();
    infos.sort_by(|a, b| a.netdev.cmp(&b.netdev));
    let Some(first) = infos.first() else {
        return Vec::new();
    };
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
    if infos.iter().all(|i| i.gid_index == first.gid_index) {
        env.push(("NCCL_IB_GID_INDEX".into(), first.gid_index.to_string()));
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

/// The RoCE interfaces among `addresses` (netdev, address): each one whose address has a RoCE
/// v2 GID on that netdev in any RDMA device under the sysfs at `root`. The first address of a
/// netdev that has one wins.
pub fn discover(
    root: &Path,
    addresses: &[(String, IpAddr)],
    netns_mode: Option<NetnsMode>,
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
            out.push(RoceInfo::from_gid(netdev, *addr, found, netns_mode));
        }
    }
    Ok(out)
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
            netns_mode: Some(NetnsMode::Shared),
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
}
