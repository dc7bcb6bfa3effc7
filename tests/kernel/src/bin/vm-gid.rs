//! In the VM: hostnet's GID table reader and RoCE v2 resolver against rdma_rxe's real table.
//!
//! rxe0 sits on eth0 (a virtio PCI NIC standing in for a PF), rxe1 on a dummy; eth0 gets a VLAN
//! and a macvlan upper. Each step prints `ok <step>`; measurements print as `measure <name>
//! <values>`; the first failure exits non-zero with the reason.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use hostnet::rdma::RdmaSocket;
use hostnet::rdma::gid::{GidQuery, GidType, RdmaPortRef, RdmaSysfs, gid_of};
use spinel_kernel_tests::guest::{ok, poll, sh};

const WAIT: Duration = Duration::from_secs(10);
const TICK: Duration = Duration::from_millis(1);

fn query(device: Option<&str>, netdev: &str, addr: &str) -> anyhow::Result<GidQuery> {
    Ok(GidQuery {
        device: device.map(str::to_owned),
        netdev: netdev.to_owned(),
        addr: addr.parse()?,
    })
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, cmd, device, netdev, addr] = args.as_slice()
        && cmd == "resolve"
    {
        // Sub-command for `ip netns exec <pod> vm-gid resolve ...`: resolve through the sysfs
        // that `ip netns exec` mounted for the pod's namespace.
        let m =
            RdmaSysfs::default().resolve_wait(&query(Some(device), netdev, addr)?, WAIT, TICK)?;
        println!("index {}", m.index);
        return Ok(());
    }
    let sysfs = RdmaSysfs::default();
    let mut rdma = RdmaSocket::open()?;
    sh("ip link set eth0 up && ip link add d0 type dummy && ip link set d0 up")?;
    rdma.link_add("rxe0", "rxe", "eth0")?;
    rdma.link_add("rxe1", "rxe", "d0")?;
    ensure!(
        sysfs.devices()? == ["rxe0", "rxe1"],
        "{:?}",
        sysfs.devices()?
    );
    ensure!(sysfs.ports("rxe0")? == [1]);
    // A fresh device carries the link-local GID of its netdev, nothing else. rxe registers its
    // port as RoCE v2 only (RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP), so there are no v1 entries,
    // unlike mlx5's v1+v2 pairs.
    let entries = sysfs.gid_entries("rxe0", 1)?;
    ensure!(!entries.is_empty(), "empty table");
    ensure!(
        entries.iter().all(|e| e.gid.segments()[0] == 0xfe80
            && e.ndev.as_deref() == Some("eth0")
            && e.gid_type == Some(GidType::RoceV2)),
        "{entries:#?}"
    );
    println!("fresh rxe0 table: {entries:?}");
    ok("fresh table: link-local RoCE v2 on eth0");

    let q4 = query(Some("rxe0"), "eth0", "192.0.2.1")?;
    fill_and_removal(&sysfs, &q4)?;

    sh("ip addr add 192.0.2.1/24 dev eth0")?;
    let v4 = sysfs.resolve_wait(&q4, WAIT, TICK)?;
    let entries = sysfs.gid_entries("rxe0", 1)?;
    let same_gid: Vec<_> = entries.iter().filter(|e| e.gid == v4.gid).collect();
    // One entry per address on rxe (RoCE v2 only; hardware adds a v1 twin).
    ensure!(same_gid.len() == 1, "{same_gid:#?}");
    let v2 = same_gid
        .iter()
        .find(|e| e.index == v4.index)
        .context("resolved entry")?;
    ensure!(
        v2.gid_type == Some(GidType::RoceV2) && v2.ndev.as_deref() == Some("eth0"),
        "{v2:?}"
    );
    println!(
        "192.0.2.1 on eth0: RoCE v2 index {} (entries {same_gid:?})",
        v4.index
    );
    ok("resolver picks the RoCE v2 entry of the IPv4-mapped GID");

    sh("ip addr add 2001:db8::1/64 dev eth0 nodad")?;
    let q6 = query(Some("rxe0"), "eth0", "2001:db8::1")?;
    let v6 = sysfs.resolve_wait(&q6, WAIT, TICK)?;
    ensure!(
        v6.gid == "2001:db8::1".parse::<std::net::Ipv6Addr>()?,
        "{v6:?}"
    );
    ok("IPv6 GID");

    sh(
        "ip link add link eth0 name eth0.100 type vlan id 100 && ip link set eth0.100 up && \
        ip addr add 198.51.100.1/24 dev eth0.100",
    )?;
    let vlan = sysfs.resolve_wait(
        &query(Some("rxe0"), "eth0.100", "198.51.100.1")?,
        WAIT,
        TICK,
    )?;
    ensure!(
        sysfs
            .resolve(&query(Some("rxe0"), "eth0", "198.51.100.1")?)?
            .is_none(),
        "the VLAN address must not resolve on the lower device"
    );
    println!("198.51.100.1 on eth0.100: index {}", vlan.index);
    ok("VLAN upper: GID on rxe0 with ndev eth0.100");

    sh(
        "ip link add mv0 link eth0 type macvlan mode bridge && ip link set mv0 up && \
        ip addr add 203.0.113.1/24 dev mv0",
    )?;
    let mv = sysfs.resolve_wait(&query(Some("rxe0"), "mv0", "203.0.113.1")?, WAIT, TICK)?;
    println!("203.0.113.1 on mv0: index {}", mv.index);
    ok("macvlan upper: GID on rxe0 with ndev mv0");

    dummy_and_ports_of_netdevs(&sysfs)?;

    // Removing an address frees its indices and leaves a hole below later entries.
    let before: Vec<u32> = sysfs
        .gid_entries("rxe0", 1)?
        .iter()
        .map(|e| e.index)
        .collect();
    sh("ip addr del 192.0.2.1/24 dev eth0")?;
    poll(WAIT, TICK, || {
        Ok(sysfs.resolve(&q4)?.is_none().then_some(()))
    })?;
    let after: Vec<u32> = sysfs
        .gid_entries("rxe0", 1)?
        .iter()
        .map(|e| e.index)
        .collect();
    println!("indices before {before:?} after {after:?}");
    ensure!(!after.contains(&v4.index), "index {} still used", v4.index);
    ensure!(
        after.iter().any(|i| *i > v4.index),
        "no entry above the hole: {after:?}"
    );
    // The others keep their indices: a GID index is not a position in a dense list.
    ensure!(sysfs.resolve(&q6)?.map(|m| m.index) == Some(v6.index));
    ensure!(
        sysfs
            .resolve(&query(Some("rxe0"), "eth0.100", "198.51.100.1")?)?
            .map(|m| m.index)
            == Some(vlan.index)
    );
    ok("hole after removal; other indices unchanged");

    // Re-adding takes a free slot again (the lowest, in this kernel's cache.c).
    sh("ip addr add 192.0.2.1/24 dev eth0")?;
    let again = sysfs.resolve_wait(&q4, WAIT, TICK)?;
    println!(
        "192.0.2.1 re-added: index {} (was {})",
        again.index, v4.index
    );
    ok("re-added address resolves again");

    bounded_wait(&sysfs)?;

    let any: IpAddr = "192.0.2.1".parse()?;
    ensure!(gid_of(any) == again.gid);

    pods_in_shared_mode(&sysfs)?;
    port_state_and_counters(&sysfs)?;
    Ok(())
}

