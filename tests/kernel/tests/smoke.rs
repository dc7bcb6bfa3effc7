//! The kernel tier boots, loads what Spinel needs and gives real NICs on one L2 segment.
//!
//! One boot for all of it: every boot costs several seconds of TCG.

use spinel_kernel_tests::{NicModel, Vm};

/// Run in the VM; each step prints a marker the host checks, and `set -e` stops at the first
/// failure with the failing command on stderr.
const SMOKE: &str = r#"
set -eu
echo "kernel $(uname -r)"
for m in crc32_generic rdma_rxe ib_core ib_uverbs 8021q dummy vrf macvlan veth bridge; do
  test -d /sys/module/$m || { echo "module $m is not loaded" >&2; exit 1; }
done
echo "modules loaded"
# Stage 1 loaded crc32_generic before rdma_rxe (lsmod lists newest first).
lsmod_order=$(cut -d' ' -f1 /proc/modules | tr '\n' ' ')
echo "lsmod: $lsmod_order"

test "$(ip -o link show | grep -c dummy0 || true)" = 0
ip link set eth0 up
rdma link add rxe0 type rxe netdev eth0
rdma link show rxe0/1
test -d /sys/class/infiniband/rxe0/ports/1/gids
echo "rxe0 created"

ip link add d0 type dummy
ip link add link eth0 name eth0.100 type vlan id 100
ip link add vrf-blue type vrf table 10
ip link add mv0 link eth0 type macvlan mode bridge
ip -d link show eth0.100 | grep -q "vlan protocol 802.1Q id 100"
ip -d link show vrf-blue | grep -q "vrf table 10"
echo "dummy vlan vrf macvlan created"

# eth0 and eth1 share the QEMU hub: move eth1 to a namespace and ping across the wire.
ip netns add peer
ip link set eth1 netns peer
ip -n peer link set eth1 up
ip -n peer addr add 192.0.2.2/24 dev eth1
ip addr add 192.0.2.1/24 dev eth0
i=0
until ping -c1 -W1 192.0.2.2 >/dev/null 2>&1; do
  i=$((i+1)); test $i -lt 20 || { echo "no reply from eth1 over the hub" >&2; exit 1; }
done
echo "eth0 reaches eth1 over L2"

# A physical netdev goes back to the init namespace when its namespace dies
# (net/core/dev.c default_device_exit_net). It keeps its name if that name is free there, and
# becomes dev<ifindex> only on a clash: here it is renamed eth0 inside, as a CNI names a pod's
# interface, and eth0 exists outside. The cleanup runs on a workqueue, so poll.
idx=$(ip -n peer -o link show eth1 | cut -d: -f1)
ip -n peer link set eth1 down
ip -n peer link set eth1 name eth0
ip netns del peer
i=0
until test -e /sys/class/net/dev$idx; do
  i=$((i+1)); test $i -lt 100 || { echo "eth1 did not come back as dev$idx" >&2; exit 1; }
  sleep 0.1
done
echo "eth1 returned as dev$idx"
"#;

#[test]
fn boots_loads_modules_creates_rxe_and_links_nics() {
    let out = Vm::builder().nics(2).run_script(SMOKE);
    out.assert_success();
    let boot = out.guest_boot.unwrap_or_default();
    eprintln!(
        "guest boot {:.2} s, whole run {:.2} s",
        boot.as_secs_f64(),
        out.wall.as_secs_f64()
    );
    for marker in [
        "kernel 6.",
        "modules loaded",
        "rxe0 created",
        "dummy vlan vrf macvlan created",
        "eth0 reaches eth1 over L2",
        "eth1 returned as dev",
    ] {
        assert!(
            out.stdout.contains(marker),
            "missing {marker:?} in\n{}",
            out.stdout
        );
    }
    assert!(
        out.stdout
            .contains("rxe0/1 state ACTIVE physical_state LINK_UP netdev eth0"),
        "{}",
        out.stdout
    );
    let lsmod = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("lsmod: "))
        .unwrap_or_default();
    let pos = |m: &str| lsmod.split(' ').position(|x| x == m);
    // /proc/modules lists the most recently loaded first.
    assert!(pos("crc32_generic") > pos("rdma_rxe"), "{lsmod}");
}

#[test]
fn e1000e_nics_sit_directly_under_their_pci_function() {
    let out = Vm::builder()
        .nics(2)
        .nic_model(NicModel::E1000e)
        .run_script("ls -d /sys/bus/pci/devices/*/net/eth*");
    out.assert_success();
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
    let virtio = Vm::builder()
        .nics(1)
        .run_script("readlink -f /sys/class/net/eth0/device");
    virtio.assert_success();
    // virtio-net's netdev hangs off the virtio device, not the PCI function.
    assert!(virtio.stdout.contains("/virtio"), "{}", virtio.stdout);
}

#[test]
fn ib_core_module_parameter_boots_in_exclusive_mode() {
    // Production sets `options ib_core netns_mode=0`; the tier can boot the same way.
    let out = Vm::builder()
        .nics(1)
        .module_param("ib_core", "netns_mode=0")
        .run_script("rdma system show; cat /sys/module/ib_core/parameters/netns_mode");
    out.assert_success();
    assert!(out.stdout.contains("netns exclusive"), "{}", out.stdout);
}
