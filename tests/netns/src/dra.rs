//! The DRA tier: Spinel's agent as the `roce.spinel.dev` driver on simulated RoCE nodes, the
//! real kube-apiserver and kube-scheduler (DRA is GA in 1.36; its scheduler plugin allocates),
//! and Kubernetes' own ResourceClaim controller (`spinel-k8s resourceclaim-controller`), which
//! turns a pod's claim template into its claim.
//!
//! [`DraNode`] is an [`AgentNode`] with `rails` RoCE NICs (`pf0`..), each with VFs in the fake
//! sysfs (no netdevs: allocation needs none) and each under a PCIe root complex of the test's
//! choosing, as the kernel lays sysfs out (`bus/pci/devices/<bdf>` linking into
//! `devices/pci<root>/...`). Its place in the fabric is what the fabric controller would have
//! told it: the `NodeFabric`'s status labels (tier and rail leaves), written as the controller
//! writes them, and each NIC's LLDP neighbour: carried over from the published report as a
//! restarted agent carries it, then heard from the leaf's own LLDP (each leaf port sends it).

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use spinel_api::crd::NodeFabric;
use spinel_wire::neighbor::{
    ChassisId, ChassisIdSubtype, Neighbor, NeighborTable, Observer, PortId, PortIdSubtype,
    PortNeighbors,
};

use crate::Sandbox;
use crate::agent::AgentNode;
use crate::cluster;
use crate::k8s::{ControlPlane, ControlPlaneOptions};
use crate::node::PF_PCI;

/// The label that keeps a test's pods on that test's nodes.
pub const GROUP_LABEL: &str = "spinel.test/group";

/// A control plane with kube-scheduler, Spinel's manifests (agent, DRA) and the ResourceClaim
/// controller.
pub struct DraCluster {
    /// The control plane.
    pub cp: ControlPlane,
    _controller: Child,
    _sandbox: Sandbox,
}

impl DraCluster {
    /// Starts it (as root: the tier's sandboxes live under `/run/spinel-test`).
    pub fn start(rt: &tokio::runtime::Runtime, name: &str) -> Self {
        let cp = ControlPlane::start(
            ControlPlaneOptions::new(name)
                .crd_dir(cluster::workspace_root().join("deploy/crds"))
                .scheduler("{}"),
        );
        rt.block_on(async {
            let admin = cp.admin_client().await;
            cluster::apply_files(
                &admin,
                &[
                    "deploy/namespace.yaml",
                    "deploy/agent/rbac.yaml",
                    "deploy/agent/admission-policy.yaml",
                    "deploy/dra/rbac.yaml",
                    "deploy/dra/admission-policy.yaml",
                    "deploy/dra/device-classes.yaml",
                ],
            )
            .await;
            service_account(&admin, cluster::NAMESPACE).await;
        });
        let sandbox = Sandbox::new(&format!("{name}-claims"));
        let mut controller = Command::new(crate::k8s::binary())
            .arg("resourceclaim-controller")
            .arg("--kubeconfig")
            .arg(cp.kubeconfig())
            .arg("--exit-with-stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(fs::File::create(sandbox.dir().join("resourceclaim-controller.log")).unwrap())
            .spawn()
            .expect("spawn spinel-k8s resourceclaim-controller");
        sandbox.record_pid(controller.id());
        let mut line = String::new();
        BufReader::new(controller.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.contains("\"ready\":true"),
            "resourceclaim-controller did not start: {line:?}"
        );
        Self {
            cp,
            _controller: controller,
            _sandbox: sandbox,
        }
    }
}

/// Creates `namespace` (if missing) and its `default` ServiceAccount (no controller manager
/// makes it here; admission needs it for every pod).
pub async fn namespace(admin: &kube::Client, namespace: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap();
    match Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &ns)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create namespace {namespace}: {e}"),
    }
    service_account(admin, namespace).await;
}

async fn service_account(admin: &kube::Client, namespace: &str) {
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    match Api::<ServiceAccount>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &sa)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create {namespace}/default ServiceAccount: {e}"),
    }
}

/// The agent configuration of these tests: quick health and inventory, DRA on.
pub fn agent_config() -> Value {
    json!({
        "reportDebounceMs": 100,
        "routing": {"enabled": false},
        "garp": {"enabled": false},
        "health": {"periodSeconds": 1, "unhealthyAfterSeconds": 1, "healthyAfterSeconds": 3,
                   "neighborGraceSeconds": 0},
        "dra": {"enabled": true, "inventorySeconds": 1},
    })
}

