//! The scheduler tier: a real kube-scheduler (in `spinel-k8s`) configured by the shipped
//! `deploy/scheduler/kube-scheduler-config.yaml`, calling `spinel-scheduler` replicas through an
//! [`ExtenderService`] on loopback; the replicas run as the real binary with a pod-bound token
//! of the shipped ServiceAccount, held by the shipped RBAC and admission policy.
//!
//! [`SchedulerRig`] puts it together; [`objects`] builds the Nodes and Pods.

pub mod fixtures;
pub mod latency;
pub mod objects;
pub mod service;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

pub use self::service::{Exchange, ExtenderService, http};
use crate::Sandbox;
use crate::k8s::{ControlPlane, ControlPlaneOptions, pod_bound_token};

/// Namespace of the shipped manifests.
pub const NAMESPACE: &str = "spinel-system";
/// The shipped ServiceAccount.
pub const SERVICE_ACCOUNT: &str = "spinel-scheduler";

/// The `spinel-scheduler` binary: `SPINEL_SCHEDULER_BIN` when set (benchmarks use a release
/// build), otherwise built once per process from the current sources.
pub fn scheduler_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        crate::cni::built(
            "spinel-scheduler",
            "spinel-scheduler",
            "SPINEL_SCHEDULER_BIN",
        )
    })
}

/// A file under `deploy/scheduler/`.
pub fn deploy_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/scheduler")
        .join(name)
}

/// The shipped KubeSchedulerConfiguration, pointed at `extender_url`, with what only fits a
/// real cluster taken out (its kubeconfig path: the harness supplies the admin one; leader
/// election: one kube-scheduler here), then changed by `edit`. Returned as JSON (which is YAML).
pub fn kube_scheduler_config(extender_url: &str, edit: impl FnOnce(&mut Value)) -> String {
    let path = deploy_file("kube-scheduler-config.yaml");
    let text = std::fs::read_to_string(&path).expect("read kube-scheduler-config.yaml");
    let mut cfg: Value = serde_saphyr::from_str(&text).expect("kube-scheduler-config.yaml parses");
    cfg["extenders"][0]["urlPrefix"] = json!(extender_url);
    if let Some(map) = cfg.as_object_mut() {
        map.remove("clientConnection");
    }
    cfg["leaderElection"] = json!({"leaderElect": false});
    edit(&mut cfg);
    serde_json::to_string_pretty(&cfg).expect("configuration as JSON")
}

/// A kubeconfig that authenticates with `token`.
pub fn write_token_kubeconfig(path: &Path, server: &str, ca_file: &Path, token: &str) {
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "test", "cluster": {
            "server": server, "certificate-authority": ca_file}}],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {
            "cluster": "test", "user": SERVICE_ACCOUNT, "namespace": NAMESPACE}}],
        "current-context": "test",
    });
    std::fs::write(path, config.to_string()).expect("write kubeconfig");
}

pub use crate::free_port;

/// One `spinel-scheduler` process, killed on drop. It runs under a small shell that kills it
/// when this test process's end of its stdin closes, so one kept in a `static` (never dropped)
/// still stops when the tests end.
pub struct Extender {
    wrapper: Child,
    stdin: Option<ChildStdin>,
    pid: u32,
    addr: SocketAddr,
    log: PathBuf,
    pod_name: String,
}

impl Extender {
    /// Starts the binary on a free port, with `KUBECONFIG`, `POD_NAME` and `POD_NAMESPACE` set
    /// as the Deployment sets them, and `args` after `--listen`. Does not wait for readiness.
    pub fn spawn(sandbox: &Sandbox, kubeconfig: &Path, pod_name: &str, args: &[String]) -> Self {
        Self::spawn_on(sandbox, kubeconfig, pod_name, free_port(), args)
    }

