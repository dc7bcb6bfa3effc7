//! The spinel CNI on a real SR-IOV PF driver: QEMU's igb with 4 VFs bound to igbvf, in one
//! boot (`src/bin/vm-sriov.rs` runs the scenarios inside the VM).

use spinel_kernel_tests::{NicModel, Vm};

#[test]
fn spinel_on_igb_with_real_vfs() {
    let out = Vm::builder()
        .nics(1)
        .nic_model(NicModel::Igb)
        .timeout(std::time::Duration::from_secs(900))
        .env(
            "SPINEL_BIN",
            spinel_netns_tests::cni::spinel_binary()
                .display()
                .to_string(),
        )
        .env(
            "SPINELCTL_BIN",
            spinel_netns_tests::cni::spinelctl_binary()
                .display()
                .to_string(),
        )
        .run(&[env!("CARGO_BIN_EXE_vm-sriov"), "all"]);
    eprintln!("{}", out.stdout);
    out.assert_success();
    for step in [
        "ok 4 VFs on igb PF eth0 bound to igbvf",
        "ok exclusive mode: rxe on an igbvf netdev cannot move, ADD says so and leaves the VF",
        "ok rxe on an igbvf netdev unregisters when the VF moves; ADD answers 100 and rolls back",
        "ok rxe on the VF in the pod: spinelctl nccl-env finds RoCE v2 GID index",
        "ok DEL: the VF is home and its rxe device went with the pod-side netdev",
        "ok RTM_GETLINK IFLA_VFINFO_LIST reports what was asked",
        "ok ip -d link show eth0: vf 1",
        "ok the igbvf netdev is net1 in the pod",
        "ok CHECK passes, then reports the VLAN changed behind its back through the PF",
        "ok DEL restores the VF",
        "ok every attribute igb refuses fails the ADD with 100",
        "ok igb takes mac, vlan 4094 qos 7, spoofchk, trust, maxTxRate",
        "ok a restore igb refuses (rate, PF link down) is logged and DEL succeeds",
        "ok the kernel returned the VF from the dead pod",
        "ok DEL after the pod died",
        "ok ADD killed at every other of its",
        "ok DEL killed at each of its",
        "kills, no VF stuck, the next ADD and DEL work",
        "ok agent discovery on the real sysfs: eth0 refused",
        "ok agent: eth0 is a RoCE NIC at 1000 Mb/s, MTU 1500, carrier",
        "ok agent metrics: carrier, speed and MTU of eth0",
        "ok agent: the PF's link down is LinkDown and spinel_nic_carrier 0",
    ] {
        assert!(out.stdout.contains(step), "missing {step:?}");
    }
    eprintln!("guest boot {:?}, whole run {:?}", out.guest_boot, out.wall);
}
