//! A pod gets its VF through the real chain on a real node ([`KubeNode`]): `spinel-agent`'s
//! device plugin registers each rail with the real kubelet (plugin watcher) and lists the
//! rail's VFs; kube-scheduler places a pod asking for `spinel.dev/rail0`; the kubelet calls
//! `Allocate`; containerd creates the sandbox and calls the CNI chain, the real Multus, which
//! asks the kubelet's pod-resources API which VF the pod got and hands its PCI address to
//! `spinel` as `deviceID`. Deleting the pod gives the VF back to the node. The same through
//! DRA: the agent as the node's `roce.spinel.dev` driver, a claim allocated by kube-scheduler,
//! prepared by the agent's kubelet plugin, read by Multus from the claim and the slice.
//!
//! The NIC is simulated as in every netns test ([`sriov_nic`]: macvlan VFs described in a fake
//! sysfs); everything above it is the real program. The agent runs as a process of the test
//! (not yet as the DaemonSet's pod from its image), on the node's network namespace and with
//! a token bound to a pod of its ServiceAccount on the node, as a DaemonSet pod has.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};
use spinel_api::crd::NodeFabric;
use spinel_netns_tests::dra::{self, Placement};
use spinel_netns_tests::k8s::{ControlPlane, ControlPlaneOptions, pod_bound_token};
use spinel_netns_tests::kube_node::{BUSYBOX_IMAGE, KubeNode};
use spinel_netns_tests::node::{SimVf, sriov_nic};
use spinel_netns_tests::{agent, cluster, cni, multus};

const RESOURCE: &str = "spinel.dev/rail0";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Links the CNI plugins the node needs into its `/opt/cni/bin`, writes spinel's node
/// settings at their default path and Multus's configuration (as its thin entrypoint writes
/// it: the default network, Debian's ptp, as the first delegate) in `/etc/cni/net.d`.
fn cni_chain(node: &KubeNode, cp: &ControlPlane, multus_token: &str) {
    let bin = node.root("/opt/cni/bin");
    for plugin in ["ptp", "host-local", "loopback"] {
        symlink(
            Path::new(cni::DEBIAN_CNI_DIR).join(plugin),
            bin.join(plugin),
        )
        .unwrap();
    }
    symlink(cni::spinel_binary(), bin.join("spinel")).unwrap();
    symlink(multus::binary(), bin.join("multus")).unwrap();
    let sb = node.sb.dir();
    fs::write(
        node.root("/etc/spinel/cni.json"),
        json!({
            "stateDir": sb.join("spinel-state"),
            "sysfsRoot": sb.join("sys"),
            "deviceInfoDir": "/var/run/k8s.cni.cncf.io/devinfo",
            "lockTimeoutMs": 20000,
            "recordVfRequestsTo": sb.join("vf-requests"),
            "roceInfoDir": sb.join("roce"),
        })
        .to_string(),
    )
    .unwrap();
    let kubeconfig = node.root("/etc/cni/net.d/multus.d/multus.kubeconfig");
    fs::create_dir_all(kubeconfig.parent().unwrap()).unwrap();
    cluster::write_kubeconfig(
        &kubeconfig,
        cp.server(),
        Path::new("/etc/kubernetes/ca.crt"),
        multus_token,
    );
    let conf = json!({
        "cniVersion": "1.0.0",
        "name": "multus-cni-network",
        "type": "multus",
        "kubeconfig": "/etc/cni/net.d/multus.d/multus.kubeconfig",
        "binDir": "/opt/cni/bin",
        "cniDir": "/var/lib/cni/multus",
        "logFile": sb.join("multus.log"),
        "logLevel": "verbose",
        "delegates": [{
            "cniVersion": "1.0.0",
            "name": "default",
            "plugins": [{
                "type": "ptp",
                "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.7.0/24"}]],
                         "routes": [{"dst": "0.0.0.0/0"}]},
            }],
        }],
    });
    fs::write(node.root("/etc/cni/net.d/00-multus.conf"), conf.to_string()).unwrap();
}

