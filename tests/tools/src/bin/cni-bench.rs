//! `cni-bench`: whole-process ADD+DEL cycles of `spinel` against Debian's `host-device` doing
//! the same job (move one interface into a pod namespace, address it with host-local), in one
//! run, alternating, at a given concurrency. Reports per-cycle wall time (median, p99), ADD and
//! DEL medians, CPU time (user + system of the plugin and its IPAM child) and the peak RSS of
//! the plugin process tree, all from wait4.
//!
//! Usage: cni-bench [--cycles N] [--concurrency C] [--no-ipam] [--core] [--fsync-load] [--json]
//!        cni-bench --burst ROUNDS --concurrency C [--no-ipam] [--core]
//!        cni-bench --garp [--cycles N]
//!
//! `--burst`: a job's start and end. Per round and contender, C ADDs start together (one VF
//! into each of C pods), then C DELs together; spinel, host-device and the floor (C threads
//! doing the same moves in-process) take turns, rotating who goes first. Reports each call's
//! latency (median, p99) and each burst's span (first start to last return).
//!
//! A third column is the kernel's floor: this process itself doing only the kernel work of
//! one ADD+DEL with the same netlink requests (move the interface into the pod while it is
//! down, bring it up, add the address; move it out), no process start, no IPAM, no journal.
//! Every figure compares whole ADD+DEL cycles.
//! `--fsync-load` runs a writer that fsyncs a file on the root file system in a loop during
//! the measurement, as a busy node's disk would be.
//! Every RoCE step of spinel is on (VF attributes through the PF, sysctls, policy routing,
//! gratuitous ARP rounds; the later rounds run detached, after ADD returns).
//! `--garp` measures instead the time from ADD's return until a leaf holding a stale entry for
//! the pod's (reused) address shows the pod's MAC.
//! `--no-ipam` leaves IPAM out of both configurations, isolating each plugin's own cost.
//! `--core` turns spinel's policy routing and announcements off: exactly host-device's job.
//! Needs root, Debian's containernetworking-plugins, and SPINEL_BIN pointing at a release build.

// A benchmark harness fails loudly on setup errors.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::os::fd::AsFd;

use hostnet::netlink::{LinkChange, RouteSocket};
use hostnet::netns::NetNs;
use ipnet::IpNet;
use serde_json::{Value, json};
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::CniCall;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Plugin {
    Spinel,
    HostDevice,
    /// Not a plugin: the kernel work of one ADD+DEL, done in-process.
    Floor,
}

impl Plugin {
    const ALL: [Plugin; 3] = [Plugin::Spinel, Plugin::HostDevice, Plugin::Floor];

