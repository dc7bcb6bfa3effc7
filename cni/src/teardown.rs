//! Undoing an attachment from its journal record: shared by DEL, GC, ADD's rollback and ADD's
//! self-healing. Every step runs even when an earlier one fails; errors are collected and the
//! record is kept until a teardown succeeds completely, so a retry can finish the job.

use std::path::PathBuf;

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;

use crate::ipam::{Ipam, Pending, Target};
use crate::journal::{AttachmentRecord, DeviceRecord, VfRecord};
use crate::node::{Node, journal_error, pod_namespace};
use crate::spec::error::chain;
use crate::spec::{CniError, ErrorCode, Version};
use crate::{ipconfig, macvlan, roce, vf};

/// Releases everything `record` holds. The caller holds the device's lock.
pub fn teardown(
    node: &mut Node,
    record: &AttachmentRecord,
    cni_path: &[PathBuf],
) -> Result<(), CniError> {
    let mut errors: Vec<String> = Vec::new();
    let key = &record.key;

    // The address is released while the kernel gives the device back: both mostly wait. It
    // is released whatever happens to the device, so a device that cannot be recovered never
    // also leaks its IP.
    let ipam = ipam_of(record, cni_path, node);
    let target = Target {
        container_id: &key.container_id,
        ifname: &key.ifname,
        netns: record.netns.as_deref(),
        cni_args: record.cni_args.as_deref(),
    };
    let release: Option<Pending<'_>> = match &ipam {
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

    // Only the namespace ADD used counts; a path reused by another pod is not ours to touch.
    let pod_ns = pod_namespace(record);
    let mut pod = match &pod_ns {
        Some(ns) => match RouteSocket::open_in(ns) {
            Ok(sock) => Some(sock),
            Err(e) => {
                errors.push(format!("open a socket in the pod namespace: {}", chain(&e)));
                None
            }
        },
        None => None,
    };
    // Rules do not leave with the interface: remove them while the pod lives.
    if let Some(pod) = pod.as_mut()
        && let Some(table) = policy_table(record)
        && let Err(e) = ipconfig::remove_policy(pod, table)
    {
        errors.push(format!("remove the policy rules of table {table}: {e}"));
    }
    match &record.device {
        DeviceRecord::Vf(v) => {
            release_vf(node, record, v, pod_ns.as_ref(), pod.as_mut(), &mut errors)
        }
        DeviceRecord::Macvlan(_) => {
            // A dead pod's macvlan died with its namespace.
            if let Some(pod) = pod.as_mut()
                && let Err(e) = macvlan::delete(pod, key)
            {
                errors.push(format!("delete the macvlan: {e}"));
            }
        }
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
    roce::unpublish(&node.settings.roce_info_dir, key);
    if let DeviceRecord::Vf(v) = &record.device {
        node.journal
            .release_claim(&v.pci, key)
            .map_err(journal_error)?;
    }
    node.journal.remove(key).map_err(journal_error)?;
    tracing::info!(attachment = %key, "released");
    Ok(())
}

/// Gives a VF back: its RDMA devices (exclusive mode), its netdev, its PF-side attributes.
fn release_vf(
    node: &mut Node,
    record: &AttachmentRecord,
    v: &VfRecord,
    pod_ns: Option<&NetNs>,
    pod: Option<&mut RouteSocket>,
    errors: &mut Vec<String>,
) {
    let key = &record.key;
    match node.journal.claim(&v.pci) {
        Err(e) => return errors.push(chain(&e)),
        // Another attachment holds the VF now; ours never touched it or gave it back.
        Ok(Some(holder)) if holder != *key => {
            return tracing::info!(attachment = %key, vf = %v.pci, "VF held by another attachment; leaving it");
        }
        Ok(_) => {}
    }
    // The RDMA devices go home first; a dead pod's are returned by the kernel.
    if v.rdma_exclusive
        && let Some(ns) = pod_ns
        && let Err(e) = roce::return_devices(&v.rdma_devices, ns, &node.host_ns)
    {
        errors.push(e);
    }
    match vf::detach(
        &node.host_ns,
        &mut node.host,
        pod,
        v,
        &key.ifname,
        &node.sysfs,
    ) {
        Ok(done) => {
            for w in done.warnings {
                tracing::warn!(attachment = %key, "{w}");
            }
        }
        Err(e) => errors.push(format!("give VF {} back to the host: {e}", v.pci)),
    }
    if let Some(before) = &v.pf_before
        && let Err(e) = node
            .settings
            .pf_control()
            .apply(&mut node.host, &v.pf, before)
    {
        errors.push(format!(
            "restore VF {} attributes on PF {}: {}",
            v.pci,
            v.pf,
            chain(&e)
        ));
    }
}

/// The IPAM plugin ADD used, and the version to speak to it, from the recorded configuration.
fn ipam_of(
    record: &AttachmentRecord,
    cni_path: &[PathBuf],
    node: &Node,
) -> Option<(Result<Ipam, CniError>, Version)> {
    let kind = record
        .config
        .get("ipam")
        .and_then(|i| i.get("type"))
        .and_then(|t| t.as_str())?;
    let version = record
        .config
        .get("cniVersion")
        .and_then(|v| v.as_str())
        .and_then(Version::parse)
        .unwrap_or(Version::V1_0_0);
    Some((Ipam::find(kind, cni_path, node.journal.dir()), version))
}

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