/// A pod of the agent's ServiceAccount on `node` (a busybox standing in for the DaemonSet's
/// pod) and a kubeconfig with a token bound to it.
async fn agent_credentials(admin: &kube::Client, cp: &ControlPlane, node: &KubeNode) -> PathBuf {
    let name = format!("spinel-agent-{}", node.name);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "serviceAccountName": agent::SERVICE_ACCOUNT,
            "nodeName": node.name,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "agent", "image": BUSYBOX_IMAGE,
                            "imagePullPolicy": "Never", "command": ["/bin/sleep", "100000"]}],
        },
    }))
    .unwrap();
    Api::<Pod>::namespaced(admin.clone(), agent::NAMESPACE)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    let token = pod_bound_token(admin, agent::NAMESPACE, agent::SERVICE_ACCOUNT, &name).await;
    let path = node.sb.dir().join("agent.kubeconfig");
    cluster::write_kubeconfig(
        &path,
        cp.server(),
        Path::new("/etc/kubernetes/ca.crt"),
        &token,
    );
    path
}

/// `spinel-agent`'s configuration with its device plugin offering `pf0`'s VFs as
/// [`RESOURCE`]: sockets in the kubelet's plugin registry, device-info files where Multus reads
/// them (both the defaults).
fn device_plugin_config() -> Value {
    json!({
        "reportDebounceMs": 100,
        "routing": {"enabled": false},
        "garp": {"enabled": false},
        "devicePlugin": {
            "resources": [{"name": "rail0", "pfNames": ["pf0"]}],
            "rescanSeconds": 1,
        },
    })
}

