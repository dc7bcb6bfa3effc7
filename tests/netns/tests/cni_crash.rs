//! kill -9 at every step of ADD and of DEL, then recovery by DEL, by a new ADD, or by GC:
//! nothing may leak (VF home under its name, MAC and MTU; no journal entry; no address held).
//!
//! The steps are the binary's own system calls: strace's fault injection delivers SIGKILL on
//! entry to the N-th call of one kind (each netlink request, journal rename, lock (flock), unlink,
//! the start of the thread that starts the IPAM plugin and, in ADD only, the announcement
//! helper's spawn), so the plugin under test is the unmodified release binary.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use spinel_netns_tests::cni::{self, CniCall, CniOutput};
use spinel_netns_tests::{SimNode, require_tool};

/// Kinds of system call each step of the plugin goes through. The IPAM plugin is started
/// from a thread of its own (so waiting for its exec does not delay the device's move): that
/// thread's creation is a `clone3` in the traced thread; the fork inside it is not traced
/// (strace without `-f` injects into spinel's main thread alone). The announcement helper goes
/// through posix_spawn, a `clone3` as well.
const STEPS: [&str; 5] = ["sendto", "rename", "flock", "unlink", "clone3"];

/// The kinds DEL goes through: the same (the `clone3` is the IPAM thread's).
const DEL_STEPS: [&str; 5] = STEPS;

/// Asserts that every kind in `expected` was killed at least once, so a step that stops
/// happening (or a kind that stops matching) cannot hide behind the total.
#[track_caller]
fn assert_every_kind_hit(what: &str, kills: &BTreeMap<&str, usize>, expected: &[&str]) {
    for kind in expected {
        assert!(
            kills.get(kind).copied().unwrap_or(0) > 0,
            "{what}: no kill point at {kind}; kills per kind: {kills:?}"
        );
    }
}

fn killed_at(node: &SimNode, call: &CniCall, conf: &Value, syscall: &str, n: usize) -> CniOutput {
    let mut cmd = node.command(Path::new("/usr/bin/strace"));
    cmd.args([
        "-qq",
        "-o",
        "/dev/null",
        "-e",
        &format!("inject={syscall}:signal=KILL:when={n}"),
    ])
    .arg(node.cni_path.join("spinel"));
    call.apply(&mut cmd, &node.cni_path);
    cni::run(cmd, conf)
}

fn was_killed(out: &CniOutput) -> bool {
    // strace dies of the same signal as its tracee.
    out.signal == Some(9)
}

/// Recovery the way the world brings it: the runtime's DEL after the failed ADD; or the pod
/// dies and the device plugin hands the VF to a new pod, whose ADD must heal it; or GC.
fn recover(node: &SimNode, call: &CniCall, conf: &Value, how: usize) {
    match how % 3 {
        0 => {
            node.spinel(&call.with_command("DEL"), conf)
                .expect_ok("recovery DEL");
        }
        1 => {
            node.kill_pod_like_kernel("p");
            let fresh = node.pod("fresh");
            let next = CniCall::new("ADD", &format!("next{how}"), Some(&fresh), "net1");
            node.spinel(&next, conf)
                .expect_ok("the next pod's ADD of the same VF");
            node.spinel(&next.with_command("DEL"), conf)
                .expect_ok("the next pod's DEL");
            node.sb.delete_netns("fresh");
            node.pod("p");
        }
        _ => {
            let mut gc = conf.clone();
            gc["cni.dev/valid-attachments"] = json!([]);
            node.spinel(&CniCall::bare("GC"), &gc)
                .expect_ok("recovery GC");
        }
    }
}

#[test]
fn kill_at_every_step_of_add_then_recover() {
    require_tool("strace", "strace");
    let node = SimNode::new("crash_add", 1);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "crash", Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["mtu"] = json!(4000);
    conf["runtimeConfig"]["mac"] = json!("0a:58:0a:38:02:01");
    // Warm the IPAM version cache so its first-call spawn is not counted as an ADD step.
    node.spinel(&call, &conf).expect_ok("warm-up ADD");
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("warm-up DEL");

    let mut kills = 0;
    let mut per_kind = BTreeMap::new();
    for syscall in STEPS {
        for n in 1.. {
            let out = killed_at(&node, &call, &conf, syscall, n);
            if !was_killed(&out) {
                // Fewer than n such calls: the ADD ran to completion.
                out.expect_ok(&format!("ADD with no {syscall} #{n}"));
                node.spinel(&call.with_command("DEL"), &conf)
                    .expect_ok("DEL");
                node.assert_all_home();
                break;
            }
            kills += 1;
            *per_kind.entry(syscall).or_insert(0) += 1;
            recover(&node, &call, &conf, kills);
            node.assert_all_home();
        }
    }
    assert!(
        kills >= 20,
        "expected at least 20 kill points in ADD, found {kills}"
    );
    assert_every_kind_hit("ADD", &per_kind, &STEPS);
}

#[test]
fn kill_at_every_step_of_del_then_recover() {
    require_tool("strace", "strace");
    let node = SimNode::new("crash_del", 1);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "crash", Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["mtu"] = json!(4000);
    let del = call.with_command("DEL");
    let mut kills = 0;
    let mut per_kind = BTreeMap::new();
    for syscall in STEPS {
        for n in 1.. {
            node.spinel(&call, &conf).expect_ok("ADD");
            let out = killed_at(&node, &del, &conf, syscall, n);
            if !was_killed(&out) {
                out.expect_ok(&format!("DEL with no {syscall} #{n}"));
                node.assert_all_home();
                break;
            }
            kills += 1;
            *per_kind.entry(syscall).or_insert(0) += 1;
            // Recovery by a retried DEL, or by GC (a new ADD would be refused: the pod lives).
            if kills % 2 == 0 {
                node.spinel(&del, &conf).expect_ok("retried DEL");
            } else {
                recover(&node, &call, &conf, 2);
            }
            node.assert_all_home();
        }
    }
    assert!(
        kills >= 8,
        "expected at least 8 kill points in DEL, found {kills}"
    );
    assert_every_kind_hit("DEL", &per_kind, &DEL_STEPS);
}