    fn name(self) -> &'static str {
        match self {
            Plugin::Spinel => "spinel",
            Plugin::HostDevice => "host-device",
            Plugin::Floor => "kernel floor",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// What one plugin call cost.
#[derive(Clone, Copy)]
struct Cost {
    wall: Duration,
    /// User + system CPU time of the plugin and its IPAM child.
    cpu: Duration,
    /// Peak RSS of the plugin process tree, KiB.
    rss: u64,
}

/// Runs one plugin call and measures it.
fn timed_call(node: &SimNode, plugin: Plugin, call: &CniCall, conf: &Value) -> Cost {
    let mut cmd = node.plugin_command(plugin.name(), call);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let start = Instant::now();
    // Reaped by wait4 below, which also yields its resource usage.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().expect("spawn plugin");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(conf.to_string().as_bytes())
        .expect("write config");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read result");
    let (status, cpu, rss) = wait4(child.id());
    let wall = start.elapsed();
    assert!(
        status == 0,
        "{} {} failed ({status}): {out}",
        plugin.name(),
        call.command
    );
    Cost { wall, cpu, rss }
}

/// Waits for `pid`; returns (exit status, CPU time, ru_maxrss in KiB) of it and its children.
fn wait4(pid: u32) -> (i32, Duration, u64) {
    let mut status: nix::libc::c_int = 0;
    // SAFETY: rusage is plain data the kernel fills; all-zero is a valid value for it.
    #[allow(unsafe_code)]
    let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own child, not yet reaped (std's Child was never waited on); the
    // pointers are valid for the duration of the call.
    #[allow(unsafe_code)]
    let rc = unsafe { nix::libc::wait4(pid as i32, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid as i32, "wait4 failed");
    let tv = |t: nix::libc::timeval| {
        Duration::from_micros(t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64)
    };
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    (nix::libc::WEXITSTATUS(status), cpu, usage.ru_maxrss as u64)
}

fn config(node: &SimNode, plugin: Plugin, vf: usize, ipam: bool, core: bool) -> Value {
    let mut conf = node.conf("1.0.0", None);
    if core && plugin == Plugin::Spinel {
        // The same job as host-device: no policy routing, no announcements.
        conf["routing"] = json!({"enabled": false});
        conf["garp"] = json!({"count": 0});
    }
    if !ipam {
        conf.as_object_mut().expect("object").remove("ipam");
    }
    match plugin {
        Plugin::Spinel => conf["deviceID"] = json!(node.vfs[vf].pci),
        Plugin::HostDevice | Plugin::Floor => {
            conf["type"] = json!("host-device");
            conf["device"] = json!(node.vfs[vf].name);
        }
    }
    conf
}

/// Time from ADD's return until the leaf's stale entry for the reused address is corrected.
fn garp_time_to_correct(cycles: usize) -> ExitCode {
    let node = SimNode::new("cni-bench-garp", 1);
    let netns = node.pod("p");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["ipam"] = json!({"type": "static", "addresses": [{"address": "10.56.0.50/24"}]});
    let mut times = Vec::new();
    for i in 0..cycles {
        node.plant_stale_leaf_neighbour("10.56.0.50", "0a:58:de:ad:be:ef");
        let call = CniCall::new("ADD", &format!("g{i}"), Some(&netns), "net1");
        timed_call(&node, Plugin::Spinel, &call, &conf);
        let Some(took) =
            node.wait_leaf_neighbour_mac("10.56.0.50", &node.vfs[0].mac, Duration::from_secs(5))
        else {
            eprintln!("cycle {i}: never corrected");
            return ExitCode::FAILURE;
        };
        times.push(took);
        timed_call(&node, Plugin::Spinel, &call.with_command("DEL"), &conf);
    }
    println!(
        "GARP time to correct over {cycles} ADDs: median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(times.clone(), 0.5),
        percentile(times.clone(), 0.99),
        percentile(times, 1.0)
    );
    ExitCode::SUCCESS
}

#[derive(Default)]
struct Samples {
    cycle: Vec<Duration>,
    add: Vec<Duration>,
    del: Vec<Duration>,
    cpu: Vec<Duration>,
    rss: u64,
}

fn percentile(mut values: Vec<Duration>, p: f64) -> f64 {
    values.sort();
    let idx = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[idx.min(values.len() - 1)].as_secs_f64() * 1e3
}

/// The kernel work of one ADD+DEL of VF `vf` into `netns`, with the requests spinel makes:
/// the move while the link is down (named on arrival), up, the address; then the move out.
fn floor_cycle(node: &SimNode, netns: &Path, vf: usize) -> (Duration, Duration) {
    let (add, index) = floor_add(node, netns, vf);
    (add, floor_del(node, netns, vf, index))
}

/// The ADD half of [`floor_cycle`]; returns its time and the interface's index in the pod.
fn floor_add(node: &SimNode, netns: &Path, vf: usize) -> (Duration, u32) {
    let name = &node.vfs[vf].name;
    let address: IpNet = format!("10.99.{vf}.1/24").parse().expect("address");
    let start = Instant::now();
    let node_ns = NetNs::open(node.sb.netns_path("node")).expect("node netns");
    let pod_ns = NetNs::open(netns).expect("pod netns");
    let mut host = RouteSocket::open_in(&node_ns).expect("host socket");
    let mut pod = RouteSocket::open_in(&pod_ns).expect("pod socket");
    let link = host
        .link_by_name(name)
        .expect("read")
        .expect("VF in the node");
    host.set_link(
        link.index,
        &LinkChange::new().netns(pod_ns.as_fd()).name("net1"),
    )
    .expect("move in");
    let moved = pod.link_by_name("net1").expect("read").expect("in the pod");
    pod.set_link(moved.index, &LinkChange::new().up(true))
        .expect("up");
    pod.add_address(moved.index, &address).expect("address");
    (start.elapsed(), moved.index)
}

/// The DEL half of [`floor_cycle`].
fn floor_del(node: &SimNode, netns: &Path, vf: usize, index: u32) -> Duration {
    let name = &node.vfs[vf].name;
    let start = Instant::now();
    let pod_ns = NetNs::open(netns).expect("pod netns");
    let node_ns = NetNs::open(node.sb.netns_path("node")).expect("node netns");
    let mut pod = RouteSocket::open_in(&pod_ns).expect("pod socket");
    pod.set_link(
        index,
        &LinkChange::new().netns(node_ns.as_fd()).name(name.as_str()),
    )
    .expect("move out");
    start.elapsed()
}

/// One contender's burst: `pods.len()` ADDs started together (one VF into each pod), then,
/// once all returned, as many DELs started together, as a job's pods start and end.
/// Returns each call's latency, ADDs then DELs.
fn burst(
    node: &SimNode,
    pods: &[std::path::PathBuf],
    plugin: Plugin,
    round: usize,
    ipam: bool,
    core: bool,
) -> (Vec<Duration>, Vec<Duration>) {
    let start_together = std::sync::Barrier::new(pods.len());
    let calls: Vec<(CniCall, Value)> = (0..pods.len())
        .map(|w| {
            let id = format!("j{round}-{w}-{}", plugin.name());
            let call = CniCall::new("ADD", &id, Some(&pods[w]), "net1");
            (call, config(node, plugin, w, ipam, core))
        })
        .collect();
    let adds: Vec<(Duration, u32)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..pods.len())
            .map(|w| {
                let (start, calls) = (&start_together, &calls);
                s.spawn(move || {
                    start.wait();
                    match plugin {
                        Plugin::Floor => floor_add(node, &pods[w], w),
                        _ => (timed_call(node, plugin, &calls[w].0, &calls[w].1).wall, 0),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("ADD"))
            .collect()
    });
    let dels: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..pods.len())
            .map(|w| {
                let (start, calls, index) = (&start_together, &calls, adds[w].1);
                s.spawn(move || {
                    start.wait();
                    match plugin {
                        Plugin::Floor => floor_del(node, &pods[w], w, index),
                        _ => {
                            let (call, conf) = &calls[w];
                            timed_call(node, plugin, &call.with_command("DEL"), conf).wall
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("DEL"))
            .collect()
    });
    (adds.into_iter().map(|(d, _)| d).collect(), dels)
}

/// `--burst`: job starts and ends, each contender in turn (rotating who goes first), the first
/// round of each uncounted (caches). Prints per-call latency and per-burst span.
fn run_bursts(node: &SimNode, pods: &[std::path::PathBuf], rounds: usize, ipam: bool, core: bool) {
    let mut calls: [[Vec<Duration>; 2]; 3] = Default::default();
    let mut spans: [[Vec<Duration>; 2]; 3] = Default::default();
    for round in 0..=rounds {
        let mut order = Plugin::ALL;
        order.rotate_left(round % 3);
        for plugin in order {
            let (adds, dels) = burst(node, pods, plugin, round, ipam, core);
            if round == 0 {
                continue;
            }
            for (i, v) in [adds, dels].into_iter().enumerate() {
                spans[plugin.slot()][i].push(v.iter().copied().max().unwrap_or_default());
                calls[plugin.slot()][i].extend(v);
            }
        }
    }
    println!(
        "{} concurrent ADDs, then {} concurrent DELs; {rounds} rounds per contender{}",
        pods.len(),
        pods.len(),
        if ipam {
            ", host-local IPAM"
        } else {
            ", no IPAM"
        }
    );
    println!(
        "{:<13} {:>11} {:>8} {:>11} {:>8} {:>13} {:>13}",
        "", "ADD med ms", "p99 ms", "DEL med ms", "p99 ms", "ADD burst ms", "DEL burst ms"
    );
    let floor = Plugin::Floor.slot();
    for plugin in Plugin::ALL {
        let k = plugin.slot();
        println!(
            "{:<13} {:>11.1} {:>8.1} {:>11.1} {:>8.1} {:>13.1} {:>13.1}",
            plugin.name(),
            percentile(calls[k][0].clone(), 0.5),
            percentile(calls[k][0].clone(), 0.99),
            percentile(calls[k][1].clone(), 0.5),
            percentile(calls[k][1].clone(), 0.99),
            percentile(spans[k][0].clone(), 0.5),
            percentile(spans[k][1].clone(), 0.5),
        );
        if plugin != Plugin::Floor {
            let ratio = |i: usize, p: f64| {
                percentile(calls[k][i].clone(), p) / percentile(calls[floor][i].clone(), p)
            };
            println!(
                "{:<13} / floor: ADD median {:.2} p99 {:.2}, DEL median {:.2} p99 {:.2}",
                "",
                ratio(0, 0.5),
                ratio(0, 0.99),
                ratio(1, 0.5),
                ratio(1, 0.99)
            );
        }
    }
}

fn worker(
    node: &SimNode,
    netns: &Path,
    w: usize,
    cycles: usize,
    ipam: bool,
    core: bool,
) -> [Samples; 3] {
    let mut samples: [Samples; 3] = Default::default();
    for i in 0..=cycles {
        // Rotate which one goes first, so none always runs right after another.
        let mut order = Plugin::ALL;
        order.rotate_left(i % 3);
        for plugin in order {
            let (add, del) = if plugin == Plugin::Floor {
                let (add, del) = floor_cycle(node, netns, w);
                let none = |wall| Cost {
                    wall,
                    cpu: Duration::ZERO,
                    rss: 0,
                };
                (none(add), none(del))
            } else {
                let call = CniCall::new(
                    "ADD",
                    &format!("b{w}-{i}-{}", plugin.name()),
                    Some(netns),
                    "net1",
                );
                let conf = config(node, plugin, w, ipam, core);
                let add = timed_call(node, plugin, &call, &conf);
                (
                    add,
                    timed_call(node, plugin, &call.with_command("DEL"), &conf),
                )
            };
            // The first cycle warms caches (spinel's IPAM version cache): not counted.
            if i > 0 {
                let s = &mut samples[plugin.slot()];
                s.cycle.push(add.wall + del.wall);
                s.add.push(add.wall);
                s.del.push(del.wall);
                s.cpu.push(add.cpu + del.cpu);
                s.rss = s.rss.max(add.rss).max(del.rss);
            }
        }
    }
    samples
}

/// A writer that fsyncs a file on the root file system until `stop` is set.
fn fsync_load(stop: &std::sync::atomic::AtomicBool) {
    let path = Path::new("/var/tmp").join(format!("cni-bench-fsync.{}", std::process::id()));
    let mut f = std::fs::File::create(&path).expect("fsync load file");
    let block = vec![0x5a_u8; 64 * 1024];
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        f.write_all(&block).expect("write");
        f.sync_all().expect("fsync");
        if f.metadata().map(|m| m.len()).unwrap_or(0) > 64 << 20 {
            f.set_len(0).expect("truncate");
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// Prints the table (or JSON): every ratio compares whole ADD+DEL cycles.
fn report(
    results: &[[Samples; 3]],
    concurrency: usize,
    per_worker: usize,
    ipam: bool,
    fsync: bool,
    as_json: bool,
) {
    let mut report = serde_json::Map::new();
    let mut medians = [0.0f64; 3];
    let mut p99s = [0.0f64; 3];
    for plugin in Plugin::ALL {
        let k = plugin.slot();
        let all = |pick: fn(&Samples) -> &Vec<Duration>| -> Vec<Duration> {
            results
                .iter()
                .flat_map(|r| pick(&r[k]).iter().copied())
                .collect()
        };
        let cycle = all(|s| &s.cycle);
        medians[k] = percentile(cycle.clone(), 0.5);
        p99s[k] = percentile(cycle.clone(), 0.99);
        report.insert(
            plugin.name().into(),
            json!({
                "cycles": cycle.len(),
                "median_ms": medians[k],
                "p99_ms": p99s[k],
                "add_median_ms": percentile(all(|s| &s.add), 0.5),
                "del_median_ms": percentile(all(|s| &s.del), 0.5),
                "cpu_median_ms": percentile(all(|s| &s.cpu), 0.5),
                "peak_rss_kib": results.iter().map(|r| r[k].rss).max().unwrap_or(0),
            }),
        );
    }
    let (spinel, host_device, floor) = (0, 1, 2);
    let ratios = json!({
        "spinel_over_floor": {"median": medians[spinel] / medians[floor], "p99": p99s[spinel] / p99s[floor]},
        "host_device_over_floor": {"median": medians[host_device] / medians[floor], "p99": p99s[host_device] / p99s[floor]},
        "spinel_over_host_device": {"median": medians[spinel] / medians[host_device], "p99": p99s[spinel] / p99s[host_device]},
    });
    report.insert("ratios".into(), ratios.clone());
    report.insert("concurrency".into(), json!(concurrency));
    report.insert("fsync_load".into(), json!(fsync));
    report.insert(
        "ipam".into(),
        json!(if ipam { "host-local" } else { "none" }),
    );
    if as_json {
        println!("{}", Value::Object(report));
        return;
    }
    println!(
        "concurrency {concurrency}, {} ADD+DEL cycles each{}",
        per_worker * concurrency,
        if fsync { ", under an fsync load" } else { "" }
    );
    println!(
        "{:<13} {:>10} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "", "median ms", "p99 ms", "ADD ms", "DEL ms", "CPU ms", "peak KiB"
    );
    for plugin in Plugin::ALL {
        let r = &report[plugin.name()];
        let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
        println!(
            "{:<13} {:>10.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>10}",
            plugin.name(),
            f("median_ms"),
            f("p99_ms"),
            f("add_median_ms"),
            f("del_median_ms"),
            f("cpu_median_ms"),
            r["peak_rss_kib"]
        );
    }
    for (what, key) in [
        ("spinel / kernel floor", "spinel_over_floor"),
        ("host-device / kernel floor", "host_device_over_floor"),
        ("spinel / host-device", "spinel_over_host_device"),
    ] {
        println!(
            "{what}: median {:.3}, p99 {:.3}",
            ratios[key]["median"].as_f64().unwrap_or(0.0),
            ratios[key]["p99"].as_f64().unwrap_or(0.0)
        );
    }
}

fn main() -> ExitCode {
    let mut cycles = 200usize;
    let mut concurrency = 1usize;
    let mut as_json = false;
    let mut ipam = true;
    let mut garp = false;
    let mut core = false;
    let mut fsync = false;
    let mut burst_rounds = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--cycles" => {
                cycles = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--cycles N")
            }
            "--concurrency" => {
                concurrency = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--concurrency C")
            }
            "--json" => as_json = true,
            "--no-ipam" => ipam = false,
            "--garp" => garp = true,
            "--core" => core = true,
            "--fsync-load" => fsync = true,
            "--burst" => {
                burst_rounds = Some(
                    args.next()
                        .and_then(|v| v.parse::<usize>().ok())
                        .expect("--burst ROUNDS"),
                )
            }
            other => {
                eprintln!("unknown argument {other}");
                return ExitCode::FAILURE;
            }
        }
    }
    assert!(
        std::env::var_os("SPINEL_BIN").is_some(),
        "set SPINEL_BIN to a release build of spinel"
    );
    if garp {
        return garp_time_to_correct(cycles);
    }
    spinel_netns_tests::cni::require_debian_plugin("host-device");
    let node = Arc::new(SimNode::new("cni-bench", concurrency as u32));
    let pods: Vec<_> = (0..concurrency)
        .map(|w| node.pod(&format!("w{w}")))
        .collect();
    let per_worker = cycles.div_ceil(concurrency);
    if let Some(rounds) = burst_rounds {
        run_bursts(&node, &pods, rounds, ipam, core);
        return if leaked(&node) {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }

    let stop = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<[Samples; 3]> = std::thread::scope(|s| {
        let load = fsync.then(|| s.spawn(|| fsync_load(&stop)));
        let handles: Vec<_> = pods
            .iter()
            .enumerate()
            .map(|(w, netns)| {
                let node = Arc::clone(&node);
                s.spawn(move || worker(&node, netns, w, per_worker, ipam, core))
            })
            .collect();
        let results = handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(load) = load {
            load.join().expect("fsync load");
        }
        results
    });
    report(&results, concurrency, per_worker, ipam, fsync, as_json);
    if leaked(&node) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Both plugins must have given every VF back (host-device leaves its alias behind, so only
/// names are compared) and released every address.
fn leaked(node: &SimNode) -> bool {
    let links = node.links("node");
    let home = node
        .vfs
        .iter()
        .all(|vf| links.links.iter().any(|l| l.0 == vf.name));
    if !home || !node.leased_ips().is_empty() {
        eprintln!(
            "a VF or an address leaked: {links:?} {:?}",
            node.leased_ips()
        );
        return true;
    }
    false
}
