//! ADD: validate everything, record the intent, move the VF in, address it, answer.

use hostnet::netlink::{RouteSocket, VfSettings};
use hostnet::netns::NetNs;
use hostnet::sriov::{Driver, PciAddress, VirtualFunction};
use serde_json::Value;
use std::path::PathBuf;

use crate::config::Config;
use crate::device;
use crate::ipam::{Ipam, Target};
use crate::ipconfig;
use crate::journal::{AttachmentKey, AttachmentRecord, DeviceRecord, Phase, SCHEMA, VfRecord};
use crate::node::{Node, journal_error, pod_namespace};
use crate::pf::{PfError, differences};
use crate::settings::Settings;
use crate::spec::env::Invocation;
use crate::spec::error::chain;
use crate::spec::result::{CniResult, Interface};
use crate::spec::{CniError, ErrorCode};
use crate::sysctls;
use crate::teardown::teardown;
use crate::vf::{self, AttachError, PodLinkSettings};

/// Dead attachments of other VFs healed per ADD, to keep ADD's latency bounded.
const HEAL_PER_ADD: usize = 4;

/// Runs ADD and returns the result JSON.
pub fn run(inv: &Invocation, config: &Config, settings: Settings) -> Result<Value, CniError> {
    let conf = &config.conf;
    let version = config.version();
    let request = device::requested(conf, &inv.args, &settings)?;
    prev_result(config)?;
    let mac = conf.requested_mac(inv.args.get("MAC"))?;
    let netns_path = inv
        .netns
        .as_ref()
        .ok_or_else(|| CniError::new(ErrorCode::InvalidEnvironment, "CNI_NETNS: not set"))?;
    let pod_ns = NetNs::open(netns_path).map_err(|e| {
        CniError::caused(ErrorCode::InvalidEnvironment, format!("CNI_NETNS: {e}"), &e)
    })?;

    let mut node = Node::open(settings)?;
    if pod_ns.id() == node.host_ns.id() {
        return Err(CniError::new(
            ErrorCode::InvalidEnvironment,
            "CNI_NETNS: is the plugin's own network namespace",
        ));
    }
    let vf = device::lookup(&request, &node.sysfs)?;
    check_usable(&vf)?;
    let pf = node
        .host
        .link_by_name(&vf.pf.name)
        .map_err(|e| {
            CniError::caused(
                ErrorCode::Kernel,
                format!("cannot read PF {}", vf.pf.name),
                &e,
            )
        })?
        .ok_or_else(|| {
            CniError::new(
                ErrorCode::Device,
                format!(
                    "PF {} has no network interface in the host namespace",
                    vf.pf.name
                ),
            )
        })?;
    if let Some(mtu) = conf.mtu
        && mtu > pf.mtu
    {
        return Err(CniError::new(
            ErrorCode::InvalidConfig,
            format!(
                "mtu: {mtu} exceeds the MTU of PF {} ({}); a VF cannot exceed its PF",
                pf.name, pf.mtu
            ),
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
    let _lock = node
        .journal
        .lock_vf(&vf.pci, node.settings.lock_timeout())
        .map_err(journal_error)?;
    make_room(&mut node, &key, &vf, &inv.path)?;

    let host_name = vf.netdevs.first().cloned().ok_or_else(|| {
        CniError::new(
            ErrorCode::Device,
            format!(
                "VF {} has no network interface in the host namespace; is it still in another pod?",
                vf.pci
            ),
        )
    })?;
    let link = node
        .host
        .link_by_name(&host_name)
        .map_err(|e| {
            CniError::caused(
                ErrorCode::Kernel,
                format!("cannot read VF interface {host_name}"),
                &e,
            )
        })?
        .ok_or_else(|| {
            CniError::new(
                ErrorCode::Device,
                format!(
                    "VF {}: interface {host_name} not found in the host namespace",
                    vf.pci
                ),
            )
        })?;
    // Every PF-side attribute is set on every ADD (defaults for what the configuration leaves
    // out), so nothing a pod whose DEL never ran left on the VF reaches the next one.
    let pf_access = node.settings.pf_access();
    let pf_before = pf_access
        .read(&mut node.host, &vf.pf.name, vf.index)
        .map_err(pf_error)?;
    let admin_mac = mac.or(link.mac).unwrap_or(pf_before.mac);
    let pf_settings = conf.vf_attributes()?.settings(vf.index, admin_mac);
    let mut record = AttachmentRecord {
        schema: SCHEMA,
        key: key.clone(),
        network: conf.name.clone(),
        netns: Some(netns_path.clone()),
        netns_id: Some(pod_ns.id()),
        cni_args: inv.raw_args.clone(),
        phase: Phase::Prepared,
        config: config.raw.clone(),
        device: DeviceRecord::Vf(VfRecord {
            pci: vf.pci.clone(),
            pf: vf.pf.name.clone(),
            index: vf.index,
            host_name,
            host_mac: link.mac,
            host_mtu: link.mtu,
            host_alias: link.alias.clone(),
            host_up: link.up,
            pf_before: Some(pf_before),
        }),
        result: None,
    };
    // Record first, claim second: a crash between the two leaves a record naming what to
    // clean, never a claim nobody will release.
    node.journal.save(&record).map_err(journal_error)?;
    node.journal
        .set_claim(&vf.pci, &key)
        .map_err(journal_error)?;

    let plan = Plan {
        pod_ns: &pod_ns,
        inv,
        config,
        ipam: ipam.as_ref(),
        mac,
        pf_settings: &pf_settings,
    };
    let attached = attach(&mut node, &record, &plan).and_then(|result| {
        let json = result.to_json(version);
        record.phase = Phase::Attached;
        record.result = Some(json.clone());
        node.journal.save(&record).map_err(journal_error)?;
        Ok(json)
    });
    match attached {
        Ok(json) => {
            tracing::info!(attachment = %key, vf = %vf.pci, "attached");
            heal_dead_attachments(&mut node, &key, &vf.pci, &inv.path);
            Ok(json)
        }
        Err(err) => match teardown(&mut node, &record, &inv.path) {
            Ok(()) => Err(err),
            Err(rollback) => Err(err.with_detail(format!(
                "rollback incomplete, DEL or GC will finish it: {}",
                rollback.details
            ))),
        },
    }
}

/// Sets the VF's PF-side attributes and reads them back: a PF that did not take them fails the
/// ADD rather than handing the pod a VF that is not what was asked.
fn set_vf_attributes(node: &mut Node, pf: &str, want: &VfSettings) -> Result<(), CniError> {
    let access = node.settings.pf_access();
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
pub fn pf_error(e: PfError) -> CniError {
    let code = match e {
        PfError::Netlink(_) | PfError::Recording { .. } => ErrorCode::Kernel,
        PfError::NoPf(_) | PfError::NoVf { .. } => ErrorCode::Device,
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
    vf: &VirtualFunction,
    cni_path: &[std::path::PathBuf],
) -> Result<(), CniError> {
    if let Some(previous) = node.journal.load(key).map_err(journal_error)? {
        if previous.phase == Phase::Attached && pod_namespace(&previous).is_some() {
            return Err(CniError::new(
                ErrorCode::AlreadyAttached,
                format!("attachment {key} already exists; DEL it before adding it again"),
            ));
        }
        tracing::info!(attachment = %key, "finishing an earlier, interrupted attempt");
        let DeviceRecord::Vf(previous_vf) = &previous.device;
        if previous_vf.pci == vf.pci {
            teardown(node, &previous, cni_path)?;
        } else {
            let _other = node
                .journal
                .lock_vf(&previous_vf.pci, node.settings.lock_timeout())
                .map_err(journal_error)?;
            teardown(node, &previous, cni_path)?;
        }
    }
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

/// What ADD decided, handed to the steps that change the system.
struct Plan<'a> {
    pod_ns: &'a NetNs,
    inv: &'a Invocation,
    config: &'a Config,
    ipam: Option<&'a Ipam>,
    mac: Option<hostnet::mac::MacAddr>,
    pf_settings: &'a VfSettings,
}

fn attach(
    node: &mut Node,
    record: &AttachmentRecord,
    plan: &Plan<'_>,
) -> Result<CniResult, CniError> {
    let Plan {
        pod_ns,
        inv,
        config,
        ipam,
        pf_settings,
        ..
    } = *plan;
    let DeviceRecord::Vf(vf_record) = &record.device;
    set_vf_attributes(node, &vf_record.pf, pf_settings)?;
    let kernel = |what: &str, e: &dyn std::error::Error| {
        CniError::caused(ErrorCode::Kernel, what.to_owned(), e)
    };
    let mut pod = RouteSocket::open_in(pod_ns)
        .map_err(|e| kernel("cannot open a socket in the pod namespace", &e))?;

    // The address is allocated while the kernel moves the VF: both mostly wait.
    let target = Target {
        container_id: &inv.container_id,
        ifname: &inv.ifname,
        netns: inv.netns.as_deref(),
        cni_args: record.cni_args.as_deref(),
    };
    let allocation = ipam
        .map(|i| i.start("ADD", &config.raw, config.version(), &target))
        .transpose()?;
    let link = match plug_in(node, &mut pod, plan, vf_record) {
        Ok(link) => link,
        Err(e) => {
            // Let the allocation finish so the rollback's IPAM DEL releases it.
            if let Some(pending) = allocation {
                let _ = pending.wait();
            }
            return Err(e);
        }
    };

    let mut result = prev_result(config)?;
    let index = result.interfaces.len();
    result.interfaces.push(Interface {
        name: link.name.clone(),
        mac: link.mac.map(|m| m.to_string()),
        mtu: Some(link.mtu),
        sandbox: inv.netns.as_ref().map(|p| p.display().to_string()),
        pci_id: Some(vf_record.pci.to_string()),
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
        ipconfig::apply(&mut pod, link.index, &assigned)
            .map_err(|e| kernel("cannot configure addresses and routes in the pod", &e))?;
        if let Some(policy) = policy(config, &inv.ifname) {
            ipconfig::apply_policy(&mut pod, link.index, &assigned, &policy).map_err(|e| {
                kernel(
                    "cannot install the interface's policy routing in the pod",
                    &e,
                )
            })?;
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

/// Moves the VF's netdev in, sets its sysctls while it is still down (so `arp_notify` is in
/// force when it comes up), and brings it up with the asked MAC and MTU.
fn plug_in(
    node: &mut Node,
    pod: &mut RouteSocket,
    plan: &Plan<'_>,
    vf_record: &crate::journal::VfRecord,
) -> Result<hostnet::netlink::Link, CniError> {
    let Plan {
        pod_ns,
        inv,
        config,
        mac,
        ..
    } = *plan;
    let moved =
        vf::move_in(&mut node.host, pod_ns, pod, vf_record, &inv.ifname).map_err(|e| match e {
            AttachError::NameTaken(_) => {
                CniError::new(ErrorCode::InvalidEnvironment, format!("CNI_IFNAME: {e}"))
            }
            AttachError::NotInHost { .. } => CniError::new(ErrorCode::Device, e.to_string()),
            AttachError::Netlink(n) => CniError::new(
                ErrorCode::Kernel,
                format!(
                    "cannot move VF {} into the pod: {}",
                    vf_record.pci,
                    chain(&n)
                ),
            ),
        })?;
    sysctls::apply(pod_ns, &inv.ifname, &config.conf.sysctls)?;
    let want = PodLinkSettings {
        ifname: &inv.ifname,
        mac,
        mtu: config.conf.mtu,
    };
    vf::bring_up(pod, &moved, want).map_err(|e| {
        CniError::caused(
            ErrorCode::Kernel,
            format!("cannot bring {} up in the pod", inv.ifname),
            &e,
        )
    })
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

/// Releases a few attachments whose pods died without a DEL (Multus sends GC only to the
/// default network, so a secondary network must clean up after itself). Best effort: busy VFs
/// are skipped, failures are logged, the ADD's answer does not change.
fn heal_dead_attachments(
    node: &mut Node,
    current: &AttachmentKey,
    held: &PciAddress,
    cni_path: &[PathBuf],
) {
    // Temporaries of writers killed before their first record landed name nothing to clean.
    node.journal.sweep_temporaries();
    let Ok(records) = node.journal.records() else {
        return;
    };
    let dead = records
        .into_iter()
        .filter(|r| r.key != *current && pod_namespace(r).is_none())
        .take(HEAL_PER_ADD);
    for record in dead {
        let DeviceRecord::Vf(v) = &record.device;
        // This ADD holds its own VF's lock already; any other VF is only touched if free.
        let _lock = if v.pci == *held {
            None
        } else {
            match node.journal.lock_vf(&v.pci, std::time::Duration::ZERO) {
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
