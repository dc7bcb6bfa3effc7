//! `spinel-agent install-cni`, the agent DaemonSet's init container, through the real binaries
//! (the agent's installer putting the real `spinel` in place) on files a sandbox owns: a first
//! install and a second one, over a plugin that is executing, over a newer plugin, into a
//! read-only directory (a private mount namespace), with a settings key the CNI does not know,
//! after a killed run, and into a settings directory others may write. After each, the real
//! `spinel` is asked whether it accepts what was installed.

// A test fails loudly on what it cannot set up.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::json;
use spinel_netns_tests::Sandbox;
use spinel_netns_tests::agent::agent_binary;
use spinel_netns_tests::cni::{CniCall, CniOutput, run, spinel_binary};

/// A node's directories as the init container sees them, inside a sandbox.
struct Node {
    sb: Sandbox,
    bin: PathBuf,
    etc: PathBuf,
    configmap: PathBuf,
    state: PathBuf,
    sysfs: PathBuf,
}

impl Node {
    fn new(test: &str) -> Self {
        let sb = Sandbox::new(test);
        let dir = sb.dir().to_owned();
        let node = Self {
            bin: dir.join("opt/cni/bin"),
            etc: dir.join("etc/spinel"),
            configmap: dir.join("configmap/cni.json"),
            state: dir.join("run/spinel/cni"),
            sysfs: dir.join("sys"),
            sb,
        };
        for d in [&node.bin, &node.etc, &node.sysfs.join("bus/pci/devices")] {
            fs::create_dir_all(d).unwrap();
            fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
        }
        fs::create_dir_all(node.configmap.parent().unwrap()).unwrap();
        node.set_configmap(&json!({
            "stateDir": node.state,
            "sysfsRoot": node.sysfs,
            "logLevel": "info",
        }));
        node
    }

    fn plugin(&self) -> PathBuf {
        self.bin.join("spinel")
    }

    fn settings(&self) -> PathBuf {
        self.etc.join("cni.json")
    }

    fn set_configmap(&self, settings: &serde_json::Value) {
        fs::write(&self.configmap, settings.to_string()).unwrap();
    }

    /// `spinel-agent install-cni` as the DaemonSet runs it, plus `extra` flags.
    fn install_command(&self, extra: &[&str]) -> Command {
        let mut cmd = Command::new(agent_binary());
        cmd.arg("install-cni")
            .arg("--source")
            .arg(spinel_binary())
            .arg("--bin-dir")
            .arg(&self.bin)
            .arg("--settings")
            .arg(&self.configmap)
            .arg("--settings-target")
            .arg(self.settings())
            .args(["--log-format", "text"])
            .args(extra)
            .stdin(Stdio::null());
        cmd
    }

    fn install(&self, extra: &[&str]) -> Output {
        self.install_command(extra).output().unwrap()
    }

    fn install_ok(&self, extra: &[&str]) -> String {
        let out = self.install(extra);
        let log = text(&out);
        assert!(out.status.success(), "install-cni failed: {log}");
        log
    }

    fn install_err(&self, extra: &[&str]) -> String {
        let out = self.install(extra);
        let log = text(&out);
        assert!(!out.status.success(), "install-cni succeeded: {log}");
        log
    }

    /// The real plugin, as installed, asked for STATUS with the settings file `settings`.
    fn status_with(&self, settings: &Path) -> CniOutput {
        let mut cmd = Command::new(self.plugin());
        CniCall::bare("STATUS").apply(&mut cmd, Path::new("/usr/lib/cni"));
        cmd.env("SPINEL_CNI_SETTINGS", settings);
        run(
            cmd,
            &json!({"cniVersion": "1.1.0", "name": "rail0", "type": "spinel"}),
        )
    }

