//! macvlan mode: instead of a VF, a macvlan on the PF created directly inside the pod (the
//! shared-RDMA-device setup). The PF's RDMA device stays in the host and every pod's address
//! lands in its one GID table, so each pod's GID index differs and must be looked up.

use std::os::fd::AsFd;

use hostnet::netlink::{Link, LinkChange, NetlinkError, NetlinkErrorKind, RouteSocket};
use hostnet::netns::NetNs;
use spinel_wire::MacAddr;

use crate::journal::AttachmentKey;

/// The alias a Spinel macvlan carries, naming its attachment.
pub fn marker(key: &AttachmentKey) -> String {
    format!("spinel:macvlan:{key}")
}

/// Why creating the macvlan failed.
#[derive(Debug, thiserror::Error)]
pub enum PlugError {
    /// The PF is not in the host namespace.
    #[error("PF {0} has no network interface in the host namespace")]
    NoMaster(String),
    /// The pod already has an interface with the requested name.
    #[error("interface {0:?} already exists in the pod's network namespace")]
    NameTaken(String),
    /// A netlink request failed.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
}

/// Creates the macvlan on `master` inside `pod_ns`, named and marked; it is still down.
pub fn create(
    host: &mut RouteSocket,
    pod_ns: &NetNs,
    pod: &mut RouteSocket,
    master: &str,
    key: &AttachmentKey,
    mtu: Option<u32>,
    mac: Option<MacAddr>,
) -> Result<Link, PlugError> {
    let pf = host
        .link_by_name(master)?
        .ok_or_else(|| PlugError::NoMaster(master.to_owned()))?;
    match host.create_macvlan(pf.index, &key.ifname, pod_ns.as_fd(), mtu, mac) {
        Ok(()) => {}
        Err(e) if e.kind() == NetlinkErrorKind::AlreadyExists => {
            return Err(PlugError::NameTaken(key.ifname.clone()));
        }
        Err(e) => return Err(e.into()),
    }
    let link = pod
        .link_by_name(&key.ifname)?
        .ok_or_else(|| PlugError::NameTaken(key.ifname.clone()))?;
    pod.set_link(link.index, &LinkChange::new().alias(marker(key)))?;
    Ok(link)
}

/// Deletes the attachment's macvlan from the pod, if it is there. A link of that name without
/// the attachment's marker is someone else's and is left alone.
pub fn delete(pod: &mut RouteSocket, key: &AttachmentKey) -> Result<(), NetlinkError> {
    let mark = marker(key);
    let link = match pod.link_by_name(&key.ifname)? {
        Some(l) if l.alias.as_deref() == Some(mark.as_str()) => Some(l),
        _ => pod
            .links()?
            .into_iter()
            .find(|l| l.alias.as_deref() == Some(mark.as_str())),
    };
    match link {
        Some(l) => match pod.delete_link(l.index) {
            Err(e) if e.kind() != NetlinkErrorKind::NoDevice => Err(e),
            _ => Ok(()),
        },
        None => Ok(()),
    }
}
