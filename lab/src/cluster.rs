//! The lab's Kubernetes: the test harness's real kube-apiserver and kube-scheduler, Spinel's
//! shipped manifests applied as an operator applies them, Nodes registered as kubelets would,
//! and one kubeconfig per component holding a token of that component's ServiceAccount (the
//! agents' bound to a Pod on their node, as a DaemonSet's are), so every component works with
//! the RBAC and admission policy Spinel ships and nothing more.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Node, Pod, ServiceAccount};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::{Discovery, Scope};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::procs::{Pipes, Processes, Spec};
use crate::state::StateDir;

/// The namespace of Spinel's components.
pub const NAMESPACE: &str = "spinel-system";

/// GPUs each lab node offers (the resource the scheduler counts).
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// Field manager of everything the lab itself writes.
const MANAGER: &str = "spinel-lab";

/// Lifetime asked for each component token: a lab may run for a working day.
const TOKEN_SECONDS: i64 = 24 * 3600;

/// How long the control plane may take to become ready (a cold etcd and API server on a
/// loaded 2-core machine take well under a minute).
const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// Spinel's manifests the lab applies, in order (namespace, CRDs, then RBAC and admission
/// policy; the workloads themselves run as the lab's processes).
const MANIFESTS: [(&str, &str); 8] = [
    (
        "deploy/namespace.yaml",
        include_str!("../../deploy/namespace.yaml"),
    ),
    (
        "deploy/agent/rbac.yaml",
        include_str!("../../deploy/agent/rbac.yaml"),
    ),
    (
        "deploy/agent/admission-policy.yaml",
        include_str!("../../deploy/agent/admission-policy.yaml"),
    ),
    (
        "deploy/controller/rbac.yaml",
        include_str!("../../deploy/controller/rbac.yaml"),
    ),
    (
        "deploy/controller/admission-policy.yaml",
        include_str!("../../deploy/controller/admission-policy.yaml"),
    ),
    (
        "deploy/scheduler/rbac.yaml",
        include_str!("../../deploy/scheduler/rbac.yaml"),
    ),
    (
        "deploy/scheduler/rbac-bind.yaml",
        include_str!("../../deploy/scheduler/rbac-bind.yaml"),
    ),
    (
        "deploy/scheduler/admission-policy.yaml",
        include_str!("../../deploy/scheduler/admission-policy.yaml"),
    ),
];

/// CustomResourceDefinitions the control plane establishes before anything else: Spinel's and
/// the peers' whose objects the controller writes (Volcano HyperNode, Kueue Topology), as a
/// cluster running Volcano and Kueue has them.
const CRDS: [(&str, &str); 4] = [
    (
        "fabrics.fabric.spinel.dev.yaml",
        include_str!("../../deploy/crds/fabrics.fabric.spinel.dev.yaml"),
    ),
    (
        "nodefabrics.fabric.spinel.dev.yaml",
        include_str!("../../deploy/crds/nodefabrics.fabric.spinel.dev.yaml"),
    ),
    (
        "topology.volcano.sh_hypernodes.yaml",
        include_str!("../../tests/peers/crd/topology.volcano.sh_hypernodes.yaml"),
    ),
    (
        "kueue.x-k8s.io_topologies.yaml",
        include_str!("../../tests/peers/crd/kueue.x-k8s.io_topologies.yaml"),
    ),
];

/// kube-scheduler's configuration as Spinel ships it; the lab points its extender at the
/// lab's `spinel-scheduler`.
const SCHEDULER_CONFIG: &str = include_str!("../../deploy/scheduler/kube-scheduler-config.yaml");

/// The extender URL in [`SCHEDULER_CONFIG`].
const SHIPPED_EXTENDER_URL: &str = "http://spinel-scheduler.spinel-system.svc:8888/";

/// The client configuration in [`SCHEDULER_CONFIG`].
const SHIPPED_KUBECONFIG: &str = "kubeconfig: /etc/kubernetes/scheduler.conf";

/// What the harness prints once ready.
#[derive(Debug, Deserialize)]
struct Ready {
    ca: PathBuf,
    kubeconfig: PathBuf,
    port: u16,
    server: String,
}

/// The running control plane.
pub struct ControlPlane {
    /// `https://127.0.0.1:PORT`.
    pub server: String,
    /// The CA every client trusts.
    pub ca: PathBuf,
    /// The admin kubeconfig.
    pub admin_kubeconfig: PathBuf,
    /// The API server's port.
    pub port: u16,
    /// A client with the admin's rights (the lab's own bookkeeping: Nodes, tokens, the job).
    pub admin: kube::Client,
    /// Its stdin: the harness exits when it closes, whatever happens to the lab.
    _pipes: Pipes,
}

/// The harness binary: `$SPINEL_K8S_BIN`, or `k8s/spinel-k8s` in the cargo target directory
/// that holds this executable (`target/release/spinelctl` → `target/k8s/spinel-k8s`).
pub fn harness_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("SPINEL_K8S_BIN") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().context("where is this executable")?;
    let target = exe
        .parent()
        .and_then(Path::parent)
        .context("this executable has no target directory")?;
    let bin = target.join("k8s/spinel-k8s");
    if !bin.is_file() {
        bail!(
            "the Kubernetes harness {} is not built: run tests/k8s/build.sh (or set \
             SPINEL_K8S_BIN)",
            bin.display()
        );
    }
    Ok(bin)
}

