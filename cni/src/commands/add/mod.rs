//! ADD: validate everything, record the intent, plug the device in, address it, answer.
//!
//! The attachment kind (a VF moved in, a macvlan created on the PF) prepares and plugs the
//! device through `crate::attachment`; one tail ([`tail`]) addresses it, routes it, announces
//! it, finds its RoCE GID and builds the result. Any failure after the intent is recorded is
//! undone by the same teardown DEL uses.

mod tail;

use std::path::PathBuf;
use std::time::Duration;

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::sriov::PciAddress;
use serde_json::Value;

use crate::attachment::{self, Plan};
use crate::config::{AttachMode, Config};
use crate::device;
use crate::ipam::{Ipam, Pending, Target};
use crate::journal::{AttachmentKey, AttachmentRecord, DeviceRecord, Lock, Phase, SCHEMA};
use crate::node::{Node, journal_error, pod_state};
use crate::settings::Settings;
use crate::spec::env::Invocation;
use crate::spec::result::CniResult;
use crate::spec::{CniError, ErrorCode};
use crate::teardown::{Released, retry_pending_releases, teardown};

pub use tail::policy;

/// Dead attachments healed, and pending address releases retried, per ADD, to keep ADD's
/// latency bounded.
const HEAL_PER_ADD: usize = 4;

/// Attachments whose liveness one ADD looks at (each costs a namespace open and its cookie):
/// a window that moves with every ADD, so a node with hundreds of pods pays the same per ADD
/// and every record is still looked at within a few ADDs.
const LOOKS_PER_ADD: usize = 16;

/// Runs ADD and returns the result JSON.
pub fn run(inv: &Invocation, config: &Config, settings: Settings) -> Result<Value, CniError> {
    let conf = &config.conf;
    tail::prev_result(config)?;
    let mac = conf.requested_mac(inv.args.get("MAC"))?;
    let netns_path = inv
        .netns
        .as_ref()
        .ok_or_else(|| CniError::new(ErrorCode::InvalidEnvironment, "CNI_NETNS: not set"))?;
    let pod_ns = NetNs::open(netns_path).map_err(|e| {
        CniError::caused(ErrorCode::InvalidEnvironment, format!("CNI_NETNS: {e}"), &e)
    })?;
    let request = match conf.mode {
        AttachMode::Vf => Some(device::requested(conf, &inv.args, &settings)?),
        AttachMode::Macvlan => None,
    };
    let mut node = Node::open(settings)?;
    if pod_ns.id() == node.host_ns.id() {
        return Err(CniError::new(
            ErrorCode::InvalidEnvironment,
            "CNI_NETNS: is the plugin's own network namespace",
        ));
    }
    let ipam = conf
        .ipam_type()
        .map(|k| node.ipam(k, &inv.path))
        .transpose()?;
    let key = AttachmentKey {
        container_id: inv.container_id.clone(),
        ifname: inv.ifname.clone(),
    };
    // The cookie makes the recorded identity last: inode numbers are reused.
    let pod_id = pod_ns.lasting_id().map_err(|e| {
        CniError::caused(ErrorCode::InvalidEnvironment, format!("CNI_NETNS: {e}"), &e)
    })?;
    // The host's id for the pod namespace: a DEL that finds no path to it asks the kernel
    // whether it still exists. Without one (a kernel refusing it) DEL falls back to where the
    // device is.
    let pod_nsid = node
        .host
        .nsid_of(&pod_ns)
        .inspect_err(|e| tracing::warn!("cannot get the host's id for the pod namespace: {e}"))
        .ok();
    let plan = Plan {
        inv,
        config,
        pod_ns,
        pod_id,
        pod_nsid,
        key,
        ipam,
        mac,
    };
    let mut clear = |node: &mut Node, vf: Option<&PciAddress>, held: &Lock| {
        make_room(node, &plan.key, vf, held, &inv.path)
    };
    let (device, lock) = attachment::prepare(&mut node, &plan, request.as_ref(), &mut clear)?;
    record_and_attach(&mut node, &plan, new_record(&plan, device), &lock)
}

