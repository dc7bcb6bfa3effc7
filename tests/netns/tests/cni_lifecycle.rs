//! The spinel binary driven as Multus drives it: ADD, CHECK, DEL over real namespaces, with
//! Debian's host-local as IPAM.

use sha2::Digest;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{CniCall, first_ip, with_prev_result};

#[test]
fn two_pods_ping_each_other_and_every_vf_comes_home() {
    let node = SimNode::new("two_pods_ping", 4);
    let before = node.links("node");
    let mut pods = Vec::new();
    for (i, name) in ["pod-a", "pod-b"].into_iter().enumerate() {
        let netns = node.pod(name);
        let vf = &node.vfs[i];
        let call = CniCall::new("ADD", &format!("cid{i}"), Some(&netns), "net1");
        let mut conf = node.conf("1.1.0", Some(vf));
        // Pod a asks for its own MTU and MAC: both must be undone on DEL.
        let mac = format!("0a:58:0a:38:00:{:02x}", 0x10 + i);
        if i == 0 {
            conf["mtu"] = serde_json::json!(4200);
            conf["runtimeConfig"]["mac"] = serde_json::json!(mac);
        }
        let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
        assert_eq!(result["cniVersion"], "1.1.0");
        let iface = &result["interfaces"][0];
        assert_eq!(iface["name"], "net1");
        assert_eq!(iface["pciID"], vf.pci.as_str());
        let link = node.sb.run_in(name, "ip", &["link", "show", "dev", "net1"]);
        if i == 0 {
            assert_eq!(iface["mtu"], 4200);
            assert_eq!(iface["mac"], mac.as_str());
            assert!(link.contains("mtu 4200") && link.contains(&mac), "{link}");
        } else {
            assert_eq!(iface["mac"], vf.mac.as_str());
        }
        assert_eq!(iface["sandbox"], netns.to_str().unwrap());
        assert_eq!(result["ips"][0]["interface"], 0);
        let ip = first_ip(&result);
        // What the kernel shows in the pod matches the result.
        let shown = node
            .sb
            .run_in(name, "ip", &["-br", "addr", "show", "dev", "net1"]);
        assert!(shown.contains(&ip) && shown.contains("UP"), "{shown}");
        let routes = node.sb.run_in(name, "ip", &["route"]);
        assert!(
            routes.contains("10.0.0.0/8 via 10.56.0.1 dev net1"),
            "{routes}"
        );
        assert!(
            !node.links("node").links.iter().any(|l| l.0 == vf.name),
            "VF must leave the host"
        );
        pods.push((name, call, with_prev_result(&conf, &result), ip));
    }

    // The journal holds exactly one record and one VF claim per attachment, where
    // cni/src/journal puts them (so the emptiness checks below look in the right place): a
    // record is named by 32 hex digits of SHA-256 over container ID, NUL, interface name.
    let state = node.state_dir.display();
    let record_name = |cid: &str, ifname: &str| {
        let digest = sha2::Sha256::digest([cid.as_bytes(), b"\0", ifname.as_bytes()].concat());
        digest[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let mut expected: Vec<String> = (0..2)
        .flat_map(|i| {
            [
                format!(
                    "{state}/attachments/{}.json",
                    record_name(&format!("cid{i}"), "net1")
                ),
                format!("{state}/vfs/{}.json", node.vfs[i].pci),
            ]
        })
        .collect();
    expected.sort();
    assert_eq!(node.journal_entries(), expected, "journal after both ADDs");

    let (a, _, _, ip_a) = &pods[0];
    let (b, _, _, ip_b) = &pods[1];
    assert_ne!(ip_a, ip_b);
    // Likewise host-local's store holds both addresses where leased_ips() looks.
    let mut leased = vec![ip_a.clone(), ip_b.clone()];
    leased.sort();
    assert_eq!(node.leased_ips(), leased, "IPAM after both ADDs");
    node.sb.run_in(a, "ping", &["-c", "2", "-W", "2", ip_b]);
    node.sb.run_in(b, "ping", &["-c", "2", "-W", "2", ip_a]);
    // And through the PF to the leaf switch.
    node.sb
        .run_in(a, "ping", &["-c", "1", "-W", "2", "10.56.0.1"]);

    for (_, call, conf, _) in &pods {
        node.spinel(&call.with_command("CHECK"), conf)
            .expect_ok("CHECK");
    }
    for (_, call, conf, _) in &pods {
        node.spinel(&call.with_command("DEL"), conf)
            .expect_ok("DEL");
    }
    node.assert_all_home();
    assert_eq!(
        node.links("node"),
        before,
        "the host must look exactly as before"
    );
}

#[test]
fn cni_versions_0_4_0_and_1_1_0_with_a_1_0_0_ipam_plugin() {
    let node = SimNode::new("versions", 2);
    for (i, version) in ["0.4.0", "1.1.0"].into_iter().enumerate() {
        let netns = node.pod(&format!("p{i}"));
        let call = CniCall::new("ADD", &format!("v{i}"), Some(&netns), "net1");
        let conf = node.conf(version, Some(&node.vfs[i]));
        let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
        assert_eq!(result["cniVersion"], version);
        match version {
            "0.4.0" => {
                assert_eq!(result["ips"][0]["version"], "4");
                assert!(result["interfaces"][0].get("mtu").is_none());
            }
            _ => {
                assert_eq!(result["interfaces"][0]["mtu"], 9000);
                assert_eq!(result["interfaces"][0]["pciID"], node.vfs[i].pci.as_str());
            }
        }
        node.spinel(
            &call.with_command("CHECK"),
            &with_prev_result(&conf, &result),
        )
        .expect_ok("CHECK");
        node.spinel(&call.with_command("DEL"), &conf)
            .expect_ok("DEL");
    }
    node.assert_all_home();
}

#[test]
fn version_command_lists_supported_versions() {
    let node = SimNode::new("version_cmd", 1);
    let out = node.spinel(
        &CniCall::bare("VERSION"),
        &serde_json::json!({"cniVersion": "1.0.0"}),
    );
    let json = out.expect_ok("VERSION");
    assert_eq!(
        json["supportedVersions"],
        serde_json::json!(["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"])
    );
}