/// The shipped kube-scheduler configuration with its extender at `extender_url`, its client
/// the harness's admin kubeconfig `kubeconfig` and, as the only scheduler, no leader election.
pub fn scheduler_config(extender_url: &str, kubeconfig: &Path) -> anyhow::Result<String> {
    let edits = [
        (SHIPPED_EXTENDER_URL, extender_url.to_owned()),
        (
            SHIPPED_KUBECONFIG,
            format!("kubeconfig: {}", kubeconfig.display()),
        ),
        ("leaderElect: true", "leaderElect: false".to_owned()),
    ];
    let mut text = SCHEDULER_CONFIG.to_owned();
    for (from, to) in edits {
        if !text.contains(from) {
            bail!("deploy/scheduler/kube-scheduler-config.yaml no longer says {from:?}");
        }
        text = text.replace(from, &to);
    }
    Ok(text)
}

impl ControlPlane {
    /// Starts the harness (API server over etcd, kube-scheduler with `scheduler_yaml`) under
    /// `procs` and waits until it is ready.
    pub async fn start(
        procs: &mut Processes,
        state: &StateDir,
        scheduler_yaml: &str,
    ) -> anyhow::Result<Self> {
        let data = state.k8s();
        let crds = data.join("crds");
        std::fs::create_dir_all(&crds).with_context(|| format!("create {}", crds.display()))?;
        for (name, text) in CRDS {
            std::fs::write(crds.join(name), text)?;
        }
        let sched = data.join("kube-scheduler.yaml");
        std::fs::write(&sched, scheduler_yaml)?;
        let mut spec = Spec::new(
            "kube-control-plane",
            &harness_binary()?,
            [
                "--data-dir".into(),
                data.clone().into_os_string(),
                "--crd".into(),
                crds.into_os_string(),
                "--scheduler-config".into(),
                sched.into_os_string(),
                "--exit-with-stdin".into(),
                "--ready-timeout".into(),
                format!("{}s", READY_TIMEOUT.as_secs()).into(),
            ],
        );
        spec.piped = true;
        let mut pipes = procs.start(spec)?.context("the harness has no pipes")?;
        let mut line = String::new();
        let mut reader = BufReader::new(&mut pipes.stdout);
        let read = reader.read_line(&mut line);
        let outcome = tokio::time::timeout(READY_TIMEOUT + Duration::from_secs(10), read).await;
        drop(reader);
        match outcome {
            Ok(Ok(n)) if n > 0 => {}
            _ => bail!(
                "the Kubernetes control plane did not become ready; see {}",
                state.logs().join("kube-control-plane.log").display()
            ),
        }
        let ready: Ready = serde_json::from_str(line.trim())
            .with_context(|| format!("the harness's ready line {line:?}"))?;
        let admin = client_from_kubeconfig(&ready.kubeconfig).await?;
        Ok(Self {
            server: ready.server,
            ca: ready.ca,
            admin_kubeconfig: ready.kubeconfig,
            port: ready.port,
            admin,
            _pipes: pipes,
        })
    }

    /// Applies Spinel's manifests by server-side apply.
    pub async fn apply_manifests(&self) -> anyhow::Result<usize> {
        let discovery = Discovery::new(self.admin.clone())
            .run()
            .await
            .context("API discovery")?;
        let mut applied = 0;
        for (file, text) in MANIFESTS {
            for doc in documents(text).with_context(|| file.to_owned())? {
                apply(&self.admin, &discovery, &doc)
                    .await
                    .with_context(|| format!("apply {file}"))?;
                applied += 1;
            }
        }
        Ok(applied)
    }

