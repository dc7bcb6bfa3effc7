//! The spinel CNI against a real kernel with `rdma_rxe`: GID indices in real GID tables,
//! macvlan pods sharing one table, a real PCI NIC returned by the kernel when its pod dies,
//! and exclusive mode. The scenarios run inside the VM (`src/bin/vm-cni.rs`).

use spinel_kernel_tests::{NicModel, Vm};

fn spinel() -> String {
    spinel_netns_tests::cni::spinel_binary()
        .display()
        .to_string()
}

#[test]
fn roce_gid_macvlan_and_pod_death_in_shared_mode() {
    let out = Vm::builder()
        .nics(2)
        .nic_model(NicModel::E1000e)
        .env("SPINEL_BIN", spinel())
        .env(
            "SPINELCTL_BIN",
            spinel_netns_tests::cni::spinelctl_binary()
                .display()
                .to_string(),
        )
        .run(&[env!("CARGO_BIN_EXE_vm-cni"), "shared"]);
    out.assert_success();
    eprintln!("{}", out.stdout);
    for step in [
        "ok VF mode: RoCE v2 GID index",
        "ok GID and NCCL hints published",
        "ok CHECK notices the GID is gone",
        "ok DEL removes the published details",
        "ok STATUS: an exclusive-mode network on a shared-mode node is not available",
        "ok macvlan mode: three pods, three GID indices",
        "ok spinelctl nccl-env in each pod prints that pod's own GID index",
        "ok the kernel returned the NIC",
        "ok DEL after the pod died: the real NIC is home as eth1",
    ] {
        assert!(out.stdout.contains(step), "missing {step:?}");
    }
}

#[test]
fn exclusive_mode_with_a_device_that_cannot_move() {
    let out = Vm::builder()
        .nics(2)
        .nic_model(NicModel::E1000e)
        .module_param("ib_core", "netns_mode=0")
        .env("SPINEL_BIN", spinel())
        .run(&[env!("CARGO_BIN_EXE_vm-cni"), "exclusive"]);
    out.assert_success();
    eprintln!("{}", out.stdout);
    for step in [
        "ok exclusive mode: rxe cannot move, ADD says so",
        "ok exclusive mode: the failed ADD left the VF",
    ] {
        assert!(out.stdout.contains(step), "missing {step:?}");
    }
}
