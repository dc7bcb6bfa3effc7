//! What every command needs about the node: settings, journal, sysfs, the host namespace.

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::sriov::Sysfs;

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

/// Maps journal failures: a busy VF is "try again later", the rest is a state error.
pub fn journal_error(e: JournalError) -> CniError {
    match &e {
        JournalError::LockTimeout { .. } => {
            CniError::caused(ErrorCode::TryAgainLater, e.to_string(), &e)
        }
        _ => CniError::caused(ErrorCode::State, "the state journal failed", &e),
    }
}

/// Whether the namespace an attachment was made in still exists and is the same one.
pub fn pod_namespace(record: &AttachmentRecord) -> Option<NetNs> {
    let ns = NetNs::open(record.netns.as_ref()?).ok()?;
    (Some(ns.id()) == record.netns_id).then_some(ns)
}