    /// Names in the binary directory other than the plugin: a temporary left behind.
    fn leftovers(&self) -> Vec<String> {
        fs::read_dir(&self.bin)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "spinel")
            .collect()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn same_bytes(a: &Path, b: &Path) -> bool {
    fs::read(a).unwrap() == fs::read(b).unwrap()
}

#[test]
fn installs_once_then_leaves_the_same_plugin_and_settings_alone() {
    let node = Node::new("install_cni_twice");
    let log = node.install_ok(&[]);
    assert!(log.contains("installed the spinel CNI plugin"), "{log}");
    assert!(same_bytes(&node.plugin(), spinel_binary()));
    let plugin = fs::metadata(node.plugin()).unwrap();
    assert_eq!(plugin.mode() & 0o7777, 0o755);
    let settings = fs::metadata(node.settings()).unwrap();
    assert_eq!((settings.mode() & 0o7777, settings.uid()), (0o644, 0));
    assert!(same_bytes(&node.settings(), &node.configmap));
    // The CNI trusts and reads what was written: STATUS looks at the state directory and the
    // sysfs root the settings name.
    node.status_with(&node.settings())
        .expect_ok("STATUS with the installed settings");
    assert!(node.state.is_dir(), "the CNI did not use the stateDir set");

    let log = node.install_ok(&[]);
    assert!(
        log.contains("already installed") && log.contains("already current"),
        "{log}"
    );
    assert_eq!(fs::metadata(node.plugin()).unwrap().ino(), plugin.ino());
    assert_eq!(fs::metadata(node.settings()).unwrap().ino(), settings.ino());
    assert!(node.leftovers().is_empty(), "{:?}", node.leftovers());
}

#[test]
fn an_executing_plugin_is_replaced_by_rename_and_keeps_running() {
    let mut node = Node::new("install_cni_busy");
    // An old plugin that is executing now: any executable does, `sleep` stays long enough.
    fs::copy("/bin/sleep", node.plugin()).unwrap();
    let mut cmd = Command::new(node.plugin());
    cmd.arg("600");
    let pid = node.sb.spawn(cmd);
    let exe = PathBuf::from(format!("/proc/{pid}/exe"));
    while fs::read_link(&exe).map_or(true, |p| p != node.plugin()) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Writing into it in place is what the installer must not do: the kernel refuses it.
    let in_place = fs::OpenOptions::new().write(true).open(node.plugin());
    assert_eq!(
        in_place.err().and_then(|e| e.raw_os_error()),
        Some(nix::errno::Errno::ETXTBSY as i32)
    );

    let log = node.install_ok(&[]);
    assert!(log.contains("replaced"), "{log}");
    assert!(same_bytes(&node.plugin(), spinel_binary()));
    // The running process still runs its own (now unlinked) file.
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "the old plugin died"
    );
    let running = fs::read_link(&exe).unwrap();
    assert!(
        running.to_string_lossy().ends_with("(deleted)"),
        "{running:?}"
    );
    assert!(node.leftovers().is_empty(), "{:?}", node.leftovers());
}

#[test]
fn a_newer_plugin_is_kept_unless_forced() {
    let node = Node::new("install_cni_newer");
    let newer = "#!/bin/sh\necho 'spinel 99.0.0'\n";
    fs::write(node.plugin(), newer).unwrap();
    fs::set_permissions(node.plugin(), fs::Permissions::from_mode(0o755)).unwrap();
    let log = node.install_ok(&[]);
    assert!(log.contains("newer") && log.contains("99.0.0"), "{log}");
    assert_eq!(fs::read_to_string(node.plugin()).unwrap(), newer);
    // The settings are still installed: they are the node's, not the plugin's version's.
    assert!(same_bytes(&node.settings(), &node.configmap));

    node.install_ok(&["--force"]);
    assert!(same_bytes(&node.plugin(), spinel_binary()));
}