/// The PCI address of NIC `k`'s PF.
pub fn pf_pci(k: u8) -> String {
    if k == 0 {
        PF_PCI.to_owned()
    } else {
        format!("0000:{:02x}:00.0", 0x3b + k)
    }
}

/// The PCI address of VF `j` of NIC `k`.
pub fn vf_pci(k: u8, j: u32) -> String {
    format!("0000:{:02x}:{:02x}.{}", 0x3b + k, 0x10 + j / 8, j % 8)
}

/// Moves the PCI functions `bdfs` under PCIe root `root` (behind one bridge) and links them
/// back from `bus/pci/devices`, with NUMA node `numa`.
pub fn place_under_root(sys: &Path, bdfs: &[String], root: &str, numa: i64) {
    let bridge = sys
        .join("devices")
        .join(root)
        .join(format!("{}:00.0", &root[3..]));
    fs::create_dir_all(&bridge).unwrap();
    for bdf in bdfs {
        let link = sys.join("bus/pci/devices").join(bdf);
        fs::rename(&link, bridge.join(bdf)).unwrap();
        fs::write(bridge.join(bdf).join("numa_node"), format!("{numa}\n")).unwrap();
        let target = format!(
            "../../../devices/{root}/{}/{bdf}",
            bridge.file_name().unwrap().to_str().unwrap()
        );
        symlink(target, &link).unwrap();
    }
}

/// Where a node sits: its leaf group and spine, and the leaf name of each rail.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The spine domain's id (tier 2).
    pub spine: String,
    /// The leaf group's id (tier 1), under the spine.
    pub group: String,
}

impl Placement {
    /// The LLDP system name of rail `k`'s leaf.
    pub fn leaf_name(&self, k: u8) -> String {
        format!("{}-leaf{k}", self.group)
    }

    /// The fabric model's id of rail `k`'s leaf.
    pub fn leaf_id(&self, k: u8) -> String {
        format!("{}.{}.{}", self.spine, self.group, self.leaf_name(k))
    }

