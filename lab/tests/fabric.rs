//! The fabric on the real kernel: namespaces, cables, bridges, routes; reachability across
//! the spines; the path a packet takes; every namespace gone after the sweep.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
use std::process::Command;

use spinel_lab::layout::{LabSize, Plan};
use spinel_lab::namespaces::{Fabric, sweep_namespaces};
use spinel_lab::nodes;

fn ping_from(fabric: &Fabric, ns: &str, to: &str) -> bool {
    Command::new("nsenter")
        .arg(format!("--net={}", fabric.path_of(ns).display()))
        .args(["ping", "-c", "1", "-W", "2", to])
        .output()
        .expect("run nsenter ping (util-linux, iputils-ping)")
        .status
        .success()
}

#[test]
fn default_fabric_routes_between_leaves_through_one_spine() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test creates network namespaces: run it as root"
    );
    let dir = tempfile::tempdir().unwrap();
    let netns = dir.path().join("netns");
    let plan = Plan::new(LabSize::default()).unwrap();
    let mut fabric = Fabric::create(&plan, &netns).unwrap();
    fabric.wire(&plan).unwrap();
    for node in &plan.nodes {
        nodes::build(&mut fabric, node, &dir.path().join(&node.name).join("sys")).unwrap();
    }

    // node01 (group 1) reaches node05 (group 2) on rail 1 through leaf1-r1, a spine, leaf2-r1.
    let n1 = plan.node("node01").unwrap().nics[1].clone();
    let n5 = plan.node("node05").unwrap().nics[1].clone();
    // Hosts route only their own subnet; give node01 a route to node05's rail-1 subnet.
    let out = Command::new("nsenter")
        .arg(format!("--net={}", fabric.path_of("node01").display()))
        .args([
            "ip",
            "route",
            "add",
            "10.101.4.0/22",
            "via",
            &n1.gateway.to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("nsenter")
        .arg(format!("--net={}", fabric.path_of("node05").display()))
        .args([
            "ip",
            "route",
            "add",
            "10.101.0.0/22",
            "via",
            &n5.gateway.to_string(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());

    let before = fabric.counters("leaf1-r0", "swp1").unwrap();
    let up_before = fabric.counters("leaf1-r1", "swp1").unwrap();
    assert!(ping_from(&fabric, "node01", &n5.address.addr().to_string()));
    let after = fabric.counters("leaf1-r0", "swp1").unwrap();
    let up_after = fabric.counters("leaf1-r1", "swp1").unwrap();
    assert!(
        up_after.rx_packets > up_before.rx_packets,
        "rail-1 leaf saw the packet"
    );
    assert_eq!(after.rx_packets, before.rx_packets, "rail-0 leaf did not");

    // A pulled cable: the leaf's port down, no reachability; back up, reachable again.
    fabric.set_port("leaf2-r1", "swp1", false).unwrap();
    assert!(!ping_from(
        &fabric,
        "node01",
        &n5.address.addr().to_string()
    ));
    fabric.set_port("leaf2-r1", "swp1", true).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !ping_from(&fabric, "node01", &n5.address.addr().to_string()) {
        assert!(
            std::time::Instant::now() < deadline,
            "no path after the cable is back"
        );
    }

    // The VFs exist and the sysfs tree describes them.
    let sysfs = hostnet::sriov::Sysfs::new(dir.path().join("node01/sys"));
    let pf = sysfs.pf("rail0").unwrap();
    assert_eq!(sysfs.vfs_of(&pf).unwrap().len(), 4);
    assert_eq!(sysfs.rdma_devices_of(&pf.pci).unwrap(), ["mlx5_0"]);

    drop(fabric);
    assert_eq!(sweep_namespaces(&netns).unwrap(), 14);
    assert!(!netns.exists());
}
