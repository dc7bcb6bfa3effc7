//! The real Multus in front of `spinel`: the Multus thin plugin built from its source
//! (`tests/k8s/build-multus.sh`), its NetworkAttachmentDefinition CRD and RBAC from its own
//! deployment manifest, the kubelet's pod-resources API served with the kubelet's own types
//! (`spinel-k8s podresources`), and a runtime that calls the CNI chain through containerd's
//! go-cni with the labels and capabilities containerd sends (`spinel-k8s cni`).
//!
//! Multus reads the device plugin's allocation from `/var/lib/kubelet/pod-resources` and keeps
//! device-info files under `/var/run/k8s.cni.cncf.io`, both fixed paths; libcni caches results
//! under `/var/lib/cni`. The runtime therefore runs in a private mount namespace where those
//! three are this rig's directories, inside the simulated node's network namespace.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::{ApiResource, Discovery};
use serde_json::{Value, json};

use crate::cni::DEBIAN_CNI_DIR;
use crate::k8s::{ControlPlane, service_account_token};
use crate::node::SimNode;

/// Where Multus's own build puts its binary and unpacked source.
fn build_dir() -> PathBuf {
    crate::k8s::binary()
        .parent()
        .map(Path::to_owned)
        .expect("spinel-k8s lives in a directory")
}

/// The Multus thin plugin built by `tests/k8s/build-multus.sh`.
pub fn binary() -> PathBuf {
    let path = build_dir().join("multus");
    assert!(
        path.is_file(),
        "{} is missing: run tests/k8s/build-multus.sh (./scripts/test.sh does)",
        path.display()
    );
    path
}

/// Multus's unpacked source (its `deployments/` are applied as Multus ships them).
pub fn source() -> PathBuf {
    build_dir().join("multus-src")
}

/// The NetworkAttachmentDefinition resource.
pub fn nad_resource() -> ApiResource {
    ApiResource {
        group: "k8s.cni.cncf.io".into(),
        version: "v1".into(),
        api_version: "k8s.cni.cncf.io/v1".into(),
        kind: "NetworkAttachmentDefinition".into(),
        plural: "network-attachment-definitions".into(),
    }
}

/// Applies what Multus's own manifest holds for the cluster (the NetworkAttachmentDefinition
/// CRD, its ClusterRole, binding and ServiceAccount), waits until NADs are served, and
/// returns a token of Multus's ServiceAccount.
pub async fn install(admin: &kube::Client) -> String {
    let manifest = source().join("deployments/multus-daemonset.yml");
    let docs: Vec<Value> = crate::cluster::documents_at(&manifest)
        .into_iter()
        .filter(|d| {
            matches!(
                d["kind"].as_str(),
                Some(
                    "CustomResourceDefinition"
                        | "ClusterRole"
                        | "ClusterRoleBinding"
                        | "ServiceAccount"
                )
            )
        })
        .collect();
    assert_eq!(
        docs.len(),
        4,
        "{}: CRD, RBAC and ServiceAccount",
        manifest.display()
    );
    crate::cluster::apply_documents(admin, &docs, &manifest.display().to_string()).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let discovery = Discovery::new(admin.clone())
            .run()
            .await
            .expect("discovery");
        if discovery.has_group("k8s.cni.cncf.io") {
            break;
        }
        assert!(Instant::now() < deadline, "NADs not served within 30 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    service_account_token(admin, "kube-system", "multus").await
}

/// Creates (or replaces) NetworkAttachmentDefinition `name` in `namespace` with CNI
/// configuration `config`, for device plugin resource `resource` when given.
pub async fn put_nad(
    admin: &kube::Client,
    namespace: &str,
    name: &str,
    resource: Option<&str>,
    config: &Value,
) {
    let mut obj = json!({
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"config": config.to_string()},
    });
    if let Some(resource) = resource {
        obj["metadata"]["annotations"] = json!({"k8s.v1.cni.cncf.io/resourceName": resource});
    }
    Api::<DynamicObject>::namespaced_with(admin.clone(), namespace, &nad_resource())
        .patch(
            name,
            &PatchParams::apply("spinel-test").force(),
            &Patch::Apply(&obj),
        )
        .await
        .unwrap_or_else(|e| panic!("apply NAD {namespace}/{name}: {e}"));
}

/// A pod as the runtime knows it.
#[derive(Debug, Clone)]
pub struct PodRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID the API server gave it (Multus checks it).
    pub uid: String,
    /// The sandbox ID the runtime uses as `CNI_CONTAINERID`.
    pub sandbox: String,
    /// Its annotations, as the runtime passes them.
    pub annotations: Value,
}

