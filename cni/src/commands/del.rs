//! DEL: best effort and idempotent. Works when the pod namespace is gone, when ADD never ran
//! or crashed half-way, and when it is repeated.

use crate::config::Config;
use crate::ipam::{Ipam, Target};
use crate::journal::AttachmentKey;
use crate::node::{Node, journal_error};
use crate::settings::Settings;
use crate::spec::CniError;
use crate::spec::env::Invocation;
use crate::teardown::teardown;

/// Runs DEL.
pub fn run(inv: &Invocation, config: &Config, settings: Settings) -> Result<(), CniError> {
    let mut node = Node::open(settings)?;
    let key = AttachmentKey {
        container_id: inv.container_id.clone(),
        ifname: inv.ifname.clone(),
    };
    let Some(record) = node.journal.load(&key).map_err(journal_error)? else {
        node.journal.remove_dead_temporaries(&key);
        release_addresses_without_record(&node, inv, config);
        return Ok(());
    };
    let _lock = node
        .journal
        .lock_device(&record, node.settings.lock_timeout())
        .map_err(journal_error)?;
    // Re-read under the lock: a concurrent DEL may have finished already.
    match node.journal.load(&key).map_err(journal_error)? {
        Some(record) => teardown(&mut node, &record, &inv.path),
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
    };
    if let Err(e) = Ipam::find(kind, &inv.path, node.journal.dir())
        .and_then(|ipam| ipam.del(&config.raw, config.version(), &target))
    {
        tracing::warn!(attachment = %format!("{}/{}", inv.container_id, inv.ifname), "IPAM DEL without a record: {e}");
    }
}
