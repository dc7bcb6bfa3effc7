//! The VF kind: an SR-IOV VF whose netdev (and, in exclusive mode, RDMA devices) moves into the
//! pod, with its PF-side attributes set on every ADD and restored on DEL.

use std::time::Duration;

use hostnet::netlink::{Link, RouteSocket, VfSettings};
use hostnet::rdma::NetnsMode;
use hostnet::sriov::pf_control::{PfControlError, VfAttribute};
use hostnet::sriov::{Driver, PciAddress, VirtualFunction};

use super::vf_netdev::{self, AttachError};
use super::{Attachment, ClearTheWay, Plan, PodSide, bring_up, check_mtu, host_link, rdma_mode};
use crate::device::{self, DeviceRequest};
use crate::journal::{AttachmentKey, DeviceRecord, Journal, JournalError, Lock, VfRecord};
use crate::node::Node;
use crate::pf::differences;
use crate::roce;
use crate::spec::error::chain;
use crate::spec::{CniError, ErrorCode};
use crate::step::StepError;

/// Finds and checks the VF, takes its lock, clears the way, and records its original state
/// and the PF-side attributes ADD will set.
pub fn prepare(
    node: &mut Node,
    plan: &Plan<'_>,
    request: &DeviceRequest,
    clear: ClearTheWay<'_>,
) -> Result<(DeviceRecord, Lock), CniError> {
    let conf = &plan.config.conf;
    let vf = device::lookup(request, &node.sysfs)?;
    check_usable(&vf)?;
    // The VF's RDMA devices (sysfs, else the device-info file) and the node's RDMA namespace
    // mode, checked against what the network needs before anything changes.
    let rdma_devices = if vf.rdma_devices.is_empty() {
        request.rdma_devices.clone()
    } else {
        vf.rdma_devices.clone()
    };
    let rdma_mode = rdma_mode(&rdma_devices, plan.config)?;
    let pf = host_link(node, &vf.pf.name, "PF")?;
    check_mtu(conf.mtu, &pf)?;

    let lock = node
        .journal
        .lock_vf(&vf.pci, node.settings.lock_timeout())
        .map_err(crate::node::journal_error)?;
    clear(node, Some(&vf.pci), &lock)?;
    let host_name = vf.netdevs.first().cloned().ok_or_else(|| {
        CniError::new(
            ErrorCode::Device,
            format!(
                "VF {} has no network interface in the host namespace; is it still in another pod?",
                vf.pci
            ),
        )
    })?;
    let link = host_link(node, &host_name, &format!("VF {}", vf.pci))?;
    // Every PF-side attribute is set on every ADD (defaults for what the configuration leaves
    // out), so nothing a pod whose DEL never ran left on the VF reaches the next one.
    let pf_before = node
        .settings
        .pf_control()
        .read(&mut node.host, &vf.pf.name, vf.index)
        .map_err(pf_error)?;
    let admin_mac = plan.mac.or(link.mac).unwrap_or(pf_before.mac);
    let pf_wanted = conf.vf_attributes()?.for_vf(vf.index, admin_mac);
    let record = VfRecord {
        pci: vf.pci.clone(),
        pf: vf.pf.name.clone(),
        index: vf.index,
        host_name,
        host_mac: link.mac,
        host_mtu: link.mtu,
        host_alias: link.alias.clone(),
        host_up: link.up,
        pf_before: Some(pf_before),
        pf_wanted: Some(pf_wanted),
        rdma_devices,
        rdma_exclusive: rdma_mode == Some(NetnsMode::Exclusive),
    };
    Ok((DeviceRecord::Vf(record), lock))
}

/// Refuses VFs a kernel netdev cannot be moved for.
fn check_usable(vf: &VirtualFunction) -> Result<(), CniError> {
    match &vf.driver {
        Driver::Kernel(_) => Ok(()),
        Driver::Userspace(d) => Err(CniError::new(
            ErrorCode::Device,
            format!(
                "VF {} is bound to the userspace driver {d}; spinel attaches VFs with a kernel network driver",
                vf.pci
            ),
        )),
        Driver::Unbound => Err(CniError::new(
            ErrorCode::Device,
            format!("VF {} is not bound to any driver", vf.pci),
        )),
    }
}

/// Sets the VF's PF-side attributes and reads them back: a PF that refuses one or does not
/// apply it fails the ADD rather than handing the pod a VF that is not what was asked.
fn set_attributes(node: &mut Node, vf: &VfRecord, want: &VfSettings) -> Result<(), CniError> {
    let control = node.settings.pf_control();
    control
        .apply(&mut node.host, &vf.pf, want)
        .map_err(|e| refused(node, vf, e))?;
    let have = control
        .read(&mut node.host, &vf.pf, want.index)
        .map_err(pf_error)?;
    let differs = differences(want, &have);
    if differs.is_empty() {
        Ok(())
    } else {
        Err(CniError::new(
            ErrorCode::Device,
            format!(
                "{} did not apply VF {} attributes: {}",
                pf_driver(node, vf),
                want.index,
                differs.join(", ")
            ),
        ))
    }
}

