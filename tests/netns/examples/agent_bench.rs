//! The agent duties' figures in docs/benchmarks.md, each side by side with a baseline doing
//! the same job in the same run, on a namespace-simulated node with the real API server:
//!
//! - carrier up -> first gratuitous ARP for the host address on the wire (captured at the
//!   leaf), and -> the leaf's entry right; baseline: `ip monitor link` piped into `arping -U`
//!   (iputils), what an operator scripts today;
//! - a deleted policy rule -> restored; baseline: `ip monitor rule` piped into `ip rule add`;
//! - CPU and RSS of the agent with 8 RoCE NICs, 64 pod attachments and a scrape every 15 s,
//!   next to Debian's prometheus-node-exporter with only its infiniband collector, scraped
//!   alike over the same sysfs (the exporter an operator would otherwise run for the counters).
//!
//! Run by `scripts/bench-agent.sh` (as root), which builds the release agent and points
//! `SPINEL_AGENT_BIN` at it. Usage: `agent_bench [cycles] [seconds]`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use spinel_netns_tests::agent::{
    AgentNode, HOST_IP, announcements, capture_arp, cluster, flap_and_flush, mac_of,
};
use spinel_netns_tests::cni::CniCall;
use spinel_netns_tests::k8s::ControlPlane;
use spinel_netns_tests::{require_root, summary};

fn config() -> Value {
    json!({
        "routing": {"gateways": {"pf0": "10.56.0.1"}},
        "garp": {"count": 1, "onStart": false},
    })
}

