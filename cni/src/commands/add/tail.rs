//! ADD's shared tail, whatever the attachment kind: addresses, routes, policy routing,
//! announcements, the RoCE GID, the result.

use std::net::IpAddr;
use std::time::Duration;

use hostnet::netlink::{Link, RouteSocket};
use hostnet::netns::NetNs;
use hostnet::rdma::NetnsMode;
use spinel_node::attachment_record::{PodAttachment, Record};
use spinel_node::roce_info::{RoceInfo, resolve_gid};

use crate::announce::{self, Announcer};
use crate::attachment::Plan;
use crate::config::{Config, GidPolicy};
use crate::ipam::Pending;
use crate::journal::{AttachmentRecord, DeviceRecord};
use crate::node::Node;
use crate::spec::result::{CniResult, Interface};
use crate::spec::{CniError, ErrorCode};
use crate::{ipconfig, roce};

fn kernel(what: &str, e: &dyn std::error::Error) -> CniError {
    CniError::caused(ErrorCode::Kernel, what.to_owned(), e)
}

/// Addresses, routes and policy routing from the IPAM result, announcements, the RoCE GID,
/// and the result.
pub fn finish(
    node: &mut Node,
    pod: &mut RouteSocket,
    link: &Link,
    plan: &Plan<'_>,
    record: &AttachmentRecord,
    allocation: Option<Pending<'_>>,
) -> Result<CniResult, CniError> {
    let config = plan.config;
    let mut result = prev_result(config)?;
    let index = result.interfaces.len();
    result.interfaces.push(Interface {
        name: link.name.clone(),
        mac: link.mac.map(|m| m.to_string()),
        mtu: Some(link.mtu),
        sandbox: plan.inv.netns.as_ref().map(|p| p.display().to_string()),
        pci_id: record.device.kind().claimed_vf().map(ToString::to_string),
        ..Interface::default()
    });
    if let Some(pending) = allocation {
        let mut assigned = pending.result()?;
        tracing::debug!("IPAM answered");
        if assigned.ips.is_empty() {
            return Err(CniError::new(
                ErrorCode::Ipam,
                format!(
                    "IPAM plugin {} assigned no address",
                    config.conf.ipam_type().unwrap_or_default()
                ),
            ));
        }
        for ip in &mut assigned.ips {
            ip.interface = Some(index);
        }
        address(pod, link, plan, record, &assigned)?;
        tracing::debug!("addressed");
        let info = roce_details(node, plan, record, &assigned)?;
        if let Some(info) = &info
            && let Some(iface) = result.interfaces.get_mut(index)
        {
            iface.extra.insert("roce".into(), roce::result_value(info));
        }
        let published = Record {
            roce: info,
            attachment: attachment(plan, record, link, &assigned),
        };
        let dir = &node.settings.roce_info_dir;
        match roce::publish(dir, &record.key, &published) {
            Err(e) if published.roce.is_some() => return Err(e),
            // Without RoCE details only the agent's re-announcements miss it (a container ID
            // longer than a file name can be, an unwritable directory): not worth a failed ADD.
            Err(e) => tracing::warn!("{e}; the fabric agent will not re-announce this pod"),
            Ok(()) => {}
        }
        result.ips.extend(assigned.ips);
        result.routes.extend(assigned.routes);
        result.dns = assigned.dns;
    }
    if let Some(dns) = &config.conf.dns {
        result.dns = dns.clone();
    }
    Ok(result)
}

/// Addresses and routes, then policy routing, with an announcement round as soon as the link
/// has carrier and another once the rules are in place.
fn address(
    pod: &mut RouteSocket,
    link: &Link,
    plan: &Plan<'_>,
    record: &AttachmentRecord,
    assigned: &CniResult,
) -> Result<(), CniError> {
    ipconfig::apply(pod, link.index, assigned)
        .map_err(|e| kernel("cannot configure addresses and routes in the pod", &e))?;
    let garp = &plan.config.conf.garp;
    let announcer = announcement(plan, record, link, assigned).and_then(|a| {
        Announcer::open(&plan.pod_ns, a)
            .map_err(
                |e| tracing::warn!(ifname = %link.name, "cannot announce the pod's addresses: {e}"),
            )
            .ok()
    });
    if let Some(announcer) = &announcer {
        // First round as soon as the link has carrier: frames sent before are lost.
        let carrier = Duration::from_millis(garp.carrier_timeout_ms);
        if !spinel_node::gratuitous::wait_for_carrier(pod, link.index, carrier) {
            tracing::warn!(ifname = %link.name, "no carrier after {} ms; announcing anyway", garp.carrier_timeout_ms);
        }
        announce_round(announcer);
    }
    if let Some(policy) = policy(plan.config, &plan.key.ifname) {
        ipconfig::apply_policy(pod, link.index, assigned, &policy).map_err(|e| {
            kernel(
                "cannot install the interface's policy routing in the pod",
                &e,
            )
        })?;
    }
    if let Some(announcer) = announcer {
        // Again now that the routes and rules replies will follow are in place; the later
        // rounds (and the socket's costly close) go to the detached helper.
        announce_round(&announcer);
        if garp.count > 1
            && let Err(e) =
                announcer.hand_over(garp.count - 1, Duration::from_millis(garp.interval_ms))
        {
            tracing::warn!("cannot start the announcement helper: {e}");
        }
    }
    Ok(())
}

