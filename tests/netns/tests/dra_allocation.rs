//! Spinel's DRA driver against the real control plane: the agent publishes each simulated
//! node's RoCE VFs as `roce.spinel.dev` devices, and kube-scheduler itself allocates them to
//! claims made from the shipped examples (`deploy/examples`) and DeviceClasses (`deploy/dra`).
//! No kubelet is needed for allocation: a pod is bound with its claims allocated, which is
//! what each test reads back.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{Device, ResourceSlice};
use kube::api::{Api, DeleteParams};
use serde_json::{Value, json};
use spinel_api::dra;
use spinel_netns_tests::cluster;
use spinel_netns_tests::dra::{
    DraCluster, DraNode, Placement, allocation, claim_pod, eventually, fake_gpus, namespace,
    pf_pci, place_under_root, scheduled, set_labels, slices, vf_pci,
};
use spinel_netns_tests::require_root;

const WAIT: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn shared(rt: &tokio::runtime::Runtime) -> &'static DraCluster {
    static CLUSTER: OnceLock<DraCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| DraCluster::start(rt, "dra-alloc"))
}

fn placement(group: &str) -> Placement {
    Placement {
        spine: "spine1-2".into(),
        group: group.into(),
    }
}

/// Every device of the node's slices, by name.
async fn devices(admin: &kube::Client, node: &str) -> BTreeMap<String, Device> {
    slices(admin, node)
        .await
        .into_iter()
        .flat_map(|s| s.spec.devices.unwrap_or_default())
        .map(|d| (d.name.clone(), d))
        .collect()
}

fn attr<'a>(
    d: &'a Device,
    key: &str,
) -> Option<&'a k8s_openapi::api::resource::v1::DeviceAttribute> {
    d.attributes.as_ref()?.get(key)
}

fn string(d: &Device, key: &str) -> Option<String> {
    attr(d, key)?.string.clone()
}

fn int(d: &Device, key: &str) -> Option<i64> {
    attr(d, key)?.int
}

/// A claim template for one VF, narrowed by `cel` (none: any VF).
async fn one_vf_template(admin: &kube::Client, ns: &str, name: &str, cel: Option<&str>) {
    let mut exactly = json!({"deviceClassName": dra::VF_CLASS});
    if let Some(cel) = cel {
        exactly["selectors"] = json!([{"cel": {"expression": cel}}]);
    }
    let t = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": {"requests": [{"name": "nic", "exactly": exactly}]}}},
    });
    cluster::apply_documents(admin, &[t], name).await;
}

/// The shipped example `file`, applied into `ns`.
async fn example(admin: &kube::Client, ns: &str, file: &str) {
    let mut docs = cluster::documents(file);
    for d in &mut docs {
        d["metadata"]["namespace"] = json!(ns);
    }
    cluster::apply_documents(admin, &docs, file).await;
}

fn claims(pairs: &[(&str, &str)]) -> Value {
    json!(
        pairs
            .iter()
            .map(|(n, t)| json!({"name": n, "resourceClaimTemplateName": t}))
            .collect::<Vec<_>>()
    )
}

