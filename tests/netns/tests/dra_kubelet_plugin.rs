//! The agent's DRA kubelet plugin driven through its gRPC API by the kubelet's own code: the
//! kubelet's plugin manager finds the registration socket and hands the plugin to the
//! kubelet's DRA plugin manager, which calls NodePrepareResources and NodeUnprepareResources
//! (`spinel-k8s draplugin`). The claim is a real one, allocated by kube-scheduler. Once the
//! CNI's record of the VF's attachment appears, the agent writes the claim's
//! `status.devices` (KEP-4817). The agent is killed with SIGKILL between prepare and
//! unprepare; nothing may leak.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::api::Api;
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use spinel_api::dra;
use spinel_netns_tests::cluster;
use spinel_netns_tests::dra::{
    DraCluster, DraNode, Placement, allocation, claim_pod, eventually, namespace, slices, vf_pci,
};
use spinel_netns_tests::require_root;
use spinel_node::attachment_record::{PodAttachment, Record, publish};

const WAIT: Duration = Duration::from_secs(60);

/// The agent's entry for `device` in claim `name`'s `status.devices`, once it is there.
async fn device_status(admin: &kube::Client, name: &str, device: &str) -> Option<Value> {
    let claim = Api::<ResourceClaim>::namespaced(admin.clone(), "dra-plug")
        .get(name)
        .await
        .ok()?;
    let entry = claim
        .status?
        .devices?
        .into_iter()
        .find(|d| d.driver == dra::DRIVER && d.pool == "dra-plug" && d.device == device)?;
    Some(serde_json::to_value(entry).unwrap())
}

