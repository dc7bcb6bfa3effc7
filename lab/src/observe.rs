//! What the lab sees of itself right now: each node's Spinel labels and health from the API
//! server (as the agent and controller published them), the fabric summary with its miswiring
//! findings, and which switch ports are down.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use spinel_api::crd::{Fabric as FabricObject, FabricStatus};
use spinel_api::scheduling::DEGRADED_TAINT_KEY;

use crate::layout::Plan;
use crate::namespaces::Fabric;
use crate::picture::{Health, Live, NodeView};

/// The Node condition the agent keeps.
pub const READY_CONDITION: &str = "RoCEFabricReady";

/// The prefix of the labels Spinel owns (the agents' default).
pub const LABEL_PREFIX: &str = spinel_api::labels::DEFAULT_PREFIX;

/// Each lab node's labels and health, from the API server.
pub async fn nodes(
    admin: &kube::Client,
    plan: &Plan,
) -> anyhow::Result<BTreeMap<String, NodeView>> {
    let api = Api::<Node>::all(admin.clone());
    let mut views = BTreeMap::new();
    for planned in &plan.nodes {
        let node = api
            .get_opt(&planned.name)
            .await
            .with_context(|| format!("get Node {}", planned.name))?;
        let view = node.map(|n| view_of(&n)).unwrap_or_default();
        views.insert(planned.name.clone(), view);
    }
    Ok(views)
}

/// One node's view: labels under the prefix, health from the condition and the taint.
pub fn view_of(node: &Node) -> NodeView {
    let labels = node
        .metadata
        .labels
        .iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.strip_prefix(LABEL_PREFIX)?.to_owned(), v.clone())))
        .collect();
    let condition = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == READY_CONDITION));
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.key == DEGRADED_TAINT_KEY));
    let health = match condition {
        Some(c) if c.status == "True" && !tainted => Health::Healthy,
        Some(c) if c.status == "False" || tainted => Health::Degraded(
            c.message
                .clone()
                .or_else(|| c.reason.clone())
                .unwrap_or_else(|| "degraded".into()),
        ),
        None if tainted => Health::Degraded("tainted degraded".into()),
        _ => Health::Unknown,
    };
    NodeView { labels, health }
}

/// The controller's fabric summary, once it has written one.
pub async fn fabric_summary(admin: &kube::Client) -> anyhow::Result<Option<FabricStatus>> {
    let list = Api::<FabricObject>::all(admin.clone())
        .list(&Default::default())
        .await
        .context("list Fabric objects")?;
    Ok(list.items.into_iter().find_map(|f| f.status))
}

/// Waits until every node carries Spinel's labels and the controller's summary counts them all.
pub async fn wait_labelled(
    admin: &kube::Client,
    plan: &Plan,
    timeout: Duration,
) -> anyhow::Result<BTreeMap<String, NodeView>> {
    let deadline = Instant::now() + timeout;
    loop {
        let views = nodes(admin, plan).await?;
        let summary = fabric_summary(admin).await?;
        let labelled = views.values().filter(|v| !v.labels.is_empty()).count();
        let hosts = summary.as_ref().map_or(0, |s| s.hosts as usize);
        if labelled == plan.nodes.len() && hosts == plan.nodes.len() {
            return Ok(views);
        }
        if Instant::now() >= deadline {
            bail!(
                "after {} s, {labelled} of {} nodes carry Spinel's labels and the fabric summary \
                 places {hosts} hosts",
                timeout.as_secs(),
                plan.nodes.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Switch ports whose link is down.
pub fn down_ports(fabric: &mut Fabric, plan: &Plan) -> anyhow::Result<Vec<(String, String)>> {
    let mut down = Vec::new();
    for switch in &plan.switches {
        for port in plan.ports_of(&switch.name) {
            if !fabric.port_up(&switch.name, port)? {
                down.push((switch.name.clone(), port.to_owned()));
            }
        }
    }
    Ok(down)
}

/// Everything the picture shows.
pub async fn live(admin: &kube::Client, fabric: &mut Fabric, plan: &Plan) -> anyhow::Result<Live> {
    Ok(Live {
        down_ports: down_ports(fabric, plan)?,
        nodes: nodes(admin, plan).await?,
    })
}
