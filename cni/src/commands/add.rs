//! ADD: validate everything, record the intent, plug the device in, address it, answer.
//!
//! Two fronts prepare the attachment (a VF moved in, or a macvlan created on the PF); one
//! tail addresses it, routes it, finds its RoCE GID and builds the result. Any failure after
//! the intent is recorded is undone by the same teardown DEL uses.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use hostnet::netlink::{Link, RouteSocket, VfSettings};
use hostnet::netns::NetNs;
use hostnet::rdma::NetnsMode;
use hostnet::sriov::{Driver, PciAddress, VirtualFunction, is_valid_ifname};
use serde_json::Value;
use spinel_node::roce::{RoceInfo, resolve_gid};
use spinel_wire::MacAddr;

use crate::announce::{self, Announcer};
use crate::config::{AttachMode, Config, GidPolicy};
use crate::device;
use crate::ipam::{Ipam, Pending, Target};
use crate::ipconfig;
use crate::journal::{
    AttachmentKey, AttachmentRecord, DeviceRecord, Lock, MacvlanRecord, Phase, SCHEMA, VfRecord,
};
use crate::macvlan;
use crate::node::{Node, journal_error, pod_namespace};
use crate::pf::differences;
use crate::roce;
use crate::settings::Settings;
use crate::spec::env::Invocation;
use crate::spec::error::chain;
use crate::spec::result::{CniResult, Interface};
use crate::spec::{CniError, ErrorCode};
use crate::sysctls;
use crate::teardown::teardown;
use crate::vf::{self, AttachError, PodLinkSettings};
use hostnet::sriov::pf_control::PfControlError;

/// Dead attachments healed per ADD, to keep ADD's latency bounded.
const HEAL_PER_ADD: usize = 4;

/// Everything ADD validated before changing anything.
struct Plan<'a> {
    inv: &'a Invocation,
    config: &'a Config,
    pod_ns: NetNs,
    key: AttachmentKey,
    ipam: Option<Ipam>,
    mac: Option<MacAddr>,
    /// VF mode: the PF-side attributes to set.
    pf_settings: Option<VfSettings>,
}

/// Runs ADD and returns the result JSON.
pub fn run(inv: &Invocation, config: &Config, settings: Settings) -> Result<Value, CniError> {
    let conf = &config.conf;
    prev_result(config)?;
    let mac = conf.requested_mac(inv.args.get("MAC"))?;
    let netns_path = inv
        .netns
        .as_ref()
        .ok_or_else(|| CniError::new(ErrorCode::InvalidEnvironment, "CNI_NETNS: not set"))?;
    let pod_ns = NetNs::open(netns_path).map_err(|e| {
        CniError::caused(ErrorCode::InvalidEnvironment, format!("CNI_NETNS: {e}"), &e)
    })?;
    let request = match conf.mode {
        AttachMode::Vf => Some(device::requested(conf, &inv.args, &settings)?),
        AttachMode::Macvlan => None,
    };
    let mut node = Node::open(settings)?;
    if pod_ns.id() == node.host_ns.id() {
        return Err(CniError::new(
            ErrorCode::InvalidEnvironment,
            "CNI_NETNS: is the plugin's own network namespace",
        ));
    }
    let ipam = conf
        .ipam_type()
        .map(|k| Ipam::find(k, &inv.path, node.journal.dir()))
        .transpose()?;
    let key = AttachmentKey {
        container_id: inv.container_id.clone(),
        ifname: inv.ifname.clone(),
    };
    let mut plan = Plan {
        inv,
        config,
        pod_ns,
        key,
        ipam,
        mac,
        pf_settings: None,
    };
    let (record, _lock) = match request {
        Some(request) => prepare_vf(&mut node, &mut plan, &request)?,
        None => prepare_macvlan(&mut node, &plan)?,
    };
    record_and_attach(&mut node, &plan, record)
}

