//! [`KubeNode`]: a real Kubernetes node on this machine: the kubelet of the control plane's
//! release (`spinel-k8s kubelet`, tests/k8s), containerd v2.4 and its runc shim
//! (tests/node/build.sh), Debian's runc and CNI plugins. Nothing is simulated above the NICs:
//! the kubelet registers its Node with its own client certificate (user `system:node:NAME`,
//! group `system:nodes`, so the Node authorizer and NodeRestriction apply), reports Ready and
//! runs pods through containerd's CRI plugin, which calls the CNI chain in `/etc/cni/net.d`.
//!
//! Each node is a world of its own, so two run side by side:
//! - network namespace `node` of its [`Sandbox`]: the node's interfaces (its RoCE NICs, see
//!   [`crate::rail_fabric`]); the API server's `127.0.0.1:PORT` and the `kubernetes` Service's
//!   `10.96.0.1:443` are forwarded into it from the test's loopback ([`LoopbackBridge`]);
//! - a mount namespace (pinned at `ns/node-mnt`) where the node's own directories are bound
//!   over the paths a node uses: `/run` (with `/run/netns`, `/run/containerd`,
//!   `/run/spinel`), `/var/lib/kubelet`, `/var/lib/containerd`, `/var/lib/cni`,
//!   `/etc/cni/net.d`, `/opt/cni/bin`, `/etc/kubernetes`, `/etc/spinel`, `/var/log/pods`;
//!   the sandbox directory stays visible at its own path (configuration, fake sysfs);
//! - a cgroup `spinel-test-…` directly under every hierarchy: the kubelet's `cgroupRoot`
//!   (pods go to `<root>/kubepods/…`), and `<root>/system` for the kubelet, containerd and the
//!   shims. Whatever runs there is killed with the sandbox, on drop, by a watchdog when the
//!   test process dies however it dies, and by the next run's sweep.
//!
//! What differs from a production node, and why:
//! - containerd runs with `restrict_oom_score_adj`: this machine's processes lack
//!   `CAP_SYS_RESOURCE` in their bounding set (`CapBnd` 0x1fffeffffff), so no process here may
//!   lower an `oom_score_adj`, and runc fails every pod sandbox (-998) without it;
//! - the kubelet's kernel tunables (`vm.overcommit_memory`, `kernel.panic`,
//!   `kernel.panic_on_oops`) read the values it wants from files bound over them in the node's
//!   mount namespace: a kubelet rewrites them machine-wide, and this machine is shared;
//! - eviction thresholds are 1 % and image garbage collection is off: the disk is shared with
//!   other work, and images are imported from files, never pulled again;
//! - no kube-proxy, no cluster DNS: the `kubernetes` Service is forwarded as above.

use std::fs;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use serde_json::Value;

use crate::k8s::ControlPlane;
use crate::loopback::LoopbackBridge;
use crate::sandbox::{self, Sandbox};

/// The `kubernetes` Service's ClusterIP (the control plane's `--service-cluster-ip-range`).
pub const SERVICE_IP: [u8; 4] = [10, 96, 0, 1];
/// The pod sandbox image every node has (tests/node/build.sh builds it).
pub const PAUSE_IMAGE: &str = "spinel.test/pause:1";
/// A static busybox on an empty base for test pods (`sh`, `ip`, `ping`, `sleep`, `nc`, ...).
pub const BUSYBOX_IMAGE: &str = "spinel.test/busybox:1";

/// Host paths a node keeps to itself: each gets a directory of the node bound over it.
const NODE_PATHS: [&str; 9] = [
    "/etc/kubernetes",
    "/etc/cni/net.d",
    "/etc/spinel",
    "/opt/cni/bin",
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/cni",
    "/var/log/pods",
    "/var/log/containers",
];

/// Kernel tunables the kubelet sets machine-wide, with the values it wants
/// (pkg/kubelet/cm/container_manager_linux.go, setupKernelTunables).
const KUBELET_SYSCTLS: [(&str, &str); 3] = [
    ("vm/overcommit_memory", "1"),
    ("kernel/panic", "10"),
    ("kernel/panic_on_oops", "1"),
];

static NODE_INDEX: AtomicU8 = AtomicU8::new(0);