/// The PF with its driver, for messages (`PF eth0 (driver igb)`).
fn pf_driver(node: &Node, vf: &VfRecord) -> String {
    let driver = node
        .sysfs
        .vf(&vf.pci)
        .ok()
        .and_then(|v| node.sysfs.driver_of(&v.pf.pci).ok());
    match driver {
        Some(Driver::Kernel(d) | Driver::Userspace(d)) => format!("PF {} (driver {d})", vf.pf),
        _ => format!("PF {}", vf.pf),
    }
}

/// An attribute the PF's driver does not implement, or a value it does not take, is the
/// device's answer (100): this NIC cannot give the network what it asks. Anything else the
/// kernel answered is a kernel failure (101).
fn refused(node: &Node, vf: &VfRecord, e: PfControlError) -> CniError {
    let PfControlError::Refused { refusals, .. } = &e else {
        return pf_error(e);
    };
    let code = if refusals.iter().all(|r| r.is_permanent()) {
        ErrorCode::Device
    } else {
        ErrorCode::Kernel
    };
    let names: Vec<String> = refusals.iter().map(|r| config_name(r.attribute)).collect();
    CniError::new(
        code,
        format!(
            "{} refuses VF {} {}: leave {} at the default or use a NIC that supports it",
            pf_driver(node, vf),
            vf.index,
            names.join(", "),
            names.join(", ")
        ),
    )
    .with_detail(chain(&e))
}

/// The configuration's key(s) for an attribute.
fn config_name(attribute: VfAttribute) -> String {
    match attribute {
        VfAttribute::Mac => "mac".into(),
        VfAttribute::Vlan => "vlan/vlanQoS/vlanProto".into(),
        VfAttribute::Rate => "minTxRate/maxTxRate".into(),
        a => a.name().into(),
    }
}

/// Maps PF access failures to CNI errors.
fn pf_error(e: PfControlError) -> CniError {
    let code = match e {
        PfControlError::Netlink(_)
        | PfControlError::Recording { .. }
        | PfControlError::Refused { .. } => ErrorCode::Kernel,
        PfControlError::NoPf(_) | PfControlError::NoVf { .. } => ErrorCode::Device,
    };
    CniError::caused(code, "cannot set VF attributes through the PF", &e)
}

/// Puts the VF's PF-side attributes back as ADD found them. A driver's permanent refusal is
/// logged, not failed on: retrying cannot change its answer, and a DEL that can never succeed
/// would keep the pod in Terminating; the next ADD sets and reads back every attribute anyway.
fn restore_attributes(node: &mut Node, vf: &VfRecord, key: &AttachmentKey) -> Option<StepError> {
    let before = vf.pf_before.as_ref()?;
    let what = format!("restore VF {} attributes on PF {}", vf.pci, vf.pf);
    match node
        .settings
        .pf_control()
        .apply(&mut node.host, &vf.pf, before)
    {
        Ok(_) => None,
        Err(PfControlError::Refused { refusals, .. })
            if refusals.iter().all(|r| r.is_permanent()) =>
        {
            for r in &refusals {
                tracing::warn!(attachment = %key, "{what}: the PF refuses {}: {}", r.attribute, r.error);
            }
            None
        }
        Err(e @ (PfControlError::NoPf(_) | PfControlError::NoVf { .. })) => {
            Some(StepError::Device(format!("{what}: {e}")))
        }
        Err(e) => Some(StepError::kernel(what, &e)),
    }
}

impl Attachment for VfRecord {
    fn lock(
        &self,
        journal: &Journal,
        _key: &AttachmentKey,
        timeout: Duration,
    ) -> Result<Lock, JournalError> {
        journal.lock_vf(&self.pci, timeout)
    }

    fn claimed_vf(&self) -> Option<&PciAddress> {
        Some(&self.pci)
    }

    fn marker(&self, _key: &AttachmentKey) -> String {
        vf_netdev::marker(&self.pci)
    }

    fn describe(&self, _key: &AttachmentKey) -> String {
        format!("VF {}", self.pci)
    }

    fn rdma(&self) -> (&[String], bool) {
        (&self.rdma_devices, self.rdma_exclusive)
    }

