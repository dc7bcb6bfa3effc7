//! hostnet's RDMA code against the real kernel: the nldev socket with rdma_rxe, and the GID
//! table with its asynchronous fill. One boot per program; the programs live in `src/bin`.

use spinel_kernel_tests::Vm;

fn run(binary: &str) -> String {
    let out = Vm::builder().nics(2).run(&[binary]);
    out.assert_success();
    eprintln!("{}", out.stdout);
    out.stdout
}

#[test]
fn rdma_netlink_socket_against_rdma_rxe() {
    let out = run(env!("CARGO_BIN_EXE_vm-rdma-netlink"));
    for step in [
        "ok link add, devices (same as rdma dev show)",
        "ok ports with netdev",
        "ok link delete",
        "ok move refused in shared mode",
        "ok mode change refused while a namespace exists",
        "ok set exclusive, read back (same as rdma system show)",
        "ok rxe move refused with a clear error",
        "ok exclusive mode: other namespace sees no device",
        "ok set shared, read back",
    ] {
        assert!(out.contains(step), "missing {step:?}");
    }
}

#[test]
fn gid_table_and_resolver_against_rdma_rxe() {
    let out = run(env!("CARGO_BIN_EXE_vm-gid"));
    for step in [
        "ok fresh table: link-local RoCE v2 on eth0",
        "ok IPv4 GID appears after ip addr add and disappears after ip addr del",
        "ok resolver picks the RoCE v2 entry of the IPv4-mapped GID",
        "ok IPv6 GID",
        "ok VLAN upper: GID on rxe0 with ndev eth0.100",
        "ok macvlan upper: GID on rxe0 with ndev mv0",
        "ok rxe on a dummy netdev, found without naming the device",
        "ok RDMA ports of a netdev by scanning ndevs",
        "ok hole after removal; other indices unchanged",
        "ok re-added address resolves again",
        "ok bounded wait ends in a retryable error",
        "ok shared mode: pods' same-named interfaces told apart by address, inside and outside",
        "ok port state and counters of rxe0, as the agent reads them",
    ] {
        assert!(out.contains(step), "missing {step:?}");
    }
    assert!(out.contains("measure gid-fill-after-addr-add-ms"));
}
