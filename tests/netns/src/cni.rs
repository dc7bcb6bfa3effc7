//! Driving CNI plugins the way a runtime (libcni, Multus) does: environment plus stdin, one
//! process per call, results passed down a chain as `prevResult`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// One plugin call's outcome.
#[derive(Debug, Clone)]
pub struct CniOutput {
    /// Exit status code (-1 when killed by a signal).
    pub status: i32,
    /// The signal that killed the process, if one did.
    pub signal: Option<i32>,
    /// stdout parsed as JSON (the result or the CNI error), `Null` when empty.
    pub json: Value,
    /// stdout as text.
    pub stdout: String,
    /// stderr as text.
    pub stderr: String,
}

impl CniOutput {
    /// True on exit status 0.
    pub fn ok(&self) -> bool {
        self.status == 0
    }

    /// The CNI error code, when the call failed with one.
    pub fn code(&self) -> Option<u64> {
        self.json.get("code").and_then(Value::as_u64)
    }

    /// Panics with the whole output unless the call succeeded.
    #[track_caller]
    pub fn expect_ok(&self, what: &str) -> &Value {
        assert!(
            self.ok(),
            "{what} failed ({}): {}\nstderr: {}",
            self.status,
            self.stdout,
            self.stderr
        );
        &self.json
    }

    /// Panics unless the call failed with `code`.
    #[track_caller]
    pub fn expect_code(&self, code: u64, what: &str) -> &str {
        assert!(
            !self.ok(),
            "{what}: expected error {code}, got success: {}",
            self.stdout
        );
        assert_eq!(
            self.code(),
            Some(code),
            "{what}: wrong code: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        self.json
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// The environment of one call.
#[derive(Debug, Clone, Default)]
pub struct CniCall {
    /// `CNI_COMMAND`.
    pub command: String,
    /// `CNI_CONTAINERID`.
    pub container_id: String,
    /// `CNI_NETNS`.
    pub netns: Option<PathBuf>,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// `CNI_ARGS`.
    pub args: Option<String>,
}

impl CniCall {
    /// A call for one attachment, with the `CNI_ARGS` Multus sends behind containerd: its own
    /// pairs, then the runtime's again (Multus `pkg/types/conf.go` appends every runtime pair
    /// whose key it does not hold with an empty value), so every key repeats.
    pub fn new(command: &str, container_id: &str, netns: Option<&Path>, ifname: &str) -> Self {
        let pod = format!(
            "K8S_POD_NAMESPACE=training;K8S_POD_NAME=pod-{container_id};K8S_POD_INFRA_CONTAINER_ID={container_id};K8S_POD_UID=uid-{container_id}"
        );
        Self {
            command: command.into(),
            container_id: container_id.into(),
            netns: netns.map(Path::to_owned),
            ifname: ifname.into(),
            args: Some(format!("IgnoreUnknown=true;{pod};IgnoreUnknown=1;{pod}")),
        }
    }

    /// A call with only `CNI_COMMAND` set, for the commands about the network rather than an
    /// attachment (STATUS, GC, VERSION).
    pub fn bare(command: &str) -> Self {
        Self {
            command: command.into(),
            ..Self::default()
        }
    }

    /// The same call with another command.
    pub fn with_command(&self, command: &str) -> Self {
        Self {
            command: command.into(),
            ..self.clone()
        }
    }

    /// Sets the `CNI_*` variables on `cmd` (removing those this call leaves unset); the
    /// rest of the command's environment is left alone.
    pub fn apply(&self, cmd: &mut Command, cni_path: &Path) {
        cmd.env("CNI_COMMAND", &self.command)
            .env("CNI_CONTAINERID", &self.container_id)
            .env("CNI_IFNAME", &self.ifname)
            .env("CNI_PATH", cni_path)
            .env("CNI_NETNS", self.netns.as_deref().unwrap_or(Path::new("")));
        match &self.args {
            Some(args) => cmd.env("CNI_ARGS", args),
            None => cmd.env_remove("CNI_ARGS"),
        };
    }
}

/// Runs a prepared plugin command with `stdin` and collects the outcome.
pub fn run(cmd: Command, stdin: &Value) -> CniOutput {
    run_raw(cmd, stdin.to_string().as_bytes())
}

/// How long one plugin invocation may take before the test calls it hung.
const PLUGIN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs a prepared plugin command with raw bytes on stdin (for malformed input).
pub fn run_raw(mut cmd: Command, stdin: &[u8]) -> CniOutput {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    // A plugin may refuse oversized input without reading it all.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    // A plugin that hangs (say, on a FIFO given as CNI_NETNS) fails the test instead of
    // hanging it. The child is not reaped before the waiter returns, so its pid is still ours.
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let out = match rx.recv_timeout(PLUGIN_DEADLINE) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("{cmd:?} still running after {PLUGIN_DEADLINE:?}: the plugin hangs");
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    CniOutput {
        status: out.status.code().unwrap_or(-1),
        signal: std::os::unix::process::ExitStatusExt::signal(&out.status),
        json: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The workspace's target directory.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// The `spinel` binary: `SPINEL_BIN` when set (benchmarks use a release build), otherwise
/// built once per process from the current sources so a test never runs a stale plugin.
pub fn spinel_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| built("spinel-cni", "spinel", "SPINEL_BIN"))
}

/// The `spinelctl` binary, like [`spinel_binary`] (`SPINELCTL_BIN` overrides).
pub fn spinelctl_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| built("spinelctl", "spinelctl", "SPINELCTL_BIN"))
}

/// A workspace binary, built on first use unless `env_override` names one.
pub(crate) fn built(package: &str, bin: &str, env_override: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env_override) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{env_override}={} is not a file",
            path.display()
        );
        return path.canonicalize().unwrap();
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "-p", package, "--bin", bin])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap_or_else(|e| panic!("run cargo build for {bin}: {e}"));
    assert!(status.success(), "building {bin} failed");
    let path = target_dir().join("debug").join(bin);
    assert!(path.is_file(), "{} missing after build", path.display());
    path.canonicalize().unwrap()
}

