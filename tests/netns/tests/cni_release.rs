//! What is released when, driven through the real binary: a VF is never held by IPAM's
//! failures, an address is never handed out twice, and nothing a pod used is lost.
//!
//! - An IPAM plugin that rejects the runtime's `CNI_ARGS`, that is spinel itself, or that
//!   hangs: ADD fails with the plugin's error and the VF is home at once.
//! - An IPAM plugin whose release keeps failing: DEL still gives the VF back; the address is a
//!   pending release, retried with back-off until the plugin takes it, and counted.
//! - A pod whose `CNI_NETNS` was `/proc/<pid>/ns/net` of a process that exited while the
//!   namespace lives on: its attachment is alive, its address stays leased; DEL still finds it.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::CniCall;
use support::{Holder, Journal, write_script};

/// `K8S_POD_NAME=a=b` and `IP=not-an-ip`: values a runtime forwards and host-local refuses.
#[test]
fn an_ipam_that_rejects_the_runtimes_arguments_never_keeps_the_vf() {
    let node = SimNode::new("release_args", 1);
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    for (i, args) in ["IgnoreUnknown=1;K8S_POD_NAME=a=b", "IP=not-an-ip"]
        .into_iter()
        .enumerate()
    {
        let pod = node.pod(&format!("p{i}"));
        let mut call = CniCall::new("ADD", &format!("bad{i}"), Some(&pod), "net1");
        call.args = Some(args.to_owned());
        let msg = node.spinel(&call, &conf).expect_code(102, args).to_owned();
        assert!(msg.contains("host-local"), "{msg}");
        // The VF, its claim, its record and any address are all released; nothing is pending.
        node.assert_all_home();
        assert!(node.pending_releases().is_empty(), "{args}");
        node.spinel(&call.with_command("DEL"), &conf)
            .expect_ok("DEL after the failed ADD");
        // Another pod takes the same VF at once.
        let next = CniCall::new("ADD", &format!("next{i}"), Some(&pod), "net1");
        node.spinel(&next, &conf).expect_ok("next pod's ADD");
        node.spinel(&next.with_command("DEL"), &conf)
            .expect_ok("next pod's DEL");
        node.assert_all_home();
    }
}

