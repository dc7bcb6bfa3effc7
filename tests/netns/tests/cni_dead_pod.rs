//! DEL that never wedges on a pod that is gone, and never releases one that lives.
//!
//! A VF unbound from its driver (or rebound to vfio-pci) has no netdev anywhere, so "the VF is
//! not in the host" no longer says the pod lives. spinel records the host's id for the pod
//! namespace at ADD (`RTM_GETNSID`) and asks the kernel at DEL: an id the kernel no longer
//! knows is a dead namespace. A namespace alive where no path reaches it (here: held only by a
//! socket) keeps everything, as before. A deferred IPAM release is retried without the old
//! pod's namespace unless that path still leads to the very same namespace.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use hostnet::netns::NetNs;
use serde_json::json;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::CniCall;

/// The runtime's view after a device plugin or an operator took the VF from its kernel driver
/// while the pod ran: the netdev is destroyed (the macvlan stand-in deleted in the pod), and
/// sysfs shows the VF without a netdev, unbound or bound to `driver`.
fn unbind(node: &SimNode, pod: &str, vf: usize, driver: Option<&str>) {
    node.sb.run_in(pod, "ip", &["link", "del", "net1"]);
    node.sysfs.set_vf_netdev(&node.vfs[vf].pci, None);
    node.sysfs.set_vf_driver(&node.vfs[vf].pci, driver);
}

/// Waits until no `spinel announce` helper still has the socket ADD handed it on its stdin.
fn wait_for_announce_helpers() {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let busy = fs::read_dir("/proc").unwrap().flatten().any(|p| {
            let cmdline = fs::read(p.path().join("cmdline")).unwrap_or_default();
            cmdline.split(|b| *b == 0).nth(1) == Some(b"announce".as_slice())
                && fs::read_link(p.path().join("fd/0"))
                    .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
        });
        if !busy {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "announce helpers keep ADD's socket"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn dead_pod_with_vf_off_its_driver(test: &str, driver: Option<&str>) {
    let node = SimNode::new(test, 1);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "gone", Some(&netns), "net1");
    // Announcements on (the default): the helper must not keep the dead pod's namespace alive.
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    node.spinel(&call, &conf).expect_ok("ADD");
    unbind(&node, "p", 0, driver);
    node.sb.delete_netns("p");
    wait_for_announce_helpers();

    let out = node.spinel(&call.with_command("DEL"), &conf);
    out.expect_ok("DEL of a dead pod whose VF has no netdev");
    assert!(
        out.stderr.contains("its pod's namespace is dead"),
        "the release is logged as a warning: {}",
        out.stderr
    );
    assert!(node.journal_entries().is_empty(), "no record or claim left");
    assert!(node.leased_ips().is_empty(), "the address is released");
    // The runtime's DEL without CNI_NETNS (the namespace is gone) is a no-op success too.
    let again = CniCall {
        netns: None,
        ..call.with_command("DEL")
    };
    node.spinel(&again, &conf).expect_ok("repeated DEL");
}

#[test]
fn del_releases_an_unbound_vf_whose_pod_namespace_is_dead() {
    dead_pod_with_vf_off_its_driver("dead_unbound", None);
}

#[test]
fn del_releases_a_vf_rebound_to_vfio_whose_pod_namespace_is_dead() {
    dead_pod_with_vf_off_its_driver("dead_vfio", Some("vfio-pci"));
}

/// The same VF off its driver, but the pod's namespace lives on where no path reaches it
/// (held by an open socket only): nothing is released, DEL asks to be retried; once the
/// namespace dies, DEL releases everything.
#[test]
fn a_pod_namespace_held_where_no_path_reaches_keeps_its_vf_and_address() {
    let node = SimNode::new("alive_unseen", 1);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "unseen", Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["garp"] = json!({"count": 0});
    node.spinel(&call, &conf).expect_ok("ADD");
    let leased = node.leased_ips();
    unbind(&node, "p", 0, None);
    let holder = NetNs::open(&netns)
        .unwrap()
        .run(|| std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
        .unwrap();
    node.sb.delete_netns("p");

    let msg = node
        .spinel(&call.with_command("DEL"), &conf)
        .expect_code(11, "DEL while the namespace lives")
        .to_owned();
    assert!(msg.contains("kept for a retry"), "{msg}");
    assert_eq!(node.leased_ips(), leased, "the address stays with the pod");
    assert!(!node.journal_entries().is_empty(), "the record stays");

    drop(holder);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = node.spinel(&call.with_command("DEL"), &conf);
        if out.ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "DEL never succeeded: {}",
            out.stdout
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(node.journal_entries().is_empty());
    assert!(node.leased_ips().is_empty());
}

/// A deferred release is retried long after its pod, from other operations. Its plugin here
/// behaves like the bridge plugin used as IPAM: on DEL it deletes `CNI_IFNAME` in `CNI_NETNS`.
/// By the time of the retry a new pod lives at the old path with an interface of the same name;
/// the retry must not hand the plugin that namespace.
#[test]
fn a_deferred_release_never_reaches_into_a_newer_pod_at_the_same_path() {
    let node = SimNode::new("retry_no_netns", 2);
    let refuse = node.sb.dir().join("refuse-release");
    let script = node.cni_path.join("bridge-like-ipam");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$CNI_COMMAND\" = DEL ]; then\n  if [ -e {} ]; then echo '{{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"store locked\"}}'; exit 1; fi\n  if [ -n \"$CNI_NETNS\" ]; then nsenter --net=\"$CNI_NETNS\" ip link del \"$CNI_IFNAME\" 2>/dev/null; fi\nfi\nexec /usr/lib/cni/host-local\n",
            refuse.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();

    let netns = node.pod("p");
    let old = CniCall::new("ADD", "old", Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["ipam"]["type"] = json!("bridge-like-ipam");
    node.spinel(&old, &conf).expect_ok("ADD of the old pod");
    fs::write(&refuse, b"").unwrap();
    node.spinel(&old.with_command("DEL"), &conf)
        .expect_ok("DEL of the old pod; its release is deferred");
    node.sb.delete_netns("p");
    fs::remove_file(&refuse).unwrap();

    // A new pod at the same path, with its own net1.
    let netns = node.pod("p");
    assert!(Path::new(&netns).exists());
    let new = CniCall::new("ADD", "new", Some(&netns), "net1");
    let plain = node.conf("1.1.0", Some(&node.vfs[1]));
    node.spinel(&new, &plain).expect_ok("ADD of the new pod");
    std::thread::sleep(Duration::from_millis(1100));
    node.spinel(&CniCall::bare("STATUS"), &plain)
        .expect_ok("STATUS retries the deferred release");
    let releases = fs::read_dir(node.state_dir.join("releases"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(releases, 0, "the deferred release succeeded");
    assert!(
        node.links("p").links.iter().any(|l| l.0 == "net1"),
        "the new pod's net1 is still there: {:?}",
        node.links("p")
    );
    node.spinel(&new.with_command("DEL"), &plain)
        .expect_ok("DEL of the new pod");
    node.assert_all_home();
}
