//! `spinelctl fabric check` on a host namespace cabled to an emulated leaf: the leaf advertises
//! DCBX PFC on priority 4 while the intent says 3, and the host's MTU is 1500 while the intent
//! says 9000. Each is reported exactly once, with the switch, port, host, NIC and the command
//! that fixes it; a veth's PFC "cannot be read", never agrees; after the fixes the check passes.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use spinel_netns_tests::lldpd::{spinelctl, veth};
use spinel_netns_tests::{Sandbox, require_root};

const INTENT: &str = "\
schema: spinel.dev/fabric-intent/v1
fabric: netns-lab
roce:
  mtu: {switch: 9100, host: 9000}
rails:
  - {name: rail0, nic: ens1f0}
switches:
  - name: leaf01
    role: leaf
    os: cumulus
    version: '5.12'
    networks:
      - {rail: rail0, vlan: 100, subnet: 10.0.0.0/24, gateway: 10.0.0.1}
    ports:
      swp1: node01/ens1f0
";

struct Lab {
    sb: Sandbox,
    leaf_sender: Option<u32>,
}

impl Lab {
    fn new(test: &str) -> Self {
        require_root();
        let sb = Sandbox::new(test);
        sb.netns("host");
        sb.netns("leaf");
        veth(&sb, "leaf", "swp1", "host", "ens1f0");
        std::fs::write(sb.dir().join("intent.yaml"), INTENT).unwrap();
        Self {
            sb,
            leaf_sender: None,
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.sb.dir().join(file)
    }

    /// The leaf advertises itself with DCBX PFC on `pfc` and RoCE's APP entry on priority 3.
    fn advertise(&mut self, pfc: &str) {
        if let Some(pid) = self.leaf_sender.take() {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            )
            .unwrap();
        }
        let netns = self.sb.netns_path("leaf");
        let mut cmd = Command::new(spinelctl());
        cmd.args([
            "lldp",
            "send",
            "--netns",
            netns.to_str().unwrap(),
            "--iface",
            "swp1",
        ])
        .args(["--system-name", "leaf01", "--capabilities", "bridge,router"])
        .args(["--pfc", pfc, "--app", "3:udp:4791", "--tx-interval", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        self.leaf_sender = Some(self.sb.spawn(cmd));
    }

    /// What the host hears, as `spinelctl lldp listen --json` prints it.
    fn listen(&self) -> PathBuf {
        let netns = self.sb.netns_path("host");
        let out = Command::new(spinelctl())
            .args([
                "lldp",
                "listen",
                "--netns",
                netns.to_str().unwrap(),
                "--iface",
                "ens1f0",
            ])
            .args([
                "--json",
                "--node-name",
                "node01",
                "--for",
                "10",
                "--until-neighbors",
                "1",
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let table: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            table["ports"][0]["neighbors"][0]["system_name"], "leaf01",
            "{table}"
        );
        let path = self.path("lldp-node01.json");
        std::fs::write(&path, &out.stdout).unwrap();
        path
    }

    /// The host's QoS state, as `spinelctl fabric host-state` reads it from the kernel.
    fn host_state(&self) -> PathBuf {
        let netns = self.sb.netns_path("host");
        let out = Command::new(spinelctl())
            .args(["fabric", "host-state", "--netns", netns.to_str().unwrap()])
            .args(["--iface", "ens1f0", "--node-name", "node01"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = self.path("state-node01.json");
        std::fs::write(&path, &out.stdout).unwrap();
        path
    }

    fn check(&self, lldp: &Path, state: &Path, extra: &[&str]) -> (Output, Value) {
        let out = Command::new(spinelctl())
            .args(["fabric", "check"])
            .arg(self.path("intent.yaml"))
            .arg("--lldp")
            .arg(lldp)
            .arg("--host-state")
            .arg(state)
            .args(["--json"])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out, report)
    }
}

fn findings<'a>(report: &'a Value, severity: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == severity)
        .collect()
}

#[test]
fn advertised_pfc_and_host_mtu_are_each_reported_once_with_their_fix() {
    let mut lab = Lab::new("switch_check_reports_once");
    lab.advertise("4");
    let state = lab.host_state();
    let host: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(host["nics"][0]["mtu"]["value"], 1500, "{host}");
    let pfc_reading = host["nics"][0]["pfc"]["cannot_read"].as_str().unwrap();
    assert!(
        pfc_reading.contains("has no DCB netlink operations"),
        "{pfc_reading}"
    );

    let (out, report) = lab.check(&lab.listen(), &state, &[]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let errors = findings(&report, "error");
    assert_eq!(errors.len(), 2, "{report:#}");

    let pfc: Vec<&&Value> = errors.iter().filter(|f| f["kind"] == "pfc").collect();
    assert_eq!(pfc.len(), 1, "{report:#}");
    assert_eq!(pfc[0]["source"], "advertised");
    assert_eq!(pfc[0]["switch"], "leaf01");
    assert_eq!(pfc[0]["ports"], serde_json::json!(["swp1"]));
    assert_eq!(
        (pfc[0]["host"].as_str(), pfc[0]["nic"].as_str()),
        (Some("node01"), Some("ens1f0"))
    );
    assert_eq!(
        (pfc[0]["expected"].as_str(), pfc[0]["found"].as_str()),
        (Some("3"), Some("4"))
    );
    let fix: Vec<&str> = pfc[0]["fix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        fix.contains(&"nv unset qos pfc default-global switch-priority 4"),
        "{fix:?}"
    );
    assert!(
        fix.contains(&"nv set qos pfc default-global switch-priority 3"),
        "{fix:?}"
    );

    let mtu: Vec<&&Value> = errors.iter().filter(|f| f["kind"] == "mtu").collect();
    assert_eq!(mtu.len(), 1, "{report:#}");
    assert_eq!(
        (mtu[0]["source"].as_str(), mtu[0]["nic"].as_str()),
        (Some("host"), Some("ens1f0"))
    );
    assert_eq!(
        (mtu[0]["expected"].as_str(), mtu[0]["found"].as_str()),
        (Some("9000"), Some("1500"))
    );
    assert_eq!(
        mtu[0]["fix"],
        serde_json::json!(["ip link set dev ens1f0 mtu 9000"])
    );

    // The veth's PFC is "cannot read", a warning, never counted as agreement.
    let warnings = findings(&report, "warning");
    let cannot: Vec<&&Value> = warnings
        .iter()
        .filter(|f| f["kind"] == "cannot_read")
        .collect();
    assert_eq!(cannot.len(), 1, "{report:#}");
    assert!(
        cannot[0]["found"].as_str().unwrap().contains("PFC"),
        "{report:#}"
    );

    // Apply the host's fix as printed, and make the leaf advertise what the intent says.
    let fix = mtu[0]["fix"][0].as_str().unwrap();
    lab.sb.run_in("host", "sh", &["-c", fix]);
    lab.advertise("3");
    let state = lab.host_state();
    let (out, report) = lab.check(&lab.listen(), &state, &[]);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert!(findings(&report, "error").is_empty(), "{report:#}");
    // ...but what cannot be read still fails a strict check.
    let (out, _) = lab.check(&lab.listen(), &state, &["--strict"]);
    assert_eq!(out.status.code(), Some(2));
}
