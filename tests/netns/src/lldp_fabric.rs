//! A spine/leaf fabric of network namespaces for fabric-inference tests.
//!
//! Every switch namespace runs a real lldpd (its own control socket `-u`, foreground `-d`, its
//! system name, capabilities bridge+router, 1 s transmit interval). Hosts either only listen,
//! with Spinel's own `spinelctl lldp listen`, or run lldpd on every NIC as a Kubernetes node
//! does by default (optionally with IPv4 forwarding on, so lldpd advertises Router). Tables
//! are collected the way an operator would: `lldpcli -f json0 show interfaces details`
//! followed by `show neighbors details` on each box running lldpd (or only `show neighbors`,
//! the most common capture), the listener's JSON on each listening host; then `spinelctl topo
//! infer` reads the directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{Sandbox, require_tool};

/// How long lldpd and the listeners get to see their neighbours before a test fails.
const NEIGHBOUR_DEADLINE: Duration = Duration::from_secs(30);

/// The `spinelctl` binary, built once per test process from the current sources.
pub use crate::cni::spinelctl_binary as spinelctl;

/// One cable: system, interface, system, interface.
#[derive(Debug, Clone)]
struct Cable {
    a: String,
    a_if: String,
    b: String,
    b_if: String,
}

/// What runs LLDP on the hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAgent {
    /// Spinel's listener: receives only, prints a Spinel table.
    Listener,
    /// lldpd on every NIC, as installed; with `forwarding`, `net.ipv4.ip_forward=1` as on a
    /// Kubernetes node, so lldpd advertises the Router capability.
    Lldpd {
        /// IPv4 forwarding on.
        forwarding: bool,
    },
}

/// A fabric under construction, then running.
pub struct NetnsFabric {
    sandbox: Sandbox,
    switches: Vec<String>,
    hosts: Vec<(String, Vec<String>)>,
    cables: Vec<Cable>,
    /// Interfaces set down after cabling: a pulled cable whose port is still configured.
    down: Vec<(String, String)>,
    host_agent: HostAgent,
    /// DNS domain every system advertises in its System Name (`leaf1.<domain>`).
    domain: Option<String>,
}

impl NetnsFabric {
    /// An empty fabric in a new sandbox; fails loudly without root, lldpd or iproute2.
    pub fn new(test: &str) -> Self {
        require_tool("lldpd", "lldpd");
        require_tool("lldpcli", "lldpd");
        require_tool("ip", "iproute2");
        Self {
            sandbox: Sandbox::new(test),
            switches: Vec::new(),
            hosts: Vec::new(),
            cables: Vec::new(),
            down: Vec::new(),
            host_agent: HostAgent::Listener,
            domain: None,
        }
    }

    /// Hosts run lldpd on every NIC (instead of Spinel's listener), with IPv4 forwarding on or
    /// off.
    pub fn hosts_run_lldpd(&mut self, forwarding: bool) -> &mut Self {
        self.host_agent = HostAgent::Lldpd { forwarding };
        self
    }

    /// Every system advertises a fully qualified System Name, `<name>.<domain>`; files keep
    /// the short name.
    pub fn domain(&mut self, domain: &str) -> &mut Self {
        self.domain = Some(domain.to_owned());
        self
    }

    /// The System Name `name` advertises.
    pub fn system_name(&self, name: &str) -> String {
        match &self.domain {
            Some(d) => format!("{name}.{d}"),
            None => name.to_owned(),
        }
    }

    fn is_host(&self, name: &str) -> bool {
        self.hosts.iter().any(|h| h.0 == name)
    }

    /// Whether `name` runs lldpd (and so transmits).
    fn runs_lldpd(&self, name: &str) -> bool {
        self.is_switch(name)
            || (self.is_host(name) && matches!(self.host_agent, HostAgent::Lldpd { .. }))
    }

    /// The sandbox (namespaces, scratch directory).
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Declares a switch.
    pub fn switch(&mut self, name: &str) -> &mut Self {
        self.switches.push(name.to_owned());
        self
    }

