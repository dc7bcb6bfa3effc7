//! The checks behind each claim of the main job, each read from the system itself: the API
//! server's objects, a switch's interface counters and neighbour table, a node's links.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use tokio::process::Command;

use super::attach::{Attachment, Cni};
use super::job::{self, Job, Placed};
use crate::layout::{Plan, leaf_name};
use crate::namespaces::Fabric;
use crate::observe;
use crate::picture::{Health, NodeView};
use crate::state::StateDir;

/// Echo requests sent across the fabric.
const PINGS: u64 = 20;

/// The Volcano HyperNodes (name and tier) and the Kueue Topology's levels.
pub async fn published_objects(admin: &kube::Client) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let hn = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("topology.volcano.sh", "v1alpha1", "HyperNode"),
        "hypernodes",
    );
    let hypernodes: Vec<String> = Api::<DynamicObject>::all_with(admin.clone(), &hn)
        .list(&Default::default())
        .await
        .context("list HyperNodes")?
        .items
        .iter()
        .map(|h| {
            let tier = &h.data["spec"]["tier"];
            format!(
                "{} (tier {tier})",
                h.metadata.name.clone().unwrap_or_default()
            )
        })
        .collect();
    let topo = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Topology"),
        "topologies",
    );
    let topologies = Api::<DynamicObject>::all_with(admin.clone(), &topo)
        .list(&Default::default())
        .await
        .context("list Kueue Topologies")?
        .items;
    let levels: Vec<String> = topologies
        .first()
        .and_then(|t| t.data["spec"]["levels"].as_array().cloned())
        .into_iter()
        .flatten()
        .filter_map(|l| l["nodeLabel"].as_str().map(str::to_owned))
        .collect();
    if hypernodes.is_empty() || levels.is_empty() {
        bail!(
            "the controller published {} HyperNode(s) and a Topology of {} level(s)",
            hypernodes.len(),
            levels.len()
        );
    }
    Ok((hypernodes, levels))
}

fn rail0<'a>(atts: &'a [Attachment], pod: &str) -> anyhow::Result<&'a Attachment> {
    atts.iter()
        .find(|a| a.pod == pod && a.rail == 0)
        .with_context(|| format!("{pod} has no rail-0 attachment"))
}

/// Packets a leaf sent up to the spines.
fn uplink_tx(fabric: &mut Fabric, plan: &Plan, leaf: &str) -> anyhow::Result<u64> {
    let mut total = 0;
    for cable in plan.uplinks().filter(|c| c.a == leaf) {
        total += fabric.counters(leaf, &cable.a_port)?.tx_packets;
    }
    Ok(total)
}

