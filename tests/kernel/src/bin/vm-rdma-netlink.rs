//! In the VM: hostnet's RDMA netlink socket against the real kernel and rdma_rxe.
//!
//! Each step prints `ok <step>`; the first failure exits non-zero with the reason.

use std::time::Duration;

use anyhow::{Context, bail, ensure};
use hostnet::netns::NetNs;
use hostnet::rdma::{NetnsMode, PortState, RdmaError, RdmaSocket};
use spinel_kernel_tests::guest::{ok, poll, sh};

fn main() -> anyhow::Result<()> {
    sh("ip link set eth0 up && ip link set eth1 up")?;
    let mut rdma = RdmaSocket::open()?;

    rdma.link_add("rxe0", "rxe", "eth0")?;
    rdma.link_add("rxe1", "rxe", "eth1")?;
    let devices = rdma.devices()?;
    let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
    ensure!(names == ["rxe0", "rxe1"], "devices {names:?}");
    let iproute2 = sh("rdma dev show")?;
    for d in &devices {
        ensure!(
            iproute2.contains(&format!("{}: {}: node_type ca", d.index, d.name)),
            "{d:?} not in `rdma dev show`:\n{iproute2}"
        );
        let guid = d.node_guid.context("node GUID")?;
        let text = format!(
            "{:04x}:{:04x}:{:04x}:{:04x}",
            guid >> 48,
            (guid >> 32) & 0xffff,
            (guid >> 16) & 0xffff,
            guid & 0xffff
        );
        ensure!(
            iproute2.contains(&text),
            "node GUID {text} not in:\n{iproute2}"
        );
        ensure!(
            d.port_count == 1 && d.protocol.as_deref() == Some("roce"),
            "{d:?}"
        );
    }
    ok("link add, devices (same as rdma dev show)");

    let rxe0 = rdma.device_by_name("rxe0")?;
    ensure!(
        rdma.device(rxe0.index)? == rxe0,
        "GET by index differs from the dump"
    );
    let Err(err) = rdma.device(4242) else {
        bail!("device 4242 exists");
    };
    ensure!(err.errno().is_some(), "{err}");
    println!("unknown index error: {err}");
    let ports = rdma.ports(&rxe0)?;
    let eth0_index: u32 = sh("cat /sys/class/net/eth0/ifindex")?.trim().parse()?;
    ensure!(ports.len() == 1, "{ports:?}");
    ensure!(
        ports[0].netdev == Some((eth0_index, "eth0".to_owned())),
        "{ports:?}"
    );
    ensure!(ports[0].state == Some(PortState::Active), "{ports:?}");
    let Err(err) = rdma.device_by_name("mlx5_9") else {
        bail!("rdma.device_by_name unexpectedly succeeded");
    };
    ensure!(matches!(err, RdmaError::NoSuchDevice { .. }), "{err}");
    ok("ports with netdev");

    let rxe1 = rdma.device_by_name("rxe1")?;
    rdma.link_delete(&rxe1)?;
    ensure!(rdma.device_by_name("rxe1").is_err(), "rxe1 still listed");
    ensure!(
        !sh("rdma dev show")?.contains("rxe1"),
        "rdma still shows rxe1"
    );
    ok("link delete");

    ensure!(
        rdma.netns_mode()? == NetnsMode::Shared,
        "default mode is shared"
    );
    ensure!(sh("rdma system show")?.contains("netns shared"));

    // Shared mode: the kernel refuses the move with EOPNOTSUPP and we say why.
    let ns = NetNs::create_at("/run/netns/pod1")?;
    let Err(err) = rdma.move_device(&rxe0, &ns) else {
        bail!("rdma.move_device unexpectedly succeeded");
    };
    ensure!(matches!(err, RdmaError::SharedMode { .. }), "{err}");
    ensure!(err.errno() == Some(libc::EOPNOTSUPP), "{err}");
    println!("shared-mode move error: {err}");
    ok("move refused in shared mode");

    // The mode cannot change while another namespace exists.
    let Err(err) = rdma.set_netns_mode(NetnsMode::Exclusive) else {
        bail!("rdma.set_netns_mode unexpectedly succeeded");
    };
    ensure!(matches!(err, RdmaError::ModeBusy { .. }), "{err}");
    ensure!(err.errno() == Some(libc::EBUSY), "{err}");
    println!("mode-busy error: {err}");
    ok("mode change refused while a namespace exists");

    drop(ns);
    NetNs::remove_at("/run/netns/pod1")?;
    // The namespace is freed on a workqueue after its last reference goes; until then the
    // kernel still counts it, so retry briefly.
    let ((), waited) = poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        || match rdma.set_netns_mode(NetnsMode::Exclusive) {
            Ok(()) => Ok(Some(())),
            Err(RdmaError::ModeBusy { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        },
    )?;
    println!(
        "exclusive mode accepted {} ms after the namespace was removed",
        waited.as_millis()
    );
    ensure!(rdma.netns_mode()? == NetnsMode::Exclusive);
    ensure!(sh("rdma system show")?.contains("netns exclusive"));
    ok("set exclusive, read back (same as rdma system show)");

    let ns = NetNs::create_at("/run/netns/pod2")?;
    let Err(err) = rdma.move_device(&rxe0, &ns) else {
        bail!("rdma.move_device unexpectedly succeeded");
    };
    let text = err.to_string();
    println!("exclusive-mode move error: {text}");
    ensure!(matches!(err, RdmaError::MoveNotSupported { .. }), "{text}");
    ensure!(err.errno() == Some(libc::EOPNOTSUPP), "{text}");
    ensure!(
        text.contains("rdma dev set rxe0 netns /run/netns/pod2")
            && text.contains("does not support moving"),
        "{text}"
    );
    ok("rxe move refused with a clear error");

    // Exclusive mode hides the device from a socket in another namespace.
    let mut inside = RdmaSocket::open_in(&ns)?;
    let seen = inside.devices()?;
    ensure!(seen.is_empty(), "pod2 sees {seen:?}");
    ensure!(rdma.devices()?.len() == 1, "init namespace lost rxe0");
    ok("exclusive mode: other namespace sees no device");

    drop(inside);
    drop(ns);
    NetNs::remove_at("/run/netns/pod2")?;
    poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        || match rdma.set_netns_mode(NetnsMode::Shared) {
            Ok(()) => Ok(Some(())),
            Err(RdmaError::ModeBusy { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        },
    )?;
    if rdma.netns_mode()? != NetnsMode::Shared {
        bail!("mode did not go back to shared");
    }
    ensure!(sh("rdma system show")?.contains("netns shared"));
    ok("set shared, read back");
    Ok(())
}
