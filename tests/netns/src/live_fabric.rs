//! A rail-optimised fabric of namespaces for the agent and the controller: leaves that
//! advertise DCBX PFC like a lossless RoCE switch (`spinelctl lldp send`, one process per port
//! so a port can be recabled), spines running lldpd that see the leaves, and hosts whose two
//! RoCE NICs have a fake sysfs (a PCI function with an RDMA device each) for the real
//! `spinel-agent`.
//!
//! Cabling: spines spine1-2; leaves leaf1..leaf4 in two groups (leaf1+leaf2, leaf3+leaf4); the
//! hosts of group g have NIC0 on the group's first leaf and NIC1 on its second, at port
//! `swp<k>`; leaf uplinks `swp51` to spine1 and `swp52` to spine2, spine port `swp<leaf>`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hostnet::netns::NetNs;
use hostnet::packet::{PacketConfig, PacketSocket};
use hostnet::sriov::fake::FakeSysfs;

use crate::lldpd::{Lldpd, veth, wait_until};
use crate::{Sandbox, require_root};

pub use crate::cni::spinelctl_binary as spinelctl;

/// The hosts' RoCE NICs.
pub const NICS: [&str; 2] = ["ens1f0np0", "ens1f1np1"];

/// Priority with PFC enabled on every leaf port.
pub const PFC_PRIORITY: &str = "3";

/// The chassis MAC of a leaf.
pub fn leaf_chassis(leaf: usize) -> String {
    format!("0c:42:a1:00:01:{leaf:02x}")
}

/// The running fabric.
pub struct LiveFabric {
    sandbox: Sandbox,
    hosts: Vec<String>,
    /// `(leaf, port)` -> its LLDP sender.
    senders: BTreeMap<(usize, String), Child>,
    /// `(host, nic)` -> `(leaf, port)` at the other end.
    cabling: BTreeMap<(String, String), (usize, String)>,
    spines: Vec<Lldpd>,
}

impl LiveFabric {
    /// Builds the fabric with `per_group` hosts in each of the two leaf groups.
    pub fn new(test: &str, per_group: usize) -> Self {
        require_root();
        let sandbox = Sandbox::new(test);
        for name in ["spine1", "spine2", "leaf1", "leaf2", "leaf3", "leaf4"] {
            sandbox.netns(name);
        }
        let mut f = Self {
            sandbox,
            hosts: Vec::new(),
            senders: BTreeMap::new(),
            cabling: BTreeMap::new(),
            spines: Vec::new(),
        };
        for leaf in 1..=4 {
            for spine in 1..=2 {
                let up = format!("swp5{spine}");
                veth(
                    &f.sandbox,
                    &format!("leaf{leaf}"),
                    &up,
                    &format!("spine{spine}"),
                    &format!("swp{leaf}"),
                );
                f.start_sender(leaf, &up);
            }
        }
        for h in 0..2 * per_group {
            let host = format!("h{}", h + 1);
            f.sandbox.netns(&host);
            let (first, port) = (1 + 2 * (h / per_group), format!("swp{}", h % per_group + 1));
            for (k, nic) in NICS.iter().enumerate() {
                veth(&f.sandbox, &host, nic, &format!("leaf{}", first + k), &port);
                f.start_sender(first + k, &port);
                f.cabling
                    .insert((host.clone(), (*nic).to_owned()), (first + k, port.clone()));
            }
            f.fake_sysfs(&host);
            f.hosts.push(host);
        }
        for spine in ["spine1", "spine2"] {
            let config = format!(
                "configure system hostname {spine}\nconfigure system capabilities enabled bridge,router\n\
                 configure lldp tx-interval 1\n"
            );
            let lldpd = Lldpd::start(&mut f.sandbox, spine, &["swp*"], &config, &[]);
            f.spines.push(lldpd);
        }
        f
    }

    /// The sandbox.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The hosts, `h1`...
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The namespace holding `host`'s NICs.
    pub fn host_netns(&self, host: &str) -> PathBuf {
        self.sandbox.netns_path(host)
    }

    /// The root of `host`'s fake sysfs.
    pub fn sysfs_root(&self, host: &str) -> PathBuf {
        self.sandbox.dir().join(format!("{host}-sysfs"))
    }

