//! Route socket operations against a real kernel, in a throwaway namespace, observed with
//! iproute2.

use std::net::IpAddr;
use std::os::fd::AsFd;
use std::process::Command;

use super::*;
use crate::netns::NetNs;
use spinel_wire::MacAddr;

/// A namespace pinned under a temp dir, removed on drop.
struct TestNs {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    ns: NetNs,
}

impl TestNs {
    fn new() -> Self {
        assert!(
            nix::unistd::geteuid().is_root(),
            "hostnet netlink tests need root"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ns");
        let ns = NetNs::create_at(&path).unwrap();
        Self {
            _dir: dir,
            path,
            ns,
        }
    }

    fn ip(&self, args: &str) -> String {
        let out = Command::new("nsenter")
            .arg(format!("--net={}", self.path.display()))
            .arg("ip")
            .args(args.split_whitespace())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ip {args}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

impl Drop for TestNs {
    fn drop(&mut self) {
        let _ = NetNs::remove_at(&self.path);
    }
}

#[test]
fn link_changes_are_applied_in_one_request_and_visible_to_iproute2() {
    let t = TestNs::new();
    t.ip("link add a0 type veth peer name b0");
    let mut nl = RouteSocket::open_in(&t.ns).unwrap();
    let a0 = nl.link_by_name("a0").unwrap().expect("a0 exists");
    assert_eq!(a0.kind.as_deref(), Some("veth"));
    let mac: MacAddr = "02:00:00:00:00:aa".parse().unwrap();
    nl.set_link(
        a0.index,
        &LinkChange::new()
            .mtu(1400)
            .mac(mac)
            .alias("spinel test")
            .name("c0")
            .up(true),
    )
    .unwrap();
    let shown = t.ip("-d link show dev c0");
    assert!(shown.contains("mtu 1400"), "{shown}");
    assert!(shown.contains("02:00:00:00:00:aa"), "{shown}");
    assert!(shown.contains("alias spinel test"), "{shown}");
    assert!(shown.contains("UP"), "{shown}");
    let c0 = nl.link_by_index(a0.index).unwrap().unwrap();
    assert_eq!(
        (c0.name.as_str(), c0.mtu, c0.mac, c0.up),
        ("c0", 1400, Some(mac), true)
    );
    assert_eq!(c0.alias.as_deref(), Some("spinel test"));
    nl.set_link(c0.index, &LinkChange::new().alias("")).unwrap();
    assert_eq!(nl.link_by_index(a0.index).unwrap().unwrap().alias, None);
    assert!(nl.link_by_name("nonexistent0").unwrap().is_none());
    assert!(nl.links().unwrap().iter().any(|l| l.name == "lo"));
}

#[test]
fn bad_requests_name_the_operation_and_the_errno() {
    let t = TestNs::new();
    t.ip("link add a0 type veth peer name b0");
    let mut nl = RouteSocket::open_in(&t.ns).unwrap();
    let a0 = nl.link_by_name("a0").unwrap().unwrap();
    let err = nl
        .set_link(a0.index, &LinkChange::new().mtu(100_000))
        .unwrap_err();
    assert!(err.is(libc::EINVAL), "{err}");
    let text = err.to_string();
    assert!(text.contains("mtu 100000"), "{text}");
    let err = nl
        .set_link(a0.index, &LinkChange::new().name("b0"))
        .unwrap_err();
    assert!(err.is(libc::EEXIST), "{err}");
}

#[test]
fn move_then_rename_is_not_atomic_so_callers_need_unique_names() {
    let host = TestNs::new();
    let pod = TestNs::new();
    host.ip("link add vf0 type veth peer name pf0");
    pod.ip("link add eth0 type veth peer name other0");
    let mut h = RouteSocket::open_in(&host.ns).unwrap();
    let vf = h.link_by_name("vf0").unwrap().unwrap();
    // The kernel moves first and renames after: a clash on the new name fails the request but
    // leaves the link moved under its old name. This is why the CNI moves under a unique
    // temporary name and renames inside the pod as a separate, undoable step.
    let err = h
        .set_link(
            vf.index,
            &LinkChange::new().netns(pod.ns.as_fd()).name("eth0"),
        )
        .unwrap_err();
    assert!(err.is(libc::EEXIST), "{err}");
    assert!(
        h.link_by_name("vf0").unwrap().is_none(),
        "the link left the host despite the error"
    );
    let mut p = RouteSocket::open_in(&pod.ns).unwrap();
    let moved = p
        .link_by_name("vf0")
        .unwrap()
        .expect("moved under its old name");
    // Without a clash, move and rename succeed together.
    p.set_link(
        moved.index,
        &LinkChange::new().netns(host.ns.as_fd()).name("vf9"),
    )
    .unwrap();
    assert!(h.link_by_name("vf9").unwrap().is_some());
    assert!(host.ip("link show dev vf9").contains("vf9"));
}

#[test]
fn addresses_routes_rules_and_neighbours() {
    let t = TestNs::new();
    t.ip("link add a0 type veth peer name b0");
    t.ip("link set a0 up");
    t.ip("link set b0 up");
    let mut nl = RouteSocket::open_in(&t.ns).unwrap();
    let a0 = nl.link_by_name("a0").unwrap().unwrap();
    let net: ipnet::IpNet = "10.1.2.3/24".parse().unwrap();
    nl.add_address(a0.index, &net).unwrap();
    assert!(nl.add_address(a0.index, &net).unwrap_err().is(libc::EEXIST));
    let v6: ipnet::IpNet = "fd00::3/64".parse().unwrap();
    nl.add_address(a0.index, &v6).unwrap();
    let addrs = nl.addresses(Some(a0.index)).unwrap();
    assert!(addrs.iter().any(|a| a.net == net), "{addrs:?}");
    assert!(addrs.iter().any(|a| a.net == v6), "{addrs:?}");
    assert!(t.ip("addr show dev a0").contains("10.1.2.3/24"));

    let mut route = Route::new("10.9.0.0/16".parse().unwrap());
    route.gateway = Some("10.1.2.1".parse().unwrap());
    route.oif = Some(a0.index);
    route.table = 1234;
    nl.add_route(&route).unwrap();
    assert!(nl.add_route(&route).unwrap_err().is(libc::EEXIST));
    let shown = t.ip("route show table 1234");
    assert!(shown.contains("10.9.0.0/16 via 10.1.2.1 dev a0"), "{shown}");
    let routes = nl.routes(false, 1234).unwrap();
    assert_eq!(routes.len(), 1, "{routes:?}");
    assert_eq!(routes[0].destination, route.destination);
    assert_eq!(routes[0].gateway, route.gateway);
    nl.delete_route(&route).unwrap();
    assert!(nl.routes(false, 1234).unwrap().is_empty());

    let rule = Rule {
        source: "10.1.2.3/32".parse().unwrap(),
        table: 1234,
        priority: 3000,
        protocol: 0,
    };
    nl.add_rule(&rule).unwrap();
    assert!(
        t.ip("rule show")
            .contains("3000:\tfrom 10.1.2.3 lookup 1234")
    );
    assert!(nl.rules(false).unwrap().contains(&rule));
    nl.delete_rule(&rule).unwrap();
    assert!(!nl.rules(false).unwrap().contains(&rule));

    let ip: IpAddr = "10.1.2.50".parse().unwrap();
    let mac: MacAddr = "02:00:00:00:00:50".parse().unwrap();
    nl.replace_neighbour(
        a0.index,
        ip,
        mac,
        netlink_packet_route::neighbour::NeighbourState::Stale,
    )
    .unwrap();
    let n = nl
        .neighbours()
        .unwrap()
        .into_iter()
        .find(|n| n.ip == ip)
        .unwrap();
    assert_eq!((n.mac, n.state.as_str()), (Some(mac), "STALE"));
    nl.delete_address(a0.index, &net).unwrap();
    assert!(
        !nl.addresses(Some(a0.index))
            .unwrap()
            .iter()
            .any(|a| a.net == net)
    );
}

#[test]
fn macvlan_is_created_inside_the_target_namespace() {
    let host = TestNs::new();
    let pod = TestNs::new();
    host.ip("link add pf0 type veth peer name sw0");
    let mut h = RouteSocket::open_in(&host.ns).unwrap();
    let pf = h.link_by_name("pf0").unwrap().unwrap();
    let mac: MacAddr = "02:00:00:00:01:01".parse().unwrap();
    h.create_macvlan(pf.index, "net1", pod.ns.as_fd(), Some(1400), Some(mac))
        .unwrap();
    assert!(
        h.link_by_name("net1").unwrap().is_none(),
        "never in the host"
    );
    let shown = pod.ip("-d link show dev net1");
    assert!(
        shown.contains("macvlan mode bridge") && shown.contains("mtu 1400"),
        "{shown}"
    );
    assert!(shown.contains("02:00:00:00:01:01"), "{shown}");
    let err = h
        .create_macvlan(pf.index, "net1", pod.ns.as_fd(), None, None)
        .unwrap_err();
    assert!(err.is(libc::EEXIST), "{err}");
}