/// Records the intent, attaches, and either records the result or undoes everything.
fn record_and_attach(
    node: &mut Node,
    plan: &Plan<'_>,
    mut record: AttachmentRecord,
) -> Result<Value, CniError> {
    // Record first, claim second: a crash between the two leaves a record naming what to
    // clean, never a claim nobody will release.
    node.journal.save(&record).map_err(journal_error)?;
    if let DeviceRecord::Vf(v) = &record.device {
        node.journal
            .set_claim(&v.pci, &record.key)
            .map_err(journal_error)?;
    }
    let attached = attach(node, &record, plan).and_then(|result| {
        let json = result.to_json(plan.config.version());
        record.phase = Phase::Attached;
        record.result = Some(json.clone());
        node.journal.save(&record).map_err(journal_error)?;
        Ok(json)
    });
    match attached {
        Ok(json) => {
            tracing::info!(attachment = %record.key, "attached");
            heal_dead_attachments(node, &record, &plan.inv.path);
            Ok(json)
        }
        Err(err) => match teardown(node, &record, &plan.inv.path) {
            Ok(()) => Err(err),
            Err(rollback) => Err(err.with_detail(format!(
                "rollback incomplete, DEL or GC will finish it: {}",
                rollback.details
            ))),
        },
    }
}

/// VF mode: finds and checks the VF, takes its lock, clears the way, and describes the
/// original state of everything ADD will change.
fn prepare_vf(
    node: &mut Node,
    plan: &mut Plan<'_>,
    request: &device::DeviceRequest,
) -> Result<(AttachmentRecord, Lock), CniError> {
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
    let rdma_mode = rdma_mode(&rdma_devices, conf)?;
    let pf = host_link(node, &vf.pf.name, "PF")?;
    check_mtu(conf.mtu, &pf)?;

    let lock = node
        .journal
        .lock_vf(&vf.pci, node.settings.lock_timeout())
        .map_err(journal_error)?;
    make_room(node, &plan.key, Some(&vf), &plan.inv.path)?;
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
    plan.pf_settings = Some(conf.vf_attributes()?.settings(vf.index, admin_mac));
    let device = DeviceRecord::Vf(VfRecord {
        pci: vf.pci.clone(),
        pf: vf.pf.name.clone(),
        index: vf.index,
        host_name,
        host_mac: link.mac,
        host_mtu: link.mtu,
        host_alias: link.alias.clone(),
        host_up: link.up,
        pf_before: Some(pf_before),
        rdma_devices,
        rdma_exclusive: rdma_mode == Some(NetnsMode::Exclusive),
    });
    Ok((new_record(plan, device), lock))
}

/// macvlan mode: checks the PF and the shared RDMA device, takes the attachment's lock.
fn prepare_macvlan(node: &mut Node, plan: &Plan<'_>) -> Result<(AttachmentRecord, Lock), CniError> {
    let conf = &plan.config.conf;
    let master = conf.pf_name.clone().unwrap_or_default();
    let pf = host_link(node, &master, "PF")?;
    check_mtu(conf.mtu, &pf)?;
    let rdma_devices = match node.sysfs.pf(&master) {
        Ok(pf) => node.sysfs.rdma_devices_of(&pf.pci).unwrap_or_default(),
        // A PF without SR-IOV sysfs entries can still carry macvlans; it just has no RDMA here.
        Err(_) => Vec::new(),
    };
    rdma_mode(&rdma_devices, conf)?;
    let lock = node
        .journal
        .lock_attachment(&plan.key, node.settings.lock_timeout())
        .map_err(journal_error)?;
    make_room(node, &plan.key, None, &plan.inv.path)?;
    Ok((
        new_record(
            plan,
            DeviceRecord::Macvlan(MacvlanRecord {
                master,
                rdma_devices,
            }),
        ),
        lock,
    ))
}

fn new_record(plan: &Plan<'_>, device: DeviceRecord) -> AttachmentRecord {
    AttachmentRecord {
        schema: SCHEMA,
        key: plan.key.clone(),
        network: plan.config.conf.name.clone(),
        netns: plan.inv.netns.clone(),
        netns_id: Some(plan.pod_ns.id()),
        cni_args: plan.inv.raw_args.clone(),
        phase: Phase::Prepared,
        config: plan.config.raw.clone(),
        device,
        result: None,
    }
}

