//! Real nodes: the kubelet of the control plane's release, containerd and runc, each node in
//! its own network and mount namespaces and cgroup ([`KubeNode`]). A node registers through
//! the real API server with its own credentials, reports Ready, runs pods that kube-scheduler
//! placed, and leaves nothing behind, also when the test process is killed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers fail loudly

use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use spinel_netns_tests::k8s::{ControlPlane, ControlPlaneOptions};
use spinel_netns_tests::kube_node::{BUSYBOX_IMAGE, KubeNode};
use spinel_netns_tests::sandbox;

fn control_plane() -> &'static ControlPlane {
    static CP: std::sync::OnceLock<ControlPlane> = std::sync::OnceLock::new();
    CP.get_or_init(|| {
        ControlPlane::start(
            ControlPlaneOptions::new("nodes")
                .controller_manager()
                .scheduler("{}"),
        )
    })
}

/// Writes the default network every node here has: Debian's ptp with host-local, in the
/// node's `/etc/cni/net.d`, and the plugins in its `/opt/cni/bin`.
fn default_network(node: &KubeNode, subnet: &str) {
    for plugin in ["ptp", "host-local", "loopback"] {
        let link = node.root("/opt/cni/bin").join(plugin);
        if !link.exists() {
            std::os::unix::fs::symlink(
                std::path::Path::new(spinel_netns_tests::cni::DEBIAN_CNI_DIR).join(plugin),
                link,
            )
            .unwrap();
        }
    }
    let conf = json!({
        "cniVersion": "1.0.0",
        "name": "default",
        "plugins": [{
            "type": "ptp",
            "ipam": {"type": "host-local", "ranges": [[{"subnet": subnet}]],
                     "routes": [{"dst": "0.0.0.0/0"}]},
        }],
    });
    std::fs::write(
        node.root("/etc/cni/net.d").join("10-default.conflist"),
        conf.to_string(),
    )
    .unwrap();
}

fn busybox_pod(name: &str, node: Option<&str>) -> Pod {
    let mut pod = json!({
        "metadata": {"name": name},
        "spec": {
            "dnsPolicy": "Default",
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main",
                "image": BUSYBOX_IMAGE,
                "imagePullPolicy": "Never",
                "command": ["/bin/sleep", "100000"],
            }],
        },
    });
    if let Some(node) = node {
        pod["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": node});
    }
    serde_json::from_value(pod).unwrap()
}

