//! Spinel deployed on a real control plane for tests: the shipped manifests applied as an
//! operator applies them, Nodes and the agents' Pods registered, real ServiceAccount tokens in
//! kubeconfigs, and the real `spinel-agent` and `spinel-fabric-controller` binaries run as
//! processes that a test can stop, kill and start again.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::Discovery;
use serde_json::{Value, json};

use crate::k8s::pod_bound_token;

/// The namespace of Spinel's components.
pub const NAMESPACE: &str = "spinel-system";

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `spinel-agent` binary, built once per test process (`SPINEL_AGENT_BIN` overrides).
pub fn agent_binary() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| crate::cni::built("spinel-agent", "spinel-agent", "SPINEL_AGENT_BIN"))
}

/// The `spinel-fabric-controller` binary, likewise (`SPINEL_CONTROLLER_BIN` overrides).
pub fn controller_binary() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        crate::cni::built(
            "spinel-fabric-controller",
            "spinel-fabric-controller",
            "SPINEL_CONTROLLER_BIN",
        )
    })
}

/// Every YAML document of `file` (relative to the workspace root), comments and empty
/// documents skipped.
pub fn documents(file: &str) -> Vec<Value> {
    documents_at(&workspace_root().join(file))
}

/// Every YAML document of the file at `path`, comments and empty documents skipped.
pub fn documents_at(path: &Path) -> Vec<Value> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.split("\n---\n")
        .filter(|d| {
            d.lines().any(|l| {
                !l.trim().is_empty() && !l.trim_start().starts_with('#') && l.trim() != "---"
            })
        })
        .map(|d| {
            serde_saphyr::from_str::<Value>(d).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

/// Applies every document of `files` by server-side apply, as `kubectl apply --server-side`
/// does, finding each kind through discovery.
pub async fn apply_files(admin: &kube::Client, files: &[&str]) {
    for file in files {
        apply_documents(admin, &documents(file), file).await;
    }
}

/// Applies `docs` (read from `source`, for messages) by server-side apply.
pub async fn apply_documents(admin: &kube::Client, docs: &[Value], source: &str) {
    let discovery = Discovery::new(admin.clone())
        .run()
        .await
        .expect("API discovery");
    for doc in docs {
        let api_version = doc["apiVersion"].as_str().expect("apiVersion");
        let kind = doc["kind"].as_str().expect("kind");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let (resource, caps) = discovery
            .resolve_gvk(&gvk)
            .unwrap_or_else(|| panic!("{source}: the server does not serve {api_version} {kind}"));
        let name = doc["metadata"]["name"].as_str().expect("name").to_owned();
        let api: Api<DynamicObject> = match doc["metadata"]["namespace"].as_str() {
            Some(ns) if caps.scope == kube::discovery::Scope::Namespaced => {
                Api::namespaced_with(admin.clone(), ns, &resource)
            }
            _ => Api::all_with(admin.clone(), &resource),
        };
        api.patch(
            &name,
            &PatchParams::apply("spinel-test").force(),
            &Patch::Apply(doc),
        )
        .await
        .unwrap_or_else(|e| panic!("{source}: apply {kind}/{name}: {e}"));
    }
}

/// Registers a Ready node as a kubelet would, and lifts the not-ready taint admission puts on
/// it (no node lifecycle controller runs here).
pub async fn register_node(admin: &kube::Client, name: &str) {
    let resources = json!({"cpu": "8", "memory": "32Gi", "pods": "110"});
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status"}],
        },
    }))
    .expect("a Node");
    let nodes = Api::<Node>::all(admin.clone());
    nodes
        .create(&PostParams::default(), &node)
        .await
        .unwrap_or_else(|e| panic!("create node {name}: {e}"));
    nodes
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": null}})),
        )
        .await
        .unwrap_or_else(|e| panic!("lift the not-ready taint of {name}: {e}"));
}

/// Creates the agent's Pod on `node` (as the DaemonSet controller and the scheduler would)
/// and returns a token bound to it: the token's user carries the node-name claim.
pub async fn agent_token(admin: &kube::Client, node: &str) -> String {
    let pod_name = format!("spinel-agent-{node}");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": pod_name, "labels": {"app.kubernetes.io/name": "spinel-agent"}},
        "spec": {
            "serviceAccountName": "spinel-agent",
            "nodeName": node,
            "containers": [{"name": "agent", "image": "spinel"}],
        },
    }))
    .expect("a Pod");
    Api::<Pod>::namespaced(admin.clone(), NAMESPACE)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("create pod {pod_name}: {e}"));
    pod_bound_token(admin, NAMESPACE, "spinel-agent", &pod_name).await
}

/// Writes a kubeconfig for `server` (CA `ca`) that authenticates with `token`.
pub fn write_kubeconfig(path: &Path, server: &str, ca: &Path, token: &str) {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    \
         certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- \
         name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
        ca.display()
    );
    std::fs::write(path, text).expect("write kubeconfig");
}

/// A component run as a process; killed on drop.
pub struct Component {
    program: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Component {
    /// Starts `program args`, stderr appended to `log`.
    pub fn start(program: &Path, args: Vec<String>, log: PathBuf) -> Self {
        let mut c = Self {
            program: program.to_owned(),
            args,
            log,
            child: None,
        };
        c.start_again();
        c
    }

    /// Starts it again (after [`Self::kill`] or [`Self::terminate`]).
    pub fn start_again(&mut self) {
        assert!(
            self.child.is_none(),
            "{} still runs",
            self.program.display()
        );
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open component log");
        let child = Command::new(&self.program)
            .args(&self.args)
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.program.display()));
        self.child = Some(child);
    }

    /// SIGKILL, as a crash or an OOM kill does.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, as the kubelet stops a pod; waits for the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("the component runs");
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "{} ignored SIGTERM for 30 s\n{}",
                    self.program.display(),
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Component {
    fn drop(&mut self) {
        self.kill();
    }
}