    /// `spinelctl lldp send` as rail `k`'s leaf on its port `swp<k+1>` in `sb`'s namespace
    /// `leaf`, every second: the leaf's LLDP as the node's NIC `pf<k>` hears it.
    pub fn leaf_lldp(&self, sb: &Sandbox, k: u8) -> Command {
        let mut cmd = Command::new(crate::cni::spinelctl_binary());
        cmd.args(["lldp", "send", "--netns"])
            .arg(sb.netns_path("leaf"))
            .args(["--iface", &format!("swp{}", k + 1)])
            .args(["--chassis-id", &format!("0c:42:a1:00:{k:02x}:01")])
            .args(["--chassis-id-subtype", "mac"])
            .args(["--port-id", &format!("Ethernet{}", 4 * u32::from(k))])
            .args(["--port-id-subtype", "ifname", "--system-name"])
            .arg(self.leaf_name(k))
            .args(["--capabilities", "bridge,router", "--tx-interval", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// The node labels the controller computes for a node with `rails` rails.
    pub fn labels(&self, rails: u8) -> Value {
        let mut labels = json!({
            "fabric.spinel.dev/tier-1": format!("{}.{}", self.spine, self.group),
            "fabric.spinel.dev/tier-2": self.spine,
            "fabric.spinel.dev/rails": rails.to_string(),
        });
        for k in 0..rails {
            labels[format!("fabric.spinel.dev/rail-{k}")] = json!(self.leaf_id(k));
        }
        labels
    }
}

/// A simulated RoCE node whose agent is a DRA driver.
pub struct DraNode {
    /// The agent and its node.
    pub agent: AgentNode,
    /// NICs (rails).
    pub rails: u8,
    /// VFs per NIC.
    pub vfs: u32,
    /// Each rail's leaf port sending LLDP.
    leaves: Vec<Child>,
}

impl Drop for DraNode {
    fn drop(&mut self) {
        for leaf in &mut self.leaves {
            let _ = leaf.kill();
            let _ = leaf.wait();
        }
    }
}

impl DraNode {
    /// Node `name` in test group `group`: one NIC (rail) per entry of `roots`, with `vfs` VFs
    /// each, NIC `k` under PCIe root `roots[k]` (NUMA node: the index of its root's first
    /// occurrence in `roots` modulo 2), cabled as `placement` says. The agent is not started.
    pub fn new(
        rt: &tokio::runtime::Runtime,
        cluster: &DraCluster,
        name: &str,
        group: &str,
        vfs: u32,
        roots: &[&str],
        placement: &Placement,
    ) -> Self {
        let rails = u8::try_from(roots.len()).expect("at most 255 NICs");
        let mut agent = AgentNode::new(rt, &cluster.cp, name, 0, agent_config());
        // The kubelet plugin's directories in the sandbox, never the machine's.
        let dir = agent.node.sb.dir().to_owned();
        let mut config: Value =
            serde_json::from_str(&fs::read_to_string(&agent.config).unwrap()).unwrap();
        config["dra"]["pluginRegistry"] = json!(dir.join("kubelet/plugins_registry"));
        config["dra"]["pluginDir"] = json!(dir.join("kubelet/plugins/roce.spinel.dev"));
        config["dra"]["cdiDir"] = json!(dir.join("cdi"));
        config["dra"]["stateDir"] = json!(dir.join("dra-state"));
        fs::write(&agent.config, config.to_string()).unwrap();
        for k in 1..rails {
            agent.add_nic(k);
        }
        let sys = agent.node.sb.dir().join("sys");
        for k in 0..rails {
            let mut functions = vec![pf_pci(k)];
            for j in 0..vfs {
                let pci = vf_pci(k, j);
                agent
                    .node
                    .sysfs
                    .add_vf(&pf_pci(k), j, &pci, None, "mlx5_core");
                agent
                    .node
                    .sysfs
                    .add_rdma(&pci, &format!("mlx5_{}", 100 + u32::from(k) * 64 + j));
                functions.push(pci);
            }
            let numa = roots
                .iter()
                .position(|r| *r == roots[usize::from(k)])
                .unwrap() as i64
                % 2;
            place_under_root(&sys, &functions, roots[usize::from(k)], numa);
        }
        rt.block_on(async {
            let admin = cluster.cp.admin_client().await;
            Api::<Node>::all(admin.clone())
                .patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": {GROUP_LABEL: group}}})),
                )
                .await
                .unwrap();
            place(&admin, name, rails, placement).await;
        });
        let leaves = (0..rails)
            .map(|k| leaf_sends_lldp(&agent, k, placement))
            .collect();
        Self {
            agent,
            rails,
            vfs,
            leaves,
        }
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.agent.name
    }

    /// Starts the agent.
    pub fn start(&mut self) {
        self.agent.start(&[]);
    }
}

/// Rail `k`'s leaf port (`swp<k+1>` in the node's leaf namespace) advertises the leaf that
/// `placement` names, every second, for as long as the node's sandbox lives.
fn leaf_sends_lldp(agent: &AgentNode, k: u8, placement: &Placement) -> Child {
    let sb = &agent.node.sb;
    let child = placement
        .leaf_lldp(sb, k)
        .spawn()
        .expect("spawn spinelctl lldp send");
    sb.record_pid(child.id());
    child
}

/// The node's report with each NIC's leaf as LLDP neighbour, as the node's previous agent run
/// published it (so the agent starts from it), and the status the fabric controller writes
/// for it (its labels). The leaves' own LLDP keeps the neighbours from then on.
async fn place(admin: &kube::Client, node: &str, rails: u8, placement: &Placement) {
    let ports = (0..rails)
        .map(|k| {
            let mut n = Neighbor::new(
                ChassisId {
                    subtype: ChassisIdSubtype::MacAddress,
                    value: format!("0c:42:a1:00:{k:02x}:01"),
                },
                PortId {
                    subtype: PortIdSubtype::InterfaceName,
                    value: format!("Ethernet{}", 4 * u32::from(k)),
                },
                u16::MAX,
            );
            n.system_name = Some(placement.leaf_name(k));
            PortNeighbors {
                port: format!("pf{k}"),
                neighbors: vec![n],
                counters: None,
            }
        })
        .collect();
    let table = NeighborTable {
        schema: spinel_wire::neighbor::SCHEMA.into(),
        observer: Observer {
            name: node.into(),
            chassis_id: None,
            role: None,
        },
        ports,
    };
    let nics: Vec<Value> = (0..rails)
        .map(|k| json!({"name": format!("pf{k}"), "mtu": 9000, "carrier": true}))
        .collect();
    let fabrics = Api::<NodeFabric>::all(admin.clone());
    let report = json!({
        "apiVersion": "fabric.spinel.dev/v1alpha1", "kind": "NodeFabric",
        "metadata": {"name": node, "annotations": {
            spinel_api::crd::LISTENING_SINCE_ANNOTATION: "2026-01-01T00:00:00Z"}},
        "spec": {"nodeName": node, "nics": nics, "lldp": table},
    });
    fabrics
        .patch(
            node,
            &PatchParams::apply("spinel-test").force(),
            &Patch::Apply(report),
        )
        .await
        .unwrap_or_else(|e| panic!("NodeFabric/{node}: {e}"));
    set_labels(admin, node, placement.labels(rails)).await;
}

/// Writes `labels` into `NodeFabric/<node>`'s status, as the fabric controller does.
pub async fn set_labels(admin: &kube::Client, node: &str, labels: Value) {
    let tier1 = labels["fabric.spinel.dev/tier-1"].clone();
    Api::<NodeFabric>::all(admin.clone())
        .patch_status(
            node,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"labels": labels, "tier1": tier1, "observedGeneration": 1}}),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("NodeFabric/{node} status: {e}"));
}

