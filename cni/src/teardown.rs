//! Undoing an attachment from its journal record: shared by DEL, GC, ADD's rollback and ADD's
//! self-healing. Every step runs even when an earlier one fails; errors are collected and the
//! record is kept until a teardown succeeds completely, so a retry can finish the job.

use std::path::PathBuf;

use hostnet::netlink::RouteSocket;

use crate::ipam::{Ipam, Target};
use crate::journal::{AttachmentRecord, DeviceRecord};
use crate::node::{Node, journal_error, pod_namespace};
use crate::spec::error::chain;
use crate::spec::{CniError, ErrorCode, Version};
use crate::vf;

/// The policy routing table ADD used, from the configuration it recorded.
fn policy_table(record: &AttachmentRecord) -> Option<u32> {
    let routing = record.config.get("routing");
    if routing
        .and_then(|r| r.get("enabled"))
        .and_then(|e| e.as_bool())
        == Some(false)
    {
        return None;
    }
    let explicit = routing
        .and_then(|r| r.get("table"))
        .and_then(|t| t.as_u64())
        .and_then(|t| u32::try_from(t).ok());
    Some(explicit.unwrap_or_else(|| crate::config::table_for(&record.key.ifname)))
}

/// Releases everything `record` holds. The caller holds the VF's lock.
pub fn teardown(
    node: &mut Node,
    record: &AttachmentRecord,
    cni_path: &[PathBuf],
) -> Result<(), CniError> {
    let mut errors: Vec<String> = Vec::new();
    let key = &record.key;

    // The address is released while the kernel moves the VF back: both mostly wait. It is
    // released whatever happens to the VF, so a VF that cannot be recovered never also leaks
    // its IP.
    let ipam = record
        .config
        .get("ipam")
        .and_then(|i| i.get("type"))
        .and_then(|t| t.as_str())
        .map(|kind| {
            let version = record
                .config
                .get("cniVersion")
                .and_then(|v| v.as_str())
                .and_then(Version::parse)
                .unwrap_or(Version::V1_0_0);
            (Ipam::find(kind, cni_path, node.journal.dir()), version)
        });
    let target = Target {
        container_id: &key.container_id,
        ifname: &key.ifname,
        netns: record.netns.as_deref(),
        cni_args: record.cni_args.as_deref(),
    };
    let release = match &ipam {
        Some((Ok(ipam), version)) => match ipam.start("DEL", &record.config, *version, &target) {
            Ok(pending) => Some(pending),
            Err(e) => {
                errors.push(e.msg);
                None
            }
        },
        Some((Err(e), _)) => {
            errors.push(e.msg.clone());
            None
        }
        None => None,
    };

    match &record.device {
        DeviceRecord::Vf(vf_record) => match node.journal.claim(&vf_record.pci) {
            Err(e) => errors.push(chain(&e)),
            // Another attachment holds the VF now; ours never touched it or gave it back.
            Ok(Some(holder)) if holder != *key => {
                tracing::info!(attachment = %key, vf = %vf_record.pci, "VF held by another attachment; leaving it");
            }
            Ok(_) => {
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
                // Rules do not leave with the interface: remove them while the pod lives.
                if let Some(pod) = pod.as_mut()
                    && let Some(table) = policy_table(record)
                    && let Err(e) = crate::ipconfig::remove_policy(pod, table)
                {
                    errors.push(format!("remove the policy rules of table {table}: {e}"));
                }
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
                if let Some(before) = &vf_record.pf_before
                    && let Err(e) =
                        node.settings
                            .pf_access()
                            .apply(&mut node.host, &vf_record.pf, before)
                {
                    errors.push(format!(
                        "restore VF {} attributes on PF {}: {}",
                        vf_record.pci,
                        vf_record.pf,
                        chain(&e)
                    ));
                }
            }
        },
    }

    if let Some(pending) = release
        && let Err(e) = pending.wait()
    {
        errors.push(e.msg);
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