fn main() {
    require_root();
    let mut args = std::env::args().skip(1);
    let cycles: usize = args.next().map_or(20, |a| a.parse().expect("cycles"));
    let seconds: u64 = args.next().map_or(120, |a| a.parse().expect("seconds"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cp = cluster(&rt);
    announcing(&rt, cp, cycles);
    reconciling(&rt, cp, cycles);
    footprint(&rt, cp, seconds);
}

/// A shell pipeline in the node's namespace, killed (with its group) on drop.
struct Script(Child);

impl Script {
    fn start(a: &AgentNode, script: &str) -> Self {
        let mut cmd = a.node.sb.command_in("node", "setsid");
        cmd.args(["sh", "-c", script])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = cmd.spawn().unwrap();
        a.node.sb.record_pid(child.id());
        // Let `ip monitor` subscribe before the first event.
        std::thread::sleep(Duration::from_millis(500));
        Script(child)
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(-i32::try_from(self.0.id()).unwrap());
        let _ = nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// `cycles` carrier flaps: (carrier up -> first announcement, carrier up -> leaf entry right).
fn flaps(a: &AgentNode, mac: &str, cycles: usize) -> (Vec<Duration>, Vec<Duration>) {
    let (mut wire, mut leaf) = (Vec::new(), Vec::new());
    for _ in 0..cycles {
        let capture = capture_arp(a, Duration::from_millis(2000));
        let up = flap_and_flush(a);
        a.node
            .wait_leaf_neighbour_mac(HOST_IP, mac, Duration::from_secs(5))
            .expect("the leaf never learned the host");
        leaf.push(up.elapsed());
        let frames = capture.join().unwrap();
        let first = announcements(&frames, mac, HOST_IP)
            .into_iter()
            .find(|t| *t >= up)
            .expect("no announcement on the wire");
        wire.push(first - up);
        std::thread::sleep(Duration::from_millis(200));
    }
    (wire, leaf)
}

fn announcing(rt: &tokio::runtime::Runtime, cp: &ControlPlane, cycles: usize) {
    let mut a = AgentNode::new(rt, cp, "bench-garp", 0, config());
    a.node
        .sb
        .run_in("leaf", "sysctl", &["-w", "net.ipv4.conf.swp1.arp_accept=1"]);
    let mac = mac_of(&a, "node", "pf0");
    a.start(&[]);
    a.wait_for("the agent up", Duration::from_secs(30), || {
        a.get("/metrics").map(drop)
    });
    let (mut agent_wire, mut agent_leaf) = flaps(&a, &mac, cycles);
    a.stop(nix::sys::signal::Signal::SIGTERM);
    let baseline = Script::start(
        &a,
        &format!(
            "ip -o monitor link | while read -r l; do case \"$l\" in *' pf0@'*LOWER_UP*) \
             arping -q -U -c 1 -I pf0 {HOST_IP};; esac; done"
        ),
    );
    let (mut base_wire, mut base_leaf) = flaps(&a, &mac, cycles);
    drop(baseline);
    println!("## carrier up -> first announcement on the wire (host address)");
    println!("spinel-agent:             {}", summary(&mut agent_wire));
    println!("ip monitor + arping -U:   {}", summary(&mut base_wire));
    println!("## carrier up -> the leaf's entry right (polled with `ip -j neigh`)");
    println!("spinel-agent:             {}", summary(&mut agent_leaf));
    println!("ip monitor + arping -U:   {}", summary(&mut base_leaf));
}

/// `cycles` deletions of the host's rule: deletion -> the rule back (polled with `ip -j rule`).
fn deletions(a: &AgentNode, cycles: usize) -> Vec<Duration> {
    let del = [
        "rule", "del", "from", HOST_IP, "lookup", "100", "pref", "1000",
    ];
    (0..cycles)
        .map(|_| {
            a.node.sb.run_in("node", "ip", &del);
            // Polled back to back (one `ip -j rule` is 1-3 ms), not at the tests' 20 ms.
            let start = Instant::now();
            while a.rules_for(100).len() != 1 {
                assert!(
                    start.elapsed() < Duration::from_secs(5),
                    "the rule never came back"
                );
            }
            let took = start.elapsed();
            std::thread::sleep(Duration::from_millis(100));
            took
        })
        .collect()
}

fn reconciling(rt: &tokio::runtime::Runtime, cp: &ControlPlane, cycles: usize) {
    let mut a = AgentNode::new(rt, cp, "bench-routes", 0, config());
    a.start(&[]);
    a.wait_for("the rule", Duration::from_secs(30), || {
        (a.rules_for(100).len() == 1).then_some(())
    });
    let mut agent = deletions(&a, cycles);
    a.stop(nix::sys::signal::Signal::SIGTERM);
    let baseline = Script::start(
        &a,
        &format!(
            "ip -o monitor rule | while read -r l; do case \"$l\" in Deleted*'from {HOST_IP} lookup 100'*) \
             ip rule add from {HOST_IP} lookup 100 pref 1000;; esac; done"
        ),
    );
    let mut base = deletions(&a, cycles);
    drop(baseline);
    println!("## a deleted policy rule -> restored (polled with `ip -j rule`, 1-3 ms each)");
    println!("spinel-agent:                  {}", summary(&mut agent));
    println!("ip monitor rule + ip rule add: {}", summary(&mut base));
}

/// (CPU seconds, RSS KiB, peak RSS KiB) of `pid` now.
fn usage(pid: u32) -> (f64, u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .unwrap()
        .unwrap() as f64;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = |key: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (ticks as f64 / hz, kib("VmRSS:"), kib("VmHWM:"))
}

fn scrape(port: u16) -> usize {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    std::io::Write::write_all(
        &mut s,
        b"GET /metrics HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut body = String::new();
    std::io::Read::read_to_string(&mut s, &mut body).unwrap();
    body.lines().filter(|l| !l.starts_with('#')).count()
}

/// 8 NICs, 64 pods attached by the real CNI on pf0's VFs, LLDP from the leaf on every port.
fn big_node(rt: &tokio::runtime::Runtime, cp: &ControlPlane) -> AgentNode {
    let mut a = AgentNode::new(rt, cp, "bench-footprint", 64, config());
    for i in 1..8 {
        a.add_nic(i);
    }
    for i in 0..64 {
        let netns = a.node.pod(&format!("p{i}"));
        let call = CniCall::new("ADD", &format!("pod{i}"), Some(&netns), "net1");
        let mut conf = a.node.conf("1.1.0", Some(&a.node.vfs[i]));
        let ip = format!("10.56.0.{}/24", 100 + i);
        conf["ipam"] = json!({"type": "static", "addresses": [{"address": ip}]});
        conf["garp"] = json!({"count": 0});
        a.node.spinel(&call, &conf).expect_ok("ADD");
    }
    for i in 1..=8 {
        let mut cmd = a.node.sb.command_in(
            "leaf",
            spinel_netns_tests::cni::spinelctl_binary()
                .to_str()
                .unwrap(),
        );
        cmd.args(["lldp", "send", "--iface", &format!("swp{i}")])
            .args([
                "--system-name",
                "leaf01",
                "--pfc",
                "3",
                "--tx-interval",
                "30",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        a.node.sb.spawn(cmd);
    }
    a
}

fn footprint(rt: &tokio::runtime::Runtime, cp: &ControlPlane, seconds: u64) {
    let mut a = big_node(rt, cp);
    a.start(&[]);
    a.wait_for("the agent up", Duration::from_secs(60), || {
        a.get("/metrics").map(drop)
    });
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut exporter = Command::new("prometheus-node-exporter")
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg(format!(
            "--path.sysfs={}",
            a.node.sb.dir().join("sys").display()
        ))
        .args(["--collector.disable-defaults", "--collector.infiniband"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus-node-exporter (apt-get install prometheus-node-exporter)");
    // Settle: routes for 8 NICs, the first report, the condition.
    std::thread::sleep(Duration::from_secs(10));
    let pids = [
        ("spinel-agent", a.pid().unwrap(), a.port),
        ("node-exporter", exporter.id(), port),
    ];
    let before: Vec<(f64, u64, u64)> = pids.iter().map(|p| usage(p.1)).collect();
    let start = Instant::now();
    let mut series = [0usize; 2];
    while start.elapsed() < Duration::from_secs(seconds) {
        for (i, p) in pids.iter().enumerate() {
            series[i] = scrape(p.2);
        }
        std::thread::sleep(Duration::from_secs(15).min(Duration::from_secs(seconds)));
    }
    let wall = start.elapsed().as_secs_f64();
    println!("## 8 RoCE NICs, 64 pod attachments, /metrics scraped every 15 s, {wall:.0} s");
    for (i, (name, pid, _)) in pids.iter().enumerate() {
        let (cpu, rss, hwm) = usage(*pid);
        println!(
            "{name:14} CPU {:.3} % of a core, RSS {:.1} MiB (peak {:.1} MiB), {} series",
            (cpu - before[i].0) / wall * 100.0,
            rss as f64 / 1024.0,
            hwm as f64 / 1024.0,
            series[i]
        );
    }
    let _ = exporter.kill();
    let _ = exporter.wait();
}
