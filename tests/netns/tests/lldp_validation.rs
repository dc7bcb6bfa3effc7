//! Receive validation at least as strict as lldpd's, checked against the real thing: each
//! malformed LLDPDU is sent over a veth to lldpd and handed to our decoder; every frame lldpd
//! discards we must reject too.

// Helpers here fail the test loudly, like the harness.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hostnet::netns::NetNs;
use hostnet::packet::{PacketConfig, PacketSocket};
use spinel_netns_tests::Sandbox;
use spinel_netns_tests::lldpd::{self, Lldpd, wait_until};
use spinel_wire::lldp::{LldpGroup, decode_frame};

fn tlv(t: u8, value: &[u8]) -> Vec<u8> {
    let mut v = ((u16::from(t) << 9) | value.len() as u16)
        .to_be_bytes()
        .to_vec();
    v.extend_from_slice(value);
    v
}

fn org(oui: [u8; 3], subtype: u8, info: &[u8]) -> Vec<u8> {
    let mut v = oui.to_vec();
    v.push(subtype);
    v.extend_from_slice(info);
    tlv(127, &v)
}

const DOT1: [u8; 3] = [0x00, 0x80, 0xc2];
const DOT3: [u8; 3] = [0x00, 0x12, 0x0f];
const MED: [u8; 3] = [0x00, 0x12, 0xbb];

fn chassis() -> Vec<u8> {
    tlv(1, &[4, 0x02, 0, 0, 0, 0, 0x42])
}
fn port() -> Vec<u8> {
    tlv(2, b"\x05eth0")
}
fn ttl() -> Vec<u8> {
    tlv(3, &[0, 120])
}
fn end() -> Vec<u8> {
    tlv(0, &[])
}

/// Chassis, Port, TTL, `middle`, End.
fn lldpdu(middle: &[Vec<u8>]) -> Vec<u8> {
    let mut parts = vec![chassis(), port(), ttl()];
    parts.extend_from_slice(middle);
    parts.push(end());
    parts.concat()
}

/// What lldpd 1.0.16 does with an LLDPDU (observed through its rx_discarded counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lldpd116 {
    Discards,
    Accepts,
}

fn cases() -> Vec<(&'static str, Vec<u8>, Lldpd116)> {
    use Lldpd116::*;
    let mut cases = vec![
        // Mandatory TLVs: order, duplicates, presence, End.
        (
            "port ID first",
            [port(), chassis(), ttl(), end()].concat(),
            Discards,
        ),
        (
            "TTL before port ID",
            [chassis(), ttl(), port(), end()].concat(),
            Discards,
        ),
        ("second chassis ID", lldpdu(&[chassis()]), Discards),
        ("second port ID", lldpdu(&[port()]), Discards),
        ("second TTL", lldpdu(&[ttl()]), Discards),
        ("no TTL", [chassis(), port(), end()].concat(), Discards),
        ("only End", end(), Discards),
        (
            "End with length 1",
            [chassis(), port(), ttl(), tlv(0, &[0])].concat(),
            Discards,
        ),
        // The frame ends right after the TTL: no End, and no padding that could pass for one.
        ("no End", [chassis(), port(), ttl()].concat(), Discards),
        // Framing.
        (
            "TLV longer than the frame",
            [chassis(), port(), ttl(), vec![0x0a, 0x40, b'x']].concat(),
            Discards,
        ),
        (
            "half a TLV header",
            [chassis(), port(), ttl(), vec![0x0a]].concat(),
            Discards,
        ),
        // IDs.
        (
            "chassis subtype 0",
            [tlv(1, &[0, 1]), port(), ttl(), end()].concat(),
            Discards,
        ),
        (
            "chassis subtype 8",
            [tlv(1, &[8, 1]), port(), ttl(), end()].concat(),
            Discards,
        ),
        (
            "port subtype 0",
            [chassis(), tlv(2, &[0, 1]), ttl(), end()].concat(),
            Discards,
        ),
        (
            "chassis ID without ID",
            [tlv(1, &[4]), port(), ttl(), end()].concat(),
            Discards,
        ),
        (
            "chassis ID of 257 octets",
            [
                tlv(1, &[[7u8].as_slice(), &[b'a'; 256]].concat()),
                port(),
                ttl(),
                end(),
            ]
            .concat(),
            Discards,
        ),
        (
            "TTL of 1 octet",
            [chassis(), port(), tlv(3, &[0]), end()].concat(),
            Discards,
        ),
        // Basic optional TLVs.
        (
            "capabilities of 3 octets",
            lldpdu(&[tlv(7, &[0, 4, 0])]),
            Discards,
        ),
        (
            "management address string of 33",
            lldpdu(&[tlv(
                8,
                &[[33u8].as_slice(), &[1; 33], &[2, 0, 0, 0, 1, 0]].concat(),
            )]),
            Discards,
        ),
        (
            "management address without interface fields",
            lldpdu(&[tlv(8, &[5, 1, 10, 0, 0, 1, 2, 0])]),
            Discards,
        ),
        // Organisational TLVs lldpd decodes.
        ("org TLV of 3 octets", lldpdu(&[tlv(127, &DOT1)]), Discards),
        ("PVID of 5", lldpdu(&[org(DOT1, 1, &[1])]), Discards),
        ("PPVID of 6", lldpdu(&[org(DOT1, 2, &[0, 1])]), Discards),
        ("VLAN name of 6", lldpdu(&[org(DOT1, 3, &[0, 1])]), Discards),
        (
            "VLAN name longer than its TLV",
            lldpdu(&[org(DOT1, 3, &[0, 1, 9, b'v'])]),
            Discards,
        ),
        (
            "protocol identity of 4",
            lldpdu(&[org(DOT1, 4, &[])]),
            Discards,
        ),
        (
            "protocol identity shorter than its length",
            lldpdu(&[org(DOT1, 4, &[4, 1])]),
            Discards,
        ),
        (
            "MAC/PHY of 8",
            lldpdu(&[org(DOT3, 1, &[0, 0, 0, 0])]),
            Discards,
        ),
        (
            "power via MDI of 6",
            lldpdu(&[org(DOT3, 2, &[0, 0])]),
            Discards,
        ),
        (
            "802.3 link aggregation of 8",
            lldpdu(&[org(DOT3, 3, &[0, 0, 0, 0])]),
            Discards,
        ),
        ("MFS of 5", lldpdu(&[org(DOT3, 4, &[0x23])]), Discards),
        (
            "LLDP-MED capabilities of 6",
            lldpdu(&[org(MED, 1, &[0, 0])]),
            Discards,
        ),
        (
            "LLDP-MED policy of 7",
            lldpdu(&[org(MED, 2, &[0, 0, 0])]),
            Discards,
        ),
        // Stricter than lldpd 1.0.16: rejected by us (and by lldpd 1.0.22 for the first one).
        (
            "management address string of 0",
            lldpdu(&[tlv(8, &[0, 2, 0, 0, 0, 0, 0])]),
            Accepts,
        ),
        (
            "management address string of 1",
            lldpdu(&[tlv(8, &[1, 1, 2, 0, 0, 0, 0, 0])]),
            Accepts,
        ),
        (
            "TTL of 3 octets",
            [chassis(), port(), tlv(3, &[0, 120, 0]), end()].concat(),
            Accepts,
        ),
    ];
    // Frames both accept (we may discard a single TLV, never the LLDPDU).
    cases.extend([
        ("minimal", lldpdu(&[]), Accepts),
        ("reserved TLV type 9", lldpdu(&[tlv(9, b"future")]), Accepts),
        ("empty system name", lldpdu(&[tlv(5, b"")]), Accepts),
        (
            "two system names",
            lldpdu(&[tlv(5, b"a"), tlv(5, b"b")]),
            Accepts,
        ),
        ("PVID of 7", lldpdu(&[org(DOT1, 1, &[0, 1, 0])]), Accepts),
        (
            "ETS configuration of 24",
            lldpdu(&[org(DOT1, 9, &[0; 20])]),
            Accepts,
        ),
        (
            "unknown OUI",
            lldpdu(&[org([0x00, 0x1b, 0x21], 2, &[1, 2, 3])]),
            Accepts,
        ),
        (
            "padding after End",
            [lldpdu(&[]), vec![0xff; 30]].concat(),
            Accepts,
        ),
    ]);
    cases
}

