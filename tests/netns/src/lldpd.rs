//! Real lldpd as the peer of Spinel's LLDP agent: an instance per namespace with its own
//! control socket and configuration, `lldpcli` to read what it decoded, and helpers for veth
//! links and the `spinelctl` binary.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Sandbox;

/// Fails the test loudly unless lldpd and lldpcli are installed.
pub fn require_lldpd() {
    crate::require_tool("lldpd", "lldpd");
    crate::require_tool("lldpcli", "lldpd");
}

/// The `spinelctl` binary, built once per test process from the current sources.
pub use crate::cni::spinelctl_binary as spinelctl;

/// Connects `ns_a:if_a` to `ns_b:if_b` with a veth pair, both ends up, and waits until both
/// can carry frames (the qdisc is attached by linkwatch up to a second after `up`).
pub fn veth(sb: &Sandbox, ns_a: &str, if_a: &str, ns_b: &str, if_b: &str) {
    let peer_ns = sb.netns_path(ns_b);
    let peer_ns = peer_ns.to_str().unwrap();
    sb.run_in(
        ns_a,
        "ip",
        &[
            "link", "add", "name", if_a, "type", "veth", "peer", "name", if_b, "netns", peer_ns,
        ],
    );
    sb.run_in(ns_a, "ip", &["link", "set", "dev", if_a, "up"]);
    sb.run_in(ns_b, "ip", &["link", "set", "dev", if_b, "up"]);
    for (ns, dev) in [(ns_a, if_a), (ns_b, if_b)] {
        wait_until(
            Duration::from_secs(5),
            &format!("{dev} in {ns} to come up"),
            || {
                let line = sb.run_in(ns, "ip", &["-o", "link", "show", "dev", dev]);
                line.contains("state UP") && !line.contains("qdisc noop")
            },
        );
    }
}

/// The MAC address of `dev` in `ns`.
pub fn mac_of(sb: &Sandbox, ns: &str, dev: &str) -> String {
    let out = sb.run_in(ns, "ip", &["-j", "link", "show", "dev", dev]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v[0]["address"].as_str().unwrap().to_owned()
}

/// The ifindex of `dev` in `ns`.
pub fn ifindex_of(sb: &Sandbox, ns: &str, dev: &str) -> u64 {
    let out = sb.run_in(ns, "ip", &["-j", "link", "show", "dev", dev]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v[0]["ifindex"].as_u64().unwrap()
}

/// Polls `check` every 50 ms until it holds; panics with `what` after `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// lldpd's receive statistics for one interface (`lldpcli show statistics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LldpdStats {
    /// Frames transmitted.
    pub tx: u64,
    /// Frames received.
    pub rx: u64,
    /// Frames discarded as malformed.
    pub rx_discarded: u64,
    /// TLVs not recognised.
    pub rx_unrecognized: u64,
    /// Neighbours aged out.
    pub ageout: u64,
    /// Neighbours inserted.
    pub insert: u64,
    /// Neighbours deleted.
    pub delete: u64,
}

/// One lldpd instance running in a sandbox namespace.
pub struct Lldpd {
    socket: PathBuf,
    log: PathBuf,
}

impl Lldpd {
    /// Starts `lldpd -d` in `ns` on `ifaces`, with its own control socket, `config` (lldpcli
    /// commands, one per line) applied before it starts sending, and `extra` daemon flags
    /// (for example `-r` for receive-only). Returns once the configuration is applied.
    pub fn start(
        sb: &mut Sandbox,
        ns: &str,
        ifaces: &[&str],
        config: &str,
        extra: &[&str],
    ) -> Self {
        require_lldpd();
        let socket = sb.dir().join(format!("lldpd-{ns}.sock"));
        let conf = sb.dir().join(format!("lldpd-{ns}.conf"));
        let log = sb.dir().join(format!("lldpd-{ns}.log"));
        std::fs::write(&conf, config).unwrap();
        let log_file = std::fs::File::create(&log).unwrap();
        let mut cmd = sb.command_in(ns, "lldpd");
        cmd.args([
            "-d",
            "-u",
            socket.to_str().unwrap(),
            "-O",
            conf.to_str().unwrap(),
        ])
        .args(["-I", &ifaces.join(",")])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file);
        sb.spawn(cmd);
        let me = Self { socket, log };
        // lldpd stays paused until lldpcli has applied the configuration, then says so.
        wait_until(
            Duration::from_secs(15),
            "lldpd to apply its configuration",
            || me.log().contains("lldpd should resume operations"),
        );
        me
    }

    /// lldpd's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Runs `lldpcli -u SOCKET args` and returns its stdout; panics if it fails.
    pub fn lldpcli(&self, args: &[&str]) -> String {
        let out = Command::new("lldpcli")
            .arg("-u")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run lldpcli");
        assert!(
            out.status.success(),
            "lldpcli {args:?} failed: {}\nlldpd log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The neighbours lldpd knows, as `json0` (the only lldpd JSON whose shape is stable):
    /// one object per (interface, neighbour).
    pub fn neighbors(&self) -> Vec<Value> {
        let out = self.lldpcli(&["-f", "json0", "show", "neighbors", "details"]);
        let v: Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("lldpcli json0 output is not JSON ({e}): {out}"));
        v["lldp"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|l| l["interface"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    /// Waits until lldpd knows `count` neighbours and returns them.
    pub fn wait_for_neighbors(&self, count: usize, timeout: Duration) -> Vec<Value> {
        let mut found = Vec::new();
        wait_until(
            timeout,
            &format!("lldpd to see {count} neighbour(s)"),
            || {
                found = self.neighbors();
                found.len() >= count
            },
        );
        found
    }

    /// Receive statistics of `iface`.
    pub fn stats(&self, iface: &str) -> LldpdStats {
        let out = self.lldpcli(&["-f", "keyvalue", "show", "statistics", "ports", iface]);
        let mut s = LldpdStats::default();
        for line in out.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let value: u64 = value.trim().parse().unwrap_or(0);
            let field = key.rsplit('.').next().unwrap_or_default();
            match field {
                "tx" => s.tx = value,
                "rx" => s.rx = value,
                "rx_discarded_cnt" => s.rx_discarded = value,
                "rx_unrecognized_cnt" => s.rx_unrecognized = value,
                "ageout_cnt" => s.ageout = value,
                "insert_cnt" => s.insert = value,
                "delete_cnt" => s.delete = value,
                _ => {}
            }
        }
        s
    }
}

/// The first `value` of a json0 node list, e.g. `first(&n["chassis"][0]["name"])`.
pub fn json0_value(node: &Value) -> Option<&str> {
    node.as_array()?.first()?.get("value")?.as_str()
}