fn new_record(plan: &Plan<'_>, device: DeviceRecord) -> AttachmentRecord {
    let conf = &plan.config.conf;
    AttachmentRecord {
        schema: SCHEMA,
        key: plan.key.clone(),
        network: conf.name.clone(),
        netns: plan.inv.netns.clone(),
        netns_id: Some(plan.pod_id),
        netns_nsid: plan.pod_nsid,
        cni_args: plan.inv.raw_args.clone(),
        phase: Phase::Prepared,
        config: plan.config.raw.clone(),
        cni_version: plan.config.version(),
        ipam: conf.ipam_type().map(str::to_owned),
        routing_table: policy(plan.config, &plan.key.ifname).map(|p| p.table),
        device,
        result: None,
    }
}

/// Records the intent, attaches, and either records the result or undoes everything.
fn record_and_attach(
    node: &mut Node,
    plan: &Plan<'_>,
    mut record: AttachmentRecord,
    lock: &Lock,
) -> Result<Value, CniError> {
    // Record first, claim second: a crash between the two leaves a record naming what to
    // clean, never a claim nobody will release.
    node.journal.save(&record).map_err(journal_error)?;
    if let Some(pci) = record.device.kind().claimed_vf() {
        node.journal
            .set_claim(pci, &record.key)
            .map_err(journal_error)?;
    }
    let attached = attach(node, &record, plan, lock).and_then(|result| {
        let json = result.to_json(plan.config.version());
        record.phase = Phase::Attached;
        record.result = Some(json.clone());
        node.journal.save(&record).map_err(journal_error)?;
        Ok(json)
    });
    match attached {
        Ok(json) => {
            tracing::info!(attachment = %record.key, "attached");
            if let Some(pci) = record.device.kind().claimed_vf() {
                let (rdma_devices, _) = record.device.kind().rdma();
                device::publish_device_info(&plan.config.conf, &node.settings, pci, rdma_devices);
            }
            heal_dead_attachments(node, &record, &plan.inv.path, lock);
            tracing::debug!("healing done");
            Ok(json)
        }
        Err(err) => match teardown(node, &record, &plan.inv.path, lock) {
            Ok(Released::Complete) => Err(err),
            Ok(Released::AddressPending(why)) => Err(err.with_detail(format!(
                "the device is back; the address release is pending and retried: {why}"
            ))),
            Err(rollback) => Err(err.with_detail(format!(
                "rollback incomplete, DEL or GC will finish it: {}",
                rollback.details
            ))),
        },
    }
}

/// Clears what stands in the way of this ADD: an earlier, unfinished attempt at the same
/// attachment, or an attachment whose pod is gone still holding the VF. A live holder means
/// "try again".
fn make_room(
    node: &mut Node,
    key: &AttachmentKey,
    vf: Option<&PciAddress>,
    held: &Lock,
    cni_path: &[PathBuf],
) -> Result<(), CniError> {
    if let Some(previous) = node.journal.load(key).map_err(journal_error)? {
        if previous.phase == Phase::Attached && pod_state(node, &previous).is_alive() {
            return Err(CniError::new(
                ErrorCode::AlreadyAttached,
                format!("attachment {key} already exists; DEL it before adding it again"),
            ));
        }
        tracing::info!(attachment = %key, "finishing an earlier, interrupted attempt");
        // Its device may be another VF than this ADD's; that one needs its own lock.
        let same_lock = previous.device.kind().claimed_vf() == vf;
        let other = if same_lock {
            None
        } else {
            Some(
                previous
                    .device
                    .kind()
                    .lock(&node.journal, key, node.settings.lock_timeout())
                    .map_err(journal_error)?,
            )
        };
        teardown(node, &previous, cni_path, other.as_ref().unwrap_or(held))?;
    }
    let Some(vf) = vf else { return Ok(()) };
    if let Some(holder) = node.journal.claim(vf).map_err(journal_error)?
        && holder != *key
    {
        match node.journal.load(&holder).map_err(journal_error)? {
            Some(record) if pod_state(node, &record).is_alive() => {
                return Err(CniError::new(
                    ErrorCode::TryAgainLater,
                    format!(
                        "VF {vf} is still attached to {holder}, whose pod lives on; retry after its DEL"
                    ),
                ));
            }
            Some(record) => {
                tracing::info!(vf = %vf, previous = %holder, "reclaiming VF from an attachment whose pod is gone");
                teardown(node, &record, cni_path, held)?;
            }
            // A claim without a record: its ADD died before changing anything.
            None => node
                .journal
                .release_claim(vf, &holder)
                .map_err(journal_error)?,
        }
    }
    Ok(())
}

