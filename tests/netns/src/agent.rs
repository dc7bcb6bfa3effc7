//! [`AgentNode`]: the real `spinel-agent` on a [`SimNode`], against the real API server of
//! the Kubernetes tier ([`crate::k8s`]), with the agent's own manifests (CRDs, RBAC, the
//! admission policy) applied and a pod-bound ServiceAccount token, as a DaemonSet pod has.
//!
//! The node's PF `pf0` gets what a RoCE NIC has: an RDMA device `mlx5_0` in the fake sysfs,
//! a host address (10.56.0.2/24), a RoCE v2 GID for it, a link speed. The agent runs in the
//! machine's namespace (where the API server listens) and works on the node's namespace with
//! `--netns`, as a DaemonSet with `hostNetwork` works on its node's. Its host PFC comes from a
//! recorded dcbnl reply the test writes (veth has no DCB operations; see
//! `health.dcbReplayDir`), which the agent decodes with the real decoder.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;

use crate::free_port;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hostnet::dcb::{
    DCB_CMD_IEEE_GET, DcbAttribute, DcbMessage, IeeeAttribute, IeeePfc, RTM_GETDCB,
};
use hostnet::netns::NetNs;
use hostnet::packet::{PacketConfig, PacketError, PacketSocket};
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use netlink_packet_core::NetlinkSerializable;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::k8s::{ControlPlane, ControlPlaneOptions, pod_bound_token};
use crate::node::{PF_PCI, SimNode};

/// The host address of `pf0`.
pub const HOST_IP: &str = "10.56.0.2";
/// The agent's namespace (as deployed).
pub const NAMESPACE: &str = "spinel-system";
/// The agent's ServiceAccount (as deployed).
pub const SERVICE_ACCOUNT: &str = "spinel-agent";

/// The `spinel-agent` binary, built on first use (or `$SPINEL_AGENT_BIN`).
pub fn agent_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| crate::cni::built("spinel-agent", "spinel-agent", "SPINEL_AGENT_BIN"))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One control plane with Spinel's CRDs for every agent test in the process, and the agent's
/// RBAC and admission policy from `deploy/agent` applied once.
pub fn cluster(rt: &tokio::runtime::Runtime) -> &'static ControlPlane {
    static CP: OnceLock<ControlPlane> = OnceLock::new();
    let cp = CP.get_or_init(|| {
        ControlPlane::start(
            ControlPlaneOptions::new("agent-k8s").crd_dir(workspace().join("deploy/crds")),
        )
    });
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| rt.block_on(install(cp)));
    cp
}

/// The YAML documents of `deploy/agent/<file>`.
fn manifests(file: &str) -> Vec<Value> {
    let path = workspace().join("deploy/agent").join(file);
    let text = fs::read_to_string(&path).unwrap();
    text.split("\n---\n")
        .filter(|d| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
        })
        .map(|d| {
            serde_saphyr::from_str::<Value>(d).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("manifest matches its kind")
}

/// Applies the agent's namespace, RBAC and admission policy (`deploy/agent`) to `cp`.
pub async fn install(cp: &ControlPlane) {
    let admin = cp.admin_client().await;
    let pp = PostParams::default();
    Api::<Namespace>::all(admin.clone())
        .create(&pp, &typed(json!({"metadata": {"name": NAMESPACE}})))
        .await
        .unwrap();
    for doc in manifests("rbac.yaml")
        .into_iter()
        .chain(manifests("admission-policy.yaml"))
    {
        let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
        let result = match kind.as_str() {
            "ServiceAccount" => Api::<ServiceAccount>::namespaced(admin.clone(), NAMESPACE)
                .create(&pp, &typed(doc))
                .await
                .map(drop),
            "ClusterRole" => Api::<ClusterRole>::all(admin.clone())
                .create(&pp, &typed(doc))
                .await
                .map(drop),
            "ClusterRoleBinding" => Api::<ClusterRoleBinding>::all(admin.clone())
                .create(&pp, &typed(doc))
                .await
                .map(drop),
            "ValidatingAdmissionPolicy" => Api::<ValidatingAdmissionPolicy>::all(admin.clone())
                .create(&pp, &typed(doc))
                .await
                .map(drop),
            "ValidatingAdmissionPolicyBinding" => {
                Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone())
                    .create(&pp, &typed(doc))
                    .await
                    .map(drop)
            }
            other => panic!("deploy/agent has an unexpected {other}"),
        };
        result.unwrap_or_else(|e| panic!("apply {kind}: {e}"));
    }
    // Without kube-controller-manager the namespace's default ServiceAccount, which pods need
    // at admission, is created by hand (with it, it may be there already).
    let created = Api::<ServiceAccount>::namespaced(admin, NAMESPACE)
        .create(&pp, &typed(json!({"metadata": {"name": "default"}})))
        .await;
    match created {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("create {NAMESPACE}/default ServiceAccount: {e}"),
    }
}