/// What the agent's metrics and health read from a real device: rxe0's port state follows its
/// netdev's link, and its driver counters (`hw_counters/`) read as numbers. Last: it takes
/// eth0 down.
fn port_state_and_counters(sysfs: &RdmaSysfs) -> anyhow::Result<()> {
    let rxe0 = |sysfs: &RdmaSysfs| -> anyhow::Result<hostnet::rdma::counters::PortCounters> {
        sysfs
            .port_counters()?
            .into_iter()
            .find(|p| p.device == "rxe0" && p.port == 1)
            .context("rxe0 port 1 not listed")
    };
    let up = rxe0(sysfs)?;
    ensure!(
        up.state == Some(4) && up.link_layer.as_deref() == Some("Ethernet"),
        "{up:?}"
    );
    ensure!(up.netdev.as_deref() == Some("eth0"), "{up:?}");
    let names: Vec<&str> = up.hw_counters.iter().map(|(n, _)| n.as_str()).collect();
    ensure!(
        names.contains(&"sent_pkts")
            && names.contains(&"rcvd_pkts")
            && !names.contains(&"lifespan"),
        "hw_counters: {names:?}"
    );
    println!(
        "rxe0/1 up: state {:?}, hw_counters {:?}",
        up.state, up.hw_counters
    );
    sh("ip link set eth0 down")?;
    let (down, took) = poll(WAIT, TICK, || {
        let p = rxe0(sysfs)?;
        Ok((p.state == Some(1)).then_some(p))
    })?;
    println!(
        "rxe0/1 after eth0 down: state {:?} within {took:?}",
        down.state
    );
    ok("port state and counters of rxe0, as the agent reads them");
    Ok(())
}

