//! The Volcano and Kueue object types: wire format, `kube::Resource` identity, and the vendored
//! schemas still matching the consumers' CRDs.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use spinel_api::kueue::{Topology, TopologyLevel, TopologySpec};
use spinel_api::volcano::{HyperNode, HyperNodeSpec, MemberSelector, MemberSpec, MemberType};

/// What `kube::Api<K>` asks of a cluster-scoped resource type.
fn usable_with_kube_api<K>()
where
    K: Resource<DynamicType = (), Scope = kube::core::ClusterResourceScope>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Serialize,
{
}

fn hypernode() -> HyperNode {
    HyperNode::new(
        "spine1.leaf1-2",
        HyperNodeSpec {
            members: vec![MemberSpec {
                selector: MemberSelector::exact("h1"),
                member_type: MemberType::Node,
            }],
            tier: 1,
            tier_name: Some("leaf".into()),
        },
    )
}

#[test]
fn hypernodes_and_topologies_are_kube_resources() {
    usable_with_kube_api::<HyperNode>();
    usable_with_kube_api::<Topology>();
    assert_eq!(
        HyperNode::url_path(&(), None),
        "/apis/topology.volcano.sh/v1alpha1/hypernodes"
    );
    assert_eq!(
        Topology::url_path(&(), None),
        "/apis/kueue.x-k8s.io/v1beta2/topologies"
    );
    assert_eq!(hypernode().meta().name.as_deref(), Some("spine1.leaf1-2"));
}

#[test]
fn a_hypernode_round_trips_with_its_type_fields() {
    let hn = hypernode();
    let doc = serde_json::to_value(&hn).unwrap();
    assert_eq!(
        doc,
        json!({
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "spine1.leaf1-2"},
            "spec": {
                "members": [{"selector": {"exactMatch": {"name": "h1"}}, "type": "Node"}],
                "tier": 1,
                "tierName": "leaf"
            }
        })
    );
    assert_eq!(serde_json::from_value::<HyperNode>(doc).unwrap(), hn);
    let yaml = serde_saphyr::to_string(&hn).unwrap();
    assert_eq!(serde_saphyr::from_str::<HyperNode>(&yaml).unwrap(), hn);
}

/// Both are kube's `CustomResource` derive (no schema: the CRDs are Kueue's and Volcano's), so
/// apiVersion and kind are written from the type and a read is routed by the API path: an
/// `Api<Topology>` only ever returns Topologies.
#[test]
fn a_topology_round_trips_with_its_type_fields() {
    let t = Topology::new(
        "spinel-fabric",
        TopologySpec {
            levels: vec![TopologyLevel {
                node_label: "kubernetes.io/hostname".into(),
            }],
        },
    );
    let doc = serde_json::to_value(&t).unwrap();
    assert_eq!(
        doc,
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "spinel-fabric"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}
        })
    );
    assert_eq!(serde_json::from_value::<Topology>(doc).unwrap(), t);
}

/// Drops every `description`, as the vendored schemas do.
fn strip(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("description");
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

#[test]
fn the_vendored_schemas_match_the_peer_crds() {
    let dir = std::env::var_os("SPINEL_PEER_CRDS")
        .map_or_else(|| PathBuf::from("/work/shared/peers/crd"), PathBuf::from);
    if !dir.is_dir() {
        eprintln!(
            "skipped: {} not found (set SPINEL_PEER_CRDS to the consumers' CRDs)",
            dir.display()
        );
        return;
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema");
    for (crd, version, vendored) in [
        (
            "topology.volcano.sh_hypernodes.yaml",
            "v1alpha1",
            "hypernode-v1alpha1.json",
        ),
        (
            "kueue.x-k8s.io_topologies.yaml",
            "v1beta2",
            "topology-v1beta2.json",
        ),
    ] {
        let text = std::fs::read_to_string(dir.join(crd)).unwrap();
        let crd: Value = serde_saphyr::from_str(&text).unwrap();
        let mut schema = crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == version)
            .unwrap()["schema"]["openAPIV3Schema"]
            .clone();
        strip(&mut schema);
        let ours: Value =
            serde_json::from_str(&std::fs::read_to_string(here.join(vendored)).unwrap()).unwrap();
        assert_eq!(schema, ours, "{vendored} drifted from {crd}: regenerate it");
    }
}
