//! [`ControlPlane`]: a real Kubernetes control plane (etcd, kube-apiserver, optionally
//! kube-scheduler) for tests, run by the `spinel-k8s` binary that `tests/k8s/build.sh` builds;
//! and helpers for clients with real credentials (admin certificate, pod-bound ServiceAccount
//! tokens).
//!
//! The binary is never built from here: a test that finds it missing fails and names the
//! build script, as every test in this tier fails loudly on a missing tool.

use std::fs;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::Sandbox;

/// Environment variable naming the `spinel-k8s` binary (default: `<target>/k8s/spinel-k8s`).
pub const BIN_ENV: &str = "SPINEL_K8S_BIN";

/// What to run: a name for the sandbox, CRDs to install, an optional scheduler.
#[derive(Clone, Debug)]
pub struct ControlPlaneOptions {
    name: String,
    crd_dirs: Vec<PathBuf>,
    scheduler_config: Option<String>,
    apiserver_args: Vec<String>,
    controller_manager: bool,
    verbosity: u8,
    ready_timeout: Duration,
}

impl ControlPlaneOptions {
    /// An API server over etcd, nothing else; `name` names the sandbox directory.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            crd_dirs: Vec::new(),
            scheduler_config: None,
            apiserver_args: Vec::new(),
            controller_manager: false,
            verbosity: 0,
            ready_timeout: Duration::from_secs(180),
        }
    }

    /// Installs every CRD in the YAML files of `dir` before the control plane counts as ready.
    pub fn crd_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.crd_dirs.push(dir.into());
        self
    }

    /// Installs the peers' CRDs in `tests/peers/crd` (Volcano HyperNode, Kueue Topology).
    pub fn peer_crds(self) -> Self {
        self.crd_dir(workspace_root().join("tests/peers/crd"))
    }

    /// Also runs kube-scheduler with this KubeSchedulerConfiguration (YAML); the harness adds
    /// the admin kubeconfig and turns leader election off unless the text says otherwise.
    pub fn scheduler(mut self, config_yaml: &str) -> Self {
        self.scheduler_config = Some(config_yaml.to_owned());
        self
    }

    /// Passes one more flag to kube-apiserver, e.g. `--feature-gates=X=true`.
    pub fn apiserver_arg(mut self, flag: &str) -> Self {
        self.apiserver_args.push(flag.to_owned());
        self
    }

    /// Also runs kube-controller-manager (what a cluster with nodes needs: DaemonSets,
    /// Deployments, `default` ServiceAccounts and `kube-root-ca.crt` in every namespace, node
    /// lifecycle, garbage collection).
    pub fn controller_manager(mut self) -> Self {
        self.controller_manager = true;
        self
    }

    /// klog verbosity of the components (default 0: errors only); their log is
    /// `<sandbox>/spinel-k8s.log`.
    pub fn verbosity(mut self, v: u8) -> Self {
        self.verbosity = v;
        self
    }

    /// How long a start may take before the test fails (default 180 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }
}

/// A running `spinel-k8s`: its API server's address and credentials. The process is killed on
/// drop; its data (etcd, keys, certificates) lives in a [`Sandbox`] and survives
/// [`ControlPlane::restart`].
pub struct ControlPlane {
    child: Option<Child>,
    opts: ControlPlaneOptions,
    server: String,
    port: u16,
    kubeconfig: PathBuf,
    ca_file: PathBuf,
    data_dir: PathBuf,
    log: PathBuf,
    // Last: dropped after the process is killed, so its directory goes with it.
    sandbox: Sandbox,
}

impl ControlPlane {
    /// Starts the control plane in a new sandbox and waits until the API server is ready,
    /// the CRDs are Established and the scheduler (if any) runs. Panics with the log's tail
    /// when it does not come up.
    pub fn start(opts: ControlPlaneOptions) -> Self {
        let bin = binary();
        let sandbox = Sandbox::new(&opts.name);
        let data_dir = sandbox.dir().join("k8s");
        let log = sandbox.dir().join("spinel-k8s.log");
        let mut plane = Self {
            child: None,
            server: String::new(),
            port: 0,
            kubeconfig: data_dir.join("admin.kubeconfig"),
            ca_file: PathBuf::new(),
            data_dir,
            log,
            opts,
            sandbox,
        };
        plane.launch(&bin, None);
        plane
    }