/// Where the node tier's binaries are: `<target>/node` (tests/node/build.sh).
pub fn node_bin_dir() -> PathBuf {
    let dir = crate::k8s::binary()
        .parent()
        .and_then(Path::parent)
        .map(|t| t.join("node"))
        .expect("spinel-k8s lives in <target>/k8s");
    for file in [
        "containerd",
        "containerd-shim-runc-v2",
        "ctr",
        "pause.oci.tar",
        "busybox.oci.tar",
    ] {
        assert!(
            dir.join(file).is_file(),
            "{} is missing: run tests/node/build.sh (./scripts/test.sh does)",
            dir.join(file).display()
        );
    }
    dir
}

/// A running (or stopped) node.
pub struct KubeNode {
    /// The Node's name.
    pub name: String,
    /// The node's internal IP (on its loopback; nothing dials it).
    pub ip: String,
    cgroup: String,
    api_port: u16,
    verbosity: u8,
    kubelet: Option<Child>,
    containerd: Option<Child>,
    watchdog: Option<Child>,
    bridges: Vec<LoopbackBridge>,
    extra_kubelet_config: Value,
    // Last: its drop kills whatever is left and removes the namespaces and directories.
    /// The sandbox holding the node's namespaces, directories and logs.
    pub sb: Sandbox,
}