    /// Declares a host with its RoCE NICs.
    pub fn host(&mut self, name: &str, nics: &[&str]) -> &mut Self {
        self.hosts.push((
            name.to_owned(),
            nics.iter().map(|n| (*n).to_owned()).collect(),
        ));
        self
    }

    /// Declares a cable (a veth pair) between two systems' interfaces.
    pub fn cable(&mut self, a: &str, a_if: &str, b: &str, b_if: &str) -> &mut Self {
        self.cables.push(Cable {
            a: a.into(),
            a_if: a_if.into(),
            b: b.into(),
            b_if: b_if.into(),
        });
        self
    }

    /// Removes the cable plugged into `system`'s `iface` (declared, not yet built).
    pub fn uncable(&mut self, system: &str, iface: &str) -> &mut Self {
        self.cables.retain(|c| {
            !((c.a == system && c.a_if == iface) || (c.b == system && c.b_if == iface))
        });
        self
    }

    /// Cables an interface but sets it down, as if the cable were pulled at that end.
    pub fn pull(&mut self, system: &str, iface: &str) -> &mut Self {
        self.down.push((system.into(), iface.into()));
        self
    }

    fn is_down(&self, system: &str, iface: &str) -> bool {
        self.down.iter().any(|(s, i)| s == system && i == iface)
    }

    fn is_switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    fn socket(&self, system: &str) -> PathBuf {
        self.sandbox.dir().join(format!("{system}.lldpd.sock"))
    }

    /// Creates the namespaces and cables, and starts lldpd on every switch.
    pub fn build(&mut self) {
        let names: Vec<String> = self
            .switches
            .iter()
            .cloned()
            .chain(self.hosts.iter().map(|h| h.0.clone()))
            .collect();
        for name in &names {
            self.sandbox.netns(name);
        }
        for c in &self.cables {
            let peer = self.sandbox.netns_path(&c.b);
            let peer = peer.to_string_lossy();
            self.sandbox.run_in(
                &c.a,
                "ip",
                &[
                    "link", "add", &c.a_if, "type", "veth", "peer", "name", &c.b_if, "netns", &peer,
                ],
            );
        }
        for c in &self.cables {
            for (system, iface) in [(&c.a, &c.a_if), (&c.b, &c.b_if)] {
                let state = if self.is_down(system, iface) {
                    "down"
                } else {
                    "up"
                };
                self.sandbox
                    .run_in(system, "ip", &["link", "set", iface, state]);
            }
        }
        if let HostAgent::Lldpd { forwarding } = self.host_agent {
            let value = if forwarding { "1" } else { "0" };
            for (host, _) in self.hosts.clone() {
                self.sandbox.run_in(
                    &host,
                    "sysctl",
                    &["-q", "-w", &format!("net.ipv4.ip_forward={value}")],
                );
                self.start_lldpd(&host);
            }
        }
        for sw in self.switches.clone() {
            self.start_lldpd(&sw);
        }
    }

