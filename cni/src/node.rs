//! What every command needs about the node: settings, journal, sysfs, the host namespace.

use std::path::PathBuf;

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::sriov::Sysfs;

use crate::ipam::Ipam;
use crate::journal::{AttachmentRecord, Journal, JournalError};
use crate::settings::Settings;
use crate::spec::{CniError, ErrorCode};

/// The node side of an invocation.
pub struct Node {
    /// Node settings.
    pub settings: Settings,
    /// The state journal.
    pub journal: Journal,
    /// The SR-IOV model.
    pub sysfs: Sysfs,
    /// The namespace the plugin runs in (the host's).
    pub host_ns: NetNs,
    /// A route socket in it.
    pub host: RouteSocket,
}

impl Node {
    /// Opens the journal and a host socket.
    pub fn open(settings: Settings) -> Result<Self, CniError> {
        let journal = Journal::open(&settings.state_dir).map_err(journal_error)?;
        let host_ns = NetNs::current().map_err(|e| {
            CniError::caused(
                ErrorCode::Kernel,
                "cannot open the host network namespace",
                &e,
            )
        })?;
        let host = RouteSocket::open()
            .map_err(|e| CniError::caused(ErrorCode::Kernel, "cannot open a netlink socket", &e))?;
        let sysfs = Sysfs::new(&settings.sysfs_root);
        Ok(Self {
            settings,
            journal,
            sysfs,
            host_ns,
            host,
        })
    }
}

impl Node {
    /// The IPAM plugin `kind` on `cni_path`, with the node's delegate timeout.
    pub fn ipam(&self, kind: &str, cni_path: &[PathBuf]) -> Result<Ipam, CniError> {
        Ipam::find(kind, cni_path, self.journal.dir())
            .map(|i| i.with_timeout(self.settings.ipam_timeout()))
    }
}

/// Maps journal failures: a busy VF is "try again later", the rest is a state error.
pub fn journal_error(e: JournalError) -> CniError {
    match &e {
        JournalError::LockTimeout { .. } => {
            CniError::caused(ErrorCode::TryAgainLater, e.to_string(), &e)
        }
        _ => CniError::caused(ErrorCode::State, "the state journal failed", &e),
    }
}

/// Where an attachment's pod stands.
pub enum PodState {
    /// Its namespace exists and is open here (found at the recorded path, or by identity).
    Reachable(NetNs),
    /// Its device is provably in some namespace we cannot open: the pod lives on.
    Unreachable,
    /// Its namespace is gone and its device is not held anywhere.
    Gone,
}

impl PodState {
    /// Whether the pod lives on (reachable or not): its attachment must not be reclaimed and
    /// its address must not be released behind its back.
    pub fn is_alive(&self) -> bool {
        !matches!(self, Self::Gone)
    }
}

/// Where `record`'s pod stands, decided from the namespace's identity and the device's
/// whereabouts, never from a path or a pid: `/proc/<pid>/ns/net` stops resolving when that
/// process exits even though the namespace lives on, held by another process or a bind mount.
pub fn pod_state(node: &mut Node, record: &AttachmentRecord) -> PodState {
    let Some(id) = record.netns_id else {
        return PodState::Gone;
    };
    if let Some(path) = &record.netns
        && let Ok(ns) = NetNs::open(path)
        && ns.is(&id)
    {
        return PodState::Reachable(ns);
    }
    if let Some(ns) = NetNs::find(id) {
        return PodState::Reachable(ns);
    }
    let kind = record.device.kind();
    if !kind.held_outside_host(node, &record.key) {
        return PodState::Gone;
    }
    // The device is not in the host. A VF unbound from its driver or bound to vfio-pci has no
    // netdev anywhere, so that alone does not say the pod lives: the kernel does.
    match record
        .netns_nsid
        .map(|nsid| namespace_is_dead(&mut node.host, nsid))
    {
        Some(Ok(true)) => {
            tracing::warn!(
                attachment = %record.key,
                "{} has no network interface in the host, but its pod's namespace is dead (the host's id {} for it is gone or belongs to another namespace): releasing it",
                kind.describe(&record.key),
                record.netns_nsid.unwrap_or_default()
            );
            PodState::Gone
        }
        Some(Err(e)) => {
            tracing::warn!(attachment = %record.key, "cannot ask the kernel whether the pod's namespace lives: {e}");
            PodState::Unreachable
        }
        Some(Ok(false)) | None => PodState::Unreachable,
    }
}

/// Whether the namespace the host knew by `nsid` is provably dead: the kernel no longer knows
/// the id, or a namespace reachable from here holds it now (ids are reused; the recorded
/// namespace, had it been reachable, was found by identity before this is asked). A live id on
/// a namespace no path reaches is not proof: that may be the pod, held where we cannot see.
fn namespace_is_dead(
    host: &mut hostnet::netlink::RouteSocket,
    nsid: i32,
) -> Result<bool, hostnet::netlink::NetlinkError> {
    if !host.nsid_in_use(nsid)? {
        return Ok(true);
    }
    Ok(host.namespace_with_nsid(nsid).is_some())
}
