//! What the agent writes on its own Node for RoCE health: the `RoCEFabricReady` condition
//! (server-side apply on the status subresource, field manager `spinel-agent`: node conditions
//! are a map keyed by type, so the kubelet's stay the kubelet's) and the
//! `fabric.spinel.dev/degraded:NoSchedule` taint. Taints are an atomic list, which server-side
//! apply would take over whole; the taint is therefore changed by a read-modify-write that
//! carries the resourceVersion, so a concurrent writer's taints are never lost (a conflict is
//! retried on a fresh read).

use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use spinel_api::scheduling::{DEGRADED_TAINT_EFFECT, DEGRADED_TAINT_KEY};

use crate::report_publisher::FIELD_MANAGER;

/// The condition type.
pub const CONDITION: &str = "RoCEFabricReady";

/// The condition's content (without its transition time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Ready or not.
    pub ready: bool,
    /// CamelCase reason, naming the first problem's NIC (`LinkDown:ens1f0np0`).
    pub reason: String,
    /// Every problem, for people.
    pub message: String,
}

/// The Node's current `RoCEFabricReady` condition, if it has one.
pub async fn current_condition(
    nodes: &Api<Node>,
    node: &str,
) -> kube::Result<Option<NodeCondition>> {
    let n = nodes.get_status(node).await?;
    Ok(n.status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == CONDITION))
}

/// Applies the condition with `transition` as its last transition time.
pub async fn apply_condition(
    nodes: &Api<Node>,
    node: &str,
    verdict: &Verdict,
    transition: &Time,
) -> kube::Result<()> {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let patch = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node},
        "status": {"conditions": [{
            "type": CONDITION,
            "status": if verdict.ready { "True" } else { "False" },
            "reason": verdict.reason,
            "message": verdict.message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": transition,
        }]},
    });
    nodes
        .patch_status(
            node,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
        .map(drop)
}

/// Adds or removes the degraded taint; returns whether the Node changed. Other taints are
/// kept exactly as they are.
pub async fn set_taint(nodes: &Api<Node>, node: &str, present: bool) -> kube::Result<bool> {
    for _ in 0..5 {
        let current = nodes.get(node).await?;
        let taints: Vec<Taint> = current
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        let has = taints.iter().any(|t| t.key == DEGRADED_TAINT_KEY);
        if has == present {
            return Ok(false);
        }
        let mut wanted: Vec<Taint> = taints
            .into_iter()
            .filter(|t| t.key != DEGRADED_TAINT_KEY)
            .collect();
        if present {
            wanted.push(Taint {
                key: DEGRADED_TAINT_KEY.to_owned(),
                effect: DEGRADED_TAINT_EFFECT.to_owned(),
                value: None,
                time_added: None,
            });
        }
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": {"taints": wanted},
        });
        match nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}