    /// lldpd in `system`'s namespace: a switch advertises bridge and router on its `swp*`
    /// ports; a host runs on every NIC with the capabilities lldpd computes itself.
    fn start_lldpd(&mut self, system: &str) {
        let dir = self.sandbox.dir().to_owned();
        let conf = dir.join(format!("{system}.lldpd.conf"));
        let switch = self.is_switch(system);
        let mut config = format!("configure system hostname {}\n", self.system_name(system));
        if switch {
            config.push_str("configure system capabilities enabled bridge,router\n");
        }
        config.push_str("configure lldp tx-interval 1\n");
        std::fs::write(&conf, config).expect("write lldpd configuration");
        let log =
            std::fs::File::create(dir.join(format!("{system}.lldpd.log"))).expect("lldpd log");
        let mut cmd = self.sandbox.command_in(system, "lldpd");
        cmd.arg("-d")
            .arg("-u")
            .arg(self.socket(system))
            .arg("-O")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log);
        if switch {
            cmd.args(["-I", "swp*"]);
        }
        self.sandbox.spawn(cmd);
    }

    fn lldpcli(&self, system: &str, args: &[&str]) -> Output {
        Command::new("lldpcli")
            .arg("-u")
            .arg(self.socket(system))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run lldpcli")
    }

    /// Cables up at both ends whose far end transmits, per system.
    fn expected_neighbours(&self, system: &str) -> usize {
        self.cables
            .iter()
            .filter(|c| !self.is_down(&c.a, &c.a_if) && !self.is_down(&c.b, &c.b_if))
            .filter(|c| {
                (c.a == system && self.runs_lldpd(&c.b)) || (c.b == system && self.runs_lldpd(&c.a))
            })
            .count()
    }

    /// Polls every lldpd until it sees all its transmitting neighbours.
    pub fn wait_for_switches(&self) {
        let deadline = Instant::now() + NEIGHBOUR_DEADLINE;
        let systems: Vec<&String> = self
            .switches
            .iter()
            .chain(self.hosts.iter().map(|h| &h.0))
            .filter(|s| self.runs_lldpd(s))
            .collect();
        for sw in systems {
            let want = self.expected_neighbours(sw);
            loop {
                let out = self.lldpcli(sw, &["-f", "json0", "show", "neighbors"]);
                let seen = serde_json::from_slice::<Value>(&out.stdout)
                    .ok()
                    .and_then(|v| v["lldp"][0]["interface"].as_array().map(Vec::len))
                    .unwrap_or(0);
                if seen >= want {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{sw}'s lldpd sees {seen} of {want} neighbours after {NEIGHBOUR_DEADLINE:?}; \
                     log: {}",
                    std::fs::read_to_string(self.sandbox.dir().join(format!("{sw}.lldpd.log")))
                        .unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Collects every table into `<sandbox>/tables/<name>.json` and returns the directory:
    /// each lldpd's `show interfaces details` and `show neighbors details`; listening hosts
    /// listen in parallel until each cabled NIC has its neighbour.
    pub fn collect(&self) -> PathBuf {
        self.wait_for_switches();
        let dir = self.sandbox.dir().join("tables");
        std::fs::create_dir_all(&dir).expect("create tables directory");
        if self.host_agent == HostAgent::Listener {
            self.collect_listeners(&dir);
        }
        for system in self.lldpd_systems() {
            let mut text = Vec::new();
            for what in ["interfaces", "neighbors"] {
                let out = self.lldpcli(&system, &["-f", "json0", "show", what, "details"]);
                assert!(
                    out.status.success(),
                    "lldpcli show {what} on {system}: {out:?}"
                );
                text.extend_from_slice(&out.stdout);
            }
            std::fs::write(dir.join(format!("{system}.json")), text).expect("write table");
        }
        dir
    }

    /// Collects what an operator most often has: `lldpcli -f json0 show neighbors` of every
    /// box running lldpd, each in a file named after the box, into `<sandbox>/neighbours/`.
    pub fn collect_neighbours_only(&self) -> PathBuf {
        self.wait_for_switches();
        let dir = self.sandbox.dir().join("neighbours");
        std::fs::create_dir_all(&dir).expect("create neighbours directory");
        for system in self.lldpd_systems() {
            let out = self.lldpcli(&system, &["-f", "json0", "show", "neighbors"]);
            assert!(
                out.status.success(),
                "lldpcli show neighbors on {system}: {out:?}"
            );
            std::fs::write(dir.join(format!("{system}.json")), &out.stdout).expect("write table");
        }
        dir
    }

    fn lldpd_systems(&self) -> Vec<String> {
        self.switches
            .iter()
            .chain(self.hosts.iter().map(|h| &h.0))
            .filter(|s| self.runs_lldpd(s))
            .cloned()
            .collect()
    }

    fn collect_listeners(&self, dir: &Path) {
        let listeners: Vec<(String, usize, Child)> = self
            .hosts
            .iter()
            .map(|(name, nics)| {
                let cabled = nics
                    .iter()
                    .filter(|n| {
                        self.cables.iter().any(|c| {
                            (c.a == *name && c.a_if == **n) || (c.b == *name && c.b_if == **n)
                        }) && !self.is_down(name, n)
                    })
                    .count();
                let child = Command::new(spinelctl())
                    .args(["lldp", "listen", "--netns"])
                    .arg(self.sandbox.netns_path(name))
                    .args(["--iface", &nics.join(","), "--json", "--role", "host"])
                    .args([
                        "--node-name",
                        name,
                        "--until-neighbors",
                        &cabled.to_string(),
                    ])
                    .args(["--for", &NEIGHBOUR_DEADLINE.as_secs().to_string()])
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn spinelctl lldp listen");
                (name.clone(), cabled, child)
            })
            .collect();
        for (name, cabled, child) in listeners {
            let out = child.wait_with_output().expect("wait for the listener");
            assert!(
                out.status.success(),
                "spinelctl lldp listen on {name} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let table: Value = serde_json::from_slice(&out.stdout).expect("listener prints JSON");
            let seen: usize = table["ports"]
                .as_array()
                .map(|ports| {
                    ports
                        .iter()
                        .map(|p| p["neighbors"].as_array().map_or(0, Vec::len))
                        .sum()
                })
                .unwrap_or(0);
            assert_eq!(
                seen, cabled,
                "{name} saw {seen} of {cabled} leaf neighbours: {table}"
            );
            std::fs::write(dir.join(format!("{name}.json")), &out.stdout)
                .expect("write host table");
        }
    }
}

/// Runs `spinelctl topo infer DIR ARGS...`.
pub fn infer(dir: &Path, args: &[&str]) -> Output {
    Command::new(spinelctl())
        .args(["topo", "infer"])
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run spinelctl topo infer")
}

/// NICs of the test hosts.
pub const NICS: [&str; 2] = ["ens1f0np0", "ens1f1np1"];

/// A fault to cable into [`rail_fabric`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Cabled as designed.
    None,
    /// This host's two cables are swapped between its group's two leaves.
    SwappedCables(usize),
    /// This host's second NIC goes to its group's first leaf (port swp9).
    BothNicsOnOneLeaf(usize),
    /// This leaf's uplink to this spine is pulled at the leaf.
    UplinkDown(usize, usize),
}

/// The rail-optimised test fabric: spines spine1-2; leaves leaf1-4 in two groups (leaf1+leaf2
/// for h1-h4, leaf3+leaf4 for h5-h8); host NIC0 on the group's first leaf, NIC1 on its second,
/// at port swp<k> (k = 1-4 within the group); leaf uplinks swp51 to spine1 and swp52 to spine2,
/// spine port swp<leaf>.
pub fn rail_fabric(test: &str, fault: Fault) -> NetnsFabric {
    rail_fabric_with(test, fault, |_| {})
}

/// [`rail_fabric`], with `extend` adding systems, cables or settings before it is built.
pub fn rail_fabric_with(
    test: &str,
    fault: Fault,
    extend: impl FnOnce(&mut NetnsFabric),
) -> NetnsFabric {
    let mut f = NetnsFabric::new(test);
    f.switch("spine1").switch("spine2");
    for l in 1..=4 {
        let leaf = format!("leaf{l}");
        f.switch(&leaf);
        for s in 1..=2 {
            let spine = format!("spine{s}");
            let up = format!("swp5{s}");
            f.cable(&leaf, &up, &spine, &format!("swp{l}"));
            if fault == Fault::UplinkDown(l, s) {
                f.pull(&leaf, &up);
            }
        }
    }
    for h in 1..=8 {
        let host = format!("h{h}");
        f.host(&host, &NICS);
        let (first, second) = if h <= 4 {
            ("leaf1", "leaf2")
        } else {
            ("leaf3", "leaf4")
        };
        let port = format!("swp{}", (h - 1) % 4 + 1);
        match fault {
            Fault::SwappedCables(x) if x == h => {
                f.cable(&host, NICS[0], second, &port);
                f.cable(&host, NICS[1], first, &port);
            }
            Fault::BothNicsOnOneLeaf(x) if x == h => {
                f.cable(&host, NICS[0], first, &port);
                f.cable(&host, NICS[1], first, "swp9");
            }
            _ => {
                f.cable(&host, NICS[0], first, &port);
                f.cable(&host, NICS[1], second, &port);
            }
        }
    }
    extend(&mut f);
    f.build();
    f
}