/// What the kubelet's DRA code got back from the plugin (`verb` for `claim` ns/name/uid).
fn kubelet(registry: &Path, verb: &str, claim: &str) -> Value {
    let out = Command::new(spinel_netns_tests::k8s::binary())
        .args(["draplugin", "--registry"])
        .arg(registry)
        .args(["--driver", dra::DRIVER, "--claim", claim, verb])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "spinel-k8s draplugin {verb}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn prepare_and_unprepare_through_the_kubelet_s_plugin_manager_survive_sigkill() {
    require_root();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let c = DraCluster::start(&rt, "dra-plugin");
    let placement = Placement {
        spine: "spine1".into(),
        group: "lg-p".into(),
    };
    let mut n = DraNode::new(
        &rt,
        &c,
        "dra-plug",
        "plug",
        2,
        &["pci0000:3a", "pci0000:d7"],
        &placement,
    );
    let dir = n.agent.node.sb.dir().to_owned();
    // The RDMA devices' verbs character devices, as ib_uverbs shows them in sysfs.
    for k in 0..2u32 {
        for j in 0..2u32 {
            let uverbs = dir.join(format!(
                "sys/class/infiniband_verbs/uverbs{}",
                10 + 2 * k + j
            ));
            fs::create_dir_all(&uverbs).unwrap();
            fs::write(uverbs.join("ibdev"), format!("mlx5_{}\n", 100 + k * 64 + j)).unwrap();
        }
    }
    n.start();
    let registry = dir.join("kubelet/plugins_registry");
    let cdi = dir.join("cdi");
    let journal = dir.join("dra-state/claims");
    let claim = rt.block_on(async {
        let admin = c.cp.admin_client().await;
        namespace(&admin, "dra-plug").await;
        let template = json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "rail1", "namespace": "dra-plug"},
            "spec": {"spec": {"devices": {"requests": [{"name": "nic", "exactly": {
                "deviceClassName": dra::VF_CLASS,
                "selectors": [{"cel": {"expression": "device.attributes[\"roce.spinel.dev\"].rail == 1"}}]}}]}}},
        });
        cluster::apply_documents(&admin, &[template], "template").await;
        eventually("slices", WAIT, || async {
            let s = slices(&admin, "dra-plug").await;
            (s.iter().map(|s| s.spec.devices.as_ref().map_or(0, Vec::len)).sum::<usize>() == 4).then_some(())
        })
        .await;
        claim_pod(&admin, "dra-plug", "trainer", "plug", json!([{"name": "nic", "resourceClaimTemplateName": "rail1"}])).await;
        let (_, got) = eventually("allocated", WAIT, || allocation(&admin, "dra-plug", "trainer")).await;
        let claims = Api::<ResourceClaim>::namespaced(admin.clone(), "dra-plug");
        let claim = claims.list(&Default::default()).await.unwrap().items.remove(0);
        let name = claim.metadata.name.unwrap();
        (format!("dra-plug/{name}/{}", claim.metadata.uid.unwrap()), got[0].3.clone())
    });
    let (claim, device) = claim;
    let uid = claim.rsplit('/').next().unwrap().to_owned();

    let first = kubelet(&registry, "prepare", &claim);
    let answer = &first["claims"][&uid];
    assert!(answer.get("error").is_none(), "{first}");
    let d = &answer["devices"][0];
    assert_eq!(d["deviceName"], device.as_str());
    assert_eq!(d["poolName"], "dra-plug");
    assert_eq!(d["requestNames"], json!(["nic"]));
    let cdi_id = format!("roce.spinel.dev/rdma={uid}-{device}");
    assert_eq!(d["cdiDeviceIds"], json!([cdi_id]));
    let spec_file = cdi.join(format!("roce.spinel.dev-{uid}.json"));
    let spec: Value = serde_json::from_slice(&fs::read(&spec_file).unwrap()).unwrap();
    assert_eq!(spec["kind"], "roce.spinel.dev/rdma");
    let nodes = &spec["devices"][0]["containerEdits"]["deviceNodes"];
    // Rail 1's VFs are mlx5_164 and mlx5_165, whose verbs devices are uverbs12 and uverbs13.
    assert!(
        matches!(
            nodes[0]["path"].as_str(),
            Some("/dev/infiniband/uverbs12" | "/dev/infiniband/uverbs13")
        ),
        "{spec}"
    );
    assert_eq!(nodes[1]["path"], "/dev/infiniband/rdma_cm");
    assert_eq!(
        kubelet(&registry, "prepare", &claim),
        first,
        "a retry gets the same answer"
    );

    // A claim whose UID is not the object's (deleted and recreated) is refused by name.
    let stale = claim.replace(&uid, "00000000-0000-0000-0000-000000000000");
    let refused = kubelet(&registry, "prepare", &stale);
    let error = refused["claims"]["00000000-0000-0000-0000-000000000000"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(error.contains("replaced"), "{refused}");

    // status.devices: not ready while no CNI attachment of the VF exists, then the interface
    // as the CNI recorded it (written here with the CNI's own record writer).
    let name = claim.split('/').nth(1).unwrap().to_owned();
    let pci = (0..2)
        .map(|j| vf_pci(1, j))
        .find(|p| dra::vf_device_name(p) == device)
        .unwrap();
    rt.block_on(async {
        let admin = c.cp.admin_client().await;
        let waiting = eventually("Ready=False entry", WAIT, || {
            device_status(&admin, &name, &device)
        })
        .await;
        assert_eq!(waiting["conditions"][0]["type"], "Ready", "{waiting}");
        assert_eq!(waiting["conditions"][0]["status"], "False", "{waiting}");
        assert!(waiting.get("networkData").is_none(), "{waiting}");
        let attachment: PodAttachment = serde_json::from_value(json!({
            "netns": "/run/netns/trainer", "netnsId": {"dev": 4, "ino": 4026532100u64, "cookie": 9},
            "ifname": "net1", "mac": "02:5e:00:00:01:07", "addresses": ["10.56.1.7/24"],
            "pf": "pf1", "vfPci": pci,
        }))
        .unwrap();
        let record = Record {
            roce: None,
            attachment: Some(attachment),
        };
        publish(&n.agent.node.records_dir, "c0ffee", "net1", &record).unwrap();
        let ready = eventually("networkData", WAIT, || async {
            device_status(&admin, &name, &device)
                .await
                .filter(|d| d["conditions"][0]["status"] == "True")
        })
        .await;
        assert_eq!(
            ready["networkData"],
            json!({"interfaceName": "net1", "ips": ["10.56.1.7/24"], "hardwareAddress": "02:5e:00:00:01:07"}),
            "{ready}"
        );
        assert_eq!(ready["data"]["pf"], "pf1", "{ready}");
        assert_eq!(ready["data"]["pciAddress"], pci.as_str(), "{ready}");
        assert_eq!(ready["conditions"][0]["reason"], "Attached", "{ready}");
    });

    // SIGKILL between prepare and unprepare; the restarted agent unprepares from its journal.
    n.agent.stop(Signal::SIGKILL);
    assert_eq!(files(&journal), [format!("{uid}.json")]);
    n.start();
    let done = kubelet(&registry, "unprepare", &claim);
    assert!(done["claims"][&uid].get("error").is_none(), "{done}");
    assert!(files(&cdi).is_empty(), "CDI specs left: {:?}", files(&cdi));
    assert!(
        files(&journal).is_empty(),
        "records left: {:?}",
        files(&journal)
    );
    let again = kubelet(&registry, "unprepare", &claim);
    assert!(
        again["claims"][&uid].get("error").is_none(),
        "unprepare is idempotent: {again}"
    );
}