/// The RoCE v2 GID of the pod's address (IPv4 first); `None` when there is no RDMA device, the
/// policy is off, or an optional GID did not appear.
fn roce_details(
    node: &Node,
    plan: &Plan<'_>,
    record: &AttachmentRecord,
    assigned: &CniResult,
) -> Result<Option<RoceInfo>, CniError> {
    let rdma = &plan.config.conf.rdma;
    let (devices, exclusive) = record.device.kind().rdma();
    let Some(ip) = assigned
        .ips
        .iter()
        .find(|ip| ip.address.addr().is_ipv4())
        .or(assigned.ips.first())
    else {
        return Ok(None);
    };
    if !roce::wants_gid(rdma, devices) {
        return Ok(None);
    }
    let addr = ip.address.addr();
    match find_roce(
        node,
        &plan.pod_ns,
        devices,
        exclusive,
        &plan.key.ifname,
        addr,
        plan.config,
    ) {
        Ok(info) => Ok(Some(info)),
        Err(e) if rdma.gid == GidPolicy::Required => Err(e),
        Err(e) => {
            tracing::warn!("{e}");
            Ok(None)
        }
    }
}

/// Where the attachment is, for the fabric agent's re-announcements after a leaf lost its
/// entries; `None` without a MAC or an address.
fn attachment(
    plan: &Plan<'_>,
    record: &AttachmentRecord,
    link: &Link,
    assigned: &CniResult,
) -> Option<PodAttachment> {
    let (pf, vf_pci) = match &record.device {
        DeviceRecord::Vf(vf) => (vf.pf.clone(), Some(vf.pci.to_string())),
        DeviceRecord::Macvlan(m) => (m.master.clone(), None),
    };
    Some(PodAttachment {
        netns: plan.inv.netns.clone()?,
        netns_id: plan.pod_id,
        ifname: link.name.clone(),
        mac: link.mac?,
        addresses: assigned.ips.iter().map(|ip| ip.address).collect(),
        pf,
        vf_pci,
    })
    .filter(|a| !a.addresses.is_empty())
}

/// What to announce for this attachment, unless announcing is off or there is nothing to say.
fn announcement(
    plan: &Plan<'_>,
    record: &AttachmentRecord,
    link: &Link,
    assigned: &CniResult,
) -> Option<announce::Announcement> {
    let mac = link.mac?;
    if plan.config.conf.garp.count == 0 || assigned.ips.is_empty() {
        return None;
    }
    Some(announce::Announcement {
        netns: plan.inv.netns.clone()?,
        netns_ino: plan.pod_ns.id().ino,
        ifname: link.name.clone(),
        marker: record.device.kind().marker(&record.key),
        mac,
        addresses: assigned.ips.iter().map(|ip| ip.address.addr()).collect(),
    })
}

/// Announcing is best effort: a lost round must not fail an otherwise good ADD.
fn announce_round(announcer: &Announcer) {
    match announcer.round() {
        Ok(n) => tracing::debug!(frames = n, "announced"),
        Err(e) => tracing::warn!("cannot announce the pod's addresses: {e}"),
    }
}

/// The RoCE v2 GID of the pod's address: read from the host's sysfs in shared mode, and from a
/// sysfs mounted inside the pod's namespace in exclusive mode (the device is only visible
/// there).
fn find_roce(
    node: &Node,
    pod_ns: &NetNs,
    devices: &[String],
    exclusive: bool,
    ifname: &str,
    addr: IpAddr,
    config: &Config,
) -> Result<RoceInfo, CniError> {
    let timeout = Duration::from_millis(config.conf.rdma.gid_timeout_ms);
    let found = if exclusive {
        pod_ns
            .with_sysfs(|root| resolve_gid(root, devices, ifname, addr, timeout))
            .map_err(|e| CniError::caused(ErrorCode::Kernel, "cannot read the pod's sysfs", &e))?
    } else {
        resolve_gid(&node.settings.sysfs_root, devices, ifname, addr, timeout)
    }
    .map_err(roce::gid_error)?;
    let mode = if exclusive {
        NetnsMode::Exclusive
    } else {
        NetnsMode::Shared
    };
    Ok(RoceInfo::from_gid(ifname, addr, found, Some(mode)))
}

/// The interface's policy routing, unless turned off.
pub fn policy(config: &Config, ifname: &str) -> Option<ipconfig::Policy> {
    let routing = &config.conf.routing;
    routing.enabled.then(|| ipconfig::Policy {
        table: routing
            .table
            .unwrap_or_else(|| crate::config::table_for(ifname)),
        priority: routing.rule_priority,
        default_route: routing.default_route,
    })
}

/// The chain's result so far, which ours extends.
pub fn prev_result(config: &Config) -> Result<CniResult, CniError> {
    match &config.conf.prev_result {
        Some(prev) => CniResult::from_json(prev).map_err(|e| {
            CniError::new(
                ErrorCode::Decode,
                format!("prevResult does not decode: {e}"),
            )
        }),
        None => Ok(CniResult::default()),
    }
}