/// Starts `spinel-agent` with `config` as a process of the node (its cgroup, network and mount
/// namespaces, as the DaemonSet's pod with its host paths).
fn start_agent(node: &mut KubeNode, kubeconfig: &Path, config: &Value) {
    let dir = node.sb.dir();
    fs::write(dir.join("agent.yaml"), config.to_string()).unwrap();
    let log = fs::File::create(dir.join("agent.log")).unwrap();
    let mut cmd = node.command(agent::agent_binary());
    cmd.arg("--config")
        .arg(dir.join("agent.yaml"))
        .arg("--node-name")
        .arg(&node.name)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--nics")
        .arg("pf0")
        .arg("--sysfs-root")
        .arg(dir.join("sys"))
        .arg("--metrics-address")
        .arg(format!("127.0.0.1:{}", spinel_netns_tests::free_port()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    node.sb.spawn(cmd);
}

fn tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    format!(
        "--- {} ---\n{}",
        path.display(),
        lines[lines.len().saturating_sub(30)..].join("\n")
    )
}

/// Waits until `done` holds for the Node, showing the agent's and kubelet's logs otherwise.
async fn wait_node(
    admin: &kube::Client,
    node: &KubeNode,
    what: &str,
    done: impl Fn(&Node) -> bool,
) -> Node {
    let nodes = Api::<Node>::all(admin.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = nodes.get(&node.name).await.unwrap();
        if done(&n) {
            return n;
        }
        assert!(
            Instant::now() < deadline,
            "node {}: {what} not within 60 s: {:?}\n{}\n{}",
            node.name,
            n.status.and_then(|s| s.allocatable),
            tail(&node.sb.dir().join("agent.log")),
            node.log_tail("kubelet.log"),
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn allocatable(n: &Node, resource: &str) -> Option<String> {
    n.status
        .as_ref()?
        .allocatable
        .as_ref()?
        .get(resource)
        .map(|q| q.0.clone())
}

async fn wait_pod(
    pods: &Api<Pod>,
    name: &str,
    node: &KubeNode,
    done: impl Fn(&Pod) -> bool,
) -> Pod {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let pod = pods.get(name).await.unwrap();
        if done(&pod) {
            return pod;
        }
        assert!(
            Instant::now() < deadline,
            "pod {name}: {:#?}\n{}\n{}\n{}",
            pod.status,
            tail(&node.sb.dir().join("multus.log")),
            node.log_tail("containerd.log"),
            node.log_tail("kubelet.log"),
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Running")
}

/// The links of namespace `netns` (a path): name → MAC.
fn links(netns: &Path) -> Vec<(String, String)> {
    let out = Command::new("nsenter")
        .arg(format!("--net={}", netns.display()))
        .args(["--", "ip", "-j", "link"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v.as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            (
                l["ifname"].as_str().unwrap_or_default().to_owned(),
                l["address"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn has_link(links: &[(String, String)], vf: &SimVf) -> bool {
    links
        .iter()
        .any(|(name, mac)| *name == vf.name && *mac == vf.mac)
}

/// A control plane (with a controller manager) where the agent and Multus are installed, and
/// node `gpu-1`, Ready, with a simulated RoCE NIC `pf0` of two VFs and the CNI chain.
async fn cluster_with_node(name: &str) -> (ControlPlane, kube::Client, KubeNode, Vec<SimVf>) {
    let cp = ControlPlane::start(
        ControlPlaneOptions::new(name)
            .crd_dir(workspace().join("deploy/crds"))
            .controller_manager()
            .scheduler("{}"),
    );
    let admin = cp.admin_client().await;
    agent::install(&cp).await;
    let multus_token = multus::install(&admin).await;

    let mut node = KubeNode::new(&cp, "gpu-1");
    let (sysfs, vfs) = sriov_nic(&node.sb, 2);
    // pf0 is a RoCE NIC for the agent (its LLDP and reports run as on a GPU node).
    sysfs.add_rdma(spinel_netns_tests::node::PF_PCI, "mlx5_0");
    agent::roce_port(node.sb.dir(), "pf0", "mlx5_0");
    cni_chain(&node, &cp, &multus_token);
    node.boot();
    node.wait_ready(&admin, Duration::from_secs(120)).await;
    (cp, admin, node, vfs)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_gets_its_vf_through_the_kubelet_containerd_multus_and_spinel() {
    let (cp, admin, mut node, vfs) = cluster_with_node("devplugin").await;

    // The device plugin registers through the kubelet's plugin watcher and lists both VFs.
    let kubeconfig = agent_credentials(&admin, &cp, &node).await;
    start_agent(&mut node, &kubeconfig, &device_plugin_config());
    wait_node(&admin, &node, "2 VFs allocatable", |n| {
        allocatable(n, RESOURCE).as_deref() == Some("2")
    })
    .await;

    multus::put_nad(
        &admin,
        "default",
        "rail0",
        Some(RESOURCE),
        &json!({
            "cniVersion": "1.0.0",
            "name": "rail0",
            "type": "spinel",
            "capabilities": {"deviceID": true, "CNIDeviceInfoFile": true},
            "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.56.0.0/24",
                     "rangeStart": "10.56.0.10", "rangeEnd": "10.56.0.250"}]]},
        }),
    )
    .await;
    let pods = Api::<Pod>::namespaced(admin.clone(), "default");
    pods.create(&PostParams::default(), &trainer("trainer"))
        .await
        .unwrap();
    let pod = wait_pod(&pods, "trainer", &node, running).await;
    assert_eq!(
        pod.spec.as_ref().unwrap().node_name.as_deref(),
        Some("gpu-1"),
        "kube-scheduler placed it on the node with the resource"
    );

    // The kubelet gave the container the VF the plugin allocated ...
    let pci = allocated_vf(&node, &pod);
    let vf = vfs
        .iter()
        .find(|v| v.pci == pci)
        .unwrap_or_else(|| panic!("PCIDEVICE_SPINEL_DEV_RAIL0={pci:?} is none of the VFs"));
    let other = vfs.iter().find(|v| v.pci != pci).unwrap();
    assert!(
        node.root("/run/k8s.cni.cncf.io/devinfo/dp")
            .join(format!("spinel.dev-rail0-{pci}-device.json"))
            .exists(),
        "Allocate wrote the device-info file"
    );
    // ... and Multus found the same VF through pod-resources and gave it to spinel: the VF
    // left the node for the pod, as net1.
    let pid = node.container_pid(&pod, "main").unwrap();
    let in_pod = links(Path::new(&format!("/proc/{pid}/ns/net")));
    assert!(
        in_pod.iter().any(|(n, mac)| n == "net1" && *mac == vf.mac),
        "{} ({}) is net1 in the pod: {in_pod:?}",
        vf.name,
        vf.pci
    );
    let on_node = links(&node.netns());
    assert!(!on_node.iter().any(|(n, _)| *n == vf.name), "{on_node:?}");
    assert!(has_link(&on_node, other), "the other VF stays home");
    let status: Value = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("k8s.v1.cni.cncf.io/network-status"))
        .map(|s| serde_json::from_str(s).unwrap())
        .unwrap_or(Value::Null);
    let rail = status
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == "default/rail0"))
        .unwrap_or_else(|| panic!("network-status: {status:#}"));
    assert_eq!(rail["device-info"]["pci"]["pci-address"], pci.as_str());

    // Deleting the pod gives the VF back.
    delete(&pods, "trainer").await;
    let on_node = links(&node.netns());
    assert!(
        has_link(&on_node, vf) && has_link(&on_node, other),
        "both VFs home: {on_node:?}"
    );

    // A kubelet that restarts finds the plugin's socket in its registry and registers it
    // again, the agent doing nothing: the next pod gets a VF too.
    let agent_log = node.sb.dir().join("agent.log");
    let registrations = || {
        fs::read_to_string(&agent_log)
            .unwrap_or_default()
            .matches("registered with the kubelet")
            .count()
    };
    let before = registrations();
    assert!(before >= 1, "{}", tail(&agent_log));
    node.kill_kubelet();
    node.start_kubelet();
    let deadline = Instant::now() + Duration::from_secs(60);
    while registrations() == before {
        assert!(
            Instant::now() < deadline,
            "not registered again\n{}\n{}",
            tail(&agent_log),
            node.log_tail("kubelet.log")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    pods.create(&PostParams::default(), &trainer("trainer-2"))
        .await
        .unwrap();
    let pod = wait_pod(&pods, "trainer-2", &node, running).await;
    let pci = allocated_vf(&node, &pod);
    let vf = vfs.iter().find(|v| v.pci == pci).unwrap();
    let pid = node.container_pid(&pod, "main").unwrap();
    let in_pod = links(Path::new(&format!("/proc/{pid}/ns/net")));
    assert!(
        in_pod.iter().any(|(n, mac)| n == "net1" && *mac == vf.mac),
        "{in_pod:?}"
    );
    delete(&pods, "trainer-2").await;
    let on_node = links(&node.netns());
    assert!(vfs.iter().all(|v| has_link(&on_node, v)), "{on_node:?}");
}

/// The DRA path (issue 23): the agent is the node's `roce.spinel.dev` DRA driver instead of a
/// device plugin. It publishes `pf0`'s VFs with their rail (the leaf's LLDP and the node's
/// labels) and Multus's `resourceName`/`deviceID` attributes; kube-scheduler allocates a VF to
/// the pod's claim; the kubelet calls the agent's `NodePrepareResources`; Multus reads the claim
/// and the slice and hands the VF's PCI address to `spinel`; the agent writes the claim's
/// `networkData` from the CNI's record. Deleting the pod gives the VF back.
#[tokio::test(flavor = "multi_thread")]
async fn a_pod_gets_its_vf_through_a_dra_claim_multus_and_spinel() {
    let (cp, admin, mut node, vfs) = cluster_with_node("dra-multus").await;
    cluster::apply_files(
        &admin,
        &[
            "deploy/dra/rbac.yaml",
            "deploy/dra/admission-policy.yaml",
            "deploy/dra/device-classes.yaml",
        ],
    )
    .await;
    // pf0's leaf, as LLDP shows it, is rail 0's leaf of the node's labels.
    let placement = Placement {
        spine: "spine1-2".into(),
        group: "lg-a".into(),
    };
    let leaf = placement.leaf_lldp(&node.sb, 0);
    node.sb.spawn(leaf);
    let kubeconfig = agent_credentials(&admin, &cp, &node).await;
    let config = json!({
        "reportDebounceMs": 100,
        "routing": {"enabled": false},
        "garp": {"enabled": false},
        "dra": {"enabled": true, "inventorySeconds": 1},
    });
    start_agent(&mut node, &kubeconfig, &config);
    // The fabric controller's part: the node's labels in its NodeFabric status.
    let fabrics = Api::<NodeFabric>::all(admin.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    while fabrics.get_opt(&node.name).await.unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "no NodeFabric report\n{}",
            tail(&node.sb.dir().join("agent.log"))
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    dra::set_labels(&admin, &node.name, placement.labels(1)).await;
    let rail0 = spinel_api::dra::rail_resource_name(0);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let published: Vec<String> = dra::slices(&admin, &node.name)
            .await
            .into_iter()
            .flat_map(|s| s.spec.devices.unwrap_or_default())
            .filter_map(|d| {
                let a = d.attributes?;
                let name = a.get(spinel_api::dra::ATTR_MULTUS_RESOURCE_NAME)?;
                name.string.clone()
            })
            .collect();
        if published.len() == 2 && published.iter().all(|r| *r == rail0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "both VFs published as {rail0}: {published:?}\n{}",
            tail(&node.sb.dir().join("agent.log"))
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    multus::put_nad(
        &admin,
        "default",
        "rail0",
        Some(&rail0),
        &json!({
            "cniVersion": "1.0.0",
            "name": "rail0",
            "type": "spinel",
            "capabilities": {"deviceID": true},
            "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.56.0.0/24",
                     "rangeStart": "10.56.0.10", "rangeEnd": "10.56.0.250"}]]},
        }),
    )
    .await;
    let template: ResourceClaimTemplate = serde_json::from_value(json!({
        "metadata": {"name": "one-vf"},
        "spec": {"spec": {"devices": {"requests": [{"name": "vf",
            "exactly": {"deviceClassName": "vf.roce.spinel.dev"}}]}}},
    }))
    .unwrap();
    Api::<ResourceClaimTemplate>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &template)
        .await
        .unwrap();
    let pods = Api::<Pod>::namespaced(admin.clone(), "default");
    let mut trainer = trainer("trainer");
    let spec = trainer.spec.as_mut().unwrap();
    spec.resource_claims = Some(vec![
        serde_json::from_value(json!({"name": "vf", "resourceClaimTemplateName": "one-vf"}))
            .unwrap(),
    ]);
    spec.containers[0].resources =
        Some(serde_json::from_value(json!({"claims": [{"name": "vf"}]})).unwrap());
    pods.create(&PostParams::default(), &trainer).await.unwrap();
    let pod = wait_pod(&pods, "trainer", &node, running).await;

    // kube-scheduler allocated one of the VFs to the claim; that VF is the pod's net1.
    let claim_name = pod
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.resource_claim_name.clone())
        .expect("the pod's claim");
    let claims = Api::<ResourceClaim>::namespaced(admin.clone(), "default");
    let claim = claims.get(&claim_name).await.unwrap();
    let result = claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.results.as_ref())
        .and_then(|r| r.first())
        .cloned()
        .expect("an allocated device");
    let slice_devices: Vec<_> = dra::slices(&admin, &node.name)
        .await
        .into_iter()
        .flat_map(|s| s.spec.devices.unwrap_or_default())
        .collect();
    let pci = slice_devices
        .iter()
        .find(|d| d.name == result.device)
        .and_then(|d| {
            d.attributes
                .as_ref()?
                .get(spinel_api::dra::ATTR_MULTUS_DEVICE_ID)
        })
        .and_then(|a| a.string.clone())
        .expect("the allocated device's deviceID");
    let vf = vfs.iter().find(|v| v.pci == pci).unwrap();
    let other = vfs.iter().find(|v| v.pci != pci).unwrap();
    let pid = node.container_pid(&pod, "main").unwrap();
    let in_pod = links(Path::new(&format!("/proc/{pid}/ns/net")));
    assert!(
        in_pod.iter().any(|(n, mac)| n == "net1" && *mac == vf.mac),
        "{} ({pci}) is net1 in the pod: {in_pod:?}\n{}",
        vf.name,
        tail(&node.sb.dir().join("multus.log"))
    );
    let on_node = links(&node.netns());
    assert!(has_link(&on_node, other), "the other VF stays home");

    // The agent reports the attachment in the claim's status (KEP-4817).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let claim = claims.get(&claim_name).await.unwrap();
        let net = claim
            .status
            .and_then(|s| s.devices)
            .and_then(|d| d.into_iter().find(|d| d.device == result.device))
            .and_then(|d| d.network_data);
        if let Some(net) = net {
            assert_eq!(net.interface_name.as_deref(), Some("net1"));
            assert_eq!(net.hardware_address.as_deref(), Some(vf.mac.as_str()));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no networkData in the claim's status\n{}",
            tail(&node.sb.dir().join("agent.log"))
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    delete(&pods, "trainer").await;
    let on_node = links(&node.netns());
    assert!(vfs.iter().all(|v| has_link(&on_node, v)), "{on_node:?}");
}

/// A pod asking for one VF of [`RESOURCE`] on network `rail0`.
fn trainer(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name,
                     "annotations": {"k8s.v1.cni.cncf.io/networks": "rail0"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                "command": ["/bin/sleep", "100000"],
                "resources": {"limits": {RESOURCE: "1"}, "requests": {RESOURCE: "1"}},
            }],
        },
    }))
    .unwrap()
}

/// The VF the kubelet gave `pod`'s container, from its environment (`PCIDEVICE_...`).
fn allocated_vf(node: &KubeNode, pod: &Pod) -> String {
    let pid = node.container_pid(pod, "main").unwrap();
    let environ = fs::read(format!("/proc/{pid}/environ")).unwrap();
    environ
        .split(|b| *b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .find_map(|kv| kv.strip_prefix("PCIDEVICE_SPINEL_DEV_RAIL0="))
        .unwrap_or_else(|| panic!("no PCIDEVICE_SPINEL_DEV_RAIL0 in the container's environment"))
        .to_owned()
}

async fn delete(pods: &Api<Pod>, name: &str) {
    pods.delete(name, &DeleteParams::default()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while pods.get_opt(name).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "pod {name} still there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