/// Debian's reference plugins (`containernetworking-plugins`).
pub const DEBIAN_CNI_DIR: &str = "/usr/lib/cni";

/// Fails loudly unless Debian's plugin `name` is installed.
pub fn require_debian_plugin(name: &str) {
    assert!(
        Path::new(DEBIAN_CNI_DIR).join(name).is_file(),
        "this test needs Debian's CNI plugin {name}: apt-get install containernetworking-plugins"
    );
}

/// Runs a conflist the way libcni does: ADD in order with each result as the next plugin's
/// `prevResult`; CHECK in order and DEL in reverse with the cached final result. Multus-style,
/// `deviceID` and `pciBusID` are injected into every plugin. Returns each plugin's output; the
/// chain stops at the first failure.
pub fn run_chain(
    conflist: &Value,
    command: &str,
    cached: Option<&Value>,
    device_id: Option<&str>,
    mut invoke: impl FnMut(&str, &Value) -> CniOutput,
) -> Vec<CniOutput> {
    let version = conflist["cniVersion"].clone();
    let name = conflist["name"].clone();
    let mut plugins: Vec<Value> = conflist["plugins"].as_array().cloned().unwrap_or_default();
    if command == "DEL" {
        plugins.reverse();
    }
    let mut prev = cached.cloned();
    let mut outputs = Vec::new();
    for mut plugin in plugins {
        plugin["cniVersion"] = version.clone();
        plugin["name"] = name.clone();
        if let Some(id) = device_id {
            plugin["deviceID"] = Value::from(id);
            plugin["pciBusID"] = Value::from(id);
        }
        if let Some(p) = &prev {
            plugin["prevResult"] = p.clone();
        }
        let kind = plugin["type"].as_str().unwrap_or_default().to_owned();
        let out = invoke(&kind, &plugin);
        let ok = out.ok();
        if command == "ADD" && ok {
            prev = Some(out.json.clone());
        }
        outputs.push(out);
        if !ok {
            break;
        }
    }
    outputs
}

/// `conf` with `prevResult` set, as the runtime sends CHECK and DEL.
pub fn with_prev_result(conf: &Value, result: &Value) -> Value {
    let mut c = conf.clone();
    c["prevResult"] = result.clone();
    c
}

/// The first address of a CNI result, without its prefix length.
pub fn first_ip(result: &Value) -> String {
    let cidr = result["ips"][0]["address"]
        .as_str()
        .unwrap_or_else(|| panic!("no address in {result}"));
    cidr.split('/').next().unwrap_or(cidr).to_owned()
}