#[test]
fn a_read_only_target_is_an_error_naming_it_and_changes_nothing() {
    let node = Node::new("install_cni_ro");
    fs::copy("/bin/true", node.plugin()).unwrap();
    // The binary directory read-only in a private mount namespace, as a read-only hostPath
    // would be: the installer runs inside it and the mount dies with it.
    let mut inner = node.install_command(&[]);
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-ec"])
        .arg(r#"mount --bind "$1" "$1"; mount -o remount,bind,ro "$1"; shift; exec "$@""#)
        .arg("sh")
        .arg(&node.bin)
        .arg(inner.get_program())
        .args(inner.get_args())
        .stdin(Stdio::null());
    inner.stdin(Stdio::null());
    let out = cmd.output().unwrap();
    let log = text(&out);
    assert!(
        !out.status.success(),
        "installed into a read-only directory: {log}"
    );
    assert!(
        log.contains("Read-only file system") && log.contains(&node.bin.display().to_string()),
        "{log}"
    );
    assert!(same_bytes(&node.plugin(), Path::new("/bin/true")));
    assert!(node.leftovers().is_empty(), "{:?}", node.leftovers());
    assert!(
        !node.settings().exists(),
        "settings written although the plugin was not"
    );
}

#[test]
fn a_settings_key_the_cni_does_not_know_is_named_and_nothing_is_written() {
    let node = Node::new("install_cni_bad_key");
    node.install_ok(&[]);
    let before = fs::read(node.settings()).unwrap();
    fs::remove_file(node.plugin()).unwrap();
    node.set_configmap(&json!({"stateDri": "/run/x", "logLevel": "info"}));

    let log = node.install_err(&[]);
    assert!(
        log.contains("unknown field `stateDri`") && log.contains("stateDir"),
        "the error does not name the key and the known ones: {log}"
    );
    assert_eq!(
        fs::metadata(node.plugin()).err().map(|e| e.kind()),
        Some(ErrorKind::NotFound),
        "the plugin was installed"
    );
    assert_eq!(fs::read(node.settings()).unwrap(), before);
    assert!(node.leftovers().is_empty(), "{:?}", node.leftovers());

    // The CNI itself refuses the same file, with the same words: one schema.
    fs::copy(spinel_binary(), node.plugin()).unwrap();
    fs::set_permissions(&node.configmap, fs::Permissions::from_mode(0o644)).unwrap();
    let msg = node
        .status_with(&node.configmap)
        .expect_code(4, "STATUS with an unknown settings key")
        .to_owned();
    assert!(msg.contains("unknown field `stateDri`"), "{msg}");
}

#[test]
fn a_killed_runs_temporary_is_removed_and_an_untrusted_settings_dir_refused() {
    let node = Node::new("install_cni_leftover");
    // A run killed between writing and renaming (in a container every run is pid 1).
    fs::write(node.bin.join(".spinel.install-1"), b"half a plugin").unwrap();
    node.install_ok(&[]);
    assert!(node.leftovers().is_empty(), "{:?}", node.leftovers());

    // Settings in a directory others may write would be refused by the CNI: nothing written.
    fs::remove_file(node.plugin()).unwrap();
    fs::remove_file(node.settings()).unwrap();
    fs::set_permissions(&node.etc, fs::Permissions::from_mode(0o777)).unwrap();
    let log = node.install_err(&[]);
    assert!(log.contains("writable by group or others"), "{log}");
    assert!(!node.plugin().exists() && !node.settings().exists());
}

/// The chart refuses a bad `cni.settings` key at `helm install` already (its values schema);
/// that schema must know exactly the keys the CNI knows, or it would refuse a good key or let
/// a bad one reach every node's init container.
#[test]
fn the_charts_cni_settings_schema_has_the_cnis_keys() {
    use spinel_node::cni_settings::Settings;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let schema: serde_json::Value = serde_json::from_slice(
        &fs::read(root.join("deploy/helm/spinel/values.schema.json")).unwrap(),
    )
    .unwrap();
    let settings = &schema["properties"]["cni"]["properties"]["settings"];
    assert_eq!(settings["additionalProperties"], json!(false));
    let mut chart: Vec<&str> = settings["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // serde names every key it knows when it refuses one.
    let err = Settings::parse(Path::new("cni.json"), br#"{"-":0}"#)
        .unwrap_err()
        .to_string();
    let known = err
        .split("expected one of ")
        .nth(1)
        .and_then(|k| k.split(" at line").next())
        .expect(&err);
    let mut cni: Vec<&str> = known.split(", ").map(|k| k.trim_matches('`')).collect();
    chart.sort_unstable();
    cni.sort_unstable();
    assert_eq!(chart, cni);
}