    /// The API server's URL, `https://127.0.0.1:PORT`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The API server's port on 127.0.0.1; the same across restarts.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The admin kubeconfig (client certificate in group `system:masters`, CA embedded).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The cluster CA's certificate (PEM), which signed the API server's serving certificate.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The harness's data directory: etcd's data, `pki/`, `harness.json`.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The components' log (stderr of every run, appended).
    pub fn log_file(&self) -> &Path {
        &self.log
    }

    /// The running harness's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A client with the admin kubeconfig. Call it inside a Tokio runtime, and use the client
    /// only in that runtime.
    pub async fn admin_client(&self) -> kube::Client {
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig)
            .unwrap_or_else(|e| panic!("read {}: {e}", self.kubeconfig.display()));
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap_or_else(|e| panic!("load {}: {e}", self.kubeconfig.display()));
        kube::Client::try_from(config).expect("build admin client")
    }

    /// Kills the harness with SIGKILL, as a crash would, and waits for it to die.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the harness with SIGTERM and returns its exit status (it stops the scheduler,
    /// the API server and etcd, then exits 0).
    pub fn terminate(&mut self) -> ExitStatus {
        let mut child = self
            .child
            .take()
            .expect("terminate: the control plane is not running");
        let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits i32"));
        kill(pid, Signal::SIGTERM).expect("send SIGTERM to spinel-k8s");
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if let Some(status) = child.try_wait().expect("wait for spinel-k8s") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("spinel-k8s ignored SIGTERM for 90 s\n{}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs kube-scheduler with this configuration from the next start on (after
    /// [`Self::terminate`] or [`Self::kill`]): the same cluster under another scheduler.
    pub fn set_scheduler(&mut self, config_yaml: &str) {
        self.opts.scheduler_config = Some(config_yaml.to_owned());
    }

    /// Starts the harness again on the same data directory and port after [`Self::kill`] or
    /// [`Self::terminate`], and waits until it is ready.
    pub fn start_again(&mut self) {
        assert!(
            self.child.is_none(),
            "start_again: the control plane still runs"
        );
        let port = self.port;
        self.launch(&binary(), Some(port));
    }

    /// Kills the harness (SIGKILL) and starts it again with the same data directory and port:
    /// an API server crash and restart.
    pub fn restart(&mut self) {
        self.kill();
        self.start_again();
    }

    fn launch(&mut self, bin: &Path, port: Option<u16>) {
        let mut cmd = Command::new(bin);
        cmd.arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg(format!("--v={}", self.opts.verbosity))
            .arg(format!(
                "--ready-timeout={}s",
                self.opts.ready_timeout.as_secs()
            ))
            // The harness exits when this process does, however it ends: a shared control
            // plane in a `static` is never dropped.
            .arg("--exit-with-stdin");
        if let Some(port) = port {
            cmd.arg(format!("--port={port}"));
        }
        for dir in &self.opts.crd_dirs {
            cmd.arg("--crd").arg(dir);
        }
        if let Some(config) = &self.opts.scheduler_config {
            let path = self.sandbox.dir().join("scheduler-config.yaml");
            fs::write(&path, config).expect("write scheduler configuration");
            cmd.arg("--scheduler-config").arg(path);
        }
        if self.opts.controller_manager {
            cmd.arg("--controller-manager");
        }
        for flag in &self.opts.apiserver_args {
            cmd.arg(format!("--apiserver-arg={flag}"));
        }
        let mut log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open spinel-k8s log");
        // The command line heads each run's log: what a failed start was asked to do.
        let _ = writeln!(log, "--- {cmd:?}");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(log);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        self.sandbox.record_pid(child.id());
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(read.map(|_| line));
        });
        self.child = Some(child);
        let line = match rx.recv_timeout(self.opts.ready_timeout) {
            Ok(Ok(line)) if !line.is_empty() => line,
            Ok(_) => {
                let status = self.child.as_mut().and_then(|c| c.wait().ok());
                self.child = None;
                panic!(
                    "spinel-k8s exited before it was ready ({status:?})\n{}",
                    self.log_tail()
                );
            }
            Err(_) => {
                self.kill();
                panic!(
                    "spinel-k8s not ready within {:?}\n{}",
                    self.opts.ready_timeout,
                    self.log_tail()
                );
            }
        };
        let ready: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("spinel-k8s ready line {line:?}: {e}"));
        assert_eq!(ready["ready"], true, "spinel-k8s ready line: {line}");
        let field = |key: &str| {
            ready[key]
                .as_str()
                .unwrap_or_else(|| panic!("spinel-k8s ready line lacks {key}: {line}"))
                .to_owned()
        };
        self.server = field("server");
        self.kubeconfig = PathBuf::from(field("kubeconfig"));
        self.ca_file = PathBuf::from(field("ca"));
        let new_port = ready["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or_else(|| panic!("spinel-k8s ready line lacks port: {line}"));
        if let Some(port) = port {
            assert_eq!(new_port, port, "spinel-k8s came back on another port");
        }
        self.port = new_port;
    }

    /// The last lines of the components' log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!("--- {} (last 40 lines) ---\n{tail}", self.log.display())
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The `spinel-k8s` binary: `$SPINEL_K8S_BIN`, else `<cargo target dir>/k8s/spinel-k8s`.
/// Panics, naming the build script, when it is missing.
pub fn binary() -> PathBuf {
    let path = match std::env::var_os(BIN_ENV) {
        Some(path) => PathBuf::from(path),
        None => std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target"))
            .join("k8s/spinel-k8s"),
    };
    assert!(
        path.is_file(),
        "the Kubernetes test tier needs the spinel-k8s control plane at {}: build it with \
         tests/k8s/build.sh (needs Go 1.26; ./scripts/test.sh does it), or set {BIN_ENV}",
        path.display()
    );
    path
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Mints a token for ServiceAccount `service_account` bound to Pod `pod` (both in `namespace`),
/// as the kubelet does for a projected token volume. The API server records the pod's node
/// in the token, so the token's user carries `authentication.kubernetes.io/node-name`. The
/// pod must name the ServiceAccount in `spec.serviceAccountName`.
pub async fn pod_bound_token(
    admin: &kube::Client,
    namespace: &str,
    service_account: &str,
    pod: &str,
) -> String {
    let uid = Api::<Pod>::namespaced(admin.clone(), namespace)
        .get(pod)
        .await
        .unwrap_or_else(|e| panic!("get pod {namespace}/{pod}: {e}"))
        .metadata
        .uid;
    let bound = BoundObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(pod.into()),
        uid,
    };
    token_request(admin, namespace, service_account, Some(bound)).await
}