/// Creates a Pod object with `annotations` (never scheduled: no node runs here) and returns
/// how the runtime refers to it.
pub async fn create_pod(
    admin: &kube::Client,
    namespace: &str,
    name: &str,
    annotations: Value,
) -> PodRef {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"containers": [{"name": "trainer", "image": "trainer"}]},
    }))
    .expect("a Pod");
    let created = Api::<Pod>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("create pod {namespace}/{name}: {e}"));
    let uid = created.metadata.uid.expect("a UID");
    PodRef {
        namespace: namespace.into(),
        name: name.into(),
        sandbox: format!("sb{}", &uid.replace('-', "")[..16]),
        uid,
        annotations,
    }
}

/// The `k8s.v1.cni.cncf.io/network-status` Multus wrote on `pod`, parsed.
pub async fn network_status(admin: &kube::Client, pod: &PodRef) -> Value {
    let got = Api::<Pod>::namespaced(admin.clone(), &pod.namespace)
        .get(&pod.name)
        .await
        .unwrap_or_else(|e| panic!("get pod {}: {e}", pod.name));
    got.metadata
        .annotations
        .and_then(|a| a.get("k8s.v1.cni.cncf.io/network-status").cloned())
        .map(|s| serde_json::from_str(&s).expect("network-status is JSON"))
        .unwrap_or(Value::Null)
}

/// What the runtime's call printed.
#[derive(Debug)]
pub struct RuntimeOutput {
    /// Whether it exited 0.
    pub success: bool,
    /// ADD's results (one per network, in order), else `Null`.
    pub results: Value,
    /// Its stderr: the error the runtime reports, and Multus's log.
    pub stderr: String,
}

impl RuntimeOutput {
    /// The results, or a panic with the error.
    #[track_caller]
    pub fn expect_ok(&self, what: &str) -> &Value {
        assert!(self.success, "{what} failed:\n{}", self.stderr);
        &self.results
    }
}

/// One resource's devices: (resource name, PCI addresses).
pub type Allocation<'a> = (&'a str, Vec<&'a str>);

/// A simulated SR-IOV node whose CNI configuration is Multus with a default network of
/// Debian's plugins, and a kubelet pod-resources socket.
pub struct MultusNode {
    /// The API server's port inside the node (dropped before the node's namespaces).
    _api: crate::loopback::LoopbackBridge,
    /// The node (its `spinel` settings point the device-info directory at Multus's).
    pub node: SimNode,
    conf_dir: PathBuf,
    bind_kubelet: PathBuf,
    bind_cni_cache: PathBuf,
    bind_k8s_cni: PathBuf,
    allocations: PathBuf,
}

/// The fixed paths Multus and libcni use, and the rig directories bound over them.
const BINDS: [(&str, &str); 3] = [
    ("kubelet", "/var/lib/kubelet/pod-resources"),
    ("cni-cache", "/var/lib/cni"),
    ("k8s-cni", "/run/k8s.cni.cncf.io"),
];