#[test]
fn slices_are_published_and_follow_vfs_labels_and_deletions() {
    require_root();
    let rt = runtime();
    let c = shared(&rt);
    let p = placement("lg-a");
    let roots = ["pci0000:3a", "pci0000:d7"];
    let mut n = DraNode::new(&rt, c, "dra-pub", "pub", 2, &roots, &p);
    n.start();
    rt.block_on(async {
        let admin = c.cp.admin_client().await;
        let got = eventually("4 VF devices published", WAIT, || async {
            let d = devices(&admin, "dra-pub").await;
            (d.len() == 4 && d.values().all(|d| attr(d, dra::ATTR_RAIL).is_some())).then_some(d)
        })
        .await;
        let vf = &got[&dra::vf_device_name(&vf_pci(1, 1))];
        assert_eq!(string(vf, dra::ATTR_KIND).as_deref(), Some("vf"));
        assert_eq!(int(vf, dra::ATTR_RAIL), Some(1));
        assert_eq!(string(vf, dra::ATTR_LEAF), Some(p.leaf_id(1)));
        assert_eq!(
            string(vf, &dra::tier_attribute(1)).as_deref(),
            Some("spine1-2.lg-a")
        );
        assert_eq!(
            string(vf, &dra::tier_attribute(2)).as_deref(),
            Some("spine1-2")
        );
        assert_eq!(
            string(vf, dra::ATTR_PCIE_ROOT).as_deref(),
            Some("pci0000:d7")
        );
        assert_eq!(int(vf, dra::ATTR_NUMA_NODE), Some(1));
        assert_eq!(string(vf, dra::ATTR_PF_NAME).as_deref(), Some("pf1"));
        assert_eq!(int(vf, dra::ATTR_VF_INDEX), Some(1));
        assert_eq!(string(vf, dra::ATTR_PCI_ADDRESS), Some(vf_pci(1, 1)));
        assert_eq!(string(vf, dra::ATTR_MULTUS_DEVICE_ID), Some(vf_pci(1, 1)));
        assert_eq!(
            string(vf, dra::ATTR_MULTUS_RESOURCE_NAME).as_deref(),
            Some("roce.spinel.dev/rail1")
        );
        assert_eq!(
            string(vf, dra::ATTR_RDMA_DEVICE).as_deref(),
            Some("mlx5_165")
        );
        assert_eq!(
            (int(vf, dra::ATTR_MTU), int(vf, dra::ATTR_LINK_SPEED)),
            (Some(9000), Some(200_000))
        );
        let slice = &slices(&admin, "dra-pub").await[0];
        assert_eq!(slice.spec.pool.name, "dra-pub");
        let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
        let node = Api::<Node>::all(admin.clone())
            .get("dra-pub")
            .await
            .unwrap();
        assert_eq!(
            (owner.kind.as_str(), Some(&owner.uid)),
            ("Node", node.metadata.uid.as_ref())
        );

        // A VF is enabled on pf1 (sriov_numvfs raised): it is published.
        let sys = n.agent.node.sb.dir().join("sys");
        let new_vf = vf_pci(1, 2);
        n.agent
            .node
            .sysfs
            .add_vf(&pf_pci(1), 2, &new_vf, None, "mlx5_core");
        place_under_root(&sys, std::slice::from_ref(&new_vf), roots[1], 1);
        eventually("the new VF is published", WAIT, || async {
            devices(&admin, "dra-pub")
                .await
                .contains_key(&dra::vf_device_name(&new_vf))
                .then_some(())
        })
        .await;

        // The fabric changed (a new spine domain id): the attributes follow.
        let mut moved = placement("lg-a");
        moved.spine = "spine1-4".into();
        set_labels(&admin, "dra-pub", moved.labels(2)).await;
        eventually("tier attributes follow the labels", WAIT, || async {
            let d = devices(&admin, "dra-pub").await;
            d.values()
                .all(|d| string(d, &dra::tier_attribute(2)).as_deref() == Some("spine1-4"))
                .then_some(())
        })
        .await;

        // Someone deletes the slice (the kubelet wipes a node's slices when it starts): back.
        let name = slices(&admin, "dra-pub").await[0]
            .metadata
            .name
            .clone()
            .unwrap();
        Api::<ResourceSlice>::all(admin.clone())
            .delete(&name, &DeleteParams::default())
            .await
            .unwrap();
        eventually("the slice is published again", WAIT, || async {
            (devices(&admin, "dra-pub").await.len() == 5).then_some(())
        })
        .await;
    });
}

#[test]
fn a_claim_template_gets_one_vf_on_every_rail_under_one_leaf_group() {
    require_root();
    let rt = runtime();
    let c = shared(&rt);
    let roots = [
        "pci0000:0a",
        "pci0000:0b",
        "pci0000:0c",
        "pci0000:0d",
        "pci0000:8a",
        "pci0000:8b",
        "pci0000:8c",
        "pci0000:8d",
    ];
    let mut n = DraNode::new(&rt, c, "dra-rails", "rails", 2, &roots, &placement("lg-b"));
    n.start();
    rt.block_on(async {
        let admin = c.cp.admin_client().await;
        namespace(&admin, "dra-rails").await;
        example(
            &admin,
            "dra-rails",
            "deploy/examples/dra-one-vf-per-rail.yaml",
        )
        .await;
        eventually("16 devices with rails", WAIT, || async {
            let d = devices(&admin, "dra-rails").await;
            (d.len() == 16 && d.values().all(|d| attr(d, dra::ATTR_RAIL).is_some())).then_some(())
        })
        .await;
        claim_pod(
            &admin,
            "dra-rails",
            "trainer-0",
            "rails",
            claims(&[("rails", "vf-per-rail")]),
        )
        .await;
        let (node, results) = eventually("the pod is bound with its claim allocated", WAIT, || {
            allocation(&admin, "dra-rails", "trainer-0")
        })
        .await;
        assert_eq!(node, "dra-rails");
        let published = devices(&admin, "dra-rails").await;
        let mut rails = BTreeSet::new();
        let mut groups = BTreeSet::new();
        for (request, driver, pool, device) in &results {
            assert_eq!((driver.as_str(), pool.as_str()), (dra::DRIVER, "dra-rails"));
            let d = &published[device];
            let rail = int(d, dra::ATTR_RAIL).unwrap();
            assert_eq!(
                *request,
                format!("rail{rail}"),
                "{device} answers its rail's request"
            );
            rails.insert(rail);
            groups.insert(string(d, &dra::tier_attribute(1)).unwrap());
        }
        assert_eq!(rails, (0..8).collect::<BTreeSet<i64>>(), "one VF per rail");
        assert_eq!(groups.len(), 1, "one leaf group: {groups:?}");
    });
}

