//! Undoing an attachment from its journal record: shared by DEL, GC, ADD's rollback and ADD's
//! self-healing. Every step runs even when an earlier one fails; failures are collected as
//! typed [`StepError`]s and mapped to one CNI code at the end.
//!
//! What is released when:
//! - the device (VF home with its name, MAC, MTU and PF-side attributes; a macvlan deleted)
//!   and the policy rules: always first; if that fails, the record stays for a retry;
//! - the VF's claim and the record: once the device is home, whatever IPAM answered, so a VF
//!   whose pod is gone is always usable by the next ADD;
//! - the address: by the IPAM plugin, while the device moves (both mostly wait); if its DEL
//!   fails, again with arguments that can succeed, and if that fails too, a pending release
//!   in the journal keeps everything the plugin needs and is retried until it succeeds;
//! - nothing at all while the pod lives on where we cannot reach it: its address must not be
//!   handed to another pod while the VF still carries it.

use std::path::PathBuf;

use hostnet::netlink::RouteSocket;

use crate::attachment::PodSide;
use crate::ipam::{Ipam, Pending, Target};
use crate::journal::{AttachmentRecord, Lock};
use crate::node::{Node, PodState, pod_state};
use crate::spec::CniError;
use crate::step::{StepError, to_cni_error};
use crate::{ipconfig, roce};

/// How a teardown ended when the device is home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// Device and address are both released.
    Complete,
    /// The device is home; the IPAM plugin refused to release the address, which is kept as a
    /// pending release (the message says why).
    AddressPending(String),
}

/// Releases everything `record` holds. The caller holds the device's lock, `held`, which the
/// IPAM delegate inherits.
pub fn teardown(
    node: &mut Node,
    record: &AttachmentRecord,
    cni_path: &[PathBuf],
    held: &Lock,
) -> Result<Released, CniError> {
    let key = &record.key;
    let pod = pod_state(node, record);
    if let PodState::Unreachable = pod {
        return Err(to_cni_error(
            format!("could not release attachment {key}; it is kept for a retry"),
            &[StepError::Busy(format!(
                "{} is still in a namespace that cannot be found from here; the kernel returns it when that namespace dies",
                record.device.kind().describe(key)
            ))],
        ));
    }
    let mut errors: Vec<StepError> = Vec::new();
    let ipam = record.ipam.as_deref().map(|kind| node.ipam(kind, cni_path));
    let target = Target {
        container_id: &key.container_id,
        ifname: &key.ifname,
        netns: record.netns.as_deref(),
        cni_args: record.cni_args.as_deref(),
        held: Some(held),
    };
    // The address is released while the kernel gives the device back: both mostly wait.
    let usable = match &ipam {
        Some(Ok(ipam)) => Some(ipam),
        _ => None,
    };
    let (started, ()) = Ipam::start_beside(
        usable,
        "DEL",
        &record.config,
        record.cni_version,
        &target,
        || release_device(node, record, &pod, &mut errors),
    );
    let release: Option<Result<Pending<'_>, CniError>> = match &ipam {
        Some(Err(e)) => Some(Err(e.clone())),
        _ => started,
    };
    tracing::debug!("device released, IPAM release started");
    let address = match (release, &ipam) {
        (Some(Ok(pending)), Some(Ok(ipam))) => pending.wait().map(drop).or_else(|first| {
            ipam.release_with_fallbacks(&record.config, record.cni_version, &target, first)
        }),
        (Some(Err(e)), _) => Err(e),
        _ => Ok(()),
    };
    tracing::debug!("IPAM release done");
    if !errors.is_empty() {
        if let Err(e) = &address {
            errors.push(StepError::Ipam(e.msg.clone()));
        }
        return Err(to_cni_error(
            format!("could not fully release attachment {key}; it is kept for a retry"),
            &errors,
        ));
    }
    finish(node, record, address)
}

