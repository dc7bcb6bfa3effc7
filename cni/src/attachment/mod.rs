//! Attachment kinds behind one seam: what differs between a VF moved into the pod and a macvlan
//! created on the PF inside it. ADD, DEL, CHECK, GC and healing go through [`Attachment`] and
//! never match on the kind; a third kind is a new module, a new [`DeviceRecord`] variant and one
//! line in [`DeviceRecord::kind`] and [`prepare`].

pub mod macvlan;
pub mod vf;
pub mod vf_netdev;

use std::time::Duration;

use hostnet::netlink::{Link, RouteSocket};
use hostnet::netns::{NetNs, NsId};
use hostnet::rdma::NetnsMode;
use hostnet::sriov::{PciAddress, is_valid_ifname};
use spinel_wire::MacAddr;

use crate::config::{AttachMode, Config};
use crate::device::DeviceRequest;
use crate::ipam::Ipam;
use crate::journal::{AttachmentKey, DeviceRecord, Journal, JournalError, Lock};
use crate::node::Node;
use crate::spec::env::Invocation;
use crate::spec::{CniError, ErrorCode};
use crate::step::StepError;
use crate::{roce, sysctls};

/// Everything ADD validated before changing anything.
pub struct Plan<'a> {
    /// The invocation.
    pub inv: &'a Invocation,
    /// The network configuration.
    pub config: &'a Config,
    /// The pod's namespace, opened and checked.
    pub pod_ns: NetNs,
    /// Its identity, cookie included.
    pub pod_id: NsId,
    /// The host's id for it (`RTM_GETNSID`), when the kernel gave one.
    pub pod_nsid: Option<i32>,
    /// The attachment.
    pub key: AttachmentKey,
    /// The IPAM plugin, found on `CNI_PATH`.
    pub ipam: Option<Ipam>,
    /// The MAC the pod interface gets, if one was asked for.
    pub mac: Option<MacAddr>,
}

/// What ADD must do before it may take the device: finish an earlier attempt at the same
/// attachment, or reclaim the VF from an attachment whose pod is gone.
pub type ClearTheWay<'c> =
    &'c mut dyn FnMut(&mut Node, Option<&PciAddress>, &Lock) -> Result<(), CniError>;

/// The pod side of a teardown: the namespace ADD used, when it still exists, and a socket in it.
pub struct PodSide<'p> {
    /// The namespace.
    pub ns: &'p NetNs,
    /// A route socket inside it.
    pub socket: &'p mut RouteSocket,
}

/// What every attachment kind does.
pub trait Attachment {
    /// Takes the lock that guards the device for a whole operation.
    fn lock(
        &self,
        journal: &Journal,
        key: &AttachmentKey,
        timeout: Duration,
    ) -> Result<Lock, JournalError>;
    /// The VF this attachment claims node-wide, for kinds that claim one.
    fn claimed_vf(&self) -> Option<&PciAddress>;
    /// The alias marking the pod interface as this attachment's.
    fn marker(&self, key: &AttachmentKey) -> String;
    /// How messages name the device.
    fn describe(&self, key: &AttachmentKey) -> String;
    /// The RDMA devices the attachment uses and whether they moved into the pod.
    fn rdma(&self) -> (&[String], bool);
    /// Whether attachment `key`'s device is provably somewhere other than the host namespace,
    /// so its pod still has it even when its namespace cannot be found.
    fn held_outside_host(&self, node: &mut Node, key: &AttachmentKey) -> bool;
    /// Plugs the device into the pod, sets its per-interface sysctls and brings it up.
    fn plug_in(
        &self,
        node: &mut Node,
        pod: &mut RouteSocket,
        plan: &Plan<'_>,
    ) -> Result<Link, CniError>;
    /// What CHECK finds changed on the device's side (outside the pod interface), one line each.
    fn drift(&self, _node: &mut Node) -> Vec<String> {
        Vec::new()
    }
    /// Gives the device back to the node (every step runs; failures are returned).
    fn release(
        &self,
        node: &mut Node,
        key: &AttachmentKey,
        pod: Option<PodSide<'_>>,
    ) -> Vec<StepError>;
}