fn host_link(node: &mut Node, name: &str, what: &str) -> Result<Link, CniError> {
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

fn check_mtu(mtu: Option<u32>, pf: &Link) -> Result<(), CniError> {
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
fn rdma_mode(
    devices: &[String],
    conf: &crate::config::NetConf,
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
        roce::netns_mode(conf.rdma.netns_mode).map(Some)
    }
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

/// Clears what stands in the way of this ADD: an earlier, unfinished attempt at the same
/// attachment, or a dead attachment still holding the VF. A live holder means "try again".
fn make_room(
    node: &mut Node,
    key: &AttachmentKey,
    vf: Option<&VirtualFunction>,
    cni_path: &[PathBuf],
) -> Result<(), CniError> {
    if let Some(previous) = node.journal.load(key).map_err(journal_error)? {
        if previous.phase == Phase::Attached && pod_namespace(&previous).is_some() {
            return Err(CniError::new(
                ErrorCode::AlreadyAttached,
                format!("attachment {key} already exists; DEL it before adding it again"),
            ));
        }
        tracing::info!(attachment = %key, "finishing an earlier, interrupted attempt");
        // Its device may be another VF than this ADD's; that one needs its own lock.
        let same_lock = match (&previous.device, vf) {
            (DeviceRecord::Vf(p), Some(v)) => p.pci == v.pci,
            (DeviceRecord::Macvlan(_), None) => true,
            _ => false,
        };
        let _other = if same_lock {
            None
        } else {
            Some(
                node.journal
                    .lock_device(&previous, node.settings.lock_timeout())
                    .map_err(journal_error)?,
            )
        };
        teardown(node, &previous, cni_path)?;
    }
    let Some(vf) = vf else { return Ok(()) };
    if let Some(holder) = node.journal.claim(&vf.pci).map_err(journal_error)?
        && holder != *key
    {
        match node.journal.load(&holder).map_err(journal_error)? {
            Some(record) if pod_namespace(&record).is_some() => {
                return Err(CniError::new(
                    ErrorCode::TryAgainLater,
                    format!(
                        "VF {} is still attached to {holder}, whose pod namespace is alive; retry after its DEL",
                        vf.pci
                    ),
                ));
            }
            Some(record) => {
                tracing::info!(vf = %vf.pci, previous = %holder, "reclaiming VF from an attachment whose pod is gone");
                teardown(node, &record, cni_path)?;
            }
            // A claim without a record: its ADD died before changing anything.
            None => {}
        }
    }
    Ok(())
}

/// Plugs the device in and runs the shared tail.
fn attach(
    node: &mut Node,
    record: &AttachmentRecord,
    plan: &Plan<'_>,
) -> Result<CniResult, CniError> {
    let kernel = |what: &str, e: &dyn std::error::Error| {
        CniError::caused(ErrorCode::Kernel, what.to_owned(), e)
    };
    if let (DeviceRecord::Vf(v), Some(want)) = (&record.device, &plan.pf_settings) {
        set_vf_attributes(node, &v.pf, want)?;
    }
    let mut pod = RouteSocket::open_in(&plan.pod_ns)
        .map_err(|e| kernel("cannot open a socket in the pod namespace", &e))?;
    // The address is allocated while the device is plugged in: both mostly wait.
    let target = Target {
        container_id: &plan.key.container_id,
        ifname: &plan.key.ifname,
        netns: plan.inv.netns.as_deref(),
        cni_args: record.cni_args.as_deref(),
    };
    let allocation = plan
        .ipam
        .as_ref()
        .map(|i| i.start("ADD", &plan.config.raw, plan.config.version(), &target))
        .transpose()?;
    let plugged = match &record.device {
        DeviceRecord::Vf(v) => plug_in_vf(node, &mut pod, plan, v),
        DeviceRecord::Macvlan(m) => plug_in_macvlan(node, &mut pod, plan, m),
    };
    let link = match plugged {
        Ok(link) => link,
        Err(e) => {
            // Let the allocation finish so the rollback's IPAM DEL releases it.
            if let Some(pending) = allocation {
                let _ = pending.wait();
            }
            return Err(e);
        }
    };
    finish(node, &mut pod, &link, plan, record, allocation)
}

/// Moves the VF's RDMA devices (exclusive mode) and netdev in, sets its sysctls while it is
/// still down (so `arp_notify` is in force when it comes up), and brings it up.
fn plug_in_vf(
    node: &mut Node,
    pod: &mut RouteSocket,
    plan: &Plan<'_>,
    v: &VfRecord,
) -> Result<Link, CniError> {
    // RDMA devices first: one that cannot change namespace then fails ADD before the netdev
    // has moved (a device bound to its netdev, like rdma_rxe, would not survive the move).
    if v.rdma_exclusive {
        roce::move_devices(&v.rdma_devices, &plan.pod_ns)?;
    }
    let moved = vf::move_in(&mut node.host, &plan.pod_ns, pod, v, &plan.key.ifname).map_err(
        |e| match e {
            AttachError::NameTaken(_) => {
                CniError::new(ErrorCode::InvalidEnvironment, format!("CNI_IFNAME: {e}"))
            }
            AttachError::NotInHost { .. } => CniError::new(ErrorCode::Device, e.to_string()),
            AttachError::Netlink(n) => CniError::new(
                ErrorCode::Kernel,
                format!("cannot move VF {} into the pod: {}", v.pci, chain(&n)),
            ),
        },
    )?;
    bring_up(pod, plan, &moved)
}

/// Creates the macvlan inside the pod, sets its sysctls and brings it up.
fn plug_in_macvlan(
    node: &mut Node,
    pod: &mut RouteSocket,
    plan: &Plan<'_>,
    m: &MacvlanRecord,
) -> Result<Link, CniError> {
    let created = macvlan::create(
        &mut node.host,
        &plan.pod_ns,
        pod,
        &m.master,
        &plan.key,
        plan.config.conf.mtu,
        plan.mac,
    )
    .map_err(|e| match e {
        macvlan::PlugError::NameTaken(_) => {
            CniError::new(ErrorCode::InvalidEnvironment, format!("CNI_IFNAME: {e}"))
        }
        macvlan::PlugError::NoMaster(_) => CniError::new(ErrorCode::Device, e.to_string()),
        macvlan::PlugError::Netlink(n) => CniError::new(
            ErrorCode::Kernel,
            format!("cannot create the macvlan on {}: {}", m.master, chain(&n)),
        ),
    })?;
    bring_up(pod, plan, &created)
}

fn bring_up(pod: &mut RouteSocket, plan: &Plan<'_>, link: &Link) -> Result<Link, CniError> {
    sysctls::apply(&plan.pod_ns, &plan.key.ifname, &plan.config.conf.sysctls)?;
    let want = PodLinkSettings {
        ifname: &plan.key.ifname,
        mac: plan.mac,
        mtu: plan.config.conf.mtu,
    };
    vf::bring_up(pod, link, want).map_err(|e| {
        CniError::caused(
            ErrorCode::Kernel,
            format!("cannot bring {} up in the pod", plan.key.ifname),
            &e,
        )
    })
}

/// The shared tail: addresses, routes, policy routing, the RoCE GID, the result.
fn finish(
    node: &mut Node,
    pod: &mut RouteSocket,
    link: &Link,
    plan: &Plan<'_>,
    record: &AttachmentRecord,
    allocation: Option<Pending<'_>>,
) -> Result<CniResult, CniError> {
    let kernel = |what: &str, e: &dyn std::error::Error| {
        CniError::caused(ErrorCode::Kernel, what.to_owned(), e)
    };
    let config = plan.config;
    let mut result = prev_result(config)?;
    let index = result.interfaces.len();
    result.interfaces.push(Interface {
        name: link.name.clone(),
        mac: link.mac.map(|m| m.to_string()),
        mtu: Some(link.mtu),
        sandbox: plan.inv.netns.as_ref().map(|p| p.display().to_string()),
        pci_id: match &record.device {
            DeviceRecord::Vf(v) => Some(v.pci.to_string()),
            DeviceRecord::Macvlan(_) => None,
        },
        ..Interface::default()
    });
    if let Some(pending) = allocation {
        let mut assigned = pending.result()?;
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
        ipconfig::apply(pod, link.index, &assigned)
            .map_err(|e| kernel("cannot configure addresses and routes in the pod", &e))?;
        let garp = &config.conf.garp;
        let announcer = announcement(plan, record, link, &assigned).and_then(|a| {
            Announcer::open(&plan.pod_ns, a)
                .map_err(|e| tracing::warn!(ifname = %link.name, "cannot announce the pod's addresses: {e}"))
                .ok()
        });
        if let Some(announcer) = &announcer {
            // First round as soon as the link has carrier: frames sent before are lost.
            if !spinel_node::announce::wait_for_carrier(
                pod,
                link.index,
                Duration::from_millis(garp.carrier_timeout_ms),
            ) {
                tracing::warn!(ifname = %link.name, "no carrier after {} ms; announcing anyway", garp.carrier_timeout_ms);
            }
            announce_round(announcer);
        }
        if let Some(policy) = policy(config, &plan.key.ifname) {
            ipconfig::apply_policy(pod, link.index, &assigned, &policy).map_err(|e| {
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
        let (devices, exclusive) = record.device.rdma();
        if roce::wants_gid(&config.conf.rdma, devices)
            && let Some(ip) = assigned
                .ips
                .iter()
                .find(|ip| ip.address.addr().is_ipv4())
                .or(assigned.ips.first())
        {
            match find_roce(
                node,
                &plan.pod_ns,
                devices,
                exclusive,
                &plan.key.ifname,
                ip.address.addr(),
                config,
            ) {
                Ok(info) => {
                    roce::publish(&node.settings.roce_info_dir, &record.key, &info)?;
                    if let Some(iface) = result.interfaces.get_mut(index) {
                        iface.extra.insert("roce".into(), roce::result_value(&info));
                    }
                }
                Err(e) if config.conf.rdma.gid == GidPolicy::Required => return Err(e),
                Err(e) => tracing::warn!("{e}"),
            }
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
    let marker = match &record.device {
        DeviceRecord::Vf(v) => vf::marker(&v.pci),
        DeviceRecord::Macvlan(_) => macvlan::marker(&record.key),
    };
    Some(announce::Announcement {
        netns: plan.inv.netns.clone()?,
        netns_ino: plan.pod_ns.id().ino,
        ifname: link.name.clone(),
        marker,
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

/// Sets the VF's PF-side attributes and reads them back: a PF that did not take them fails the
/// ADD rather than handing the pod a VF that is not what was asked.
fn set_vf_attributes(node: &mut Node, pf: &str, want: &VfSettings) -> Result<(), CniError> {
    let access = node.settings.pf_control();
    access.apply(&mut node.host, pf, want).map_err(pf_error)?;
    let have = access
        .read(&mut node.host, pf, want.index)
        .map_err(pf_error)?;
    let differs = differences(want, &have);
    if differs.is_empty() {
        Ok(())
    } else {
        Err(CniError::new(
            ErrorCode::Device,
            format!(
                "PF {pf} did not apply VF {} attributes: {}",
                want.index,
                differs.join(", ")
            ),
        ))
    }
}

/// Maps PF access failures to CNI errors.
pub fn pf_error(e: PfControlError) -> CniError {
    let code = match e {
        PfControlError::Netlink(_) | PfControlError::Recording { .. } => ErrorCode::Kernel,
        PfControlError::NoPf(_) | PfControlError::NoVf { .. } => ErrorCode::Device,
    };
    CniError::caused(code, "cannot set VF attributes through the PF", &e)
}

/// The chain's result so far, which ours extends.
fn prev_result(config: &Config) -> Result<CniResult, CniError> {
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

/// Releases a few attachments whose pods died without a DEL (Multus sends GC only to the
/// default network, so a secondary network must clean up after itself). Best effort: busy
/// devices are skipped, failures are logged, the ADD's answer does not change.
fn heal_dead_attachments(node: &mut Node, current: &AttachmentRecord, cni_path: &[PathBuf]) {
    // Temporaries of writers killed before their first record landed name nothing to clean.
    node.journal.sweep_temporaries();
    let Ok(records) = node.journal.records() else {
        return;
    };
    let held: Option<&PciAddress> = match &current.device {
        DeviceRecord::Vf(v) => Some(&v.pci),
        DeviceRecord::Macvlan(_) => None,
    };
    let dead = records
        .into_iter()
        .filter(|r| r.key != current.key && pod_namespace(r).is_none())
        .take(HEAL_PER_ADD);
    for record in dead {
        // This ADD holds its own VF's lock already; any other device is only touched if free.
        let ours =
            matches!((&record.device, held), (DeviceRecord::Vf(v), Some(pci)) if v.pci == *pci);
        let _lock = if ours {
            None
        } else {
            match node.journal.lock_device(&record, Duration::ZERO) {
                Ok(lock) => Some(lock),
                Err(_) => continue,
            }
        };
        // Re-read under the lock: a DEL may have finished it meanwhile.
        let Ok(Some(fresh)) = node.journal.load(&record.key) else {
            continue;
        };
        match teardown(node, &fresh, cni_path) {
            Ok(()) => {
                tracing::info!(attachment = %fresh.key, "released an attachment whose pod is gone")
            }
            Err(e) => {
                tracing::warn!(attachment = %fresh.key, "could not release a dead attachment: {e}")
            }
        }
    }
}