/// Shared mode with macvlan pods: every pod names its interface `net1`, and all their GIDs land
/// in the one table of rxe0, with ndev `net1` in every view (the name is not
/// namespace-qualified). The address tells them apart, from the host's sysfs and from a sysfs
/// mounted inside the pod.
fn pods_in_shared_mode(sysfs: &RdmaSysfs) -> anyhow::Result<()> {
    let mut index = Vec::new();
    for (pod, addr) in [("podA", "10.1.0.5"), ("podB", "10.1.0.6")] {
        sh(&format!(
            "ip netns add {pod} && ip link add {pod}mv link eth0 type macvlan mode bridge && \
             ip link set {pod}mv netns {pod} name net1 && ip -n {pod} link set net1 up && \
             ip -n {pod} addr add {addr}/24 dev net1"
        ))?;
        let m = sysfs.resolve_wait(&query(Some("rxe0"), "net1", addr)?, WAIT, TICK)?;
        let exe = std::env::current_exe()?;
        let inside = sh(&format!(
            "ip netns exec {pod} {} resolve rxe0 net1 {addr}",
            exe.display()
        ))?;
        ensure!(
            inside.trim() == format!("index {}", m.index),
            "{pod}: {inside} vs {m:?}"
        );
        println!(
            "{pod} {addr} on net1: index {} (same inside the pod)",
            m.index
        );
        index.push(m.index);
    }
    ensure!(index[0] != index[1], "{index:?}");
    let named_net1 = sysfs
        .gid_entries("rxe0", 1)?
        .into_iter()
        .filter(|e| e.ndev.as_deref() == Some("net1"))
        .count();
    // Per pod: its IPv4 GID and its link-local one.
    ensure!(named_net1 >= 4, "{named_net1} entries name net1");
    ok("shared mode: pods' same-named interfaces told apart by address, inside and outside");
    Ok(())
}