/// Registers Node `name` as a kubelet would (Ready, the admission's not-ready taint lifted)
/// and a pod of the agent's ServiceAccount bound to it; returns a kubeconfig with that pod's
/// token, which carries the node-name claim the admission policy checks.
pub async fn register_node(cp: &ControlPlane, name: &str, dir: &Path) -> PathBuf {
    let admin = cp.admin_client().await;
    let nodes = Api::<Node>::all(admin.clone());
    let resources = json!({"cpu": "8", "memory": "32Gi", "pods": "110"});
    nodes
        .create(
            &PostParams::default(),
            &typed(json!({
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": resources, "allocatable": resources,
                           "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                           "message": "kubelet is posting ready status"}]},
            })),
        )
        .await
        .unwrap_or_else(|e| panic!("create node {name}: {e}"));
    nodes
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": null}})),
        )
        .await
        .unwrap();
    let pod = format!("spinel-agent-{name}");
    Api::<Pod>::namespaced(admin.clone(), NAMESPACE)
        .create(
            &PostParams::default(),
            &typed(json!({
                "metadata": {"name": pod},
                "spec": {"serviceAccountName": SERVICE_ACCOUNT, "nodeName": name,
                         "containers": [{"name": "agent", "image": "spinel"}]},
            })),
        )
        .await
        .unwrap_or_else(|e| panic!("create pod {pod}: {e}"));
    let token = pod_bound_token(&admin, NAMESPACE, SERVICE_ACCOUNT, &pod).await;
    let path = dir.join("agent.kubeconfig");
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "t", "cluster": {"server": cp.server(), "certificate-authority": cp.ca_file()}}],
        "users": [{"name": "agent", "user": {"token": token}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "agent"}}],
        "current-context": "t",
    });
    fs::write(&path, kubeconfig.to_string()).unwrap();
    path
}

