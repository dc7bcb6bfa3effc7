//! macvlan mode: instead of a VF, a macvlan on the PF created directly inside the pod (the
//! shared-RDMA-device setup). The PF's RDMA device stays in the host and every pod's address
//! lands in its one GID table, so each pod's GID index differs and must be looked up.

use std::os::fd::AsFd;
use std::time::Duration;

use hostnet::netlink::{Link, LinkChange, NetlinkError, NetlinkErrorKind, RouteSocket};
use hostnet::netns::NetNs;
use hostnet::sriov::PciAddress;
use spinel_wire::MacAddr;

use super::{Attachment, ClearTheWay, Plan, PodSide, bring_up, check_mtu, host_link, rdma_mode};
use crate::journal::{AttachmentKey, DeviceRecord, Journal, JournalError, Lock, MacvlanRecord};
use crate::node::{Node, journal_error};
use crate::spec::error::chain;
use crate::spec::{CniError, ErrorCode};
use crate::step::StepError;

/// Checks the master and the shared RDMA device, takes the attachment's lock and clears the
/// way. The master must be a physical function with an RDMA device: a macvlan on another VF's
/// netdev or on a NIC without RoCE would give the pod an interface that is not what the
/// network promises, unless the configuration says `allowNonRdmaMaster`.
pub fn prepare(
    node: &mut Node,
    plan: &Plan<'_>,
    clear: ClearTheWay<'_>,
) -> Result<(DeviceRecord, Lock), CniError> {
    let conf = &plan.config.conf;
    let master = conf.pf_name.clone().unwrap_or_default();
    let pf = host_link(node, &master, "PF")?;
    check_mtu(conf.mtu, &pf)?;
    let invalid = |why: String| {
        CniError::new(
            ErrorCode::InvalidConfig,
            format!(
                "pfName: {master} {why}; macvlan mode needs a PF with an RDMA device (set allowNonRdmaMaster to use any interface)"
            ),
        )
    };
    let function = node.sysfs.function_of(&master);
    let rdma_devices = match &function {
        Ok((pci, _)) => node.sysfs.rdma_devices_of(pci).unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    if !conf.allow_non_rdma_master {
        match &function {
            Ok((_, true)) => return Err(invalid("is a VF's interface, not a PF".into())),
            Err(e) => return Err(invalid(format!("is not a PCI function ({e})"))),
            Ok(_) if rdma_devices.is_empty() => {
                return Err(invalid("has no RDMA device".into()));
            }
            Ok(_) => {}
        }
    }
    rdma_mode(&rdma_devices, plan.config)?;
    let lock = node
        .journal
        .lock_attachment(&plan.key, node.settings.lock_timeout())
        .map_err(journal_error)?;
    clear(node, None, &lock)?;
    let record = MacvlanRecord {
        master,
        rdma_devices,
    };
    Ok((DeviceRecord::Macvlan(record), lock))
}

impl Attachment for MacvlanRecord {
    fn lock(
        &self,
        journal: &Journal,
        key: &AttachmentKey,
        timeout: Duration,
    ) -> Result<Lock, JournalError> {
        journal.lock_attachment(key, timeout)
    }

    fn claimed_vf(&self) -> Option<&PciAddress> {
        None
    }

    fn marker(&self, key: &AttachmentKey) -> String {
        marker(key)
    }

    fn describe(&self, key: &AttachmentKey) -> String {
        format!("the macvlan of {key}")
    }

    fn rdma(&self) -> (&[String], bool) {
        (&self.rdma_devices, false)
    }

    /// A macvlan lives and dies with its pod's namespace; it is never elsewhere.
    fn held_outside_host(&self, _node: &mut Node, _key: &AttachmentKey) -> bool {
        false
    }

    fn plug_in(
        &self,
        node: &mut Node,
        pod: &mut RouteSocket,
        plan: &Plan<'_>,
    ) -> Result<Link, CniError> {
        let created = create(
            &mut node.host,
            &plan.pod_ns,
            pod,
            &self.master,
            &plan.key,
            plan.config.conf.mtu,
            plan.mac,
        )
        .map_err(|e| match e {
            PlugError::NameTaken(_) => {
                CniError::new(ErrorCode::InvalidEnvironment, format!("CNI_IFNAME: {e}"))
            }
            PlugError::NoMaster(_) => CniError::new(ErrorCode::Device, e.to_string()),
            PlugError::Netlink(n) => CniError::new(
                ErrorCode::Kernel,
                format!(
                    "cannot create the macvlan on {}: {}",
                    self.master,
                    chain(&n)
                ),
            ),
        })?;
        bring_up(pod, plan, &created)
    }

    /// Deletes the macvlan from the pod; a dead pod's died with its namespace.
    fn release(
        &self,
        _node: &mut Node,
        key: &AttachmentKey,
        pod: Option<PodSide<'_>>,
    ) -> Vec<StepError> {
        match pod.map(|p| delete(p.socket, key)) {
            Some(Err(e)) => vec![StepError::kernel("delete the macvlan", &e)],
            _ => Vec::new(),
        }
    }
}

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