/// Gives the device and the policy rules back.
fn release_device(
    node: &mut Node,
    record: &AttachmentRecord,
    pod: &PodState,
    errors: &mut Vec<StepError>,
) {
    let key = &record.key;
    let mut socket = match pod {
        PodState::Reachable(ns) => match RouteSocket::open_in(ns) {
            Ok(s) => Some((ns, s)),
            Err(e) => {
                errors.push(StepError::kernel("open a socket in the pod namespace", &e));
                None
            }
        },
        _ => None,
    };
    // Rules do not leave with the interface: remove them while the pod lives.
    if let Some((_, sock)) = socket.as_mut()
        && let Some(table) = record.routing_table
        && let Err(e) = ipconfig::remove_policy(sock, table)
    {
        errors.push(StepError::kernel(
            format!("remove the policy rules of table {table}"),
            &e,
        ));
    }
    let side = socket
        .as_mut()
        .map(|(ns, sock)| PodSide { ns, socket: sock });
    errors.extend(record.device.kind().release(node, key, side));
}

/// The device is home: the claim and the record go, and an address the plugin would not
/// release becomes a pending release.
fn finish(
    node: &mut Node,
    record: &AttachmentRecord,
    address: Result<(), CniError>,
) -> Result<Released, CniError> {
    let key = &record.key;
    let keep = |e: &crate::journal::JournalError| {
        to_cni_error(
            format!("could not fully release attachment {key}; it is kept for a retry"),
            &[StepError::journal(e)],
        )
    };
    let released = match address {
        Ok(()) => Released::Complete,
        Err(e) => {
            node.journal
                .defer_release(record, &e.msg)
                .map_err(|j| keep(&j))?;
            tracing::warn!(attachment = %key, "address release deferred: {}", e.msg);
            Released::AddressPending(e.msg)
        }
    };
    roce::unpublish(&node.settings.roce_info_dir, key);
    if let Some(pci) = record.device.kind().claimed_vf() {
        node.journal.release_claim(pci, key).map_err(|j| keep(&j))?;
    }
    node.journal.remove(key).map_err(|j| keep(&j))?;
    tracing::info!(attachment = %key, "released");
    Ok(released)
}

/// Retries up to `budget` pending IPAM releases that are due (all with `None`), each under its
/// attachment's lock, skipping busy ones. Returns how many are still pending.
pub fn retry_pending_releases(node: &Node, cni_path: &[PathBuf], budget: Option<usize>) -> usize {
    let Ok(pending) = node.journal.pending_releases() else {
        return 0;
    };
    let total = pending.len();
    let mut recovered = 0;
    for p in pending
        .into_iter()
        .filter(|p| p.is_due())
        .take(budget.unwrap_or(usize::MAX))
    {
        let Ok(lock) = node
            .journal
            .lock_attachment(&p.key, std::time::Duration::ZERO)
        else {
            continue;
        };
        let target = Target {
            container_id: &p.key.container_id,
            ifname: &p.key.ifname,
            netns: p.netns_if_same(),
            cni_args: p.cni_args.as_deref(),
            held: Some(&lock),
        };
        let outcome = node.ipam(&p.ipam, cni_path).and_then(|ipam: Ipam| {
            ipam.del(&p.config, p.cni_version, &target)
                .or_else(|first| {
                    ipam.release_with_fallbacks(&p.config, p.cni_version, &target, first)
                })
        });
        let recorded = match outcome {
            Ok(()) => {
                recovered += 1;
                tracing::info!(attachment = %p.key, "deferred address release succeeded");
                node.journal.release_recovered(&p.key)
            }
            Err(e) => {
                tracing::warn!(attachment = %p.key, attempts = p.attempts + 1, "deferred address release failed again: {}", e.msg);
                node.journal.release_retry_failed(&p, &e.msg)
            }
        };
        if let Err(e) = recorded {
            tracing::warn!(attachment = %p.key, "cannot record the release attempt: {e}");
        }
    }
    total - recovered
}
