//! spinel among other plugins: a Multus-style conflist with Debian's tuning and sbr, Debian's
//! static IPAM, the device-info file, pfName/vfIndex, and STATUS.

use serde_json::{Value, json};
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{
    CniCall, first_ip, require_debian_plugin, run_chain, with_prev_result,
};

#[test]
fn conflist_with_tuning_and_sbr_chained_after_spinel() {
    for p in ["tuning", "sbr"] {
        require_debian_plugin(p);
    }
    let node = SimNode::new("chain", 2);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "chained", Some(&netns), "net1");
    let mut spinel = node.conf("1.0.0", None);
    spinel.as_object_mut().unwrap().remove("cniVersion");
    spinel.as_object_mut().unwrap().remove("name");
    let conflist = json!({
        "cniVersion": "1.0.0",
        "name": "rail0",
        "plugins": [
            spinel,
            {"type": "tuning", "sysctl": {"net.ipv4.conf.net1.arp_ignore": "1", "net.ipv4.conf.net1.arp_announce": "2"}},
            {"type": "sbr"},
        ],
    });
    let vf = &node.vfs[1];
    let adds = run_chain(&conflist, "ADD", None, Some(&vf.pci), |kind, conf| {
        node.plugin(kind, &call, conf)
    });
    for out in &adds {
        out.expect_ok("chained ADD");
    }
    let result: Value = adds.last().unwrap().json.clone();
    assert_eq!(
        result["interfaces"][0]["name"], "net1",
        "sbr passes spinel's interface on: {result}"
    );
    let ip = first_ip(&result);
    assert_eq!(
        node.sb
            .run_in("p", "sysctl", &["-n", "net.ipv4.conf.net1.arp_ignore"])
            .trim(),
        "1"
    );
    let rules = node.sb.run_in("p", "ip", &["rule"]);
    assert!(
        rules.contains(&format!("from {ip} lookup 100")),
        "sbr's source rule: {rules}"
    );
    let table = node
        .sb
        .run_in("p", "ip", &["route", "show", "table", "100"]);
    assert!(
        table.contains("dev net1"),
        "sbr moved the routes into table 100: {table}"
    );

    for out in run_chain(
        &conflist,
        "CHECK",
        Some(&result),
        Some(&vf.pci),
        |kind, conf| node.plugin(kind, &call.with_command("CHECK"), conf),
    ) {
        out.expect_ok("chained CHECK");
    }
    for out in run_chain(
        &conflist,
        "DEL",
        Some(&result),
        Some(&vf.pci),
        |kind, conf| node.plugin(kind, &call.with_command("DEL"), conf),
    ) {
        out.expect_ok("chained DEL");
    }
    node.assert_all_home();
}

#[test]
fn static_ipam_device_info_file_and_pf_vf_selection() {
    require_debian_plugin("static");
    let node = SimNode::new("static_devinfo", 2);
    let netns = node.pod("p");

    // deviceID from the device-info file Multus writes; static IPAM.
    let call = CniCall::new("ADD", "withinfo", Some(&netns), "net1");
    let file = node.device_info_file("rail0-withinfo_net1", &node.vfs[1]);
    let conf = json!({
        "cniVersion": "1.0.0", "name": "rail0", "type": "spinel",
        "capabilities": {"CNIDeviceInfoFile": true},
        "runtimeConfig": {"CNIDeviceInfoFile": file},
        "ipam": {"type": "static", "addresses": [{"address": "10.56.0.77/24", "gateway": "10.56.0.1"}],
                 "routes": [{"dst": "192.168.0.0/16"}]},
    });
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
    assert_eq!(
        result["interfaces"][0]["pciID"],
        Value::Null,
        "1.0.0 has no pciID"
    );
    assert_eq!(result["ips"][0]["address"], "10.56.0.77/24");
    let shown = node
        .sb
        .run_in("p", "ip", &["-br", "addr", "show", "dev", "net1"]);
    assert!(shown.contains("10.56.0.77/24"), "{shown}");
    assert!(
        !node
            .links("node")
            .links
            .iter()
            .any(|l| l.0 == node.vfs[1].name),
        "the file's VF moved"
    );
    node.sb
        .run_in("p", "ping", &["-c", "1", "-W", "2", "10.56.0.1"]);
    node.spinel(
        &call.with_command("CHECK"),
        &with_prev_result(&conf, &result),
    )
    .expect_ok("CHECK");
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");

    // pfName + vfIndex, as in a static configuration without a device plugin.
    let call = CniCall::new("ADD", "bypf", Some(&netns), "net2");
    let mut conf = node.conf("1.1.0", None);
    conf["pfName"] = json!("pf0");
    conf["vfIndex"] = json!(0);
    let result = node
        .spinel(&call, &conf)
        .expect_ok("ADD by pfName/vfIndex")
        .clone();
    assert_eq!(result["interfaces"][0]["pciID"], node.vfs[0].pci.as_str());
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
    node.assert_all_home();
}

#[test]
fn status_reports_readiness_and_its_reasons() {
    let node = SimNode::new("status", 1);
    let status = CniCall::bare("STATUS");
    let mut conf = node.conf("1.1.0", None);
    conf["pfName"] = json!("pf0");
    conf["vfIndex"] = json!(0);
    node.spinel(&status, &conf)
        .expect_ok("STATUS on a ready node");

    let mut missing_pf = conf.clone();
    missing_pf["pfName"] = json!("ens9f9");
    let msg = node
        .spinel(&status, &missing_pf)
        .expect_code(50, "STATUS with a missing PF")
        .to_owned();
    assert!(msg.contains("PF unavailable"), "{msg}");

    let mut no_ipam = conf.clone();
    no_ipam["ipam"]["type"] = json!("whereabouts");
    let msg = node
        .spinel(&status, &no_ipam)
        .expect_code(50, "STATUS without the IPAM plugin")
        .to_owned();
    assert!(
        msg.contains("IPAM not ready") && msg.contains("whereabouts"),
        "{msg}"
    );

    std::fs::write(
        node.sysfs
            .root()
            .join("bus/pci/devices/0000:3b:00.0/sriov_numvfs"),
        "0\n",
    )
    .unwrap();
    let msg = node
        .spinel(&status, &conf)
        .expect_code(50, "STATUS with SR-IOV disabled")
        .to_owned();
    assert!(msg.contains("sriov_numvfs is 0"), "{msg}");
    std::fs::write(
        node.sysfs
            .root()
            .join("bus/pci/devices/0000:3b:00.0/sriov_numvfs"),
        "1\n",
    )
    .unwrap();

    // A read-only state directory: ADD could not record what it changes.
    std::fs::create_dir_all(&node.state_dir).unwrap();
    node.sb.run_in(
        "node",
        "mount",
        &[
            "--bind",
            "-o",
            "ro",
            node.state_dir.to_str().unwrap(),
            node.state_dir.to_str().unwrap(),
        ],
    );
    let read_only = node.spinel(&status, &conf);
    // The mount is in the host's mount namespace: undo it before any assertion can panic.
    nix::mount::umount(&node.state_dir).unwrap();
    let msg = read_only
        .expect_code(50, "STATUS with a read-only state dir")
        .to_owned();
    assert!(
        msg.contains("not writable") || msg.contains("not ready"),
        "{msg}"
    );
    node.spinel(&status, &conf)
        .expect_ok("STATUS after recovery");
}
