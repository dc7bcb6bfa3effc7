//! `spinel` behind the real Multus, called as containerd calls the chain.
//!
//! Multus is the thin plugin built from its source; the NetworkAttachmentDefinitions, the Pods
//! and Multus's RBAC live in a real kube-apiserver; the device plugin's allocation is served on
//! the kubelet's pod-resources socket with the kubelet's own API; the runtime is containerd's
//! go-cni with containerd's labels. Every VF is a simulated SR-IOV VF of a [`SimNode`].

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use serde_json::{Value, json};
use spinel_netns_tests::k8s::{ControlPlane, ControlPlaneOptions};
use spinel_netns_tests::multus::{self, MultusNode, PodRef};
use std::sync::OnceLock;

fn control_plane() -> &'static ControlPlane {
    static CP: OnceLock<ControlPlane> = OnceLock::new();
    CP.get_or_init(|| ControlPlane::start(ControlPlaneOptions::new("multus")))
}

/// Multus's CRD and RBAC are installed once; every test gets a token of its ServiceAccount.
async fn setup(test: &str, num_vfs: u32) -> (kube::Client, MultusNode) {
    static TOKEN: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    let cp = control_plane();
    let admin = cp.admin_client().await;
    let token = TOKEN
        .get_or_init(|| async { multus::install(&cp.admin_client().await).await })
        .await;
    let node = MultusNode::new(test, num_vfs, cp, token);
    let ns = serde_json::from_value(json!({"metadata": {"name": test}})).unwrap();
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(admin.clone())
        .create(&Default::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("create namespace {test}: {e}"));
    // No controller manager runs here to create it; admission needs it for every Pod.
    let sa = serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    kube::Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(admin.clone(), test)
        .create(&Default::default(), &sa)
        .await
        .unwrap_or_else(|e| panic!("create {test}/default ServiceAccount: {e}"));
    (admin, node)
}

/// A spinel network on host-local in `subnet`, declaring the capabilities Multus fills.
fn rail(node: &MultusNode, name: &str, subnet: &str) -> Value {
    json!({
        "cniVersion": "1.0.0",
        "name": name,
        "type": "spinel",
        "capabilities": {"deviceID": true, "CNIDeviceInfoFile": true, "mac": true},
        "ipam": {
            "type": "host-local",
            "dataDir": node.node.ipam_dir,
            "ranges": [[{"subnet": subnet}]],
        },
    })
}

async fn two_rails(admin: &kube::Client, node: &MultusNode, ns: &str) {
    multus::put_nad(
        admin,
        ns,
        "rail0",
        Some("spinel.dev/rail0"),
        &rail(node, "rail0", "10.56.0.0/24"),
    )
    .await;
    multus::put_nad(
        admin,
        ns,
        "rail1",
        Some("spinel.dev/rail1"),
        &rail(node, "rail1", "10.57.0.0/24"),
    )
    .await;
}

/// `ip -j addr` of `ifname` in namespace `ns`: (MAC, IPv4 addresses).
fn iface(node: &MultusNode, ns: &str, ifname: &str) -> Option<(String, Vec<String>)> {
    let out = node
        .node
        .sb
        .output_in(ns, "ip", &["-j", "addr", "show", "dev", ifname]);
    if !out.status.success() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    let link = v.get(0)?;
    let ips = link["addr_info"]
        .as_array()?
        .iter()
        .filter(|a| a["family"] == "inet")
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap_or(""), a["prefixlen"]))
        .collect();
    Some((link["address"].as_str()?.to_owned(), ips))
}

