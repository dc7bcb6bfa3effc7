//! A spine/leaf fabric of network namespaces for fabric-inference tests.
//!
//! Every switch namespace runs a real lldpd (its own control socket `-u`, foreground `-d`, its
//! system name, capabilities bridge+router, 1 s transmit interval). Hosts only listen, with
//! Spinel's own `spinelctl lldp listen`. Tables are collected the way an operator would:
//! `lldpcli -f json0 show interfaces details` followed by `show neighbors details` on each
//! switch, the listener's JSON on each host; then `spinelctl topo infer` reads the directory.

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

/// A fabric under construction, then running.
pub struct NetnsFabric {
    sandbox: Sandbox,
    switches: Vec<String>,
    hosts: Vec<(String, Vec<String>)>,
    cables: Vec<Cable>,
    /// Interfaces set down after cabling: a pulled cable whose port is still configured.
    down: Vec<(String, String)>,
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
        }
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

    fn socket(&self, switch: &str) -> PathBuf {
        self.sandbox.dir().join(format!("{switch}.lldpd.sock"))
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
        for sw in self.switches.clone() {
            self.start_lldpd(&sw);
        }
    }

    fn start_lldpd(&mut self, switch: &str) {
        let dir = self.sandbox.dir().to_owned();
        let conf = dir.join(format!("{switch}.lldpd.conf"));
        std::fs::write(
            &conf,
            format!(
                "configure system hostname {switch}\n\
                 configure system capabilities enabled bridge,router\n\
                 configure lldp tx-interval 1\n"
            ),
        )
        .expect("write lldpd configuration");
        let log =
            std::fs::File::create(dir.join(format!("{switch}.lldpd.log"))).expect("lldpd log");
        let mut cmd = self.sandbox.command_in(switch, "lldpd");
        cmd.arg("-d")
            .arg("-u")
            .arg(self.socket(switch))
            .arg("-O")
            .arg(&conf)
            .args(["-I", "swp*"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log);
        self.sandbox.spawn(cmd);
    }

    fn lldpcli(&self, switch: &str, args: &[&str]) -> Output {
        Command::new("lldpcli")
            .arg("-u")
            .arg(self.socket(switch))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run lldpcli")
    }

    /// Cables between two switches that are up at both ends, per switch.
    fn expected_switch_neighbours(&self, switch: &str) -> usize {
        self.cables
            .iter()
            .filter(|c| self.is_switch(&c.a) && self.is_switch(&c.b))
            .filter(|c| !self.is_down(&c.a, &c.a_if) && !self.is_down(&c.b, &c.b_if))
            .filter(|c| c.a == switch || c.b == switch)
            .count()
    }

    /// Polls every switch's lldpd until it sees all its switch neighbours.
    pub fn wait_for_switches(&self) {
        let deadline = Instant::now() + NEIGHBOUR_DEADLINE;
        for sw in &self.switches {
            let want = self.expected_switch_neighbours(sw);
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

    /// Collects every table into `<sandbox>/tables/<name>.json` and returns the directory.
    /// Hosts listen in parallel until each cabled NIC has its neighbour.
    pub fn collect(&self) -> PathBuf {
        self.wait_for_switches();
        let dir = self.sandbox.dir().join("tables");
        std::fs::create_dir_all(&dir).expect("create tables directory");
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
        for sw in &self.switches {
            let mut text = Vec::new();
            for what in ["interfaces", "neighbors"] {
                let out = self.lldpcli(sw, &["-f", "json0", "show", what, "details"]);
                assert!(out.status.success(), "lldpcli show {what} on {sw}: {out:?}");
                text.extend_from_slice(&out.stdout);
            }
            std::fs::write(dir.join(format!("{sw}.json")), text).expect("write switch table");
        }
        dir
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
    f.build();
    f
}