/// The node's slices of `roce.spinel.dev`.
pub async fn slices(admin: &kube::Client, node: &str) -> Vec<ResourceSlice> {
    Api::<ResourceSlice>::all(admin.clone())
        .list(&ListParams::default().fields(&format!(
            "spec.nodeName={node},spec.driver={}",
            spinel_api::dra::DRIVER
        )))
        .await
        .unwrap()
        .items
}

/// Publishes `gpus` fake GPUs of the driver `gpu.nvidia.com` on `node`, GPU `i` on PCIe root
/// `gpus[i]`, and its DeviceClass: the GPU side of a GPU+NIC claim, as a GPU driver would
/// publish it. Tests only.
pub async fn fake_gpus(admin: &kube::Client, node: &str, gpus: &[&str]) {
    let class = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.nvidia.com\""}}]},
    });
    cluster::apply_documents(admin, &[class], "fake GPU class").await;
    let devices: Vec<Value> = gpus
        .iter()
        .enumerate()
        .map(|(i, root)| {
            json!({"name": format!("gpu-{i}"), "attributes": {
                "resource.kubernetes.io/pcieRoot": {"string": root},
                "gpu.nvidia.com/type": {"string": "gpu"},
            }})
        })
        .collect();
    let slice = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-gpu.nvidia.com")},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices},
    });
    cluster::apply_documents(admin, &[slice], "fake GPU slice").await;
}

/// Creates pod `name` in `namespace` on the nodes of `group`, with `claims`
/// (`[{name, resourceClaimTemplateName}]`) all used by its one container.
pub async fn claim_pod(
    admin: &kube::Client,
    namespace: &str,
    name: &str,
    group: &str,
    claims: Value,
) {
    let uses: Vec<Value> = claims
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!({"name": c["name"]}))
        .collect();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeSelector": {GROUP_LABEL: group},
            "resourceClaims": claims,
            "containers": [{"name": "trainer", "image": "trainer", "resources": {"claims": uses}}],
        },
    }))
    .unwrap();
    Api::<Pod>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("create pod {namespace}/{name}: {e}"));
}

/// The devices allocated to pod `name`'s claims, once it is bound: (node, [(request, pool,
/// device)]); `None` while it is not.
pub async fn allocation(
    admin: &kube::Client,
    namespace: &str,
    name: &str,
) -> Option<(String, Vec<(String, String, String, String)>)> {
    let pod = Api::<Pod>::namespaced(admin.clone(), namespace)
        .get(name)
        .await
        .ok()?;
    let node = pod.spec.as_ref()?.node_name.clone()?;
    let statuses = pod.status?.resource_claim_statuses?;
    let claims = Api::<ResourceClaim>::namespaced(admin.clone(), namespace);
    let mut out = Vec::new();
    for s in statuses {
        let claim = claims.get(s.resource_claim_name.as_deref()?).await.ok()?;
        for r in claim.status?.allocation?.devices?.results? {
            out.push((r.request, r.driver, r.pool, r.device));
        }
    }
    Some((node, out))
}

/// The `PodScheduled` condition of a pod: (status, reason, message).
pub async fn scheduled(
    admin: &kube::Client,
    namespace: &str,
    name: &str,
) -> Option<(String, String, String)> {
    let pod = Api::<Pod>::namespaced(admin.clone(), namespace)
        .get(name)
        .await
        .ok()?;
    let c = pod
        .status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")?;
    Some((
        c.status,
        c.reason.unwrap_or_default(),
        c.message.unwrap_or_default(),
    ))
}

/// Polls `check` every 100 ms until it returns `Some`, at most `timeout`; panics naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(start.elapsed() < timeout, "{what}: not within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