/// Cases we reject although lldpd 1.0.16 accepts them.
const STRICTER: [&str; 3] = [
    "management address string of 0",
    "management address string of 1",
    "TTL of 3 octets",
];

#[test]
fn every_lldpdu_lldpd_discards_we_reject_too() {
    lldpd::require_lldpd();
    let mut sb = Sandbox::new("lldpd_validation_parity");
    sb.netns("switch");
    sb.netns("host");
    lldpd::veth(&sb, "switch", "swp1", "host", "ens1f0");
    let switch = Lldpd::start(&mut sb, "switch", &["swp1"], "", &["-r"]);
    let host = NetNs::open(sb.netns_path("host")).unwrap();
    let tx = PacketSocket::open(&host, "ens1f0", &PacketConfig::send_only()).unwrap();

    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (name, pdu, expected) in cases() {
        let mut frame = Vec::new();
        frame.extend_from_slice(&LldpGroup::NearestBridge.mac().0);
        frame.extend_from_slice(&tx.mac());
        frame.extend_from_slice(&0x88ccu16.to_be_bytes());
        frame.extend_from_slice(&pdu);
        let ours = decode_frame(&frame);

        let before = switch.stats("swp1");
        tx.send(&frame).unwrap();
        let mut after = before;
        wait_until(
            Duration::from_secs(5),
            &format!("lldpd to receive {name:?}"),
            || {
                after = switch.stats("swp1");
                after.rx > before.rx
            },
        );
        let lldpd = if after.rx_discarded > before.rx_discarded {
            Lldpd116::Discards
        } else {
            Lldpd116::Accepts
        };
        report.push(format!(
            "{name}: lldpd {lldpd:?}, spinel {:?}",
            ours.as_ref().err()
        ));
        if lldpd != expected {
            failures.push(format!(
                "{name}: lldpd 1.0.16 {lldpd:?}, expected {expected:?}"
            ));
        }
        if lldpd == Lldpd116::Discards && ours.is_ok() {
            failures.push(format!("{name}: lldpd discards it but we accept it"));
        }
        let stricter = STRICTER.contains(&name);
        if stricter && ours.is_ok() {
            failures.push(format!("{name}: we must reject it"));
        }
        if !stricter && lldpd == Lldpd116::Accepts && ours.is_err() {
            failures.push(format!("{name}: both should accept it, we say {ours:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nall cases:\n{}",
        failures.join("\n"),
        report.join("\n")
    );
}
