//! The codec against iproute2 and the kernel, byte for byte.
//!
//! Fixtures: `hostnet/tests/fixtures/rdma/*.strace`, strace hex dumps of what iproute2's `rdma`
//! (iproute2 6.1) sent and what Debian's 6.1 kernel answered, captured in the kernel tier by
//! `tests/kernel/capture-rdma-fixtures.sh`.
//!
//! Normalisation, and why:
//! - sequence number (bytes 8..12): iproute2 uses `time(NULL)`, our socket a counter; the test
//!   encodes ours with iproute2's number, so nothing is masked;
//! - port id (bytes 12..16): zero in both (the kernel fills in the sender), compared as is;
//! - `NLM_F_ACK` on GET and dump requests: iproute2 sets it on every request; our generic
//!   `Socket::get`/`Socket::dump` do not (the kernel then sends the reply without a trailing
//!   ACK, and a dump ends with `NLMSG_DONE` either way). For those two the bit is cleared on
//!   iproute2's side; every other byte must match. Requests that change state (`request`) carry
//!   `NLM_F_ACK` in both and match exactly;
//! - the value of `RDMA_NLDEV_NET_NS_FD`: a descriptor number of the sending process; the test
//!   encodes ours with iproute2's number.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;

use netlink_packet_core::{NLM_F_ACK, NLM_F_DUMP, NetlinkMessage, NetlinkPayload};

use super::socket::{device_from, port_from};
use super::*;
use crate::netlink::Socket;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Dir {
    Sent,
    Received,
}

/// The netlink messages of one fixture, in order, split out of strace's datagram dumps.
fn fixture(name: &str) -> Vec<(Dir, Vec<u8>)> {
    let path = format!(
        "{}/tests/fixtures/rdma/{name}.strace",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut datagrams: Vec<(Dir, Vec<u8>)> = Vec::new();
    for line in text.lines() {
        if line.starts_with("sendto(") || line.starts_with("sendmsg(") {
            datagrams.push((Dir::Sent, Vec::new()));
        } else if line.starts_with("recvmsg(") || line.starts_with("recvfrom(") {
            datagrams.push((Dir::Received, Vec::new()));
        } else if let Some(rest) = line.strip_prefix(" | ") {
            // " | 00000  10 00 00 00 01 14 05 03  f5 65 02 6b 00 00 00 00  ....ASCII.... |"
            let hex = &rest[7..7 + 48];
            let bytes = hex
                .split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap());
            datagrams
                .last_mut()
                .expect("hex dump before a syscall")
                .1
                .extend(bytes);
        }
    }
    let mut messages = Vec::new();
    for (dir, dgram) in datagrams {
        let mut rest = dgram.as_slice();
        while rest.len() >= 16 {
            let len = u32::from_ne_bytes(rest[..4].try_into().unwrap()) as usize;
            messages.push((dir, rest[..len].to_vec()));
            rest = &rest[len.next_multiple_of(4).min(rest.len())..];
        }
    }
    assert!(!messages.is_empty(), "{path} has no messages");
    messages
}

fn sent(name: &str) -> Vec<Vec<u8>> {
    fixture(name)
        .into_iter()
        .filter(|(d, _)| *d == Dir::Sent)
        .map(|(_, m)| m)
        .collect()
}

fn received(name: &str) -> Vec<NetlinkMessage<RdmaMessage>> {
    fixture(name)
        .into_iter()
        .filter(|(d, _)| *d == Dir::Received)
        .map(|(_, m)| NetlinkMessage::<RdmaMessage>::deserialize(&m).unwrap())
        .collect()
}

fn seq(msg: &[u8]) -> u32 {
    u32::from_ne_bytes(msg[8..12].try_into().unwrap())
}

fn flags(msg: &[u8]) -> u16 {
    u16::from_ne_bytes(msg[6..8].try_into().unwrap())
}

/// How our socket sends each kind of request: `Socket::get` passes no flags, `Socket::dump`
/// `NLM_F_DUMP`, `Socket::request` `NLM_F_ACK`.
#[derive(Clone, Copy)]
enum Kind {
    Get,
    Dump,
    Request,
}

