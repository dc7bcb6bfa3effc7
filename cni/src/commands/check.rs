//! CHECK: compares the pod interface with what ADD recorded, and says what drifted.

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;

use crate::config::Config;
use crate::ipam::Target;
use crate::ipconfig;
use crate::journal::{AttachmentKey, DeviceRecord, Phase};
use crate::node::{Node, journal_error};
use crate::settings::Settings;
use crate::spec::env::Invocation;
use crate::spec::result::CniResult;
use crate::spec::{CniError, ErrorCode};
use crate::sysctls;

/// Runs CHECK.
pub fn run(inv: &Invocation, config: &Config, settings: Settings) -> Result<(), CniError> {
    let mut node = Node::open(settings)?;
    let key = AttachmentKey {
        container_id: inv.container_id.clone(),
        ifname: inv.ifname.clone(),
    };
    let record = node
        .journal
        .load(&key)
        .map_err(journal_error)?
        .filter(|r| r.phase == Phase::Attached)
        .ok_or_else(|| {
            CniError::new(
                ErrorCode::UnknownContainer,
                format!("no attachment {key} is recorded"),
            )
        })?;
    let recorded = record
        .result
        .as_ref()
        .map(CniResult::from_json)
        .transpose()
        .map_err(|e| {
            CniError::new(
                ErrorCode::State,
                format!("recorded result of {key} does not decode: {e}"),
            )
        })?
        .unwrap_or_default();

    let netns = inv
        .netns
        .as_ref()
        .ok_or_else(|| CniError::new(ErrorCode::InvalidEnvironment, "CNI_NETNS: not set"))?;
    let pod_ns = NetNs::open(netns).map_err(|e| {
        CniError::caused(ErrorCode::InvalidEnvironment, format!("CNI_NETNS: {e}"), &e)
    })?;
    let mut drift = Vec::new();
    if !record.netns_id.is_some_and(|id| pod_ns.is(&id)) {
        drift.push(format!(
            "CNI_NETNS {} is not the namespace ADD used",
            netns.display()
        ));
    }
    let mut pod = RouteSocket::open_in(&pod_ns).map_err(|e| {
        CniError::caused(
            ErrorCode::Kernel,
            "cannot open a socket in the pod namespace",
            &e,
        )
    })?;
    let kernel = |e: hostnet::netlink::NetlinkError| {
        CniError::caused(ErrorCode::Kernel, "cannot read the pod's interfaces", &e)
    };
    let kind = record.device.kind();
    let (marker, what) = (kind.marker(&key), kind.describe(&key));
    let expected = recorded
        .interfaces
        .iter()
        .find(|i| i.name == inv.ifname && i.sandbox.is_some());
    match pod.link_by_name(&inv.ifname).map_err(kernel)? {
        None => drift.push(format!("interface {} is missing", inv.ifname)),
        Some(link) => {
            if link.alias.as_deref() != Some(marker.as_str()) {
                drift.push(format!("interface {} is not {what}", inv.ifname));
            }
            if !link.up {
                drift.push(format!("interface {} is down", inv.ifname));
            }
            if let Some(exp) = expected {
                let mac = link.mac.map(|m| m.to_string());
                if exp.mac.is_some() && exp.mac != mac {
                    drift.push(format!(
                        "MAC of {} is {:?}, expected {:?}",
                        inv.ifname,
                        mac.unwrap_or_default(),
                        exp.mac.clone().unwrap_or_default()
                    ));
                }
                if let Some(mtu) = exp.mtu
                    && mtu != link.mtu
                {
                    drift.push(format!(
                        "MTU of {} is {}, expected {mtu}",
                        inv.ifname, link.mtu
                    ));
                }
            }
            let mine = CniResult {
                ips: recorded
                    .ips
                    .iter()
                    .filter(|ip| ip_is_ours(&recorded, ip.interface, &inv.ifname))
                    .cloned()
                    .collect(),
                routes: recorded.routes.clone(),
                ..CniResult::default()
            };
            drift
                .extend(ipconfig::drift(&mut pod, link.index, &inv.ifname, &mine).map_err(kernel)?);
            drift.extend(sysctls::drift(&pod_ns, &inv.ifname, &config.conf.sysctls));
            if let Some(exp) = expected
                && let Some(roce) = exp.extra.get("roce")
            {
                drift.extend(gid_drift(&node, &pod_ns, &record.device, &inv.ifname, roce));
            }
            if let Some(policy) = crate::commands::add::policy(config, &inv.ifname) {
                drift.extend(
                    ipconfig::policy_drift(&mut pod, link.index, &mine, &policy).map_err(kernel)?,
                );
            }
        }
    }
    drift.extend(record.device.kind().drift(&mut node));
    if let Some(prev) = &config.conf.prev_result
        && let Ok(prev) = CniResult::from_json(prev)
        && !prev.interfaces.iter().any(|i| i.name == inv.ifname)
    {
        drift.push(format!("prevResult does not list interface {}", inv.ifname));
    }
    if !drift.is_empty() {
        return Err(CniError::new(
            ErrorCode::Drift,
            format!("attachment {key} drifted: {}", drift.join("; ")),
        ));
    }
    if let Some(kind) = config.conf.ipam_type() {
        let target = Target {
            container_id: &inv.container_id,
            ifname: &inv.ifname,
            netns: inv.netns.as_deref(),
            cni_args: inv.raw_args.as_deref(),
            held: None,
        };
        node.ipam(kind, &inv.path)?
            .check(&config.raw, config.version(), &target)?;
    }
    Ok(())
}

/// Whether the GID ADD published still maps the pod's address on its interface.
fn gid_drift(
    node: &Node,
    pod_ns: &NetNs,
    device: &DeviceRecord,
    ifname: &str,
    roce: &serde_json::Value,
) -> Vec<String> {
    let (Some(index), Some(addr)) = (
        roce.get("gidIndex").and_then(serde_json::Value::as_u64),
        node_address(roce),
    ) else {
        return vec!["the recorded RoCE details are incomplete".into()];
    };
    let (devices, exclusive) = device.kind().rdma();
    let zero = std::time::Duration::ZERO;
    let found = if exclusive {
        pod_ns
            .with_sysfs(|root| {
                spinel_node::roce_info::resolve_gid(root, devices, ifname, addr, zero)
            })
            .ok()
    } else {
        Some(spinel_node::roce_info::resolve_gid(
            &node.settings.sysfs_root,
            devices,
            ifname,
            addr,
            zero,
        ))
    };
    match found {
        Some(Ok(m)) if u64::from(m.index) == index => Vec::new(),
        Some(Ok(m)) => vec![format!(
            "RoCE v2 GID of {addr} moved from index {index} to {}",
            m.index
        )],
        _ => vec![format!("no RoCE v2 GID for {addr} on {ifname} any more")],
    }
}

fn node_address(roce: &serde_json::Value) -> Option<std::net::IpAddr> {
    let gid: std::net::Ipv6Addr = roce.get("gid")?.as_str()?.parse().ok()?;
    Some(
        gid.to_ipv4_mapped()
            .map(std::net::IpAddr::V4)
            .unwrap_or(std::net::IpAddr::V6(gid)),
    )
}

fn ip_is_ours(result: &CniResult, interface: Option<usize>, ifname: &str) -> bool {
    interface
        .and_then(|i| result.interfaces.get(i))
        .is_some_and(|i| i.name == ifname)
}