/// A network whose IPAM plugin is spinel under another name, and one whose plugin hangs.
#[test]
fn a_delegate_that_recurses_or_hangs_fails_the_add_and_frees_the_vf() {
    let node = SimNode::new("release_delegates", 1);
    std::os::unix::fs::symlink(
        node.cni_path.join("spinel"),
        node.cni_path.join("loop-ipam"),
    )
    .unwrap();
    write_script(
        &node.cni_path.join("hung-ipam"),
        "#!/bin/sh\nif [ \"$CNI_COMMAND\" = VERSION ]; then exec /usr/lib/cni/host-local; fi\nexec /bin/sleep 600\n",
    );
    node.edit_settings(|s| s["ipamTimeoutMs"] = json!(1000));
    let pod = node.pod("p");
    let call = CniCall::new("ADD", "c", Some(&pod), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["ipam"]["type"] = json!("loop-ipam");
    let msg = node
        .spinel(&call, &conf)
        .expect_code(102, "spinel as its own IPAM")
        .to_owned();
    assert!(msg.contains("its own IPAM plugin"), "{msg}");
    node.assert_all_home();
    conf["ipam"]["type"] = json!("hung-ipam");
    let msg = node
        .spinel(&call, &conf)
        .expect_code(102, "a hung IPAM plugin")
        .to_owned();
    assert!(msg.contains("still running after"), "{msg}");
    node.assert_all_home();
}

/// DEL gives the VF back although the plugin refuses the release; the address is pending,
/// retried with back-off, counted, and released once the plugin takes it.
#[test]
fn a_release_that_keeps_failing_is_pending_and_retried_without_holding_the_vf() {
    let node = SimNode::new("release_pending", 1);
    let refuse = node.sb.dir().join("refuse-release");
    write_script(
        &node.cni_path.join("stubborn-ipam"),
        &format!(
            "#!/bin/sh\nif [ \"$CNI_COMMAND\" = DEL ] && [ -e {} ]; then\n  echo '{{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"store locked\"}}'; exit 1\nfi\nexec /usr/lib/cni/host-local\n",
            refuse.display()
        ),
    );
    let pod = node.pod("p");
    let call = CniCall::new("ADD", "c", Some(&pod), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["ipam"]["type"] = json!("stubborn-ipam");
    node.spinel(&call, &conf).expect_ok("ADD");
    let leased = node.leased_ips();
    assert_eq!(leased.len(), 1);

    fs::write(&refuse, b"").unwrap();
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL gives the VF back whatever IPAM says");
    node.assert_vf_home(&node.vfs[0]);
    assert!(node.journal_entries().is_empty(), "no record or claim left");
    assert_eq!(node.leased_ips(), leased, "the address is still leased");
    let pending = node.pending_releases();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["attempts"], 1);
    assert!(
        pending[0]["lastError"]
            .as_str()
            .unwrap()
            .contains("store locked")
    );

    // The VF is usable by the next pod right away.
    let next = CniCall::new("ADD", "n", Some(&pod), "net1");
    let plain = node.conf("1.1.0", Some(&node.vfs[0]));
    node.spinel(&next, &plain).expect_ok("next ADD");
    node.spinel(&next.with_command("DEL"), &plain)
        .expect_ok("next DEL");

    // A retry while the plugin still refuses backs off; once it accepts, STATUS frees it.
    std::thread::sleep(Duration::from_millis(1100));
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([]);
    node.spinel(&CniCall::bare("GC"), &gc).expect_ok("GC");
    assert_eq!(node.pending_releases()[0]["attempts"], 2);
    fs::remove_file(&refuse).unwrap();
    std::thread::sleep(Duration::from_millis(4100));
    node.spinel(&CniCall::bare("STATUS"), &conf)
        .expect_ok("STATUS");
    assert!(node.pending_releases().is_empty(), "released at last");
    assert!(node.leased_ips().is_empty(), "the address is free");
    let counters = node.counters();
    assert_eq!(counters["ipamReleasesDeferred"], 1, "{counters}");
    assert_eq!(counters["ipamReleaseRetriesFailed"], 1, "{counters}");
    assert_eq!(counters["ipamReleasesRecovered"], 1, "{counters}");
    node.assert_all_home();
}

/// `CNI_NETNS=/proc/<pid>/ns/net`, and that process exits while another keeps the namespace:
/// the pod lives on, so the next ADD's self-healing must not release its address.
#[test]
fn a_pod_whose_netns_path_died_with_its_process_keeps_its_address() {
    let node = SimNode::new("release_alive", 2);
    node.pod("p");
    let mut first = Holder(node.sb.command_in("p", "sleep").arg("600").spawn().unwrap());
    let second = Holder(node.sb.command_in("p", "sleep").arg("600").spawn().unwrap());
    node.sb.record_pid(first.0.id());
    node.sb.record_pid(second.0.id());
    let path = format!("/proc/{}/ns/net", first.0.id());
    let call = CniCall::new("ADD", "held", Some(Path::new(&path)), "net1");
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
    let ip = spinel_netns_tests::cni::first_ip(&result);
    // Only the second process and the sandbox's bind mount keep it now; drop the mount too.
    first.0.kill().unwrap();
    first.0.wait().unwrap();
    node.sb.delete_netns("p");
    assert!(!Path::new(&path).exists());

    // Another pod's ADD heals dead attachments: this one is not dead.
    let q = node.pod("q");
    let other = CniCall::new("ADD", "other", Some(&q), "net1");
    let conf1 = node.conf("1.1.0", Some(&node.vfs[1]));
    let other_ip =
        spinel_netns_tests::cni::first_ip(node.spinel(&other, &conf1).expect_ok("ADD q"));
    assert_ne!(other_ip, ip);
    let mut leased = vec![ip.clone(), other_ip.clone()];
    leased.sort();
    assert_eq!(
        node.leased_ips(),
        leased,
        "the live pod's address is still leased"
    );
    let in_pod = Command::new("nsenter")
        .args([
            "-t",
            &second.0.id().to_string(),
            "-n",
            "ip",
            "-br",
            "addr",
            "show",
            "net1",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&in_pod.stdout).contains(&ip),
        "the VF is still in the pod with its address"
    );

    // The runtime's DEL, with the path it gave ADD, finds the namespace by identity.
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL through the dead path");
    node.assert_vf_home(&node.vfs[0]);
    assert_eq!(node.leased_ips(), vec![other_ip]);
    node.spinel(&other.with_command("DEL"), &conf1)
        .expect_ok("DEL q");
    drop(second);
    node.assert_all_home();
}

#[cfg(test)]
mod support {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::process::Child;

    use serde_json::Value;
    use spinel_netns_tests::SimNode;

    /// A process kept in a pod namespace; killed when dropped.
    pub struct Holder(pub Child);

    impl Drop for Holder {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    pub fn write_script(path: &Path, text: &str) {
        fs::write(path, text).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    pub trait Journal {
        fn pending_releases(&self) -> Vec<Value>;
        fn counters(&self) -> Value;
    }

    impl Journal for SimNode {
        fn pending_releases(&self) -> Vec<Value> {
            fs::read_dir(self.state_dir.join("releases"))
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                        .map(|e| serde_json::from_slice(&fs::read(e.path()).unwrap()).unwrap())
                        .collect()
                })
                .unwrap_or_default()
        }

        fn counters(&self) -> Value {
            serde_json::from_slice(&fs::read(self.state_dir.join("counters.json")).unwrap())
                .unwrap()
        }
    }
}