/// Pings `to`'s rail-0 address from `from`'s rail-0 interface and shows, from the leaves'
/// own counters, that the packets went up through `from`'s rail-0 leaf and not its rail-1 leaf.
pub async fn cross_leaf_ping(
    fabric: &mut Fabric,
    plan: &Plan,
    state: &StateDir,
    atts: &[Attachment],
    from: &Placed,
    to: &Placed,
) -> anyhow::Result<String> {
    let (src, dst) = (rail0(atts, &from.pod)?, rail0(atts, &to.pod)?);
    let group = plan.node(&from.node).context("unknown node")?.group;
    let (leaf, other_leaf) = (leaf_name(group, 0), leaf_name(group, 1));
    // With one rail there is no other leaf of the group to compare with.
    let compare = plan.size.rails > 1;
    let before = (
        uplink_tx(fabric, plan, &leaf)?,
        if compare {
            uplink_tx(fabric, plan, &other_leaf)?
        } else {
            0
        },
    );
    let out = Command::new("nsenter")
        .arg(format!(
            "--net={}",
            state.netns().join(format!("pod-{}", from.pod)).display()
        ))
        .args([
            "ping",
            "-q",
            "-c",
            &PINGS.to_string(),
            "-i",
            "0.05",
            "-W",
            "2",
            "-I",
        ])
        .arg(&src.ifname)
        .arg(dst.ip.to_string())
        .output()
        .await
        .context("run ping in the pod")?;
    if !out.status.success() {
        bail!(
            "{} ({}) cannot reach {} ({}): {}",
            from.pod,
            src.ip,
            to.pod,
            dst.ip,
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    let up = uplink_tx(fabric, plan, &leaf)? - before.0;
    if up < PINGS {
        bail!("{leaf} sent {up} packets to the spines for {PINGS} echo requests");
    }
    let mut line = format!(
        "  {} {} ({}) -> {} {} ({}): {PINGS}/{PINGS} replies; {leaf} forwarded {up} packets up to \
         the spines",
        from.pod, src.ifname, src.ip, to.pod, dst.ifname, dst.ip
    );
    if compare {
        let other = uplink_tx(fabric, plan, &other_leaf)? - before.1;
        if other >= PINGS {
            bail!("{other_leaf} (rail 1) forwarded {other} packets: traffic left its rail");
        }
        line += &format!(", {other_leaf} (rail 1) only {other} (LLDP)");
    } else {
        line += " (one rail: no other leaf to compare with)";
    }

    Ok(line)
}

/// The MAC the leaf serving `att` holds for its address.
fn leaf_entry(
    fabric: &mut Fabric,
    plan: &Plan,
    att: &Attachment,
) -> anyhow::Result<Option<String>> {
    let node = plan.node(&att.node).context("unknown node")?;
    let leaf = leaf_name(node.group, att.rail);
    Ok(fabric
        .socket(&leaf)?
        .neighbours()?
        .into_iter()
        .find(|n| n.ip == IpAddr::V4(att.ip))
        .and_then(|n| n.mac.map(|m| m.to_string())))
}

/// Makes the leaf learn the last rail-0 pod's MAC, restarts that pod on another VF with the same
/// address, and waits for the leaf to show the new MAC without sending it anything.
pub async fn reused_address(
    fabric: &mut Fabric,
    plan: &Plan,
    cni: &mut Cni,
    atts: &mut Vec<Attachment>,
) -> anyhow::Result<String> {
    let i = atts
        .iter()
        .rposition(|a| a.rail == 0)
        .context("no rail-0 attachment")?;
    let old = atts[i].clone();
    let node = plan.node(&old.node).context("unknown node")?.clone();
    let leaf = leaf_name(node.group, 0);
    let leaf_ns = fabric.path_of(&leaf);
    let pinged = Command::new("nsenter")
        .arg(format!("--net={}", leaf_ns.display()))
        .args(["ping", "-q", "-c", "1", "-W", "2"])
        .arg(old.ip.to_string())
        .output()
        .await?
        .status;
    let learned = leaf_entry(fabric, plan, &old)?;
    if !pinged.success() || learned.as_deref() != Some(old.mac.as_str()) {
        bail!(
            "{leaf} did not learn {} at {} (has {learned:?})",
            old.ip,
            old.mac
        );
    }
    cni.del(plan, &old).await?;
    atts.remove(i);
    // The restarted pod gets another VF (the old one is held), hence another MAC.
    cni.hold(&node.name, &old.vf_pci, true);
    let added = cni
        .add(&old.pod, &format!("{}-c2", old.pod), &node, 0, Some(old.ip))
        .await;
    cni.hold(&node.name, &old.vf_pci, false);
    let new = added?;
    atts.push(new.clone());
    if new.ip != old.ip || new.mac == old.mac {
        bail!(
            "the restarted pod got {} {} (was {} {})",
            new.ip,
            new.mac,
            old.ip,
            old.mac
        );
    }
    let started = Instant::now();
    while leaf_entry(fabric, plan, &new)?.as_deref() != Some(new.mac.as_str()) {
        if started.elapsed() > Duration::from_secs(5) {
            bail!("{leaf} still holds a stale entry for {} after 5 s", new.ip);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(format!(
        "  {} restarted on VF {}: same address {}, MAC {} -> {}; {leaf} shows the new MAC {} ms \
         after ADD, without being sent anything",
        old.pod,
        new.vf_pci,
        new.ip,
        old.mac,
        new.mac,
        started.elapsed().as_millis()
    ))
}

async fn wait_health(
    admin: &kube::Client,
    node: &str,
    degraded: bool,
    timeout: Duration,
) -> anyhow::Result<NodeView> {
    let deadline = Instant::now() + timeout;
    let api = Api::<k8s_openapi::api::core::v1::Node>::all(admin.clone());
    loop {
        let view = observe::view_of(&api.get(node).await?);
        let done = match &view.health {
            Health::Degraded(_) => degraded,
            Health::Healthy => !degraded,
            Health::Unknown => false,
        };
        if done {
            return Ok(view);
        }
        if Instant::now() >= deadline {
            bail!("{node} is {:?} after {} s", view.health, timeout.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Pulls the rail-0 cable of a node the first job left free, shows the node shielded and the
/// second gang refused with the reason, puts the cable back, and shows the gang placed.
pub async fn pulled_cable(
    admin: &kube::Client,
    fabric: &mut Fabric,
    plan: &Plan,
    placed: &[Placed],
    b: &Job,
    health_timeout: Duration,
    place_timeout: Duration,
) -> anyhow::Result<Vec<String>> {
    let victim = plan
        .nodes
        .iter()
        .find(|n| placed.iter().all(|p| p.node != n.name))
        .context("the first job left no node free")?;
    let nic = &victim.nics[0];
    let mut lines = Vec::new();
    fabric.set_port(&nic.leaf, &nic.leaf_port, false)?;
    let pulled = Instant::now();
    let view = wait_health(admin, &victim.name, true, health_timeout).await?;
    let reason = match view.health {
        Health::Degraded(r) => r,
        _ => String::new(),
    };
    lines.push(format!(
        "  cable {}:{} - {}:{} pulled; {} degraded and tainted after {} s: {reason}",
        victim.name,
        nic.ifname,
        nic.leaf,
        nic.leaf_port,
        victim.name,
        pulled.elapsed().as_secs()
    ));
    job::submit(admin, b).await?;
    let why = job::wait_unschedulable(admin, b, place_timeout).await?;
    lines.push(format!("  gang {} ({} pods) waits: {why}", b.name, b.pods));
    fabric.set_port(&nic.leaf, &nic.leaf_port, true)?;
    let restored = Instant::now();
    wait_health(admin, &victim.name, false, health_timeout).await?;
    lines.push(format!(
        "  cable put back; {} healthy and untainted after {} s",
        victim.name,
        restored.elapsed().as_secs()
    ));
    let b_placed = job::wait_placed(admin, b, place_timeout).await?;
    let nodes: Vec<String> = b_placed
        .iter()
        .map(|p| format!("{} on {}", p.pod, p.node))
        .collect();
    if !b_placed.iter().any(|p| p.node == victim.name) {
        bail!("{} was placed without the healed node: {nodes:?}", b.name);
    }
    lines.push(format!("  gang {} placed: {}", b.name, nodes.join(", ")));
    Ok(lines)
}

/// Pods whose namespace the run made.
pub fn pods_with_netns(state: &StateDir) -> Vec<String> {
    std::fs::read_dir(state.netns())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("pod-")
                .map(str::to_owned)
        })
        .collect()
}

/// Checks every VF netdev is back in its node's namespace; returns how many there are.
pub fn vfs_home(fabric: &mut Fabric, plan: &Plan) -> anyhow::Result<usize> {
    let mut home = 0;
    let mut missing = Vec::new();
    for node in &plan.nodes {
        for vf in node.nics.iter().flat_map(|n| &n.vfs) {
            match fabric.socket(&node.name)?.link_by_name(&vf.ifname)? {
                Some(_) => home += 1,
                None => missing.push(format!("{}:{}", node.name, vf.ifname)),
            }
        }
    }
    if !missing.is_empty() {
        bail!("VFs not back on their node: {}", missing.join(", "));
    }
    Ok(home)
}
