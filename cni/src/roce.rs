//! The RoCE side of an attachment: the VF's RDMA device (moved into the pod when the node runs
//! in exclusive mode), the RoCE v2 GID index of the pod's address, and publishing both where
//! workloads read them: the CNI result, a per-attachment file, and NCCL hints.

use std::path::Path;

use hostnet::netns::NetNs;
use hostnet::rdma::gid::GidError;
use hostnet::rdma::{NetnsMode, RdmaError, RdmaSocket};
use serde_json::{Value, json};
use spinel_node::attachment_record::{self as records, Record};
use spinel_node::roce_info::RoceInfo;

use crate::config::{NetnsRequirement, Rdma};
use crate::journal::AttachmentKey;
use crate::spec::{CniError, ErrorCode};
use crate::step::StepError;

/// The extra key added to the CNI result's interface entry.
pub fn result_value(info: &RoceInfo) -> Value {
    json!({
        "rdmaDevice": info.rdma_device,
        "port": info.port,
        "gidIndex": info.gid_index,
        "gid": info.gid,
        "netnsMode": info.netns_mode,
        "ncclEnv": info.nccl_env().into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
    })
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
                mode,
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

fn mode_name_req(r: NetnsRequirement) -> &'static str {
    match r {
        NetnsRequirement::Any => "any",
        NetnsRequirement::Exclusive => "exclusive",
        NetnsRequirement::Shared => "shared",
    }
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
pub fn return_devices(names: &[String], pod: &NetNs, host: &NetNs) -> Result<(), StepError> {
    let mut sock = RdmaSocket::open_in(pod)
        .map_err(|e| StepError::kernel("open an RDMA socket in the pod", &e))?;
    for name in names {
        match sock.device_by_name(name) {
            Ok(dev) => sock
                .move_device(&dev, host)
                .map_err(|e| StepError::kernel(format!("move RDMA device {name} back"), &e))?,
            Err(e) => tracing::debug!(device = %name, "RDMA device not in the pod: {e}"),
        }
    }
    Ok(())
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

/// Writes the attachment's record where workloads (and `spinelctl nccl-env`) read its RoCE
/// details and the fabric agent finds the pod to re-announce.
pub fn publish(dir: &Path, key: &AttachmentKey, record: &Record) -> Result<(), CniError> {
    records::publish(dir, &key.container_id, &key.ifname, record)
        .map_err(|e| CniError::caused(ErrorCode::Io, "cannot publish the attachment's record", &e))
}

/// Removes the attachment's published files.
pub fn unpublish(dir: &Path, key: &AttachmentKey) {
    records::unpublish(dir, &key.container_id, &key.ifname);
}

/// The configured GID policy in force for a VF with `devices`.
pub fn wants_gid(rdma: &Rdma, devices: &[String]) -> bool {
    !devices.is_empty() && rdma.gid != crate::config::GidPolicy::Off
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_carries_the_gid_index_and_nccl_hints() {
        let info = RoceInfo {
            netdev: "net1".into(),
            rdma_device: "mlx5_1".into(),
            port: 1,
            gid_index: 3,
            gid: "::ffff:10.56.0.5".into(),
            address: "10.56.0.5".parse().unwrap(),
            netns_mode: Some(NetnsMode::Exclusive),
        };
        let v = result_value(&info);
        assert_eq!(v["gidIndex"], 3);
        assert_eq!(v["netnsMode"], "exclusive");
        assert_eq!(v["ncclEnv"][0], "NCCL_IB_HCA==mlx5_1:1");
    }
}