/// Mints a token for ServiceAccount `service_account`, bound to no object.
pub async fn service_account_token(
    admin: &kube::Client,
    namespace: &str,
    service_account: &str,
) -> String {
    token_request(admin, namespace, service_account, None).await
}

async fn token_request(
    admin: &kube::Client,
    namespace: &str,
    service_account: &str,
    bound: Option<BoundObjectReference>,
) -> String {
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            // None: the API server's own audience.
            audiences: None,
            bound_object_ref: bound,
            expiration_seconds: Some(3600),
        }),
        ..Default::default()
    };
    Api::<ServiceAccount>::namespaced(admin.clone(), namespace)
        .create_token_request(service_account, &PostParams::default(), &request)
        .await
        .unwrap_or_else(|e| panic!("TokenRequest for {namespace}/{service_account}: {e}"))
        .status
        .and_then(|s| s.token)
        .unwrap_or_else(|| panic!("TokenRequest for {namespace}/{service_account}: no token"))
}

/// A client that authenticates with a bearer `token` to `server`, trusting the CA in
/// `ca_file` (PEM). Call it inside a Tokio runtime, and use the client only in that runtime.
pub fn client_with_token(server: &str, ca_file: &Path, token: &str) -> kube::Client {
    let url = server
        .parse()
        .unwrap_or_else(|e| panic!("server URL {server}: {e}"));
    let mut config = kube::Config::new(url);
    config.root_cert_file = Some(ca_file.to_owned());
    config.auth_info.token = Some(token.to_owned().into());
    kube::Client::try_from(config).expect("build token client")
}

/// RFC 7386 (JSON merge patch): `patch` merged into `target`, as the API server applies it;
/// what a policy test expects an object to become.
pub fn merge(target: &mut serde_json::Value, patch: &serde_json::Value) {
    use serde_json::Value;
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}