impl KubeNode {
    /// Prepares node `name` for `cp` (namespaces, directories, cgroup, credentials, images)
    /// without starting anything; [`KubeNode::boot`] starts it.
    pub fn new(cp: &ControlPlane, name: &str) -> Self {
        crate::require_root();
        crate::require_tool("runc", "runc");
        crate::cni::require_debian_plugin("host-local");
        let bin = node_bin_dir();
        let sb = Sandbox::new(&format!("node-{name}"));
        let index = NODE_INDEX.fetch_add(1, Ordering::Relaxed);
        let cgroup = format!(
            "spinel-test-{}",
            sb.dir().file_name().unwrap().to_string_lossy()
        );
        sb.record_cgroup(&cgroup);
        let node = sb.netns("node");
        let ip = format!("10.250.{}.{}", index / 200, 10 + index % 200);
        sb.run_in(
            "node",
            "ip",
            &["addr", "add", &format!("{ip}/32"), "dev", "lo"],
        );
        let service = std::net::Ipv4Addr::from(SERVICE_IP);
        sb.run_in(
            "node",
            "ip",
            &["addr", "add", &format!("{service}/32"), "dev", "lo"],
        );
        let me = Self {
            name: name.to_owned(),
            ip,
            cgroup,
            api_port: cp.port(),
            verbosity: 0,
            kubelet: None,
            containerd: None,
            watchdog: None,
            bridges: vec![
                LoopbackBridge::new(&node, cp.port()),
                LoopbackBridge::at(&node, SocketAddr::from((SERVICE_IP, 443)), cp.port()),
            ],
            extra_kubelet_config: Value::Null,
            sb,
        };
        for path in NODE_PATHS {
            fs::create_dir_all(me.root(path)).unwrap();
        }
        fs::create_dir_all(me.sb.dir().join("run")).unwrap();
        me.write_containerd_config(&bin);
        // The cluster CA: the kubelet authenticates its own API's clients with it.
        fs::copy(cp.ca_file(), me.root("/etc/kubernetes/ca.crt")).expect("copy the cluster CA");
        let out = Command::new(crate::k8s::binary())
            .arg("node-kubeconfig")
            .arg("--data-dir")
            .arg(cp.data_dir())
            .arg("--node")
            .arg(name)
            .arg("--out")
            .arg(me.root("/etc/kubernetes/kubelet.kubeconfig"))
            .output()
            .expect("run spinel-k8s node-kubeconfig");
        assert!(
            out.status.success(),
            "node credentials for {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        me
    }

    /// Prepares and boots node `name`: [`KubeNode::new`], then [`KubeNode::boot`].
    pub fn start(cp: &ControlPlane, name: &str) -> Self {
        let mut node = Self::new(cp, name);
        node.boot();
        node
    }

    /// klog verbosity of the kubelet from its next start (default 0); its log is
    /// `<sandbox>/kubelet.log`.
    pub fn set_verbosity(&mut self, v: u8) {
        self.verbosity = v;
    }

    /// Merges `fields` into the KubeletConfiguration from the kubelet's next start.
    pub fn set_kubelet_config(&mut self, fields: Value) {
        self.extra_kubelet_config = fields;
    }

    /// The node's directory standing in for host path `path` (e.g. `/opt/cni/bin`), as the
    /// test sees it.
    pub fn root(&self, path: &str) -> PathBuf {
        assert!(path.starts_with('/'), "a host path: {path}");
        if let Some(rest) = path.strip_prefix("/run") {
            return self.sb.dir().join("run").join(rest.trim_start_matches('/'));
        }
        self.sb
            .dir()
            .join("root")
            .join(path.trim_start_matches('/'))
    }

    /// The path of the node's network namespace.
    pub fn netns(&self) -> PathBuf {
        self.sb.netns_path("node")
    }

    fn mount_ns(&self) -> PathBuf {
        self.sb.netns_path("node-mnt")
    }

    /// Boots the node: a fresh mount namespace, containerd, the sandbox and test images
    /// imported, the kubelet. Returns once both run; [`KubeNode::wait_ready`] waits for the
    /// Node to be Ready.
    pub fn boot(&mut self) {
        self.make_mount_ns();
        self.start_watchdog();
        self.start_containerd();
        let bin = node_bin_dir();
        for image in ["pause.oci.tar", "busybox.oci.tar"] {
            self.import_image(&bin.join(image));
        }
        self.start_kubelet();
    }

    /// The mount namespace: the node's directories over the host paths, then made shared
    /// (as on a systemd host: volumes with mount propagation need it).
    fn make_mount_ns(&self) {
        let mnt = self.mount_ns();
        assert!(!mnt.exists(), "the node's mount namespace exists already");
        fs::write(&mnt, "").unwrap();
        let sysctls = self.sb.dir().join("sysctl");
        fs::create_dir_all(&sysctls).unwrap();
        let mut binds: Vec<String> = Vec::new();
        for path in NODE_PATHS {
            // The mount point itself, as a node has it (an empty directory on this machine).
            fs::create_dir_all(path).unwrap_or_else(|e| panic!("create {path}: {e}"));
            binds.push(format!("{}={path}", self.root(path).display()));
        }
        for (key, value) in KUBELET_SYSCTLS {
            let file = sysctls.join(key.replace('/', "."));
            fs::write(&file, format!("{value}\n")).unwrap();
            binds.push(format!("{}=/proc/sys/{key}", file.display()));
        }
        let run = self.sb.dir().join("run");
        let sb_dir = self.sb.dir().to_str().unwrap().to_owned();
        // Where the sandbox shows at its own path once the node's /run is bound over /run.
        let inner = run.join(
            self.sb
                .dir()
                .strip_prefix("/run")
                .expect("sandboxes live under /run"),
        );
        fs::create_dir_all(&inner).unwrap();
        // Other tests' namespace pins are unmounted first: a copy here would keep their
        // namespaces alive after they delete them.
        let script = r#"set -e
findmnt -rn -t nsfs -o TARGET | while read -r t; do umount -l "$t" 2>/dev/null || true; done
sb=$1 run=$2 inner=$3
shift 3
for pair in "$@"; do mount --bind "${pair%%=*}" "${pair#*=}"; done
mount --bind "$sb" "$inner"
mount --rbind "$run" /run
mount --make-rshared /
"#;
        let out = Command::new("unshare")
            .arg(format!("--mount={}", mnt.display()))
            .args(["--propagation", "private", "/bin/sh", "-c", script, "sh"])
            .arg(&sb_dir)
            .arg(&run)
            .arg(&inner)
            .args(&binds)
            .stdin(Stdio::null())
            .output()
            .expect("run unshare");
        assert!(
            out.status.success(),
            "the node's mount namespace: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Kills every process of the node (in its cgroup) once the test process is gone, however
    /// it ends: the watchdog's stdin is a pipe only the test holds.
    fn start_watchdog(&mut self) {
        if self
            .watchdog
            .as_mut()
            .is_some_and(|w| w.try_wait().ok().flatten().is_none())
        {
            return;
        }
        let dirs: Vec<PathBuf> = sandbox::cgroup_hierarchies()
            .into_iter()
            .map(|h| h.join(&self.cgroup))
            .collect();
        let script = r#"cat >/dev/null 2>&1
for _ in $(seq 100); do
  pids=$(find "$@" -name cgroup.procs -exec cat {} + 2>/dev/null)
  [ -z "$pids" ] && exit 0
  kill -9 $pids 2>/dev/null
  sleep 0.1
done"#;
        let child = Command::new("/bin/sh")
            .args(["-c", script, "sh"])
            .args(&dirs)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the node's watchdog");
        self.sb.record_pid(child.id());
        self.watchdog = Some(child);
    }

    /// Creates `<cgroup>/system` in every hierarchy (cpuset initialised from the root) and
    /// returns its `cgroup.procs` files.
    fn system_cgroup(&self) -> Vec<PathBuf> {
        let mut procs = Vec::new();
        for hierarchy in sandbox::cgroup_hierarchies() {
            let mut dir = hierarchy.clone();
            for part in [self.cgroup.as_str(), "system"] {
                dir = dir.join(part);
                fs::create_dir_all(&dir)
                    .unwrap_or_else(|e| panic!("create cgroup {}: {e}", dir.display()));
                for file in ["cpuset.cpus", "cpuset.mems"] {
                    let mine = dir.join(file);
                    if mine.exists() && fs::read_to_string(&mine).unwrap().trim().is_empty() {
                        let from = fs::read_to_string(hierarchy.join(file)).unwrap();
                        fs::write(&mine, from.trim()).unwrap();
                    }
                }
            }
            procs.push(dir.join("cgroup.procs"));
        }
        procs
    }

    /// A command that runs `program` as a process of the node: in its cgroup, network and
    /// mount namespaces, with a clean environment whose `PATH` has the node's binaries.
    pub fn command(&self, program: &Path) -> Command {
        let procs: Vec<String> = self
            .system_cgroup()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let script = r#"for f in $SPINEL_NODE_CGROUP; do echo $$ > "$f"; done
unset SPINEL_NODE_CGROUP
mnt=$1 net=$2
shift 2
exec nsenter --mount="$mnt" --net="$net" -- "$@""#;
        let mut cmd = Command::new("/bin/sh");
        cmd.env_clear()
            .env(
                "PATH",
                format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", node_bin_dir().display()),
            )
            .env("HOME", "/root")
            .env("SPINEL_NODE_CGROUP", procs.join(" "))
            .args(["-c", script, "sh"])
            .arg(self.mount_ns())
            .arg(self.netns())
            .arg(program);
        cmd
    }

    fn log(&self, name: &str) -> fs::File {
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.sb.dir().join(name))
            .expect("open node log");
        let _ = writeln!(file, "--- start {:?}", std::time::SystemTime::now());
        file
    }

    fn write_containerd_config(&self, bin: &Path) {
        let config = format!(
            r#"version = 3
# Nothing under /opt/containerd on this machine.
[plugins.'io.containerd.internal.v1.opt']
  path = "/var/lib/containerd/opt"
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "{PAUSE_IMAGE}"
[plugins.'io.containerd.cri.v1.runtime']
  # No process here may lower an oom_score_adj (CAP_SYS_RESOURCE is not in the bounding set).
  restrict_oom_score_adj = true
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ["/opt/cni/bin"]
  conf_dir = "/etc/cni/net.d"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = "/usr/sbin/runc"
# containerd-shim-runc-v2 is found on PATH: {}
"#,
            bin.display()
        );
        fs::write(self.root("/etc/kubernetes/containerd.toml"), config).unwrap();
    }

    /// Starts containerd and waits for its socket.
    pub fn start_containerd(&mut self) {
        assert!(self.containerd.is_none(), "containerd runs already");
        let mut cmd = self.command(Path::new("containerd"));
        cmd.args(["--config", "/etc/kubernetes/containerd.toml"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(self.log("containerd.log"));
        let child = cmd.spawn().expect("spawn containerd");
        self.sb.record_pid(child.id());
        self.containerd = Some(child);
        let socket = self.root("/run/containerd/containerd.sock");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.ctr_works() {
            assert!(
                Instant::now() < deadline,
                "containerd did not serve {} within 60 s\n{}",
                socket.display(),
                self.log_tail("containerd.log")
            );
            if let Some(status) = self.containerd.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!(
                    "containerd exited ({status})\n{}",
                    self.log_tail("containerd.log")
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn ctr_works(&self) -> bool {
        self.root("/run/containerd/containerd.sock").exists()
            && self
                .command(Path::new("ctr"))
                .args(["version"])
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|o| o.status.success())
    }

    /// Runs `ctr -n k8s.io ARGS` on the node and returns its stdout; panics when it fails.
    pub fn ctr(&self, args: &[&str]) -> String {
        let out = self
            .command(Path::new("ctr"))
            .args(["-n", "k8s.io"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run ctr");
        assert!(
            out.status.success(),
            "ctr {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Imports an OCI archive into containerd's CRI namespace, as an operator side-loads an
    /// image (`ctr -n k8s.io images import`).
    pub fn import_image(&self, archive: &Path) {
        self.ctr(&["images", "import", archive.to_str().unwrap()]);
    }

    /// Kills containerd with SIGKILL (its shims and the containers keep running).
    pub fn kill_containerd(&mut self) {
        if let Some(mut child) = self.containerd.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn write_kubelet_config(&self) {
        let mut config = serde_json::json!({
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            // This machine boots with cgroup v1 hierarchies; 1.35+ refuses them unless told.
            "failCgroupV1": false,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": format!("/{}", self.cgroup),
            "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
            "authentication": {
                "anonymous": {"enabled": false},
                "webhook": {"enabled": false},
                "x509": {"clientCAFile": "/etc/kubernetes/ca.crt"},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "readOnlyPort": 0,
            "failSwapOn": false,
            // The disk is shared with other work: evict only when it is really full.
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "nodefs.inodesFree": "1%",
                "imagefs.available": "1%",
                "imagefs.inodesFree": "1%",
            },
            // Images are imported from files: never collect them.
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "volumePluginDir": "/var/lib/kubelet/volume-plugins",
            "nodeStatusUpdateFrequency": "5s",
            "syncFrequency": "10s",
        });
        if let (Some(base), Some(extra)) = (
            config.as_object_mut(),
            self.extra_kubelet_config.as_object(),
        ) {
            for (k, v) in extra {
                base.insert(k.clone(), v.clone());
            }
        }
        fs::write(
            self.root("/etc/kubernetes/kubelet.yaml"),
            serde_json::to_string_pretty(&config).unwrap(),
        )
        .unwrap();
    }

    /// Starts the kubelet (containerd must run).
    pub fn start_kubelet(&mut self) {
        assert!(self.kubelet.is_none(), "the kubelet runs already");
        self.write_kubelet_config();
        let mut cmd = self.command(&crate::k8s::binary());
        cmd.arg("kubelet")
            .arg("--config=/etc/kubernetes/kubelet.yaml")
            .arg("--kubeconfig=/etc/kubernetes/kubelet.kubeconfig")
            .arg(format!("--hostname-override={}", self.name))
            .arg(format!("--node-ip={}", self.ip))
            .arg(format!("--v={}", self.verbosity))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(self.log("kubelet.log"));
        let child = cmd.spawn().expect("spawn the kubelet");
        self.sb.record_pid(child.id());
        self.kubelet = Some(child);
    }

    /// Kills the kubelet with SIGKILL (pods keep running).
    pub fn kill_kubelet(&mut self) {
        if let Some(mut child) = self.kubelet.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The kubelet's process id while it runs.
    pub fn kubelet_pid(&self) -> Option<u32> {
        self.kubelet.as_ref().map(Child::id)
    }

    /// Whether the kubelet still runs (it exits on a fatal error, e.g. a bad configuration).
    pub fn kubelet_running(&mut self) -> bool {
        self.kubelet
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// A power cut: every process of the node (kubelet, containerd, shims, containers) is
    /// killed, the mount namespace (with the pods' network namespaces pinned in `/run/netns`)
    /// is gone and `/run` is empty. Disks (`/var/lib/...`, `/etc/...`) keep their contents.
    /// [`KubeNode::boot`] starts it again.
    pub fn power_off(&mut self) {
        self.kill_kubelet();
        self.kill_containerd();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let members: Vec<i32> = sandbox::cgroup_members(&self.cgroup);
            if members.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the node's processes {members:?} outlived SIGKILL for 10 s"
            );
            for pid in members {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        hostnet::netns::NetNs::remove_at(self.mount_ns()).expect("unpin the mount namespace");
        // Seen from the test's mount namespace, /run of the node is a plain directory.
        let run = self.sb.dir().join("run");
        fs::remove_dir_all(&run).unwrap_or_else(|e| panic!("clear {}: {e}", run.display()));
        fs::create_dir_all(&run).unwrap();
    }

    /// Waits until the Node reports Ready (and the not-ready taint is lifted, which the node
    /// lifecycle controller does).
    pub async fn wait_ready(&mut self, admin: &kube::Client, timeout: Duration) -> Node {
        let nodes = Api::<Node>::all(admin.clone());
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(node) = nodes.get(&self.name).await
                && node_ready(&node)
            {
                return node;
            }
            if !self.kubelet_running() {
                panic!(
                    "the kubelet of {} exited\n{}",
                    self.name,
                    self.log_tail("kubelet.log")
                );
            }
            assert!(
                Instant::now() < deadline,
                "node {} not Ready within {timeout:?}\n{}",
                self.name,
                self.log_tail("kubelet.log")
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The last 40 lines of the node's log `name` (`kubelet.log`, `containerd.log`).
    pub fn log_tail(&self, name: &str) -> String {
        let path = self.sb.dir().join(name);
        let text = fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "--- {} (last 40 lines) ---\n{}",
            path.display(),
            lines[lines.len().saturating_sub(40)..].join("\n")
        )
    }

    /// The host pid of container `container` of `pod` (found in the node's cgroup tree by
    /// the container ID the kubelet reports), if it runs.
    pub fn container_pid(&self, pod: &Pod, container: &str) -> Option<i32> {
        let status = pod.status.as_ref()?;
        let id = status
            .container_statuses
            .iter()
            .flatten()
            .chain(status.init_container_statuses.iter().flatten())
            .find(|c| c.name == container)?
            .container_id
            .as_deref()?
            .strip_prefix("containerd://")?
            .to_owned();
        let pids = find_cgroup(
            &sandbox::cgroup_hierarchies().first()?.join(&self.cgroup),
            &id,
        )?;
        fs::read_to_string(pids.join("cgroup.procs"))
            .ok()?
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .min()
    }

    /// Runs `program args` in the network namespace of `pod`'s container `container`, with
    /// this machine's tools (`ip`, `ping`), and returns its output.
    pub fn in_pod_netns(
        &self,
        pod: &Pod,
        container: &str,
        program: &str,
        args: &[&str],
    ) -> std::process::Output {
        let pid = self
            .container_pid(pod, container)
            .unwrap_or_else(|| panic!("container {container} of the pod does not run"));
        Command::new("nsenter")
            .arg(format!("--net=/proc/{pid}/ns/net"))
            .arg("--")
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run nsenter")
    }

    /// Runs `args` inside `pod`'s container `container` (all its namespaces and its root: the
    /// image's own programs), and returns its output.
    pub fn exec(&self, pod: &Pod, container: &str, args: &[&str]) -> std::process::Output {
        let pid = self
            .container_pid(pod, container)
            .unwrap_or_else(|| panic!("container {container} of the pod does not run"));
        Command::new("nsenter")
            .args(["-t", &pid.to_string(), "-a", "--"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run nsenter")
    }

    /// Every process in the node's cgroup (kubelet, containerd, shims, containers).
    pub fn processes(&self) -> Vec<i32> {
        sandbox::cgroup_members(&self.cgroup)
    }

    /// The node's kubelet cgroup root (a directory under every hierarchy).
    pub fn cgroup(&self) -> &str {
        &self.cgroup
    }

    /// The forwarded API server port.
    pub fn api_port(&self) -> u16 {
        self.api_port
    }
}

impl Drop for KubeNode {
    fn drop(&mut self) {
        self.kill_kubelet();
        self.kill_containerd();
        self.bridges.clear();
        // The sandbox kills the rest (its cgroup), unpins the namespaces, removes the cgroup.
    }
}

/// Whether `node` reports Ready and carries no not-ready taint.
pub fn node_ready(node: &Node) -> bool {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == "node.kubernetes.io/not-ready"));
    ready && !tainted
}

/// The cgroup directory named `leaf` below `dir`, searched depth-first.
fn find_cgroup(dir: &Path, leaf: &str) -> Option<PathBuf> {
    for entry in fs::read_dir(dir).ok()?.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if entry.file_name().to_str() == Some(leaf) {
            return Some(entry.path());
        }
        if let Some(found) = find_cgroup(&entry.path(), leaf) {
            return Some(found);
        }
    }
    None
}