    /// Registers `name` as a Ready node with `gpus` GPUs, as its kubelet would, without the
    /// not-ready taint (no node lifecycle controller runs here).
    pub async fn register_node(&self, name: &str, gpus: u32) -> anyhow::Result<()> {
        let resources = json!({"cpu": "64", "memory": "512Gi", "pods": "110",
                               GPU_RESOURCE: gpus.to_string()});
        let status = json!({
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status"}],
        });
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        }))?;
        let nodes = Api::<Node>::all(self.admin.clone());
        nodes
            .create(&PostParams::default(), &node)
            .await
            .with_context(|| format!("create Node {name}"))?;
        // Creation ignores a status; a kubelet posts it afterwards.
        nodes
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .with_context(|| format!("Node {name} status"))?;
        nodes
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"taints": null}})),
            )
            .await
            .with_context(|| format!("lift the not-ready taint of {name}"))?;
        Ok(())
    }

    /// The agent's Pod on `node` (as the DaemonSet controller would make it) and a kubeconfig
    /// with a token bound to it: the token carries the node's name, which the shipped admission
    /// policy holds the agent to.
    pub async fn agent_kubeconfig(&self, state: &StateDir, node: &str) -> anyhow::Result<PathBuf> {
        let pod_name = format!("spinel-agent-{node}");
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": pod_name, "labels": {"app.kubernetes.io/name": "spinel-agent"}},
            "spec": {
                "serviceAccountName": "spinel-agent",
                "nodeName": node,
                "containers": [{"name": "agent", "image": "spinel-agent"}],
            },
        }))?;
        let pods = Api::<Pod>::namespaced(self.admin.clone(), NAMESPACE);
        let uid = pods
            .create(&PostParams::default(), &pod)
            .await
            .with_context(|| format!("create Pod {pod_name}"))?
            .metadata
            .uid;
        let bound = BoundObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(pod_name.clone()),
            uid,
        };
        let token = self.token("spinel-agent", Some(bound)).await?;
        self.write_kubeconfig(state, &format!("agent-{node}"), &token)
    }

    /// A kubeconfig with a token of ServiceAccount `account` (in [`NAMESPACE`]).
    pub async fn component_kubeconfig(
        &self,
        state: &StateDir,
        account: &str,
    ) -> anyhow::Result<PathBuf> {
        let token = self.token(account, None).await?;
        self.write_kubeconfig(state, account, &token)
    }

    async fn token(
        &self,
        account: &str,
        bound: Option<BoundObjectReference>,
    ) -> anyhow::Result<String> {
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                // None: the API server's own audience.
                audiences: None,
                bound_object_ref: bound,
                expiration_seconds: Some(TOKEN_SECONDS),
            }),
            ..Default::default()
        };
        Api::<ServiceAccount>::namespaced(self.admin.clone(), NAMESPACE)
            .create_token_request(account, &PostParams::default(), &request)
            .await
            .with_context(|| format!("TokenRequest for {NAMESPACE}/{account}"))?
            .status
            .and_then(|s| s.token)
            .with_context(|| format!("TokenRequest for {NAMESPACE}/{account}: no token"))
    }

    fn write_kubeconfig(
        &self,
        state: &StateDir,
        name: &str,
        token: &str,
    ) -> anyhow::Result<PathBuf> {
        let dir = state.kubeconfigs();
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{name}.kubeconfig"));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n    server: {}\n    \
             certificate-authority: {}\nusers:\n- name: {name}\n  user:\n    token: {token}\n\
             contexts:\n- name: lab\n  context:\n    cluster: lab\n    user: {name}\n\
             current-context: lab\n",
            self.server,
            self.ca.display()
        );
        crate::state::write_private(&path, text.as_bytes())?;
        Ok(path)
    }
}

/// A client from a kubeconfig file.
pub async fn client_from_kubeconfig(path: &Path) -> anyhow::Result<kube::Client> {
    let kubeconfig =
        Kubeconfig::read_from(path).with_context(|| format!("read {}", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("load {}", path.display()))?;
    Ok(kube::Client::try_from(config)?)
}

/// The YAML documents of `text`, comment-only documents skipped.
fn documents(text: &str) -> anyhow::Result<Vec<Value>> {
    text.split("\n---")
        .filter(|d| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        })
        .map(|d| serde_saphyr::from_str::<Value>(d).map_err(anyhow::Error::from))
        .collect()
}

/// Server-side apply of one object, its resource found through discovery.
async fn apply(admin: &kube::Client, discovery: &Discovery, doc: &Value) -> anyhow::Result<()> {
    let api_version = doc["apiVersion"].as_str().context("no apiVersion")?;
    let kind = doc["kind"].as_str().context("no kind")?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
    let (resource, caps) = discovery
        .resolve_gvk(&gvk)
        .with_context(|| format!("the API server does not serve {api_version} {kind}"))?;
    let name = doc["metadata"]["name"]
        .as_str()
        .context("no metadata.name")?;
    let api: Api<DynamicObject> = match doc["metadata"]["namespace"].as_str() {
        Some(ns) if caps.scope == Scope::Namespaced => {
            Api::namespaced_with(admin.clone(), ns, &resource)
        }
        _ => Api::all_with(admin.clone(), &resource),
    };
    api.patch(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(doc),
    )
    .await
    .with_context(|| format!("{kind}/{name}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_manifests_parse_and_name_their_kinds() {
        for (file, text) in MANIFESTS {
            let docs = documents(text).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(!docs.is_empty(), "{file} has no object");
            for d in docs {
                assert!(
                    d["kind"].is_string() && d["metadata"]["name"].is_string(),
                    "{file}: {d}"
                );
            }
        }
    }

    #[test]
    fn the_extender_is_pointed_at_the_lab() {
        let yaml = scheduler_config(
            "http://127.0.0.1:18888/",
            Path::new("/lab/k8s/admin.kubeconfig"),
        )
        .unwrap();
        assert!(yaml.contains("http://127.0.0.1:18888/"));
        assert!(yaml.contains("kubeconfig: /lab/k8s/admin.kubeconfig"));
        assert!(yaml.contains("leaderElect: false"));
        assert!(!yaml.contains(SHIPPED_EXTENDER_URL));
    }
}