async fn wait_pod(
    pods: &Api<Pod>,
    name: &str,
    what: &str,
    timeout: Duration,
    done: impl Fn(&Pod) -> bool,
) -> Pod {
    let deadline = Instant::now() + timeout;
    loop {
        let pod = pods.get(name).await.unwrap();
        if done(&pod) {
            return pod;
        }
        assert!(
            Instant::now() < deadline,
            "pod {name} not {what} within {timeout:?}: {:#?}",
            pod.status
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Running")
}

async fn wait_gone(pods: &Api<Pod>, name: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while pods.get_opt(name).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "pod {name} still there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// IPv4 addresses of `ifname` in `ip -j addr` output.
fn ipv4_of(out: &std::process::Output, ifname: &str) -> Vec<String> {
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["ifname"] == ifname)
        .flat_map(|l| l["addr_info"].as_array().cloned().unwrap_or_default())
        .filter(|a| a["family"] == "inet")
        .filter_map(|a| a["local"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_registers_as_itself_reports_ready_and_runs_a_scheduled_pod() {
    let cp = control_plane();
    let admin = cp.admin_client().await;
    let mut node = KubeNode::new(cp, "node-a");
    default_network(&node, "10.244.1.0/24");
    node.boot();
    let registered = node.wait_ready(&admin, Duration::from_secs(120)).await;
    let info = registered.status.unwrap().node_info.unwrap();
    assert_eq!(
        info.kubelet_version, "v1.36.4",
        "the control plane's release"
    );
    assert_eq!(info.container_runtime_version, "containerd://2.4.2");

    // The kubelet's own credentials: the Node authorizer and NodeRestriction let it change
    // its own Node only.
    let kubelet = client_from(&node.root("/etc/kubernetes/kubelet.kubeconfig")).await;
    let nodes = Api::<Node>::all(kubelet);
    let label = json!({"metadata": {"labels": {"example.com/probe": "1"}}});
    nodes
        .patch("node-a", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .expect("a node labels itself");
    let other: Node = serde_json::from_value(json!({"metadata": {"name": "node-z"}})).unwrap();
    let refused = nodes.create(&PostParams::default(), &other).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(e)) if e.code == 403),
        "a node creates no other Node: {refused:?}"
    );

    let pods = Api::<Pod>::namespaced(admin.clone(), "default");
    pods.create(
        &PostParams::default(),
        &busybox_pod("sleeper", Some("node-a")),
    )
    .await
    .unwrap();
    let pod = wait_pod(
        &pods,
        "sleeper",
        "Running",
        Duration::from_secs(90),
        running,
    )
    .await;
    assert_eq!(
        pod.spec.as_ref().unwrap().node_name.as_deref(),
        Some("node-a"),
        "kube-scheduler bound it"
    );
    let pod_ip = pod.status.as_ref().unwrap().pod_ip.clone().unwrap();
    assert!(pod_ip.starts_with("10.244.1."), "{pod_ip}");
    let addrs = node.in_pod_netns(&pod, "main", "ip", &["-j", "addr"]);
    assert_eq!(
        ipv4_of(&addrs, "eth0"),
        vec![pod_ip.clone()],
        "the pod's eth0"
    );
    let hostname = node.exec(&pod, "main", &["/bin/cat", "/etc/hostname"]);
    assert_eq!(String::from_utf8_lossy(&hostname.stdout).trim(), "sleeper");
    let leased = node.root("/var/lib/cni/networks/default").join(&pod_ip);
    assert!(
        leased.exists(),
        "host-local holds {pod_ip} in the node's /var/lib/cni"
    );
    let busy = node.processes().len();

    pods.delete("sleeper", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&pods, "sleeper", Duration::from_secs(60)).await;
    assert!(!leased.exists(), "the runtime's DEL released {pod_ip}");
    assert!(
        node.processes().len() < busy,
        "the pod's processes are gone"
    );
}

/// A client from a kubeconfig whose server is the control plane (as the node sees it: the
/// same address, forwarded).
async fn client_from(kubeconfig: &std::path::Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_nodes_side_by_side_and_nothing_left_after_them() {
    let cp = control_plane();
    let admin = cp.admin_client().await;
    let pods = Api::<Pod>::namespaced(admin.clone(), "default");
    let (mut dirs, mut cgroups) = (Vec::<PathBuf>::new(), Vec::<String>::new());
    {
        let mut nodes = Vec::new();
        for (i, name) in ["node-b", "node-c"].into_iter().enumerate() {
            let node = KubeNode::new(cp, name);
            default_network(&node, &format!("10.244.{}.0/24", 2 + i));
            nodes.push(node);
        }
        for node in &mut nodes {
            node.boot();
        }
        for node in &mut nodes {
            node.wait_ready(&admin, Duration::from_secs(120)).await;
            let pod = format!("on-{}", node.name);
            pods.create(&PostParams::default(), &busybox_pod(&pod, Some(&node.name)))
                .await
                .unwrap();
        }
        for node in &nodes {
            let pod = format!("on-{}", node.name);
            let p = wait_pod(&pods, &pod, "Running", Duration::from_secs(90), running).await;
            assert_eq!(
                p.spec.unwrap().node_name.as_deref(),
                Some(node.name.as_str())
            );
            dirs.push(node.sb.dir().to_owned());
            cgroups.push(node.cgroup().to_owned());
            assert!(!node.processes().is_empty());
        }
    }
    for (dir, cgroup) in dirs.iter().zip(&cgroups) {
        assert!(!dir.exists(), "{} removed", dir.display());
        assert!(
            sandbox::cgroup_members(cgroup).is_empty(),
            "nothing runs in {cgroup}"
        );
        for hierarchy in sandbox::cgroup_hierarchies() {
            assert!(!hierarchy.join(cgroup).exists(), "{cgroup} removed");
        }
    }
    for name in ["on-node-b", "on-node-c"] {
        let _ = pods
            .delete(name, &DeleteParams::default().grace_period(0))
            .await;
    }
}

/// The victim of [`a_killed_test_leaves_nothing`]: boots a node with a running pod, prints
/// its sandbox and cgroup, and waits to be killed.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a helper process: a_killed_test_leaves_nothing runs it and kills it with SIGKILL"]
async fn victim_node_process() {
    let cp = ControlPlane::start(ControlPlaneOptions::new("victim").controller_manager());
    let admin = cp.admin_client().await;
    let mut node = KubeNode::new(&cp, "victim");
    default_network(&node, "10.244.9.0/24");
    node.boot();
    node.wait_ready(&admin, Duration::from_secs(120)).await;
    let pods = Api::<Pod>::namespaced(admin.clone(), "default");
    let mut pod = busybox_pod("victim-pod", None);
    pod.spec.as_mut().unwrap().node_name = Some("victim".into());
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_pod(
        &pods,
        "victim-pod",
        "Running",
        Duration::from_secs(90),
        running,
    )
    .await;
    println!(
        "VICTIM {} {} {}",
        node.sb.dir().display(),
        node.cgroup(),
        node.processes().len()
    );
    std::thread::sleep(Duration::from_secs(600));
}

#[test]
fn a_killed_test_leaves_nothing() {
    use std::io::BufRead as _;
    spinel_netns_tests::require_root();
    let mut victim = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "victim_node_process", "--ignored", "--nocapture"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = victim.stdout.take().unwrap();
    let line = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("VICTIM "))
        .expect("the victim reports its node");
    let mut fields = line.split_whitespace().skip(1);
    let (dir, cgroup, processes) = (
        PathBuf::from(fields.next().unwrap()),
        fields.next().unwrap().to_owned(),
        fields.next().unwrap().parse::<usize>().unwrap(),
    );
    assert!(
        processes >= 4,
        "kubelet, containerd, a shim, the pod's processes"
    );
    victim.kill().unwrap();
    victim.wait().unwrap();
    // The node's watchdog kills every process of the node once the test process is gone.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sandbox::cgroup_members(&cgroup).is_empty() {
        assert!(
            Instant::now() < deadline,
            "processes of the killed test's node still run: {:?}",
            sandbox::cgroup_members(&cgroup)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The next sandbox sweeps what is left on disk: namespaces, directories, the cgroup.
    let _next = spinel_netns_tests::Sandbox::new("after-the-victim");
    assert!(!dir.exists(), "{} swept", dir.display());
    for hierarchy in sandbox::cgroup_hierarchies() {
        assert!(!hierarchy.join(&cgroup).exists(), "{cgroup} swept");
    }
}