    fn fake_sysfs(&self, host: &str) {
        let fake = FakeSysfs::at(self.sysfs_root(host));
        for (k, nic) in NICS.iter().enumerate() {
            let pci = format!("0000:{:02x}:00.0", 0x3b + k);
            fake.add_pf(&pci, nic, 0, 0);
            fake.add_rdma(&pci, &format!("mlx5_{k}"));
        }
    }

    /// Starts the LLDP sender of `leaf`'s `port`: the leaf's name and chassis, bridge and
    /// router, PFC on priority 3 and the RoCE v2 application entry, every second.
    fn start_sender(&mut self, leaf: usize, port: &str) {
        let ns = self.sandbox.netns_path(&format!("leaf{leaf}"));
        let log = std::fs::File::create(
            self.sandbox
                .dir()
                .join(format!("leaf{leaf}-{port}-send.log")),
        )
        .expect("sender log");
        let child = Command::new(spinelctl())
            .args(["lldp", "send", "--netns"])
            .arg(ns)
            .args(["--iface", port, "--chassis-id", &leaf_chassis(leaf)])
            .args(["--chassis-id-subtype", "mac", "--system-name"])
            .arg(format!("leaf{leaf}"))
            .args(["--capabilities", "bridge,router", "--pfc", PFC_PRIORITY])
            .args([
                "--app",
                "3:udp:4791",
                "--tx-interval",
                "1",
                "--tx-hold",
                "4",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn spinelctl lldp send");
        self.sandbox.record_pid(child.id());
        self.senders.insert((leaf, port.to_owned()), child);
    }

    /// Stops a sender with SIGTERM, so it sends its shutdown LLDPDU.
    fn stop_sender(&mut self, leaf: usize, port: &str) {
        if let Some(mut child) = self.senders.remove(&(leaf, port.to_owned())) {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let _ = child.wait();
        }
    }

    /// Recables `host`: its NIC k goes to `to[k]` (leaf number, port). The leaf end of each
    /// cable moves into the new leaf's namespace under the new port name, as a technician
    /// moves the cable from one switch port to another; the host's NIC stays what it is.
    pub fn recable(&mut self, host: &str, to: [(usize, &str); 2]) {
        for (nic, (leaf, port)) in NICS.iter().zip(to) {
            let (old_leaf, old_port) = self
                .cabling
                .get(&(host.to_owned(), (*nic).to_owned()))
                .cloned()
                .expect("the NIC is cabled");
            self.stop_sender(old_leaf, &old_port);
            let new_ns = self.sandbox.netns_path(&format!("leaf{leaf}"));
            // The new leaf may have a port of the old name: move under a name no leaf uses.
            let moving = format!("mv{leaf}{port}");
            let old_ns = format!("leaf{old_leaf}");
            // Down first: a running interface cannot be renamed.
            self.sandbox
                .run_in(&old_ns, "ip", &["link", "set", &old_port, "down"]);
            self.sandbox
                .run_in(&old_ns, "ip", &["link", "set", &old_port, "name", &moving]);
            self.sandbox.run_in(
                &old_ns,
                "ip",
                &[
                    "link",
                    "set",
                    &moving,
                    "netns",
                    new_ns.to_str().expect("utf-8 path"),
                ],
            );
            let leaf_ns = format!("leaf{leaf}");
            self.sandbox
                .run_in(&leaf_ns, "ip", &["link", "set", &moving, "name", port]);
            self.sandbox
                .run_in(&leaf_ns, "ip", &["link", "set", port, "up"]);
            wait_until(Duration::from_secs(5), "the moved port to come up", || {
                let line =
                    self.sandbox
                        .run_in(&leaf_ns, "ip", &["-o", "link", "show", "dev", port]);
                line.contains("state UP") && !line.contains("qdisc noop")
            });
            self.start_sender(leaf, port);
            self.cabling.insert(
                (host.to_owned(), (*nic).to_owned()),
                (leaf, port.to_owned()),
            );
        }
    }

    /// What `spine` (lldpd) reports, as an operator captures it (`show interfaces details`
    /// then `show neighbors details`, json0), once it sees all four leaves.
    pub fn spine_capture(&self, spine: usize) -> Vec<u8> {
        let lldpd = &self.spines[spine - 1];
        lldpd.wait_for_neighbors(4, Duration::from_secs(30));
        let mut out = Vec::new();
        for what in ["interfaces", "neighbors"] {
            out.extend(
                lldpd
                    .lldpcli(&["-f", "json0", "show", what, "details"])
                    .into_bytes(),
            );
        }
        out
    }

    /// Sends `frames` (whole Ethernet frames) from the leaf end of `host`'s cable on `nic`, as
    /// a device on that cable (or a compromised leaf port) would, `per_second` at most.
    pub fn inject_from_leaf(&self, host: &str, nic: &str, frames: &[Vec<u8>], per_second: u32) {
        let (leaf, port) = self
            .cabling
            .get(&(host.to_owned(), nic.to_owned()))
            .cloned()
            .expect("the NIC is cabled");
        let ns = NetNs::open(self.sandbox.netns_path(&format!("leaf{leaf}")))
            .expect("the leaf's namespace");
        let socket = PacketSocket::open(&ns, &port, &PacketConfig::send_only())
            .expect("a packet socket on the leaf port");
        let gap = Duration::from_secs(1) / per_second.max(1);
        for frame in frames {
            socket.send(frame).expect("the frame is sent");
            std::thread::sleep(gap);
        }
    }

    /// Sends LLDP frames claiming to be switch `claim` from a pod on `host`: a macvlan on the
    /// host's `nic`, moved into a pod namespace, with `spinelctl lldp send` running there for
    /// `seconds`. Meanwhile a listener at the leaf end of that cable proves the frames went
    /// out; returns the system names the leaf heard (nothing if none came within `seconds`).
    pub fn inject_from_pod(&self, host: &str, nic: &str, claim: &str, seconds: u32) -> Vec<String> {
        let pod = format!("{host}-pod");
        let pod_ns = self.sandbox.netns(&pod);
        self.sandbox.run_in(
            host,
            "ip",
            &[
                "link", "add", "link", nic, "name", "inj0", "type", "macvlan", "mode", "bridge",
            ],
        );
        self.sandbox.run_in(
            host,
            "ip",
            &[
                "link",
                "set",
                "inj0",
                "netns",
                pod_ns.to_str().expect("utf-8 path"),
            ],
        );
        self.sandbox
            .run_in(&pod, "ip", &["link", "set", "inj0", "up"]);
        let (leaf, port) = self
            .cabling
            .get(&(host.to_owned(), nic.to_owned()))
            .cloned()
            .expect("the NIC is cabled");
        let listen = Command::new(spinelctl())
            .args(["lldp", "listen", "--netns"])
            .arg(self.sandbox.netns_path(&format!("leaf{leaf}")))
            .args([
                "--iface",
                &port,
                "--json",
                "--role",
                "switch",
                "--node-name",
            ])
            .arg(format!("leaf{leaf}"))
            // Stop at the first neighbour heard: when the pod's sender stops it sends a
            // shutdown LLDPDU, which would empty the table a longer listener prints.
            .args(["--until-neighbors", "1", "--for", &seconds.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn spinelctl lldp listen");
        let send = self.sandbox.output_in(
            &pod,
            spinelctl().to_str().expect("utf-8 path"),
            &[
                "lldp",
                "send",
                "--iface",
                "inj0",
                "--system-name",
                claim,
                "--capabilities",
                "bridge,router",
                "--chassis-id",
                "02:66:66:66:66:66",
                "--chassis-id-subtype",
                "mac",
                "--tx-interval",
                "1",
                "--for",
                &seconds.to_string(),
            ],
        );
        assert!(send.status.success(), "the pod's sender failed: {send:?}");
        let heard = listen.wait_with_output().expect("the leaf's listener");
        let table: serde_json::Value =
            serde_json::from_slice(&heard.stdout).expect("the listener prints JSON");
        table["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|p| p["neighbors"].as_array().cloned().unwrap_or_default())
            .filter_map(|n| n["system_name"].as_str().map(str::to_owned))
            .collect()
    }
}