#[test]
fn a_tainted_nic_is_never_allocated_while_its_node_s_other_nics_are() {
    require_root();
    let rt = runtime();
    let c = shared(&rt);
    let mut n = DraNode::new(
        &rt,
        c,
        "dra-taint",
        "taint",
        2,
        &["pci0000:3a", "pci0000:d7"],
        &placement("lg-c"),
    );
    n.agent.start(&["--taint-degraded"]);
    rt.block_on(async {
        let admin = c.cp.admin_client().await;
        namespace(&admin, "dra-taint").await;
        for k in 0..2 {
            one_vf_template(
                &admin,
                "dra-taint",
                &format!("rail{k}"),
                Some(&format!(
                    "device.attributes[\"roce.spinel.dev\"].rail == {k}"
                )),
            )
            .await;
        }
        eventually("4 devices with rails", WAIT, || async {
            let d = devices(&admin, "dra-taint").await;
            (d.len() == 4 && d.values().all(|d| attr(d, dra::ATTR_RAIL).is_some())).then_some(())
        })
        .await;
        // pf1 loses its link: after the hysteresis its devices carry the LinkDown taint.
        n.agent
            .node
            .sb
            .run_in("leaf", "ip", &["link", "set", "swp2", "down"]);
        eventually("pf1's VFs tainted, pf0's not", WAIT, || async {
            let d = devices(&admin, "dra-taint").await;
            d.values()
                .all(|d| {
                    let tainted = d.taints.as_ref().is_some_and(|t| {
                        t.iter().any(|t| {
                            t.key == "roce.spinel.dev/LinkDown" && t.effect == "NoSchedule"
                        })
                    });
                    tainted == (string(d, dra::ATTR_PF_NAME).as_deref() == Some("pf1"))
                })
                .then_some(())
        })
        .await;
        let node = Api::<Node>::all(admin.clone())
            .get("dra-taint")
            .await
            .unwrap();
        assert!(
            !node
                .spec
                .unwrap()
                .taints
                .unwrap_or_default()
                .iter()
                .any(|t| t.key == "fabric.spinel.dev/degraded"),
            "one bad NIC does not shield the node"
        );
        claim_pod(
            &admin,
            "dra-taint",
            "on-rail1",
            "taint",
            claims(&[("nic", "rail1")]),
        )
        .await;
        claim_pod(
            &admin,
            "dra-taint",
            "on-rail0",
            "taint",
            claims(&[("nic", "rail0")]),
        )
        .await;
        let (_, got) = eventually("the rail-0 pod gets pf0's VF", WAIT, || {
            allocation(&admin, "dra-taint", "on-rail0")
        })
        .await;
        let published = devices(&admin, "dra-taint").await;
        assert_eq!(
            string(&published[&got[0].3], dra::ATTR_PF_NAME).as_deref(),
            Some("pf0")
        );
        let (status, reason, message) =
            eventually("the rail-1 pod is unschedulable", WAIT, || async {
                scheduled(&admin, "dra-taint", "on-rail1")
                    .await
                    .filter(|(s, _, _)| s == "False")
            })
            .await;
        println!("rail-1 pod while pf1 is tainted: {status} {reason}: {message}");
        assert_eq!(reason, "Unschedulable");
        assert!(allocation(&admin, "dra-taint", "on-rail1").await.is_none());
        // The link is back; after the hysteresis the taint goes and the pod gets a pf1 VF.
        n.agent
            .node
            .sb
            .run_in("leaf", "ip", &["link", "set", "swp2", "up"]);
        let (_, got) = eventually(
            "the rail-1 pod is allocated once pf1 is healthy",
            WAIT,
            || allocation(&admin, "dra-taint", "on-rail1"),
        )
        .await;
        assert_eq!(
            string(&published[&got[0].3], dra::ATTR_PF_NAME).as_deref(),
            Some("pf1")
        );
    });
}

