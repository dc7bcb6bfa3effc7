//! Undoing an attachment from its journal record: shared by DEL, GC, ADD's rollback and ADD's
//! self-healing. Every step runs even when an earlier one fails; errors are collected and the
//! record is kept until a teardown succeeds completely, so a retry can finish the job.

use hostnet::netlink::RouteSocket;

use crate::ipam::{Ipam, Target};
use crate::journal::{AttachmentRecord, DeviceRecord};
use crate::node::{Node, journal_error, pod_namespace};
use crate::spec::error::chain;
use crate::spec::{CniError, ErrorCode, Version};
use crate::vf;

/// Releases everything `record` holds. The caller holds the VF's lock.
pub fn teardown(
    node: &mut Node,
    record: &AttachmentRecord,
    cni_path: &[std::path::PathBuf],
) -> Result<(), CniError> {
    let mut errors: Vec<String> = Vec::new();
    let key = &record.key;

    // Addresses first: a VF that cannot be recovered must not also leak its IP.
    if let Some(kind) = record
        .config
        .get("ipam")
        .and_then(|i| i.get("type"))
        .and_then(|t| t.as_str())
    {
        let version = record
            .config
            .get("cniVersion")
            .and_then(|v| v.as_str())
            .and_then(Version::parse)
            .unwrap_or(Version::V1_0_0);
        let target = Target {
            container_id: &key.container_id,
            ifname: &key.ifname,
            netns: record.netns.as_deref(),
            cni_args: record.cni_args.as_deref(),
        };
        match Ipam::find(kind, cni_path, node.journal.dir())
            .and_then(|ipam| ipam.del(&record.config, version, &target))
        {
            Ok(()) => {}
            Err(e) => errors.push(e.msg),
        }
    }

    match &record.device {
        DeviceRecord::Vf(vf_record) => {
            let claim = node.journal.claim(&vf_record.pci).map_err(journal_error)?;
            if claim.as_ref().is_some_and(|holder| holder != key) {
                // Another attachment holds the VF now; ours never touched it or gave it back.
                tracing::info!(attachment = %key, vf = %vf_record.pci, "VF held by another attachment; leaving it");
            } else {
                let mut pod = match pod_namespace(record) {
                    Some(ns) => match RouteSocket::open_in(&ns) {
                        Ok(sock) => Some(sock),
                        Err(e) => {
                            errors
                                .push(format!("open a socket in the pod namespace: {}", chain(&e)));
                            None
                        }
                    },
                    None => None,
                };
                match vf::detach(
                    &node.host_ns,
                    &mut node.host,
                    pod.as_mut(),
                    vf_record,
                    &key.ifname,
                    &node.sysfs,
                ) {
                    Ok(done) => {
                        for w in done.warnings {
                            tracing::warn!(attachment = %key, "{w}");
                        }
                    }
                    Err(e) => {
                        errors.push(format!("give VF {} back to the host: {e}", vf_record.pci))
                    }
                }
            }
        }
    }

    if !errors.is_empty() {
        return Err(CniError::new(
            ErrorCode::Kernel,
            format!("could not fully release attachment {key}; it is kept for a retry"),
        )
        .with_detail(errors.join("; ")));
    }
    let DeviceRecord::Vf(v) = &record.device;
    node.journal
        .release_claim(&v.pci, key)
        .map_err(journal_error)?;
    node.journal.remove(key).map_err(journal_error)?;
    tracing::info!(attachment = %key, "released");
    Ok(())
}