/// The hex payload of a dcbnl IEEE_GET reply reporting PFC on `priorities`.
pub fn pfc_reply_hex(priorities: &[u8]) -> String {
    let msg = DcbMessage {
        message_type: RTM_GETDCB,
        command: DCB_CMD_IEEE_GET,
        attributes: vec![
            DcbAttribute::IfName("pf0".into()),
            DcbAttribute::Ieee(vec![IeeeAttribute::Pfc(IeeePfc {
                pfc_cap: 8,
                pfc_en: IeeePfc::bitmap(priorities),
                mbc: 0,
                delay: 0,
                requests: [0; 8],
                indications: [0; 8],
            })]),
        ],
    };
    let mut buf = vec![0; msg.buffer_len()];
    msg.serialize(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// Gives NIC `nic` what a RoCE port has in the fake sysfs under `dir`: a 200G link speed and
/// RDMA device `dev` with port 1 active on Ethernet and a CNP counter at 0.
pub fn roce_port(dir: &Path, nic: &str, dev: &str) {
    let net = dir.join("sys/class/net").join(nic);
    fs::create_dir_all(&net).unwrap();
    fs::write(net.join("speed"), "200000\n").unwrap();
    let port_dir = dir.join("sys/class/infiniband").join(dev).join("ports/1");
    for sub in [
        "gids",
        "gid_attrs/types",
        "gid_attrs/ndevs",
        "hw_counters",
        "counters",
    ] {
        fs::create_dir_all(port_dir.join(sub)).unwrap();
    }
    fs::write(port_dir.join("state"), "4: ACTIVE\n").unwrap();
    fs::write(port_dir.join("link_layer"), "Ethernet\n").unwrap();
    fs::write(port_dir.join("hw_counters/np_cnp_sent"), "0\n").unwrap();
}

/// A simulated RoCE node with the agent's files, and the agent when it runs.
pub struct AgentNode {
    /// The node (its sandbox holds everything).
    pub node: SimNode,
    /// The Node's name.
    pub name: String,
    /// The agent's configuration file.
    pub config: PathBuf,
    /// Where the test's recorded dcbnl replies go.
    pub dcb_dir: PathBuf,
    /// The agent's metrics port on 127.0.0.1.
    pub port: u16,
    /// The NICs the agent is given (`--nics`).
    pub nics: Vec<String>,
    kubeconfig: PathBuf,
    log: PathBuf,
    stdout: PathBuf,
    child: Option<Child>,
}

impl AgentNode {
    /// A node `name` with `vfs` VFs whose PF is a RoCE NIC, registered in `cp`; the agent's
    /// configuration is `config` (YAML as JSON) with the test's paths added.
    pub fn new(
        rt: &tokio::runtime::Runtime,
        cp: &ControlPlane,
        name: &str,
        vfs: u32,
        mut config: Value,
    ) -> Self {
        let node = SimNode::new(name, vfs);
        node.sysfs.add_rdma(PF_PCI, "mlx5_0");
        node.sb.run_in(
            "node",
            "ip",
            &["addr", "add", &format!("{HOST_IP}/24"), "dev", "pf0"],
        );
        let dir = node.sb.dir().to_owned();
        roce_port(&dir, "pf0", "mlx5_0");
        let agent = AgentNode {
            dcb_dir: dir.join("dcb"),
            config: dir.join("agent.yaml"),
            kubeconfig: rt.block_on(register_node(cp, name, &dir)),
            log: dir.join("agent.log"),
            stdout: dir.join("agent.stdout"),
            port: free_port(),
            name: name.to_owned(),
            nics: vec!["pf0".into()],
            child: None,
            node,
        };
        agent.set_gid(true);
        fs::create_dir_all(&agent.dcb_dir).unwrap();
        agent.set_host_pfc(&[3]);
        config["garp"]["recordsDir"] = json!(agent.node.records_dir);
        config["health"]["dcbReplayDir"] = json!(agent.dcb_dir);
        fs::write(&agent.config, config.to_string()).unwrap();
        agent
    }

    /// Adds RoCE NIC `pf<i>` (i >= 1, at most 15): a veth to the leaf's `swp<i+1>`, a PF in
    /// the fake sysfs with RDMA device `mlx5_<i>`, host address 10.56.<i>.2/24 and its RoCE v2
    /// GID; the agent is given it from the next start.
    pub fn add_nic(&mut self, i: u8) {
        assert!((1..16).contains(&i), "NIC index {i}");
        let (nic, swp, dev) = (
            format!("pf{i}"),
            format!("swp{}", i + 1),
            format!("mlx5_{i}"),
        );
        let sb = &self.node.sb;
        sb.run_in(
            "node",
            "ip",
            &[
                "link", "add", &nic, "mtu", "9000", "type", "veth", "peer", "name", &swp, "mtu",
                "9000",
            ],
        );
        let leaf = sb.netns_path("leaf");
        sb.run_in(
            "node",
            "ip",
            &["link", "set", &swp, "netns", leaf.to_str().unwrap()],
        );
        sb.run_in("node", "ip", &["link", "set", &nic, "up"]);
        sb.run_in("leaf", "ip", &["link", "set", &swp, "up"]);
        sb.run_in(
            "node",
            "ip",
            &["addr", "add", &format!("10.56.{i}.2/24"), "dev", &nic],
        );
        sb.run_in(
            "leaf",
            "ip",
            &["addr", "add", &format!("10.56.{i}.1/24"), "dev", &swp],
        );
        let pci = format!("0000:{:02x}:00.0", 0x3b + i);
        self.node.sysfs.add_pf(&pci, &nic, 0, 8);
        self.node.sysfs.add_rdma(&pci, &dev);
        let dir = sb.dir().to_owned();
        roce_port(&dir, &nic, &dev);
        let port = dir.join("sys/class/infiniband").join(&dev).join("ports/1");
        fs::write(
            port.join("gids/3"),
            format!("0000:0000:0000:0000:0000:ffff:0a38:{i:02x}02\n"),
        )
        .unwrap();
        fs::write(port.join("gid_attrs/types/3"), "RoCE v2\n").unwrap();
        fs::write(port.join("gid_attrs/ndevs/3"), format!("{nic}\n")).unwrap();
        self.nics.push(nic);
    }

    /// The agent's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Writes (or removes) the RoCE v2 GID of the host address in the fake GID table.
    pub fn set_gid(&self, present: bool) {
        let port = self
            .node
            .sb
            .dir()
            .join("sys/class/infiniband/mlx5_0/ports/1");
        let gid = if present {
            "0000:0000:0000:0000:0000:ffff:0a38:0002\n".to_owned()
        } else {
            "0000:0000:0000:0000:0000:0000:0000:0000\n".into()
        };
        fs::write(port.join("gids/3"), gid).unwrap();
        fs::write(port.join("gid_attrs/types/3"), "RoCE v2\n").unwrap();
        fs::write(port.join("gid_attrs/ndevs/3"), "pf0\n").unwrap();
    }

    /// Sets the host PFC the agent reads (a recorded dcbnl reply).
    pub fn set_host_pfc(&self, priorities: &[u8]) {
        let tmp = self.dcb_dir.join("pf0.hex.tmp");
        fs::write(&tmp, pfc_reply_hex(priorities)).unwrap();
        fs::rename(tmp, self.dcb_dir.join("pf0.hex")).unwrap();
    }

    /// Starts the agent with `extra` flags; its log goes to the sandbox.
    pub fn start(&mut self, extra: &[&str]) {
        assert!(self.child.is_none(), "the agent already runs");
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let out = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.stdout)
            .unwrap();
        let mut cmd = Command::new(agent_binary());
        cmd.env_clear()
            .arg("--config")
            .arg(&self.config)
            .arg("--node-name")
            .arg(&self.name)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--netns")
            .arg(self.node.sb.netns_path("node"))
            .arg("--nics")
            .arg(self.nics.join(","))
            .arg("--sysfs-root")
            .arg(self.node.sb.dir().join("sys"))
            .arg("--metrics-address")
            .arg(format!("127.0.0.1:{}", self.port))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(log);
        let child = cmd.spawn().unwrap();
        self.node.sb.record_pid(child.id());
        self.child = Some(child);
    }

    /// Sends `signal` and waits for the agent to exit.
    pub fn stop(&mut self, signal: Signal) -> ExitStatus {
        let mut child = self.child.take().expect("the agent runs");
        kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), signal).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the agent ignored {signal:?}\n{}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The agent's stdout so far (the dry-run's iproute2 lines).
    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// The last lines of the agent's log.
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        format!(
            "--- agent log (last 30 lines) ---\n{}",
            lines[lines.len().saturating_sub(30)..].join("\n")
        )
    }

    /// `GET path` on the agent's HTTP port: (status code, body); `None` when nothing listens.
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        crate::http_get(self.port, path)
    }

    /// Polls `check` every 20 ms until it returns `Some`, at most `timeout`; panics with the
    /// agent's log otherwise.
    pub fn wait_for<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut() -> Option<T>,
    ) -> (T, Duration) {
        let start = Instant::now();
        loop {
            if let Some(v) = check() {
                return (v, start.elapsed());
            }
            assert!(
                start.elapsed() < timeout,
                "{what}: not within {timeout:?}\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `ip -j ARGS` in the node namespace, parsed.
    pub fn ip_json(&self, args: &[&str]) -> Value {
        let mut full = vec!["-j"];
        full.extend_from_slice(args);
        let out = self.node.sb.run_in("node", "ip", &full);
        serde_json::from_str(if out.trim().is_empty() { "[]" } else { &out }).unwrap()
    }

    /// The node's rules pointing at `table`, as `ip rule` prints them.
    pub fn rules_for(&self, table: u32) -> Vec<Value> {
        self.ip_json(&["rule", "show"])
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|r| {
                r["table"].as_str() == Some(&table.to_string())
                    || r["table"].as_u64() == Some(u64::from(table))
            })
            .collect()
    }

    /// The routes of `table`.
    pub fn routes_in(&self, table: u32) -> Vec<Value> {
        self.ip_json(&["route", "show", "table", &table.to_string()])
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// Takes the leaf's port down (pf0 loses carrier), empties its neighbour table, brings it up
/// and returns the instant the carrier came back.
pub fn flap_and_flush(a: &AgentNode) -> Instant {
    a.node
        .sb
        .run_in("leaf", "ip", &["link", "set", "swp1", "down"]);
    std::thread::sleep(Duration::from_millis(300));
    a.node
        .sb
        .run_in("leaf", "ip", &["neigh", "flush", "dev", "swp1"]);
    let up = Instant::now();
    a.node
        .sb
        .run_in("leaf", "ip", &["link", "set", "swp1", "up"]);
    up
}

/// Captures the ARP frames arriving at the leaf's `swp1` for `window` (an AF_PACKET socket in
/// the leaf namespace, opened before this returns), with their arrival instants.
pub fn capture_arp(a: &AgentNode, window: Duration) -> JoinHandle<Vec<(Instant, Vec<u8>)>> {
    let leaf = NetNs::open(a.node.sb.netns_path("leaf")).unwrap();
    let config = PacketConfig {
        protocol: 0x0806,
        ..PacketConfig::default()
    };
    let socket = PacketSocket::open(&leaf, "swp1", &config).unwrap();
    std::thread::spawn(move || {
        let end = Instant::now() + window;
        let mut frames = Vec::new();
        let mut buf = [0u8; 2048];
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match socket.recv(&mut buf, Some(left)) {
                Ok(Some(r)) => frames.push((Instant::now(), buf[..r.len].to_vec())),
                Ok(None) => {}
                // The flap takes swp1 down: the socket reports ENETDOWN once and receives
                // again when the link is back up.
                Err(PacketError::Io { source, .. })
                    if source.raw_os_error() == Some(nix::errno::Errno::ENETDOWN as i32) => {}
                Err(e) => panic!("capture on swp1: {e}"),
            }
        }
        frames
    })
}

/// The instants of gratuitous ARP frames (request or reply) from `mac` announcing `ip` (sender
/// and target address both `ip`).
pub fn announcements(frames: &[(Instant, Vec<u8>)], mac: &str, ip: &str) -> Vec<Instant> {
    let mac: Vec<u8> = mac
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect();
    let ip = ip.parse::<std::net::Ipv4Addr>().unwrap().octets();
    frames
        .iter()
        .filter(|(_, f)| {
            f.len() >= 42
                && f[6..12] == mac[..]
                && f[12..14] == [0x08, 0x06]
                && f[22..28] == mac[..]
                && f[28..32] == ip
                && f[38..42] == ip
        })
        .map(|(t, _)| *t)
        .collect()
}

/// The MAC of `ifname` in namespace `ns` of the node.
pub fn mac_of(a: &AgentNode, ns: &str, ifname: &str) -> String {
    let out = a.node.sb.run_in(ns, "ip", &["-j", "link", "show", ifname]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v[0]["address"].as_str().unwrap().to_owned()
}

impl Drop for AgentNode {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
