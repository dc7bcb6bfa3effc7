//! The journal's edges, through the real binary: names that do not depend on input length,
//! writers judged by their lock, a DEL that runs with other settings than its ADD, recovery
//! after a power loss empties the tmpfs state directory, and which MAC wins.

use std::fs;

use serde_json::json;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::CniCall;

/// The CNI spec allows long container IDs; spinel documents 256 characters as its maximum.
#[test]
fn a_container_id_of_the_maximum_length_attaches_and_detaches() {
    let node = SimNode::new("state_long_id", 1);
    let pod = node.pod("p");
    let id = format!("c{}", "0123456789abcdef".repeat(16)).split_off(1);
    assert_eq!(id.len(), 256);
    let call = CniCall::new("ADD", &id, Some(&pod), "net1");
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    node.spinel(&call, &conf)
        .expect_ok("ADD with a 256-character ID");
    node.spinel(&call.with_command("CHECK"), &conf)
        .expect_ok("CHECK");
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.assert_all_home();
}

/// A temporary left by a writer whose pid still exists (here pid 1, as a zombie's would) is
/// abandoned as soon as its lock can be taken.
#[test]
fn a_dead_writers_temporary_is_swept_whatever_its_pid() {
    let node = SimNode::new("state_temp", 1);
    let pod = node.pod("p");
    let call = CniCall::new("ADD", "c", Some(&pod), "net1");
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    node.spinel(&call, &conf).expect_ok("ADD");
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
    let stale = node
        .state_dir
        .join("attachments/0123456789abcdef0123456789abcdef.json.tmp.1");
    fs::write(&stale, b"{\"schema\":2").unwrap();
    let mut gc = conf.clone();
    gc["cni.dev/valid-attachments"] = json!([]);
    node.spinel(&CniCall::bare("GC"), &gc).expect_ok("GC");
    assert!(
        !stale.exists(),
        "pid 1 exists, but nobody holds the file's lock"
    );
    node.assert_all_home();
}

/// Runtimes filter the environment: a DEL may reach spinel without the settings its ADD had.
/// It must not report success while the VF stays in the pod.
#[test]
fn a_del_with_other_settings_than_its_add_says_so_instead_of_succeeding() {
    let node = SimNode::new("state_settings", 1);
    let pod = node.pod("p");
    let call = CniCall::new("ADD", "c", Some(&pod), "net1");
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    node.spinel(&call, &conf).expect_ok("ADD");
    let other = node.sb.dir().join("other-settings.json");
    let other_state = node.sb.dir().join("other-state");
    fs::write(&other, json!({"stateDir": other_state}).to_string()).unwrap();
    let mut cmd = node.plugin_command("spinel", &call.with_command("DEL"));
    cmd.env("SPINEL_CNI_SETTINGS", &other);
    let out = spinel_netns_tests::cni::run(cmd, &conf);
    let msg = out.expect_code(103, "DEL with other settings").to_owned();
    assert!(msg.contains("ADD ran with other node settings"), "{msg}");
    assert!(
        node.links("p").links.iter().any(|l| l.0 == "net1"),
        "the VF is still in the pod: nothing pretended otherwise"
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL with the settings ADD used");
    node.assert_all_home();
}

/// A power loss empties /run: the state directory and every namespace are gone, and the
/// kernel has every VF back. The runtime's DEL for the pod it knew still releases the address,
/// and the VF is usable.
#[test]
fn after_a_power_loss_the_runtimes_del_releases_the_address() {
    let node = SimNode::new("state_power", 1);
    let pod = node.pod("p");
    let call = CniCall::new("ADD", "c", Some(&pod), "net1");
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    node.spinel(&call, &conf).expect_ok("ADD");
    assert_eq!(node.leased_ips().len(), 1);
    // The reboot: tmpfs content gone, pod namespaces gone (the kernel returns the VF), the
    // driver resets the VF's attributes; host-local's store on disk survives.
    node.kill_pod_like_kernel("p");
    fs::remove_dir_all(&node.state_dir).unwrap();
    fs::remove_dir_all(&node.vf_requests).unwrap();
    // The driver recreates the VF under its own name, without Spinel's marker.
    let links: serde_json::Value =
        serde_json::from_str(&node.sb.run_in("node", "ip", &["-j", "link", "show"])).unwrap();
    let returned = links
        .as_array()
        .unwrap()
        .iter()
        .find(|l| {
            l["ifalias"]
                .as_str()
                .is_some_and(|a| a.starts_with("spinel:vf:"))
        })
        .expect("the kernel returned the VF")["ifname"]
        .as_str()
        .unwrap()
        .to_owned();
    let vf = &node.vfs[0].name;
    node.sb.run_in(
        "node",
        "ip",
        &["link", "set", "dev", &returned, "name", vf, "alias", ""],
    );
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("the runtime's DEL after the reboot");
    assert!(node.leased_ips().is_empty(), "the address is released");
    let pod = node.pod("p2");
    let next = CniCall::new("ADD", "n", Some(&pod), "net1");
    node.spinel(&next, &conf).expect_ok("the VF is usable");
    node.spinel(&next.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.assert_all_home();
}

/// What the runtime asks for per attachment (Multus: the pod annotation's `mac`, passed as
/// `runtimeConfig.mac`) wins over the network's default `mac`, as with sriov-cni.
#[test]
fn the_runtimes_mac_wins_over_the_networks() {
    let node = SimNode::new("state_mac", 1);
    let pod = node.pod("p");
    let call = CniCall::new("ADD", "c", Some(&pod), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["mac"] = json!("02:00:00:00:aa:01");
    conf["runtimeConfig"]["mac"] = json!("02:00:00:00:bb:02");
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
    assert_eq!(result["interfaces"][0]["mac"], "02:00:00:00:bb:02");
    let shown = node
        .sb
        .run_in("p", "ip", &["-br", "link", "show", "dev", "net1"]);
    assert!(shown.contains("02:00:00:00:bb:02"), "{shown}");
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.assert_all_home();
}
