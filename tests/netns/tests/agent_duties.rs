//! The agent's node duties with the real `spinel-agent`, the real API server (Spinel's CRDs,
//! the agent's RBAC and admission policy, a pod-bound token) and a namespace-simulated node:
//! host policy routes kept right, announcements after a carrier flap reaching the leaf for the
//! host and for pods the real `spinel` CNI attached, RoCE health as the node's condition and
//! taint with hysteresis, and metrics over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::process::Child;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{Patch, PatchParams};
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use spinel_api::crd::NodeFabric;
use spinel_netns_tests::agent::{
    AgentNode, HOST_IP, announcements, capture_arp, cluster, flap_and_flush, mac_of,
};
use spinel_netns_tests::cni::{CniCall, spinelctl_binary};
use spinel_netns_tests::require_root;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The agent's configuration for these tests: short health timers, a gateway for pf0's table.
fn config() -> Value {
    json!({
        "reportDebounceMs": 100,
        "routing": {"gateways": {"pf0": "10.56.0.1"}},
        "garp": {"count": 3, "intervalMs": 1100, "onStart": false},
        "health": {"periodSeconds": 1, "unhealthyAfterSeconds": 1, "healthyAfterSeconds": 3,
                   "neighborGraceSeconds": 0, "minMtu": 9000, "minSpeedMbps": 100000},
    })
}

fn sysctl(a: &AgentNode, key: &str) -> String {
    a.node
        .sb
        .run_in(
            "node",
            "sysctl",
            &["-n", &format!("net.ipv4.conf.pf0.{key}")],
        )
        .trim()
        .to_owned()
}

const WITHIN: Duration = Duration::from_secs(1);

#[test]
fn host_routes_are_kept_right_removed_with_the_address_and_left_in_place_on_sigterm() {
    require_root();
    let rt = runtime();
    let cp = cluster(&rt);
    let mut a = AgentNode::new(&rt, cp, "duty-routes", 0, config());

    // Dry run: the iproute2 equivalent on stdout, nothing changed.
    a.start(&["--dry-run-routes"]);
    let rule = "ip rule add from 10.56.0.2/32 lookup 100 pref 1000 protocol 197";
    a.wait_for("the dry run's lines", Duration::from_secs(30), || {
        a.stdout().contains(rule).then_some(())
    });
    let out = a.stdout();
    assert!(
        out.contains(
            "ip route add 10.56.0.0/24 dev pf0 src 10.56.0.2 scope link table 100 proto 197"
        ) && out.contains("ip route add 0.0.0.0/0 via 10.56.0.1 dev pf0 table 100 proto 197")
            && out.contains("sysctl -w net.ipv4.conf.pf0.rp_filter=2"),
        "{out}"
    );
    assert!(a.rules_for(100).is_empty(), "a dry run changes nothing");
    assert!(a.stop(Signal::SIGTERM).success());

    a.start(&[]);
    a.wait_for("the rule and the table", Duration::from_secs(30), || {
        (a.rules_for(100).len() == 1 && a.routes_in(100).len() == 2).then_some(())
    });
    let r = &a.rules_for(100)[0];
    assert_eq!(r["src"], HOST_IP, "{r}");
    assert_eq!(r["priority"], 1000, "{r}");
    let routes = a.routes_in(100);
    assert!(
        routes
            .iter()
            .any(|r| r["dst"] == "10.56.0.0/24" && r["prefsrc"] == HOST_IP && r["dev"] == "pf0"),
        "{routes:?}"
    );
    assert!(
        routes
            .iter()
            .any(|r| r["dst"] == "default" && r["gateway"] == "10.56.0.1"),
        "{routes:?}"
    );
    assert_eq!(
        (
            sysctl(&a, "arp_ignore"),
            sysctl(&a, "arp_announce"),
            sysctl(&a, "rp_filter")
        ),
        ("1".into(), "2".into(), "2".into())
    );

    // Someone deletes the rule, then the connected route: each is back within a second.
    a.node.sb.run_in(
        "node",
        "ip",
        &[
            "rule", "del", "from", HOST_IP, "lookup", "100", "pref", "1000",
        ],
    );
    let (_, took) = a.wait_for("the rule restored", WITHIN, || {
        (a.rules_for(100).len() == 1).then_some(())
    });
    println!("deleted rule restored after {} ms", took.as_millis());
    a.node.sb.run_in(
        "node",
        "ip",
        &["route", "del", "10.56.0.0/24", "table", "100"],
    );
    let (_, took) = a.wait_for("the route restored", WITHIN, || {
        (a.routes_in(100).len() == 2).then_some(())
    });
    println!("deleted route restored after {} ms", took.as_millis());
    // A sysctl changed by hand is set back at the next resync (sysctls announce nothing).
    a.node
        .sb
        .run_in("node", "sysctl", &["-w", "net.ipv4.conf.pf0.rp_filter=1"]);

    // The address goes: the rule and the table go with it; it comes back: so do they.
    a.node.sb.run_in(
        "node",
        "ip",
        &["addr", "del", &format!("{HOST_IP}/24"), "dev", "pf0"],
    );
    a.wait_for("the rule and routes removed", WITHIN, || {
        (a.rules_for(100).is_empty() && a.routes_in(100).is_empty()).then_some(())
    });
    a.node.sb.run_in(
        "node",
        "ip",
        &["addr", "add", &format!("{HOST_IP}/24"), "dev", "pf0"],
    );
    a.wait_for("the rule back with the address", WITHIN, || {
        (a.rules_for(100).len() == 1).then_some(())
    });
    a.wait_for("rp_filter set back", Duration::from_secs(40), || {
        (sysctl(&a, "rp_filter") == "2").then_some(())
    });

    // SIGTERM: a clean exit that leaves the host's routing in place.
    let status = a.stop(Signal::SIGTERM);
    assert!(status.success(), "{status}\n{}", a.log_tail());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(a.rules_for(100).len(), 1, "SIGTERM leaves the rule");
    assert_eq!(a.routes_in(100).len(), 2, "SIGTERM leaves the table");

    restart_after_sigkill_converges(&mut a);
}