/// Starts IPAM, plugs the device in and runs the shared tail.
fn attach(
    node: &mut Node,
    record: &AttachmentRecord,
    plan: &Plan<'_>,
    lock: &Lock,
) -> Result<CniResult, CniError> {
    let mut pod = RouteSocket::open_in(&plan.pod_ns).map_err(|e| {
        CniError::caused(
            ErrorCode::Kernel,
            "cannot open a socket in the pod namespace",
            &e,
        )
    })?;
    // The address is allocated while the device is plugged in: both mostly wait.
    let target = Target {
        container_id: &plan.key.container_id,
        ifname: &plan.key.ifname,
        netns: plan.inv.netns.as_deref(),
        cni_args: record.cni_args.as_deref(),
        held: Some(lock),
    };
    let (allocation, plugged) = Ipam::start_beside(
        plan.ipam.as_ref(),
        "ADD",
        &plan.config.raw,
        plan.config.version(),
        &target,
        || record.device.kind().plug_in(node, &mut pod, plan),
    );
    let allocation: Option<Pending<'_>> = match (allocation.transpose(), &plugged) {
        (Ok(a), _) => a,
        (Err(e), Ok(_)) => {
            // Nothing allocated: the caller's rollback gives the device back.
            return Err(e);
        }
        (Err(_), Err(_)) => None,
    };
    tracing::debug!("IPAM started");
    let link = match plugged {
        Ok(link) => {
            tracing::debug!("device plugged in");
            link
        }
        Err(e) => {
            // Let the allocation finish so the rollback's IPAM DEL releases it.
            if let Some(pending) = allocation {
                let _ = pending.wait();
            }
            return Err(e);
        }
    };
    tail::finish(node, &mut pod, &link, plan, record, allocation)
}

/// Releases a few attachments whose pods are gone without a DEL (Multus sends GC only to the
/// default network, so a secondary network must clean up after itself), and retries a few
/// pending address releases. Best effort: busy devices are skipped, failures are logged, the
/// ADD's answer does not change.
fn heal_dead_attachments(
    node: &mut Node,
    current: &AttachmentRecord,
    cni_path: &[PathBuf],
    held: &Lock,
) {
    // Temporaries of writers killed before their first record landed name nothing to clean.
    node.journal.sweep_temporaries();
    retry_pending_releases(node, cni_path, Some(HEAL_PER_ADD));
    let Ok(files) = node.journal.record_files() else {
        return;
    };
    let own_vf = current.device.kind().claimed_vf().cloned();
    // Where the window starts: different for every ADD, without state of its own.
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as usize)
        .unwrap_or_default()
        % files.len().max(1);
    let window = files
        .iter()
        .cycle()
        .skip(start)
        .take(files.len().min(LOOKS_PER_ADD))
        .filter_map(|f| node.journal.record_at(f).ok().flatten())
        .filter(|r| r.key != current.key)
        .collect::<Vec<_>>();
    let mut healed = 0;
    for record in window {
        if healed == HEAL_PER_ADD {
            break;
        }
        if pod_state(node, &record).is_alive() {
            continue;
        }
        // This ADD holds its own VF's lock already; any other device is only touched if free.
        let ours = own_vf.is_some() && record.device.kind().claimed_vf() == own_vf.as_ref();
        let other = if ours {
            None
        } else {
            match record
                .device
                .kind()
                .lock(&node.journal, &record.key, Duration::ZERO)
            {
                Ok(lock) => Some(lock),
                Err(_) => continue,
            }
        };
        healed += 1;
        // Re-read under the lock: a DEL may have finished it meanwhile.
        let Ok(Some(fresh)) = node.journal.load(&record.key) else {
            continue;
        };
        match teardown(node, &fresh, cni_path, other.as_ref().unwrap_or(held)) {
            Ok(_) => {
                tracing::info!(attachment = %fresh.key, "released an attachment whose pod is gone")
            }
            Err(e) => {
                tracing::warn!(attachment = %fresh.key, "could not release a dead attachment: {e}")
            }
        }
    }
}