fn status_entry<'a>(status: &'a Value, name: &str) -> &'a Value {
    status
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("network-status has no {name}: {status:#}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_verb_through_multus_as_containerd_calls_it() {
    let (admin, node) = setup("multus-verbs", 4).await;
    two_rails(&admin, &node, "multus-verbs").await;
    let annotations = json!({"k8s.v1.cni.cncf.io/networks": json!([
        {"name": "rail0", "interface": "net1", "mac": "0a:58:0a:38:00:99"},
        {"name": "rail1", "interface": "rdma1"},
    ]).to_string()});
    let pod = multus::create_pod(&admin, "multus-verbs", "trainer-0", annotations).await;
    let (vf0, vf1) = (node.node.vfs[0].pci.clone(), node.node.vfs[1].pci.clone());
    node.allocate(&[(
        &pod,
        vec![
            ("spinel.dev/rail0", vec![&vf0]),
            ("spinel.dev/rail1", vec![&vf1]),
        ],
    )]);
    // The device plugin wrote device-info for rail0's VF only; rail1's comes from spinel.
    node.device_plugin_info("spinel.dev/rail0", &vf0, "");
    let netns = node.pod_netns("p");

    node.runtime("add", &pod, &netns, &[]).expect_ok("ADD");
    let (mac, ips) = iface(&node, "p", "net1").expect("net1 in the pod");
    assert_eq!(mac, "0a:58:0a:38:00:99", "the annotation's MAC");
    assert!(ips.iter().any(|ip| ip.starts_with("10.56.0.")), "{ips:?}");
    let (_, ips) = iface(&node, "p", "rdma1").expect("rdma1 in the pod");
    assert!(ips.iter().any(|ip| ip.starts_with("10.57.0.")), "{ips:?}");
    assert!(
        iface(&node, "p", "eth0").is_some(),
        "the default network's eth0"
    );
    for vf in &node.node.vfs[..2] {
        assert!(
            iface(&node, "node", &vf.name).is_none(),
            "{} left the host",
            vf.name
        );
    }

    let status = multus::network_status(&admin, &pod).await;
    let rail0 = status_entry(&status, "multus-verbs/rail0");
    assert_eq!(rail0["interface"], "net1");
    assert_eq!(rail0["mac"], "0a:58:0a:38:00:99");
    assert!(
        rail0["ips"].as_array().is_some_and(|a| a
            .iter()
            .any(|i| i.as_str().unwrap_or("").starts_with("10.56.0."))),
        "{rail0}"
    );
    assert_eq!(
        rail0["device-info"]["pci"]["pci-address"],
        vf0.as_str(),
        "{rail0}"
    );
    let rail1 = status_entry(&status, "multus-verbs/rail1");
    assert_eq!(rail1["interface"], "rdma1");
    assert_eq!(
        rail1["device-info"]["pci"]["pci-address"],
        vf1.as_str(),
        "spinel's own device-info: {rail1}"
    );
    assert_eq!(status_entry(&status, "default")["interface"], "eth0");

    node.runtime("check", &pod, &netns, &[]).expect_ok("CHECK");
    node.runtime("status", &pod, &netns, &[])
        .expect_ok("STATUS");
    node.runtime("del", &pod, &netns, &[]).expect_ok("DEL");
    assert!(iface(&node, "p", "net1").is_none() && iface(&node, "p", "rdma1").is_none());
    node.node.assert_all_home();
    assert!(node.node.leased_ips_in("rail1").is_empty());
    assert!(
        node.cni_device_info_files().is_empty(),
        "Multus removed the device-info files"
    );
    node.runtime("del", &pod, &netns, &[])
        .expect_ok("second DEL");
    node.node.assert_all_home();
}