impl MultusNode {
    /// Builds the node with `num_vfs` VFs; Multus talks to `cp` with `multus_token`.
    pub fn new(test: &str, num_vfs: u32, cp: &ControlPlane, multus_token: &str) -> Self {
        let mut node = SimNode::new(test, num_vfs);
        let dir = node.sb.dir().to_owned();
        for (sub, target) in BINDS {
            fs::create_dir_all(dir.join(sub)).unwrap();
            // The mount points themselves, as a node has them.
            fs::create_dir_all(target).unwrap();
        }
        fs::create_dir_all(dir.join("k8s-cni/devinfo/cni")).unwrap();
        fs::create_dir_all(dir.join("k8s-cni/devinfo/dp")).unwrap();
        node.edit_settings(|s| s["deviceInfoDir"] = json!("/var/run/k8s.cni.cncf.io/devinfo"));
        for plugin in ["ptp", "loopback"] {
            let link = node.cni_path.join(plugin);
            if !link.exists() {
                symlink(Path::new(DEBIAN_CNI_DIR).join(plugin), link).unwrap();
            }
        }
        symlink(binary(), node.cni_path.join("multus")).unwrap();

        let kubeconfig = dir.join("multus.kubeconfig");
        crate::cluster::write_kubeconfig(&kubeconfig, cp.server(), cp.ca_file(), multus_token);
        let conf_dir = dir.join("net.d");
        fs::create_dir_all(&conf_dir).unwrap();
        // As Multus's thin entrypoint writes it: the default network as the first delegate.
        let multus_conf = json!({
            "cniVersion": "1.0.0",
            "name": "multus-cni-network",
            "type": "multus",
            "kubeconfig": kubeconfig,
            "binDir": node.cni_path,
            "cniDir": dir.join("multus-cache"),
            "logToStderr": true,
            "logLevel": "error",
            "delegates": [{
                "cniVersion": "1.0.0",
                "name": "default",
                "plugins": [{
                    "type": "ptp",
                    "ipam": {
                        "type": "host-local",
                        "dataDir": node.ipam_dir,
                        "ranges": [[{"subnet": "10.244.0.0/24"}]],
                    },
                }],
            }],
        });
        fs::write(conf_dir.join("00-multus.conf"), multus_conf.to_string()).unwrap();

        let allocations = dir.join("allocations.json");
        let mut server = Command::new(crate::k8s::binary());
        server
            .arg("podresources")
            .arg("--socket")
            .arg(dir.join("kubelet/kubelet.sock"))
            .arg("--allocations")
            .arg(&allocations)
            .arg("--exit-with-stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::null());
        node.sb.spawn(server);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !dir.join("kubelet/kubelet.sock").exists() {
            assert!(
                Instant::now() < deadline,
                "pod-resources server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let api = crate::loopback::LoopbackBridge::new(&node.sb.netns_path("node"), cp.port());
        Self {
            _api: api,
            node,
            conf_dir,
            bind_kubelet: dir.join("kubelet"),
            bind_cni_cache: dir.join("cni-cache"),
            bind_k8s_cni: dir.join("k8s-cni"),
            allocations,
        }
    }

    /// What the device plugin allocated, served on the pod-resources socket as the kubelet
    /// serves it.
    pub fn allocate(&self, pods: &[(&PodRef, Vec<Allocation<'_>>)]) {
        let pod_resources: Vec<Value> = pods
            .iter()
            .map(|(pod, devices)| {
                json!({
                    "name": pod.name,
                    "namespace": pod.namespace,
                    "containers": [{
                        "name": "trainer",
                        "devices": devices.iter().map(|(resource, ids)| json!({
                            "resourceName": resource,
                            "deviceIds": ids,
                        })).collect::<Vec<_>>(),
                    }],
                })
            })
            .collect();
        let tmp = self.allocations.with_extension("tmp");
        fs::write(&tmp, json!({"podResources": pod_resources}).to_string()).unwrap();
        fs::rename(tmp, &self.allocations).unwrap();
    }

    /// Writes the device-info file the SR-IOV device plugin writes at Allocate for `pci` of
    /// `resource` (Multus copies it for the attachment).
    pub fn device_plugin_info(&self, resource: &str, pci: &str, rdma: &str) {
        let name = format!("{}-{pci}-device.json", resource.replace('/', "-"));
        let info = json!({"type": "pci", "version": "1.1.0", "pci": {"pci-address": pci, "rdma-device": rdma}});
        fs::write(
            self.bind_k8s_cni.join("devinfo/dp").join(name),
            info.to_string(),
        )
        .unwrap();
    }

    /// Device-info files Multus and spinel left for attachments.
    pub fn cni_device_info_files(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.bind_k8s_cni.join("devinfo/cni"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The pod network namespace `name` (created when missing).
    pub fn pod_netns(&self, name: &str) -> PathBuf {
        let path = self.node.sb.netns_path(name);
        if path.exists() {
            path
        } else {
            self.node.pod(name)
        }
    }

    /// Runs `verb` (`add`, `check`, `del`, `status`) for `pod` in `netns` as containerd
    /// does, or `gc` keeping `keep` (`containerID/ifname`).
    pub fn runtime(
        &self,
        verb: &str,
        pod: &PodRef,
        netns: &Path,
        keep: &[String],
    ) -> RuntimeOutput {
        // unshare(1) gives the runtime its own mount namespace in the node's network namespace.
        let script = r#"set -e
mount --bind "$1" /var/lib/kubelet/pod-resources
mount --bind "$2" /var/lib/cni
mount --bind "$3" /run/k8s.cni.cncf.io
shift 3
exec "$@""#;
        let mut cmd = self.node.command(Path::new("/usr/bin/unshare"));
        cmd.args([
            "--mount",
            "--propagation",
            "private",
            "--",
            "/bin/sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&self.bind_kubelet)
        .arg(&self.bind_cni_cache)
        .arg(&self.bind_k8s_cni)
        .arg(crate::k8s::binary())
        .arg("cni")
        .arg("--conf-dir")
        .arg(&self.conf_dir)
        .arg("--bin-dir")
        .arg(&self.node.cni_path)
        .arg("--netns")
        .arg(netns)
        .arg("--id")
        .arg(&pod.sandbox)
        .arg("--pod-namespace")
        .arg(&pod.namespace)
        .arg("--pod-name")
        .arg(&pod.name)
        .arg("--pod-uid")
        .arg(&pod.uid)
        .arg("--annotations")
        .arg(pod.annotations.to_string())
        .arg("--keep")
        .arg(keep.join(","))
        .arg(verb)
        .stdin(Stdio::null());
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("run the CNI runtime: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        RuntimeOutput {
            success: out.status.success(),
            results: serde_json::from_str::<Value>(&stdout)
                .map(|v| v["results"].clone())
                .unwrap_or(Value::Null),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}
