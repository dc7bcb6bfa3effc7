//! The per-attachment record the CNI publishes for the fabric agent: every attachment gets
//! one (RoCE details or not) naming the pod's namespace by path and identity, the interface,
//! its MAC and addresses and the PF whose cable it uses; DEL removes it.

#![allow(clippy::unwrap_used)] // test helpers fail loudly

use hostnet::netns::NetNs;
use serde_json::json;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::CniCall;
use spinel_node::attachment_record::read_records;

#[test]
fn add_publishes_where_the_pod_is_and_del_removes_it() {
    let node = SimNode::new("cni_records", 1);
    let netns = node.pod("p");
    let call = CniCall::new("ADD", "rec", Some(&netns), "net1");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["ipam"] = json!({"type": "static", "addresses": [{"address": "10.56.0.70/24"}]});
    node.spinel(&call, &conf).expect_ok("ADD");

    let (found, refused) = read_records(&node.records_dir);
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(found.len(), 1, "{found:?}");
    let rec = &found[0];
    assert_eq!(
        (rec.container_id.as_str(), rec.ifname.as_str()),
        ("rec", "net1")
    );
    assert!(
        rec.record.roce.is_none(),
        "the simulated VF has no RDMA device"
    );
    let a = rec.record.attachment.as_ref().expect("where the pod is");
    a.validate().unwrap();
    assert_eq!(a.netns, netns);
    let pod = NetNs::open(&netns).unwrap();
    assert!(pod.is(&a.netns_id), "the recorded identity is the pod's");
    assert_eq!(a.ifname, "net1");
    assert_eq!(a.mac.to_string(), node.vfs[0].mac);
    assert_eq!(a.addresses, vec!["10.56.0.70/24".parse().unwrap()]);
    assert_eq!(a.pf, "pf0");
    assert_eq!(a.vf_pci.as_deref(), Some(node.vfs[0].pci.as_str()));

    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL");
    let (found, _) = read_records(&node.records_dir);
    assert!(found.is_empty(), "DEL leaves {found:?}");
    node.assert_all_home();
}