impl DeviceRecord {
    /// The kind's behaviour.
    pub fn kind(&self) -> &dyn Attachment {
        match self {
            DeviceRecord::Vf(v) => v,
            DeviceRecord::Macvlan(m) => m,
        }
    }
}

/// Finds and checks the device the configuration asks for, takes its lock, clears the way, and
/// describes the original state of everything ADD will change.
pub fn prepare(
    node: &mut Node,
    plan: &Plan<'_>,
    request: Option<&DeviceRequest>,
    clear: ClearTheWay<'_>,
) -> Result<(DeviceRecord, Lock), CniError> {
    match (plan.config.conf.mode, request) {
        (AttachMode::Vf, Some(request)) => vf::prepare(node, plan, request, clear),
        (AttachMode::Macvlan, _) => macvlan::prepare(node, plan, clear),
        (AttachMode::Vf, None) => Err(CniError::new(
            ErrorCode::InvalidConfig,
            "no VF given: set deviceID, runtimeConfig.deviceID, a device-info file, or pfName and vfIndex",
        )),
    }
}

/// A host interface by name, or an error saying what is missing.
pub(crate) fn host_link(node: &mut Node, name: &str, what: &str) -> Result<Link, CniError> {
    node.host
        .link_by_name(name)
        .map_err(|e| {
            CniError::caused(
                ErrorCode::Kernel,
                format!("cannot read {what} interface {name}"),
                &e,
            )
        })?
        .ok_or_else(|| {
            CniError::new(
                ErrorCode::Device,
                format!("{what}: interface {name} not found in the host namespace"),
            )
        })
}

/// The pod interface may not exceed its PF's MTU.
pub(crate) fn check_mtu(mtu: Option<u32>, pf: &Link) -> Result<(), CniError> {
    match mtu {
        Some(mtu) if mtu > pf.mtu => Err(CniError::new(
            ErrorCode::InvalidConfig,
            format!(
                "mtu: {mtu} exceeds the MTU of PF {} ({}); the pod interface cannot exceed its PF",
                pf.name, pf.mtu
            ),
        )),
        _ => Ok(()),
    }
}

/// The node's RDMA namespace mode when there are RDMA devices, checked against the network's
/// requirement; device names are checked before they are used.
pub(crate) fn rdma_mode(
    devices: &[String],
    config: &Config,
) -> Result<Option<NetnsMode>, CniError> {
    if let Some(bad) = devices.iter().find(|d| !is_valid_ifname(d)) {
        return Err(CniError::new(
            ErrorCode::InvalidConfig,
            format!("rdma-device: {bad:?} is not an RDMA device name"),
        ));
    }
    if devices.is_empty() {
        Ok(None)
    } else {
        roce::netns_mode(config.conf.rdma.netns_mode).map(Some)
    }
}

/// Sets the pod interface's sysctls while it is still down (so `arp_notify` is in force when
/// it comes up; they follow the interface when it is renamed), then its final name, MAC and
/// MTU, and brings it up.
pub(crate) fn bring_up(
    pod: &mut RouteSocket,
    plan: &Plan<'_>,
    link: &Link,
) -> Result<Link, CniError> {
    sysctls::apply(&plan.pod_ns, &link.name, &plan.config.conf.sysctls)?;
    tracing::debug!("sysctls set");
    let want = vf_netdev::PodLinkSettings {
        ifname: &plan.key.ifname,
        mac: plan.mac,
        mtu: plan.config.conf.mtu,
    };
    vf_netdev::bring_up(pod, link, want).map_err(|e| match e {
        vf_netdev::AttachError::NameTaken(_) => {
            CniError::new(ErrorCode::InvalidEnvironment, format!("CNI_IFNAME: {e}"))
        }
        e => CniError::caused(
            ErrorCode::Kernel,
            format!("cannot bring {} up in the pod", plan.key.ifname),
            &e,
        ),
    })
}