    /// A VF whose netdev is not in the host namespace (and that still exists) is in some
    /// pod's namespace: only the kernel returns it, when that namespace dies. It is this
    /// attachment's pod only while no other attachment has claimed the VF since.
    fn held_outside_host(&self, node: &mut Node, key: &AttachmentKey) -> bool {
        if node
            .journal
            .claim(&self.pci)
            .is_ok_and(|holder| holder.is_some_and(|h| h != *key))
        {
            return false;
        }
        let Ok(vf) = node.sysfs.vf(&self.pci) else {
            return false;
        };
        let mark = vf_netdev::marker(&self.pci);
        let in_host = node.host.links().is_ok_and(|links| {
            links
                .iter()
                .any(|l| l.alias.as_deref() == Some(mark.as_str()) || vf.netdevs.contains(&l.name))
        });
        !in_host
    }

    /// Sets the PF-side attributes, moves the RDMA devices (exclusive mode) and the netdev in,
    /// and brings it up.
    fn plug_in(
        &self,
        node: &mut Node,
        pod: &mut RouteSocket,
        plan: &Plan<'_>,
    ) -> Result<Link, CniError> {
        // The pod's MAC goes on the netdev while it is still ours in the host, before the PF
        // pins it as the VF's administrative MAC: drivers such as igb refuse an untrusted VF's
        // own MAC change once the PF has set one, even to the same address.
        if let Some(mac) = plan.mac {
            vf_netdev::set_host_mac(&mut node.host, self, mac).map_err(|e| {
                CniError::caused(
                    ErrorCode::Kernel,
                    format!("cannot set the MAC of VF {}", self.pci),
                    &e,
                )
            })?;
        }
        if let Some(want) = &self.pf_wanted {
            set_attributes(node, self, want)?;
            tracing::debug!("PF-side attributes set");
        }
        // RDMA devices first: one that cannot change namespace then fails ADD before the
        // netdev has moved (a device bound to its netdev, like rdma_rxe, would not survive).
        if self.rdma_exclusive {
            roce::move_devices(&self.rdma_devices, &plan.pod_ns)?;
        }
        let moved =
            vf_netdev::move_in(&mut node.host, &plan.pod_ns, pod, self).map_err(|e| match e {
                AttachError::NameTaken(_) => {
                    CniError::new(ErrorCode::InvalidEnvironment, format!("CNI_IFNAME: {e}"))
                }
                AttachError::NotInHost { .. } => CniError::new(ErrorCode::Device, e.to_string()),
                AttachError::Netlink(n) => CniError::new(
                    ErrorCode::Kernel,
                    format!("cannot move VF {} into the pod: {}", self.pci, chain(&n)),
                ),
            })?;
        bring_up(pod, plan, &moved)
    }

    /// The PF-side attributes ADD set, compared with what the PF reports now.
    fn drift(&self, node: &mut Node) -> Vec<String> {
        let Some(want) = &self.pf_wanted else {
            return Vec::new();
        };
        match node
            .settings
            .pf_control()
            .read(&mut node.host, &self.pf, self.index)
        {
            Ok(have) => differences(want, &have)
                .into_iter()
                .map(|d| format!("VF {} attribute {d}", self.pci))
                .collect(),
            Err(e) => vec![format!("cannot read VF {} attributes: {e}", self.pci)],
        }
    }

    /// Gives the VF back: its RDMA devices (exclusive mode), its netdev, its PF-side
    /// attributes. A VF another attachment holds now is left alone.
    fn release(
        &self,
        node: &mut Node,
        key: &AttachmentKey,
        pod: Option<PodSide<'_>>,
    ) -> Vec<StepError> {
        let mut errors = Vec::new();
        match node.journal.claim(&self.pci) {
            Err(e) => return vec![StepError::journal(&e)],
            Ok(Some(holder)) if holder != *key => {
                tracing::info!(attachment = %key, vf = %self.pci, "VF held by another attachment; leaving it");
                return errors;
            }
            Ok(_) => {}
        }
        let (pod_ns, pod_socket) = match pod {
            Some(p) => (Some(p.ns), Some(p.socket)),
            None => (None, None),
        };
        // The RDMA devices go home first; a dead pod's are returned by the kernel.
        if self.rdma_exclusive
            && let Some(ns) = pod_ns
            && let Err(e) = roce::return_devices(&self.rdma_devices, ns, &node.host_ns)
        {
            errors.push(e);
        }
        // Home first (the move closes the link, so the pod's VLAN and spoof check stay in force
        // until it is down), then the PF-side attributes (which releases an administrative
        // MAC the driver would otherwise hold the VF's own MAC to), then the netdev itself.
        let home = vf_netdev::bring_home(
            &node.host_ns,
            &mut node.host,
            pod_socket,
            self,
            &key.ifname,
            &node.sysfs,
        );
        errors.extend(restore_attributes(node, self, key));
        match home.and_then(|home| vf_netdev::restore_host(&mut node.host, self, home)) {
            Ok(done) => done
                .warnings
                .iter()
                .for_each(|w| tracing::warn!(attachment = %key, "{w}")),
            Err(e) => errors.push(StepError::kernel(
                format!("give VF {} back to the host", self.pci),
                &e,
            )),
        }
        errors
    }
}