/// SIGKILL, rules changed while the agent is down, a restart: its own stray rule goes, its
/// rule is back, and a rule it did not install stays.
fn restart_after_sigkill_converges(a: &mut AgentNode) {
    a.start(&[]);
    a.wait_for("up again", Duration::from_secs(30), || {
        a.get("/metrics").map(drop)
    });
    let _ = a.stop(Signal::SIGKILL);
    a.node.sb.run_in(
        "node",
        "ip",
        &[
            "rule", "del", "from", HOST_IP, "lookup", "100", "pref", "1000",
        ],
    );
    a.node.sb.run_in(
        "node",
        "ip",
        &[
            "rule",
            "add",
            "from",
            "10.56.0.99",
            "lookup",
            "100",
            "pref",
            "1000",
            "protocol",
            "197",
        ],
    );
    a.node.sb.run_in(
        "node",
        "ip",
        &[
            "rule",
            "add",
            "from",
            "10.56.0.98",
            "lookup",
            "100",
            "pref",
            "1000",
        ],
    );
    a.start(&[]);
    a.wait_for("converged after a restart", Duration::from_secs(30), || {
        let rules = a.rules_for(100);
        let srcs: Vec<&str> = rules.iter().filter_map(|r| r["src"].as_str()).collect();
        (srcs.contains(&HOST_IP) && !srcs.contains(&"10.56.0.99")).then_some(srcs.len())
    });
    let srcs: Vec<String> = a
        .rules_for(100)
        .iter()
        .filter_map(|r| r["src"].as_str().map(str::to_owned))
        .collect();
    assert!(
        srcs.contains(&"10.56.0.98".to_owned()),
        "a rule the agent did not install stays: {srcs:?}"
    );
}

