//! DEL: best effort and idempotent. Works when the pod namespace is gone, when ADD never ran
//! or crashed half-way, and when it is repeated; never reports success while a Spinel device
//! it cannot account for is still in the pod.

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;

use hostnet::sriov::PciAddress;
use serde_json::Value;

use crate::config::{Config, is_valid_plugin_name};
use crate::ipam::Target;
use crate::journal::AttachmentKey;
use crate::node::{Node, journal_error};
use crate::settings::Settings;
use crate::spec::env::Invocation;
use crate::spec::{CniError, ErrorCode, Version};
use crate::teardown::{Released, retry_pending_releases, teardown};

/// Runs DEL. `config` is `None` when the configuration did not validate: DEL then goes by the
/// record alone, and without one releases through IPAM at best effort and succeeds.
pub fn run(
    inv: &Invocation,
    config: Option<&Config>,
    stdin: &[u8],
    settings: Settings,
) -> Result<(), CniError> {
    let mut node = Node::open(settings)?;
    let key = AttachmentKey {
        container_id: inv.container_id.clone(),
        ifname: inv.ifname.clone(),
    };
    let Some(record) = node.journal.load(&key).map_err(journal_error)? else {
        node.journal.remove_dead_temporaries(&key);
        refuse_unaccounted_device(&node, inv)?;
        release_addresses_without_record(&node, inv, config, stdin);
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
/// A configuration that did not validate is read only for `ipam.type`, a checked plugin name.
fn release_addresses_without_record(
    node: &Node,
    inv: &Invocation,
    config: Option<&Config>,
    stdin: &[u8],
) {
    let lenient;
    let (raw, version) = match config {
        Some(c) => (&c.raw, c.version()),
        None => {
            let Ok(raw) = serde_json::from_slice::<Value>(stdin) else {
                return;
            };
            let version = raw
                .get("cniVersion")
                .and_then(Value::as_str)
                .and_then(Version::parse)
                .unwrap_or(Version::CURRENT);
            lenient = raw;
            (&lenient, version)
        }
    };
    let Some(kind) = raw
        .get("ipam")
        .and_then(|i| i.get("type"))
        .and_then(Value::as_str)
        .filter(|k| is_valid_plugin_name(k) && *k != "spinel")
    else {
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
        .and_then(|ipam| ipam.del(raw, version, &target))
    {
        tracing::warn!(attachment = %format!("{}/{}", inv.container_id, inv.ifname), "IPAM DEL without a record: {e}");
    }
}

/// Without a record, an interface in the pod that carries a Spinel marker is either another
/// recorded attachment's (an ADD of this container that never completed, in a namespace where
/// another attachment holds the name: nothing of this DEL's is there) or was attached with
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
    let Some(alias) = link.alias.as_deref().filter(|a| a.starts_with("spinel:")) else {
        return Ok(());
    };
    if let Some(owner) = recorded_owner(node, alias) {
        tracing::info!(
            "interface {} in the pod belongs to attachment {owner} ({alias}); nothing of {}/{} to release",
            inv.ifname,
            inv.container_id,
            inv.ifname
        );
        return Ok(());
    }
    Err(CniError::new(
        ErrorCode::State,
        format!(
            "interface {} in the pod is a Spinel attachment ({alias}) but {} holds no record of it: ADD ran with other node settings; run DEL with the settings ADD used (/etc/spinel/cni.json)",
            inv.ifname,
            node.journal.dir().display()
        ),
    ))
}

/// The recorded attachment a marker names: the holder of the VF's claim (`spinel:vf:<pci>`),
/// or the attachment a macvlan names (`spinel:macvlan:<container>/<ifname>`), if its record
/// exists in this journal.
fn recorded_owner(node: &Node, alias: &str) -> Option<AttachmentKey> {
    let owner = if let Some(pci) = alias.strip_prefix("spinel:vf:") {
        let pci: PciAddress = pci.parse().ok()?;
        node.journal.claim(&pci).ok().flatten()?
    } else {
        let (container_id, ifname) = alias.strip_prefix("spinel:macvlan:")?.rsplit_once('/')?;
        AttachmentKey {
            container_id: container_id.to_owned(),
            ifname: ifname.to_owned(),
        }
    };
    (owner.is_valid() && node.journal.load(&owner).ok().flatten().is_some()).then_some(owner)
}