#[test]
fn a_gpu_and_nic_claim_lands_on_one_pcie_root() {
    require_root();
    let rt = runtime();
    let c = shared(&rt);
    let roots = ["pci0000:15", "pci0000:37", "pci0000:5d", "pci0000:7f"];
    let mut n = DraNode::new(&rt, c, "dra-gpu", "gpu", 2, &roots, &placement("lg-d"));
    n.start();
    rt.block_on(async {
        let admin = c.cp.admin_client().await;
        namespace(&admin, "dra-gpu").await;
        example(&admin, "dra-gpu", "deploy/examples/dra-gpu-nic-pair.yaml").await;
        // GPUs only behind the second and fourth root: a pair must take pf1's or pf3's VFs.
        fake_gpus(&admin, "dra-gpu", &[roots[1], roots[3]]).await;
        eventually("8 devices", WAIT, || async {
            (devices(&admin, "dra-gpu").await.len() == 8).then_some(())
        })
        .await;
        for i in 0..3 {
            claim_pod(
                &admin,
                "dra-gpu",
                &format!("pair-{i}"),
                "gpu",
                claims(&[("pair", "gpu-nic-pair")]),
            )
            .await;
        }
        let published = devices(&admin, "dra-gpu").await;
        let mut gpus = BTreeSet::new();
        for i in 0..2 {
            let pod = format!("pair-{i}");
            let (_, got) = eventually("a pair is allocated", WAIT, || {
                allocation(&admin, "dra-gpu", &pod)
            })
            .await;
            let gpu = got.iter().find(|r| r.0 == "gpu").unwrap();
            let nic = got.iter().find(|r| r.0 == "nic").unwrap();
            assert_eq!(gpu.1, "gpu.nvidia.com");
            let gpu_root =
                roots[1 + 2 * gpu.3.trim_start_matches("gpu-").parse::<usize>().unwrap()];
            let nic_root = string(&published[&nic.3], dra::ATTR_PCIE_ROOT).unwrap();
            assert_eq!(gpu_root, nic_root, "pair-{i}: {got:?}");
            gpus.insert(gpu.3.clone());
        }
        assert_eq!(gpus.len(), 2);
        let (_, reason, _) = eventually("the third pair finds no GPU", WAIT, || async {
            scheduled(&admin, "dra-gpu", "pair-2")
                .await
                .filter(|(s, _, _)| s == "False")
        })
        .await;
        assert_eq!(reason, "Unschedulable");
    });
}

#[test]
fn two_pods_never_share_a_vf_and_running_out_is_the_scheduler_s_reason() {
    require_root();
    let rt = runtime();
    let c = shared(&rt);
    let mut n = DraNode::new(
        &rt,
        c,
        "dra-full",
        "full",
        3,
        &["pci0000:3a", "pci0000:d7"],
        &placement("lg-e"),
    );
    n.start();
    rt.block_on(async {
        let admin = c.cp.admin_client().await;
        namespace(&admin, "dra-full").await;
        one_vf_template(&admin, "dra-full", "any-vf", None).await;
        eventually("6 devices", WAIT, || async {
            (devices(&admin, "dra-full").await.len() == 6).then_some(())
        })
        .await;
        for i in 0..7 {
            claim_pod(
                &admin,
                "dra-full",
                &format!("w{i}"),
                "full",
                claims(&[("nic", "any-vf")]),
            )
            .await;
        }
        let mut taken = BTreeMap::new();
        let mut waiting = Vec::new();
        for i in 0..7 {
            let name = format!("w{i}");
            let state = eventually("each pod bound or refused", WAIT, || async {
                if let Some((_, got)) = allocation(&admin, "dra-full", &name).await {
                    return Some(Ok(got[0].3.clone()));
                }
                scheduled(&admin, "dra-full", &name)
                    .await
                    .filter(|(s, _, _)| s == "False")
                    .map(Err)
            })
            .await;
            match state {
                Ok(device) => {
                    if let Some(other) = taken.insert(device.clone(), name.clone()) {
                        panic!("{device} given to {other} and {name}");
                    }
                }
                Err(refusal) => waiting.push((name, refusal)),
            }
        }
        assert_eq!(taken.len(), 6, "every VF once: {taken:?}");
        assert_eq!(waiting.len(), 1, "{waiting:?}");
        let (_, (_, reason, message)) = &waiting[0];
        println!("the seventh pod: {reason}: {message}");
        assert_eq!(reason, "Unschedulable");
        assert!(message.contains("cannot allocate all claims"), "{message}");
    });
}