#[test]
fn a_carrier_flap_reannounces_the_host_and_every_pod_on_the_nic() {
    require_root();
    let rt = runtime();
    let cp = cluster(&rt);
    let mut a = AgentNode::new(&rt, cp, "duty-garp", 2, config());
    // The leaf learns from gratuitous ARP (as SONiC's grat_arp or EOS's `arp gratuitous
    // accept` do), so an emptied table is refilled, not only stale entries corrected.
    a.node
        .sb
        .run_in("leaf", "sysctl", &["-w", "net.ipv4.conf.swp1.arp_accept=1"]);
    let mut pods = Vec::new();
    for (i, ip) in [(0usize, "10.56.0.50"), (1, "10.56.0.51")] {
        let netns = a.node.pod(&format!("p{i}"));
        let call = CniCall::new("ADD", &format!("pod{i}"), Some(&netns), "net1");
        let mut conf = a.node.conf("1.1.0", Some(&a.node.vfs[i]));
        conf["ipam"] = json!({"type": "static", "addresses": [{"address": format!("{ip}/24")}]});
        conf["garp"] = json!({"count": 0});
        a.node.spinel(&call, &conf).expect_ok("ADD");
        pods.push((ip, a.node.vfs[i].mac.clone()));
    }
    let host_mac = mac_of(&a, "node", "pf0");

    let announcers: Vec<(&str, String)> = std::iter::once((HOST_IP, host_mac.clone()))
        .chain(pods.iter().map(|(ip, mac)| (*ip, mac.clone())))
        .collect();

    // Control: without the agent nothing announces, and nothing refills the leaf.
    let capture = capture_arp(&a, Duration::from_millis(2500));
    flap_and_flush(&a);
    let frames = capture.join().unwrap();
    for (ip, mac) in &announcers {
        let seen = announcements(&frames, mac, ip);
        assert!(
            seen.is_empty(),
            "{ip} announced without the agent: {seen:?}"
        );
    }
    assert_eq!(
        a.node.leaf_neighbour_mac(HOST_IP),
        None,
        "nothing announces by itself"
    );
    assert_eq!(a.node.leaf_neighbour_mac(pods[0].0), None);

    a.start(&[]);
    a.wait_for("the agent up", Duration::from_secs(30), || {
        a.get("/metrics").map(drop)
    });
    a.wait_for("routes reconciled", Duration::from_secs(30), || {
        (a.rules_for(100).len() == 1).then_some(())
    });
    // The burst is 3 rounds 1.1 s apart (config): the window holds all of it.
    let capture = capture_arp(&a, Duration::from_millis(4500));
    let up = flap_and_flush(&a);
    let host = a
        .node
        .wait_leaf_neighbour_mac(HOST_IP, &host_mac, Duration::from_secs(5));
    let host = host
        .map(|_| up.elapsed())
        .unwrap_or_else(|| panic!("the leaf never learned the host\n{}", a.log_tail()));
    for (ip, mac) in &pods {
        assert!(
            a.node
                .wait_leaf_neighbour_mac(ip, mac, Duration::from_secs(5))
                .is_some(),
            "the leaf never learned pod {ip} at {mac}\n{}",
            a.log_tail()
        );
    }
    let all_right = up.elapsed();
    let frames = capture.join().unwrap();
    let mut first = Duration::MAX;
    for (ip, mac) in &announcers {
        let seen = announcements(&frames, mac, ip);
        // Each round is a request and a reply; every frame comes after carrier up.
        assert!(
            seen.len() >= 6 && seen.iter().all(|t| *t >= up),
            "{ip} from {mac}: {} frames on the wire after carrier up, want the 3-round burst\n{}",
            seen.len(),
            a.log_tail()
        );
        first = first.min(seen[0] - up);
    }
    println!(
        "carrier up -> first announcement on the wire {} us; leaf entry right: host {} us, \
         host and both pods {} us",
        first.as_micros(),
        host.as_micros(),
        all_right.as_micros()
    );
    let (_, metrics) = a.get("/metrics").unwrap();
    let frames = |target: &str| -> u64 {
        let prefix = format!("spinel_garp_frames_sent_total{{nic=\"pf0\",target=\"{target}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    assert!(frames("host") >= 2 && frames("pod") >= 4, "{metrics}");
}

fn condition(
    rt: &tokio::runtime::Runtime,
    nodes: &Api<Node>,
    name: &str,
) -> Option<(String, String, bool)> {
    let node = rt.block_on(nodes.get(name)).ok()?;
    let cond = node
        .status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "RoCEFabricReady")?;
    let tainted = node
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .iter()
        .any(|t| t.key == "fabric.spinel.dev/degraded" && t.effect == "NoSchedule");
    Some((cond.status, cond.reason.unwrap_or_default(), tainted))
}

/// The leaf's LLDP sender on swp1 (advertising PFC on priority 3, as the host has it), with
/// `extra` arguments.
fn lldp_command(a: &AgentNode, extra: &[&str]) -> std::process::Command {
    let mut cmd = a
        .node
        .sb
        .command_in("leaf", spinelctl_binary().to_str().unwrap());
    cmd.args([
        "lldp",
        "send",
        "--iface",
        "swp1",
        "--system-name",
        "leaf01",
        "--capabilities",
        "bridge,router",
        "--pfc",
        "3",
        "--tx-interval",
        "1",
    ])
    .args(extra)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    cmd
}

#[test]
fn roce_health_sets_the_condition_and_taint_and_releases_them_after_the_hysteresis() {
    require_root();
    let rt = runtime();
    let cp = cluster(&rt);
    let mut a = AgentNode::new(&rt, cp, "duty-health", 0, config());
    let nodes = Api::<Node>::all(rt.block_on(cp.admin_client()));
    let fabrics = Api::<NodeFabric>::all(rt.block_on(cp.admin_client()));
    let cmd = lldp_command(&a, &[]);
    let leaf = a.node.sb.spawn(cmd);
    // The sender started when the neighbour is restored; killed and reaped at the end.
    let second: RefCell<Option<Child>> = RefCell::new(None);
    a.start(&["--taint-degraded"]);
    let wait_state = |what: &str, want: (&str, &str, bool)| -> Duration {
        let (_, took) = a.wait_for(what, Duration::from_secs(30), || {
            condition(&rt, &nodes, &a.name).filter(|(s, r, t)| (s.as_str(), r.as_str(), *t) == want)
        });
        took
    };
    wait_state("healthy", ("True", "RoCEFabricHealthy", false));

    let cycle = |a: &AgentNode, reason: &str, break_it: &dyn Fn(), fix: &dyn Fn()| {
        break_it();
        a.wait_for(reason, Duration::from_secs(30), || {
            condition(&rt, &nodes, &a.name).filter(|(s, r, t)| s == "False" && r == reason && *t)
        });
        // The report follows after the publisher's quiet time.
        a.wait_for(
            "the report carries the finding",
            Duration::from_secs(10),
            || {
                let report = rt.block_on(fabrics.get(&a.name)).ok()?;
                report
                    .spec
                    .health
                    .iter()
                    .any(|f| reason.starts_with(&f.reason) && f.nic.as_deref() == Some("pf0"))
                    .then_some(())
            },
        );
        let cleared = Instant::now();
        fix();
        a.wait_for("released", Duration::from_secs(30), || {
            condition(&rt, &nodes, &a.name).filter(|(s, _, t)| s == "True" && !*t)
        });
        let held = cleared.elapsed();
        println!("{reason}: released {} ms after the fix", held.as_millis());
        assert!(
            held >= Duration::from_secs(3),
            "released before the 3 s hysteresis: {held:?}"
        );
    };
    cycle(&a, "PfcMismatch:pf0", &|| a.set_host_pfc(&[3, 4]), &|| {
        a.set_host_pfc(&[3])
    });
    cycle(
        &a,
        "LinkDown:pf0",
        &|| {
            drop(
                a.node
                    .sb
                    .run_in("leaf", "ip", &["link", "set", "swp1", "down"]),
            )
        },
        &|| {
            drop(
                a.node
                    .sb
                    .run_in("leaf", "ip", &["link", "set", "swp1", "up"]),
            )
        },
    );
    cycle(&a, "NoRoceV2Gid:pf0", &|| a.set_gid(false), &|| {
        a.set_gid(true)
    });
    // The controller reports pf0 cabled to the wrong leaf group (it writes the NodeFabric's
    // status; the agent watches it), then withdraws the finding.
    let cabling = |findings: Value| {
        let patch = Patch::Merge(json!({"status": {"findings": findings}}));
        rt.block_on(fabrics.patch_status(&a.name, &PatchParams::default(), &patch))
            .unwrap();
    };
    cycle(
        &a,
        "WrongLeafGroup:pf0",
        &|| {
            cabling(
                json!([{"severity": "error", "kind": "swapped_rail", "nic": "pf0",
                            "message": "pf0 is cabled to leaf02 of rail 1, expected rail 0"}]),
            )
        },
        &|| cabling(json!([])),
    );
    cycle(
        &a,
        "NoNeighbor:pf0",
        // SIGTERM: the leaf sends its shutdown LLDPDU; the neighbour is gone at once.
        &|| {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(leaf as i32), Signal::SIGTERM)
                .unwrap();
        },
        &|| {
            let child = lldp_command(&a, &[]).spawn().unwrap();
            a.node.sb.record_pid(child.id());
            *second.borrow_mut() = Some(child);
        },
    );
    if let Some(mut child) = second.take() {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn metrics_and_probes_are_served_and_follow_the_counters() {
    require_root();
    let rt = runtime();
    let cp = cluster(&rt);
    let mut a = AgentNode::new(&rt, cp, "duty-metrics", 0, config());
    a.start(&[]);
    let (status, _) = a.wait_for("ready", Duration::from_secs(30), || {
        a.get("/readyz").filter(|(code, _)| *code == 200)
    });
    assert_eq!(status.0, 200);
    assert_eq!(a.get("/healthz").unwrap().0, 200);
    let scrape = || a.get("/metrics").unwrap().1;
    let text = scrape();
    for want in [
        "spinel_nic_carrier{nic=\"pf0\"} 1",
        "spinel_nic_mtu_bytes{nic=\"pf0\"} 9000",
        "spinel_nic_speed_bytes{nic=\"pf0\"} 25000000000",
        "rdma_np_cnp_sent_total{device=\"mlx5_0\",port=\"1\"} 0",
        "rdma_port_state{device=\"mlx5_0\",port=\"1\"} 4",
        "spinel_routing_reconcile_duration_seconds_count",
        "spinel_roce_fabric_ready",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    let counter = a
        .node
        .sb
        .dir()
        .join("sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent");
    std::fs::write(counter, "42\n").unwrap();
    assert!(scrape().contains("rdma_np_cnp_sent_total{device=\"mlx5_0\",port=\"1\"} 42"));
    a.node
        .sb
        .run_in("node", "ip", &["link", "set", "pf0", "mtu", "4200"]);
    a.wait_for("the MTU gauge follows", Duration::from_secs(10), || {
        scrape()
            .contains("spinel_nic_mtu_bytes{nic=\"pf0\"} 4200")
            .then_some(())
    });
    // Below the configured 9000: the node is not ready, but without --taint-degraded it is
    // not tainted.
    let nodes = Api::<Node>::all(rt.block_on(cp.admin_client()));
    a.wait_for("MtuBelowExpected", Duration::from_secs(30), || {
        condition(&rt, &nodes, &a.name)
            .filter(|(s, r, _)| s == "False" && r == "MtuBelowExpected:pf0")
    });
    let (_, _, tainted) = condition(&rt, &nodes, &a.name).unwrap();
    assert!(!tainted, "tainted although --taint-degraded is off");
    a.wait_for(
        "the finding in the metrics",
        Duration::from_secs(10),
        || {
            scrape()
                .contains("spinel_health_finding{nic=\"pf0\",reason=\"MtuBelowExpected\"} 1")
                .then_some(())
        },
    );
}

/// The reader behind the pause-counter metrics gives what `ethtool -S` prints, from a socket
/// opened in the node's namespace and read from this thread outside it (veth's statistics:
/// veth has no pause counters, so the metric itself is absent here).
#[test]
fn driver_statistics_read_as_ethtool_prints_them() {
    require_root();
    spinel_netns_tests::require_tool("ethtool", "ethtool");
    let sb = spinel_netns_tests::Sandbox::new("duty-ethtool");
    sb.netns("n");
    sb.run_in(
        "n",
        "ip",
        &["link", "add", "a0", "type", "veth", "peer", "name", "b0"],
    );
    sb.run_in("n", "ip", &["link", "set", "a0", "up"]);
    sb.run_in("n", "ip", &["link", "set", "b0", "up"]);
    let ns = hostnet::netns::NetNs::open(sb.netns_path("n")).unwrap();
    let socket = hostnet::ethtool::EthtoolSocket::open_in(&ns).unwrap();
    let ours = socket.stats("a0").unwrap();
    let printed = sb.run_in("n", "ethtool", &["-S", "a0"]);
    let theirs: Vec<(String, u64)> = printed
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (name, value) = l.trim().rsplit_once(": ")?;
            Some((name.to_owned(), value.parse().ok()?))
        })
        .collect();
    assert!(
        ours.iter().any(|(n, _)| n == "peer_ifindex"),
        "veth's statistics: {ours:?}"
    );
    assert_eq!(ours, theirs, "{printed}");
    // The socket answers for its namespace: a0 does not exist in this thread's own.
    assert!(
        hostnet::ethtool::EthtoolSocket::open_here()
            .unwrap()
            .stats("a0")
            .is_err()
    );
}