#[tokio::test(flavor = "multi_thread")]
async fn two_pods_at_once_then_gc_keeps_the_live_one() {
    let (admin, node) = setup("multus-two", 4).await;
    two_rails(&admin, &node, "multus-two").await;
    let mut pods: Vec<PodRef> = Vec::new();
    for i in 0..2 {
        let a = json!({"k8s.v1.cni.cncf.io/networks": "rail0"});
        pods.push(multus::create_pod(&admin, "multus-two", &format!("worker-{i}"), a).await);
    }
    let (vf0, vf1) = (node.node.vfs[0].pci.clone(), node.node.vfs[1].pci.clone());
    node.allocate(&[
        (&pods[0], vec![("spinel.dev/rail0", vec![&vf0])]),
        (&pods[1], vec![("spinel.dev/rail0", vec![&vf1])]),
    ]);
    let netns: Vec<_> = (0..2).map(|i| node.pod_netns(&format!("w{i}"))).collect();
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..2)
            .map(|i| {
                let (node, pod, netns) = (&node, &pods[i], &netns[i]);
                s.spawn(move || node.runtime("add", pod, netns, &[]))
            })
            .collect();
        for run in runs {
            run.join().unwrap().expect_ok("concurrent ADD");
        }
    });
    let a = iface(&node, "w0", "net1").expect("w0 net1").1;
    let b = iface(&node, "w1", "net1").expect("w1 net1").1;
    assert_ne!(a, b, "two pods, two addresses");
    assert_eq!(node.node.leased_ips_in("rail0").len(), 2);

    node.runtime("del", &pods[0], &netns[0], &[])
        .expect_ok("DEL of worker-0");
    // GC reaches the default network only (Multus sends it there); the live pod stays whole.
    let keep = vec![format!("{}/eth0", pods[1].sandbox)];
    node.runtime("gc", &pods[1], &netns[1], &keep)
        .expect_ok("GC");
    assert!(
        iface(&node, "w1", "net1").is_some(),
        "GC left worker-1's VF"
    );
    node.runtime("check", &pods[1], &netns[1], &[])
        .expect_ok("CHECK after GC");
    node.runtime("del", &pods[1], &netns[1], &[])
        .expect_ok("DEL of worker-1");
    node.node.assert_all_home();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_nad_reports_spinels_reason_and_leaves_nothing() {
    let (admin, node) = setup("multus-bad", 2).await;
    let mut bad = rail(&node, "rail0", "10.56.0.0/24");
    bad["vlan"] = json!(5000);
    multus::put_nad(
        &admin,
        "multus-bad",
        "rail0",
        Some("spinel.dev/rail0"),
        &bad,
    )
    .await;
    let a = json!({"k8s.v1.cni.cncf.io/networks": "rail0"});
    let pod = multus::create_pod(&admin, "multus-bad", "trainer-0", a).await;
    let vf0 = node.node.vfs[0].pci.clone();
    node.allocate(&[(&pod, vec![("spinel.dev/rail0", vec![&vf0])])]);
    let netns = node.pod_netns("p");
    let before = node.node.links("node");

    let add = node.runtime("add", &pod, &netns, &[]);
    assert!(!add.success, "ADD with vlan 5000 must fail");
    assert!(
        add.stderr.contains("vlan") && add.stderr.contains("5000"),
        "the runtime sees spinel's reason: {}",
        add.stderr
    );
    // The runtime tears the sandbox down; DEL finishes whatever the NAD says.
    node.runtime("del", &pod, &netns, &[])
        .expect_ok("DEL after a failed ADD");
    assert_eq!(node.node.links("node"), before, "the node is as before");
    node.node.assert_all_home();
    assert!(
        node.node.leased_ips_in("default").is_empty(),
        "the default network released too"
    );
}

/// sriov-cni's documented configuration, every field, with only `type` changed.
#[tokio::test(flavor = "multi_thread")]
async fn a_nad_written_for_sriov_cni_needs_only_its_type_changed() {
    let (admin, node) = setup("multus-sriov", 2).await;
    let conf = json!({
        "cniVersion": "0.3.1",
        "name": "sriov-net",
        "type": "spinel",
        "vlan": 1000,
        "vlanQoS": 4,
        "vlanProto": "802.1ad",
        "min_tx_rate": 100,
        "max_tx_rate": 200,
        "spoofchk": "off",
        "trust": "on",
        "link_state": "enable",
        "logLevel": "debug",
        "logFile": "/tmp/sriov.log",
        "capabilities": {"mac": true},
        "ipam": {"type": "host-local", "dataDir": node.node.ipam_dir, "subnet": "10.58.0.0/24"},
    });
    multus::put_nad(
        &admin,
        "multus-sriov",
        "sriov-net",
        Some("spinel.dev/rail0"),
        &conf,
    )
    .await;
    let a = json!({"k8s.v1.cni.cncf.io/networks": "sriov-net"});
    let pod = multus::create_pod(&admin, "multus-sriov", "trainer-0", a).await;
    let vf = node.node.vfs[1].clone();
    node.allocate(&[(&pod, vec![("spinel.dev/rail0", vec![&vf.pci])])]);
    let netns = node.pod_netns("p");

    node.runtime("add", &pod, &netns, &[])
        .expect_ok("ADD of a sriov-cni NAD");
    let state = node.node.vf_state(1).expect("VF 1's attributes were set");
    assert_eq!(state["vlan"], 1000, "{state}");
    assert_eq!(state["qos"], 4, "{state}");
    assert_eq!(state["proto"], "802.1ad", "{state}");
    assert_eq!(
        (state["minTxRate"].clone(), state["maxTxRate"].clone()),
        (json!(100), json!(200))
    );
    assert_eq!(
        (state["spoofchk"].clone(), state["trust"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(state["linkState"], "enable", "{state}");
    assert!(
        !std::path::Path::new("/tmp/sriov.log").exists(),
        "logFile is never opened"
    );
    node.runtime("del", &pod, &netns, &[]).expect_ok("DEL");
    node.node.assert_vf_home(&vf);
}