fn assert_same_as_iproute2(ours: RdmaMessage, kind: Kind, theirs: &[u8]) {
    let our_flags = match kind {
        Kind::Get => 0,
        Kind::Dump => NLM_F_DUMP,
        Kind::Request => NLM_F_ACK,
    };
    let ours = Socket::<RdmaMessage>::encode(ours, our_flags, seq(theirs));
    let mut theirs = theirs.to_vec();
    if !matches!(kind, Kind::Request) {
        assert_ne!(
            flags(&theirs) & NLM_F_ACK,
            0,
            "iproute2 always asks for an ACK"
        );
        let f = flags(&theirs) & !NLM_F_ACK;
        theirs[6..8].copy_from_slice(&f.to_ne_bytes());
    }
    assert_eq!(hex(&ours), hex(&theirs));
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_rdma_command_starts_with_the_same_device_dump() {
    for name in [
        "system-show",
        "dev-show",
        "link-show",
        "dev-set-netns",
        "link-add",
    ] {
        assert_same_as_iproute2(RdmaMessage::dev_dump(), Kind::Dump, &sent(name)[0]);
    }
}

#[test]
fn system_show_matches_iproute2() {
    assert_same_as_iproute2(RdmaMessage::sys_get(), Kind::Get, &sent("system-show")[1]);
}

#[test]
fn system_set_netns_matches_iproute2_exactly() {
    let excl = &sent("system-set-exclusive")[1];
    let shared = &sent("system-set-shared")[1];
    assert_same_as_iproute2(
        RdmaMessage::sys_set_netns_mode(NetnsMode::Exclusive.to_u8()),
        Kind::Request,
        excl,
    );
    assert_same_as_iproute2(
        RdmaMessage::sys_set_netns_mode(NetnsMode::Shared.to_u8()),
        Kind::Request,
        shared,
    );
}

#[test]
fn link_show_is_one_port_get_per_port() {
    let msgs = sent("link-show");
    assert_eq!(msgs.len(), 2, "one device with one port");
    assert_same_as_iproute2(RdmaMessage::port_get(0, 1), Kind::Get, &msgs[1]);
    assert_same_as_iproute2(
        RdmaMessage::port_get(0, 1),
        Kind::Get,
        &sent("link-show-rxe0-1")[1],
    );
}

#[test]
fn dev_show_one_device_matches_iproute2() {
    assert_same_as_iproute2(
        RdmaMessage::dev_get(0),
        Kind::Get,
        &sent("dev-show-rxe0")[1],
    );
}

#[test]
fn dev_set_netns_matches_iproute2_but_for_the_fd_number() {
    let theirs = &sent("dev-set-netns")[1];
    // The last attribute is RDMA_NLDEV_NET_NS_FD (68): take iproute2's descriptor number.
    assert_eq!(u16::from_ne_bytes(theirs[26..28].try_into().unwrap()), 68);
    let fd = u32::from_ne_bytes(theirs[28..32].try_into().unwrap());
    assert_same_as_iproute2(RdmaMessage::dev_set_netns(0, fd), Kind::Request, theirs);
}

#[test]
fn link_add_and_delete_match_iproute2_exactly() {
    assert_same_as_iproute2(
        RdmaMessage::link_add("rxe0", "rxe", "eth0"),
        Kind::Request,
        &sent("link-add")[1],
    );
    // rxe1 had index 1 when `rdma link delete rxe1` ran.
    assert_same_as_iproute2(
        RdmaMessage::link_delete(1),
        Kind::Request,
        &sent("link-delete")[1],
    );
}

#[test]
fn kernel_device_reply_decodes() {
    let replies = received("dev-show");
    let NetlinkPayload::InnerMessage(msg) = &replies[0].payload else {
        panic!("{:?}", replies[0]);
    };
    assert_eq!(msg.command, RDMA_NLDEV_CMD_GET);
    let dev = device_from(msg, "test").unwrap();
    assert_eq!(dev.index, 0);
    assert_eq!(dev.name, "rxe0");
    assert_eq!(dev.port_count, 1);
    // `rdma dev show` printed node_guid 5054:00ff:fe00:0001 (host byte order u64).
    assert_eq!(dev.node_guid, Some(0x5054_00ff_fe00_0001));
    assert_eq!(dev.node_type, Some(1));
    assert_eq!(dev.protocol.as_deref(), Some("roce"));
    assert!(matches!(replies[1].payload, NetlinkPayload::Done(_)));
}

#[test]
fn kernel_port_reply_decodes_with_its_netdev() {
    let replies = received("link-show-rxe0-1");
    // Kernel quirk: the answer to PORT_GET carries message type RDMA_NLDEV_CMD_GET (0x1401,
    // see the fixture), so replies are recognised by their sequence number, not their type.
    let port = replies
        .iter()
        .filter_map(|r| match &r.payload {
            NetlinkPayload::InnerMessage(m) => Some(m),
            _ => None,
        })
        .find(|m| {
            m.attributes
                .iter()
                .any(|a| matches!(a, RdmaAttribute::NdevName(_)))
        })
        .unwrap();
    assert_eq!(port.command, RDMA_NLDEV_CMD_GET);
    let port = port_from(port, "test").unwrap();
    // "link rxe0/1 state ACTIVE physical_state LINK_UP netdev eth0"
    assert_eq!((port.device_name.as_str(), port.port), ("rxe0", 1));
    assert_eq!(port.state, Some(PortState::Active));
    assert_eq!(port.phys_state, Some(5));
    assert_eq!(port.netdev.as_ref().map(|(_, n)| n.as_str()), Some("eth0"));
}

#[test]
fn kernel_system_reply_decodes_and_keeps_unknown_attributes() {
    let mode = |name| {
        received(name)
            .iter()
            .find_map(|r| match &r.payload {
                NetlinkPayload::InnerMessage(m) if m.command == RDMA_NLDEV_CMD_SYS_GET => {
                    Some(m.clone())
                }
                _ => None,
            })
            .unwrap()
    };
    let shared = mode("system-show");
    assert!(shared.attributes.contains(&RdmaAttribute::NetnsMode(1)));
    // copy-on-fork (93) and whatever else a kernel adds are kept, not refused.
    assert!(
        shared.attributes.iter().any(
            |a| matches!(a, RdmaAttribute::Other(n) if netlink_packet_core::Nla::kind(n) == 93)
        )
    );
    assert!(
        mode("system-show-exclusive")
            .attributes
            .contains(&RdmaAttribute::NetnsMode(0))
    );
}

#[test]
fn kernel_refusal_of_the_rxe_move_is_eopnotsupp() {
    let replies = received("dev-set-netns");
    let err = replies
        .iter()
        .find_map(|r| match &r.payload {
            NetlinkPayload::Error(e) => e.code,
            _ => None,
        })
        .unwrap();
    assert_eq!(err.get(), -libc::EOPNOTSUPP);
}

#[test]
fn every_fixture_reply_decodes_and_reencodes_identically() {
    let dir = format!("{}/tests/fixtures/rdma", env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    for entry in fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(name) = name.strip_suffix(".strace") else {
            continue;
        };
        for (_, raw) in fixture(name) {
            let msg = NetlinkMessage::<RdmaMessage>::deserialize(&raw)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            if let NetlinkPayload::InnerMessage(inner) = msg.payload {
                let mut header = msg.header;
                header.length = 0;
                let mut again = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(inner));
                again.finalize();
                let mut buf = vec![0; again.buffer_len()];
                again.serialize(&mut buf);
                assert_eq!(hex(&buf), hex(&raw), "{name}");
                count += 1;
            }
        }
    }
    assert!(count >= 20, "only {count} messages");
}

#[test]
fn netns_mode_values_follow_the_uapi() {
    // RDMA_NLDEV_SYS_ATTR_NETNS_MODE: 0 exclusive, 1 shared (rdma_netlink.h, rdma-cni).
    for mode in [NetnsMode::Exclusive, NetnsMode::Shared] {
        assert_eq!(NetnsMode::from_u8(mode.to_u8()), Some(mode));
    }
    assert_eq!(NetnsMode::Exclusive.to_u8(), 0);
    assert_eq!(NetnsMode::from_u8(7), None);
    assert_eq!(NetnsMode::Shared.to_string(), "shared");
    assert_eq!(nldev_type(RDMA_NLDEV_CMD_SYS_SET), 0x1407);
}
