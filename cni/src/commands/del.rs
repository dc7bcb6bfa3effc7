//! DEL: best effort and idempotent. Works when the pod namespace is gone, when ADD never ran
//! or crashed half-way, and when it is repeated; never reports success while a Spinel device
//! it cannot account for is still in the pod.

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;

use crate::config::Config;
use crate::ipam::Target;
use crate::journal::AttachmentKey;
use crate::node::{Node, journal_error};
use crate::settings::Settings;
use crate::spec::env::Invocation;
use crate::spec::{CniError, ErrorCode};
use crate::teardown::{Released, retry_pending_releases, teardown};

/// Runs DEL.
pub fn run(inv: &Invocation, config: &Config, settings: Settings) -> Result<(), CniError> {
    let mut node = Node::open(settings)?;
    let key = AttachmentKey {
        container_id: inv.container_id.clone(),
        ifname: inv.ifname.clone(),
    };
    let Some(record) = node.journal.load(&key).map_err(journal_error)? else {
        node.journal.remove_dead_temporaries(&key);
        refuse_unaccounted_device(&node, inv)?;
        release_addresses_without_record(&node, inv, config);
        retry_pending_releases(&node, &inv.path, Some(1));
        return Ok(());
    };
    let lock = record
        .device
        .kind()
        .lock(&node.journal, &key, node.settings.lock_timeout())
        .map_err(journal_error)?;
    // Re-read under the lock: a concurrent DEL may have finished already.
    match node.journal.load(&key).map_err(journal_error)? {
        Some(record) => match teardown(&mut node, &record, &inv.path, &lock)? {
            Released::Complete => Ok(()),
            // The device is home and the address release is recorded and retried: the pod
            // can go; the pending release is visible in the journal and its counters.
            Released::AddressPending(_) => Ok(()),
        },
        None => Ok(()),
    }
}

/// Nothing of ours is recorded (a repeated DEL, or an ADD that failed validation). The spec
/// still wants the IPAM plugin told; it is idempotent, so failures here are only logged.
fn release_addresses_without_record(node: &Node, inv: &Invocation, config: &Config) {
    let Some(kind) = config.conf.ipam_type() else {
        return;
    };
    let target = Target {
        container_id: &inv.container_id,
        ifname: &inv.ifname,
        netns: inv.netns.as_deref(),
        cni_args: inv.raw_args.as_deref(),
        held: None,
    };
    if let Err(e) = node
        .ipam(kind, &inv.path)
        .and_then(|ipam| ipam.del(&config.raw, config.version(), &target))
    {
        tracing::warn!(attachment = %format!("{}/{}", inv.container_id, inv.ifname), "IPAM DEL without a record: {e}");
    }
}

/// Without a record, an interface in the pod that carries a Spinel marker was attached with
/// other node settings (another state directory): answering success would leave it out of
/// the host for good, so the answer says what happened instead.
fn refuse_unaccounted_device(node: &Node, inv: &Invocation) -> Result<(), CniError> {
    let Some(link) = inv
        .netns
        .as_ref()
        .and_then(|p| NetNs::open(p).ok())
        .and_then(|ns| RouteSocket::open_in(&ns).ok())
        .and_then(|mut s| s.link_by_name(&inv.ifname).ok().flatten())
    else {
        return Ok(());
    };
    match link.alias.as_deref() {
        Some(alias) if alias.starts_with("spinel:") => Err(CniError::new(
            ErrorCode::State,
            format!(
                "interface {} in the pod is a Spinel attachment ({alias}) but {} holds no record of it: ADD ran with other node settings; run DEL with the settings ADD used (/etc/spinel/cni.json)",
                inv.ifname,
                node.journal.dir().display()
            ),
        )),
        _ => Ok(()),
    }
}