/// The asynchronous fill and removal of the IPv4 GID, measured: from `ip addr add` to the GID
/// resolving (and from `ip addr del` to it going), one table pass, and one slot watched alone.
fn fill_and_removal(sysfs: &RdmaSysfs, q4: &GidQuery) -> anyhow::Result<()> {
    // The asynchronous fill: time from `ip addr add` returning to the GID being readable.
    let mut fill = Vec::new();
    let mut gone = Vec::new();
    for _ in 0..5 {
        sh("ip addr add 192.0.2.1/24 dev eth0")?;
        let start = Instant::now();
        let found = sysfs.resolve_wait(q4, WAIT, TICK)?;
        fill.push(start.elapsed());
        ensure!(
            found.gid == gid_of(q4.addr) && found.port.port == 1,
            "{found:?}"
        );
        sh("ip addr del 192.0.2.1/24 dev eth0")?;
        let start = Instant::now();
        poll(WAIT, TICK, || {
            Ok(sysfs.resolve(q4)?.is_none().then_some(()))
        })?;
        gone.push(start.elapsed());
    }
    // One pass over the table bounds the resolution of the two measures above.
    let mut pass = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        sysfs.gid_entries("rxe0", 1)?;
        pass.push(start.elapsed());
    }
    let slots = std::fs::read_dir("/sys/class/infiniband/rxe0/ports/1/gids")?.count();
    println!("rxe0 port 1 has {slots} GID slots");
    print_measure("gid-table-read-ms", &pass);
    print_measure("gid-fill-after-addr-add-ms", &fill);
    // The resolver's pass over 1024 slots takes most of that under TCG; watch the one slot the
    // address lands in (index 1, the lowest free one, as the loop above showed) for the
    // kernel's own delay.
    let slot = "/sys/class/infiniband/rxe0/ports/1/gids/1";
    let want = "0000:0000:0000:0000:0000:ffff:c000:0201";
    let mut single = Vec::new();
    for _ in 0..5 {
        sh("ip addr add 192.0.2.1/24 dev eth0")?;
        let start = Instant::now();
        poll(WAIT, Duration::from_micros(200), || {
            Ok((std::fs::read_to_string(slot)?.trim() == want).then_some(()))
        })?;
        single.push(start.elapsed());
        sh("ip addr del 192.0.2.1/24 dev eth0")?;
        poll(WAIT, TICK, || {
            Ok(sysfs.resolve(q4)?.is_none().then_some(()))
        })?;
    }
    print_measure("gid-fill-one-slot-ms", &single);
    print_measure("gid-removal-after-addr-del-ms", &gone);
    ok("IPv4 GID appears after ip addr add and disappears after ip addr del");
    Ok(())
}

/// rxe1 on a dummy netdev is found from the netdev alone, and every netdev maps to its RDMA
/// ports by scanning the ndevs (uppers included).
fn dummy_and_ports_of_netdevs(sysfs: &RdmaSysfs) -> anyhow::Result<()> {
    sh("ip addr add 10.9.0.1/24 dev d0")?;
    let dummy = sysfs.resolve_wait(&query(None, "d0", "10.9.0.1")?, WAIT, TICK)?;
    ensure!(
        dummy.port
            == RdmaPortRef {
                device: "rxe1".into(),
                port: 1
            },
        "{dummy:?}"
    );
    ok("rxe on a dummy netdev, found without naming the device");

    let on = |n: &str| sysfs.ports_of_netdev(n);
    let rxe0_1 = vec![RdmaPortRef {
        device: "rxe0".into(),
        port: 1,
    }];
    ensure!(on("eth0")? == rxe0_1 && on("eth0.100")? == rxe0_1 && on("mv0")? == rxe0_1);
    ensure!(
        on("d0")?
            == [RdmaPortRef {
                device: "rxe1".into(),
                port: 1
            }]
    );
    ensure!(on("eth1")?.is_empty());
    ok("RDMA ports of a netdev by scanning ndevs");
    Ok(())
}

/// An address that never gets a GID ends a bounded wait in a retryable error.
fn bounded_wait(sysfs: &RdmaSysfs) -> anyhow::Result<()> {
    let never = query(Some("rxe0"), "eth0", "192.0.2.77")?;
    let Err(err) = sysfs.resolve_wait(
        &never,
        Duration::from_millis(200),
        Duration::from_millis(20),
    ) else {
        bail!("sysfs.resolve_wait unexpectedly succeeded");
    };
    ensure!(err.is_retryable(), "{err}");
    println!("not-yet-populated error: {err}");
    ok("bounded wait ends in a retryable error");
    Ok(())
}

fn print_measure(name: &str, samples: &[Duration]) {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let text: Vec<String> = ms.iter().map(|m| format!("{m:.1}")).collect();
    println!("measure {name} {}", text.join(" "));
}
