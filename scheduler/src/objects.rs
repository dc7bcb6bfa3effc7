//! What the scheduler reads from Pod and Node objects: a gang pod's metadata and resource
//! request, a node's tier labels, allocatable units, degraded taint and readiness.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod};
use k8s_openapi::api::scheduling::v1alpha2::PodGroup;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use spinel_api::scheduling::DEGRADED_TAINT_KEY;
use spinel_placement::NodeSpec;
use spinel_placement::annotations::PodGroupPolicy;

/// A quantity that is not a whole number of units.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{resource}: {value:?} is not a whole number of units")]
pub struct QuantityError {
    /// The resource.
    pub resource: String,
    /// Its value.
    pub value: String,
}

/// Whole units of an extended resource (`8`, `8k` are accepted; fractions are not).
pub fn units(resource: &str, q: &Quantity) -> Result<u64, QuantityError> {
    let err = || QuantityError {
        resource: resource.to_owned(),
        value: q.0.clone(),
    };
    let s = q.0.trim();
    let (digits, mult) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        None => (s, 1u64),
        Some((i, _)) => {
            let m = match &s[i..] {
                "k" => 1_000,
                "Ki" => 1_024,
                "M" => 1_000_000,
                "Mi" => 1_048_576,
                _ => return Err(err()),
            };
            (&s[..i], m)
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|d| d.checked_mul(mult))
        .ok_or_else(err)
}

fn container_units(c: &Container, resource: &str) -> Result<u64, QuantityError> {
    let Some(res) = &c.resources else {
        return Ok(0);
    };
    // Extended resources cannot be overcommitted: a limit alone is also the request.
    let q = res
        .requests
        .as_ref()
        .and_then(|r| r.get(resource))
        .or_else(|| res.limits.as_ref().and_then(|l| l.get(resource)));
    q.map_or(Ok(0), |q| units(resource, q))
}

/// Units of `resource` the pod holds on its node: the larger of the containers' (and sidecars')
/// sum and any other init container's request, as the kubelet counts them.
pub fn pod_units(pod: &Pod, resource: &str) -> Result<u64, QuantityError> {
    let Some(spec) = &pod.spec else {
        return Ok(0);
    };
    let mut sum = 0u64;
    for c in &spec.containers {
        sum = sum.saturating_add(container_units(c, resource)?);
    }
    let mut init_max = 0u64;
    for c in spec.init_containers.iter().flatten() {
        let u = container_units(c, resource)?;
        if c.restart_policy.as_deref() == Some("Always") {
            sum = sum.saturating_add(u);
        } else {
            init_max = init_max.max(u);
        }
    }
    Ok(sum.max(init_max))
}

/// Whether the pod has finished and holds nothing.
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The node a pod is bound to.
pub fn bound_node(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// Labels, annotations and `spec.schedulingGroup.podGroupName` of a pod.
pub fn pod_meta(
    pod: &Pod,
) -> (
    &BTreeMap<String, String>,
    &BTreeMap<String, String>,
    Option<&str>,
) {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&EMPTY);
    let annotations = pod.metadata.annotations.as_ref().unwrap_or(&EMPTY);
    let group = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_group.as_ref())
        .and_then(|g| g.pod_group_name.as_deref());
    (labels, annotations, group)
}

/// What an upstream PodGroup says about its gang: `minCount` of a gang policy (a negative one
/// reads as 0, which the request check refuses), the first topology constraint's key.
pub fn pod_group_policy(group: &PodGroup) -> PodGroupPolicy {
    let spec = &group.spec;
    PodGroupPolicy {
        min_count: spec
            .scheduling_policy
            .gang
            .as_ref()
            .map(|g| u32::try_from(g.min_count).unwrap_or(0)),
        topology_key: spec
            .scheduling_constraints
            .as_ref()
            .and_then(|c| c.topology.as_ref())
            .and_then(|t| t.first())
            .map(|t| t.key.clone()),
    }
}

/// The planner's view of a node; `None` for a node without a name.
pub fn node_spec(node: &Node, resource: &str, used: u32) -> Option<NodeSpec> {
    let name = node.metadata.name.clone()?;
    let allocatable = node
        .status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get(resource))
        .and_then(|q| units(resource, q).ok())
        .and_then(|u| u32::try_from(u).ok())
        .unwrap_or(0);
    let spec = node.spec.as_ref();
    let degraded = spec
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == DEGRADED_TAINT_KEY));
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_none_or(|c| c.status == "True");
    let cordoned = spec.and_then(|s| s.unschedulable).unwrap_or(false);
    Some(NodeSpec {
        name,
        labels: node.metadata.labels.clone().unwrap_or_default(),
        allocatable,
        used,
        degraded,
        unschedulable: cordoned || !ready,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities_are_whole_units() {
        assert_eq!(units("g", &Quantity("8".into())), Ok(8));
        assert_eq!(units("g", &Quantity("2k".into())), Ok(2000));
        assert!(units("g", &Quantity("0.5".into())).is_err());
        assert!(units("g", &Quantity("99999999999999999999".into())).is_err());
    }

    #[test]
    fn pod_units_count_like_the_kubelet() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {
                "initContainers": [
                    {"name": "i", "resources": {"requests": {"nvidia.com/gpu": "4"}}},
                    {"name": "s", "restartPolicy": "Always",
                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                ],
                "containers": [
                    {"name": "a", "resources": {"requests": {"nvidia.com/gpu": "2"}}},
                    {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "2"}}}
                ]
            }
        }))
        .unwrap();
        assert_eq!(pod_units(&pod, "nvidia.com/gpu"), Ok(5));
        assert_eq!(pod_units(&pod, "other"), Ok(0));
    }

    #[test]
    fn pod_groups_give_their_gang_policy() {
        let group: PodGroup = serde_json::from_value(json!({
            "metadata": {"name": "pg", "namespace": "ml"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 16}},
                     "schedulingConstraints": {"topology": [{"key": "fabric.spinel.dev/tier-2"}]}}
        }))
        .unwrap();
        assert_eq!(
            pod_group_policy(&group),
            PodGroupPolicy {
                min_count: Some(16),
                topology_key: Some("fabric.spinel.dev/tier-2".to_owned())
            }
        );
        let basic: PodGroup = serde_json::from_value(json!({
            "metadata": {"name": "pg", "namespace": "ml"},
            "spec": {"schedulingPolicy": {"basic": {}}}
        }))
        .unwrap();
        assert_eq!(pod_group_policy(&basic), PodGroupPolicy::default());
    }

    #[test]
    fn nodes_carry_taint_readiness_and_allocatable() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1", "labels": {"fabric.spinel.dev/tier-1": "l1"}},
            "spec": {"taints": [{"key": "fabric.spinel.dev/degraded", "effect": "NoSchedule"}]},
            "status": {
                "allocatable": {"nvidia.com/gpu": "8"},
                "conditions": [{"type": "Ready", "status": "False"}]
            }
        }))
        .unwrap();
        let s = node_spec(&node, "nvidia.com/gpu", 3).unwrap();
        assert_eq!(
            (s.allocatable, s.used, s.degraded, s.unschedulable),
            (8, 3, true, true)
        );
        assert_eq!(s.labels["fabric.spinel.dev/tier-1"], "l1");
    }
}