    /// [`Self::spawn`] on a given loopback port.
    pub fn spawn_on(
        sandbox: &Sandbox,
        kubeconfig: &Path,
        pod_name: &str,
        port: u16,
        args: &[String],
    ) -> Self {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let log = sandbox.dir().join(format!("{pod_name}.log"));
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("open extender log");
        // `$!` is the scheduler; the shell reads its stdin until EOF, then kills it.
        let mut wrapper = Command::new("sh")
            .arg("-c")
            .arg("\"$0\" \"$@\" & echo $!; read _; kill -KILL $! 2>/dev/null")
            .arg(scheduler_binary())
            .arg(format!("--listen={addr}"))
            .arg("--log-format=text")
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env("POD_NAME", pod_name)
            .env("POD_NAMESPACE", NAMESPACE)
            .env("SPINEL_LOG", "info,spinel_scheduler=debug")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn spinel-scheduler");
        sandbox.record_pid(wrapper.id());
        let mut line = String::new();
        BufReader::new(wrapper.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the scheduler's pid");
        let pid: u32 = line.trim().parse().expect("the scheduler's pid");
        sandbox.record_pid(pid);
        let stdin = wrapper.stdin.take();
        Self {
            wrapper,
            stdin,
            pid,
            addr,
            log,
            pod_name: pod_name.to_owned(),
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The process id of `spinel-scheduler` itself.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its `POD_NAME` (the Events' reporting instance, the lease holder's identity).
    pub fn pod_name(&self) -> &str {
        &self.pod_name
    }

    /// `GET path` on it: status and body (`None` when it does not answer).
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        http(self.addr, "GET", path, b"")
            .ok()
            .map(|(s, b)| (s, String::from_utf8_lossy(&b).into_owned()))
    }

    /// Waits until `path` answers 200; panics with the log's tail after `timeout`.
    pub fn wait_for(&self, path: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = self.get(path);
            if seen.as_ref().is_some_and(|(s, _)| *s == 200) {
                return;
            }
            assert!(
                Instant::now() < deadline && self.is_alive(),
                "spinel-scheduler {} {path}: not 200 within {timeout:?} (last: {seen:?})\n{}",
                self.pod_name,
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The value of one sample of its `/metrics` (exact name and labels).
    pub fn metric(&self, sample: &str) -> Option<f64> {
        let (_, text) = self.get("/metrics")?;
        text.lines()
            .find_map(|l| l.strip_prefix(sample)?.strip_prefix(' '))
            .and_then(|v| v.parse().ok())
    }

    /// Whether the process still runs (not a zombie).
    pub fn is_alive(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    }

    /// SIGKILL, as a crash or a node loss would.
    pub fn kill(&self) {
        let pid = Pid::from_raw(i32::try_from(self.pid).expect("pid fits i32"));
        let _ = kill(pid, Signal::SIGKILL);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.is_alive() {
            assert!(
                Instant::now() < deadline,
                "spinel-scheduler survived SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "--- {} (last 30 lines) ---\n{}",
            self.log.display(),
            lines[lines.len().saturating_sub(30)..].join("\n")
        )
    }
}

impl Drop for Extender {
    fn drop(&mut self) {
        // EOF on the shell's stdin: it kills the scheduler and exits.
        self.stdin.take();
        let _ = self.wrapper.wait();
    }
}

/// How a [`SchedulerRig`] is set up.
pub struct RigOptions {
    name: String,
    replicas: usize,
    extender_args: Vec<String>,
    config_edit: Box<dyn FnOnce(&mut Value) + Send>,
    extra_manifests: Vec<PathBuf>,
    apiserver_args: Vec<String>,
}

impl RigOptions {
    /// One replica with the shipped configuration.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            replicas: 1,
            extender_args: Vec::new(),
            config_edit: Box::new(|_| {}),
            extra_manifests: Vec::new(),
            apiserver_args: Vec::new(),
        }
    }

    /// Runs `n` replicas (give them `--leader-elect`).
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n;
        self
    }

    /// Arguments for every replica, after `--listen`.
    pub fn extender_args(mut self, args: &[&str]) -> Self {
        self.extender_args = args.iter().map(|a| (*a).to_owned()).collect();
        self
    }

    /// Changes the shipped KubeSchedulerConfiguration (as JSON) before kube-scheduler starts.
    pub fn edit_config(mut self, edit: impl FnOnce(&mut Value) + Send + 'static) -> Self {
        self.config_edit = Box::new(edit);
        self
    }

    /// Applies one more file of `deploy/scheduler/` (e.g. `rbac-bind.yaml`).
    pub fn manifest(mut self, file: &str) -> Self {
        self.extra_manifests.push(deploy_file(file));
        self
    }

    /// Passes a flag to kube-apiserver.
    pub fn apiserver_arg(mut self, flag: &str) -> Self {
        self.apiserver_args.push(flag.to_owned());
        self
    }
}

/// A control plane with kube-scheduler, the shipped manifests applied, and `spinel-scheduler`
/// replicas behind an [`ExtenderService`].
pub struct SchedulerRig {
    /// The extender replicas, `spinel-scheduler-0`, `-1`, ...
    pub replicas: Vec<Extender>,
    /// The "Service" kube-scheduler calls; it records every exchange.
    pub service: ExtenderService,
    /// The control plane.
    pub cp: ControlPlane,
    kubeconfigs: Vec<PathBuf>,
    tokens: Vec<String>,
    sandbox: Sandbox,
}

impl SchedulerRig {
    /// Starts everything and waits until the first replica is ready (or, with several, until
    /// each answers `/healthz`). Runs its setup on a thread of its own, so it may be called from
    /// inside a Tokio test.
    pub fn start(opts: RigOptions) -> Self {
        std::thread::spawn(move || Self::start_blocking(opts))
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    }

    fn start_blocking(opts: RigOptions) -> Self {
        let service = ExtenderService::start();
        let config = kube_scheduler_config(&service.url(), opts.config_edit);
        let mut cp_opts = ControlPlaneOptions::new(&opts.name).scheduler(&config);
        for flag in &opts.apiserver_args {
            cp_opts = cp_opts.apiserver_arg(flag);
        }
        let cp = ControlPlane::start(cp_opts);
        let sandbox = Sandbox::new(&format!("{}-ext", opts.name));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let pods: Vec<String> = (0..opts.replicas)
            .map(|i| format!("spinel-scheduler-{i}"))
            .collect();
        let tokens = runtime.block_on(async {
            let admin = cp.admin_client().await;
            // The namespace is deploy/namespace.yaml's (the chart renders it once).
            for file in ["../namespace.yaml", "rbac.yaml", "admission-policy.yaml"] {
                objects::apply_manifest(&admin, &deploy_file(file)).await;
            }
            for file in &opts.extra_manifests {
                objects::apply_manifest(&admin, file).await;
            }
            let mut tokens = Vec::new();
            for pod in &pods {
                tokens.push(scheduler_token(&admin, pod).await);
            }
            tokens
        });
        let mut rig = Self {
            replicas: Vec::new(),
            service,
            cp,
            kubeconfigs: Vec::new(),
            tokens,
            sandbox,
        };
        for (i, pod) in pods.iter().enumerate() {
            let kubeconfig = rig.sandbox.dir().join(format!("{pod}.kubeconfig"));
            write_token_kubeconfig(
                &kubeconfig,
                rig.cp.server(),
                rig.cp.ca_file(),
                &rig.tokens[i],
            );
            let replica = Extender::spawn(&rig.sandbox, &kubeconfig, pod, &opts.extender_args);
            rig.service.add_backend(replica.addr());
            rig.kubeconfigs.push(kubeconfig);
            rig.replicas.push(replica);
        }
        let single = rig.replicas.len() == 1;
        for r in &rig.replicas {
            r.wait_for(
                if single { "/readyz" } else { "/healthz" },
                Duration::from_secs(60),
            );
        }
        rig
    }

    /// The token replica `i` runs with (a pod-bound token of the shipped ServiceAccount).
    pub fn token(&self, i: usize) -> &str {
        &self.tokens[i]
    }

    /// Starts replica `i` again after [`Extender::kill`], with the same token and arguments.
    pub fn respawn(&mut self, i: usize, args: &[String]) {
        let pod = self.replicas[i].pod_name.clone();
        let replica = Extender::spawn(&self.sandbox, &self.kubeconfigs[i], &pod, args);
        self.service.add_backend(replica.addr());
        self.replicas[i] = replica;
    }
}

/// A Pod standing for replica `pod` (on no real node), and a token bound to it, as the
/// kubelet mints for the Deployment's pods.
pub async fn scheduler_token(admin: &kube::Client, pod: &str) -> String {
    let object: Pod = serde_json::from_value(json!({
        "metadata": {"name": pod, "labels": {"app.kubernetes.io/name": "spinel-scheduler"}},
        "spec": {
            "serviceAccountName": SERVICE_ACCOUNT,
            "nodeName": "control-plane-0",
            "containers": [{"name": "spinel-scheduler", "image": "spinel/spinel-scheduler"}],
        },
    }))
    .expect("a Pod");
    Api::<Pod>::namespaced(admin.clone(), NAMESPACE)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("create pod {NAMESPACE}/{pod}: {e}"));
    pod_bound_token(admin, NAMESPACE, SERVICE_ACCOUNT, pod).await
}
