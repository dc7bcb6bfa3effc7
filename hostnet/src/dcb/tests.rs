//! The dcbnl codec against iproute2's `dcb`, byte for byte, and against how `dcb` prints a
//! reply.
//!
//! Fixtures: `hostnet/tests/fixtures/dcb/*.strace`, made by `capture.sh` there (iproute2 6.1's
//! `dcb` on a veth in a private namespace; the kernel answers EOPNOTSUPP). Requests that `dcb`
//! builds by reading first (`pfc set`, `ets set`) were answered by `fake_dcb_reply.so` with the
//! attributes recorded in the fixture's header; the same reply is decoded here and compared
//! with what `dcb ... show` printed for it.
//!
//! Normalisation: only the sequence number (bytes 8..12; iproute2 uses `time(NULL)`): ours is
//! encoded with iproute2's. Flags match as they are: both ask for an ACK on every request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;

use netlink_packet_core::{
    NLM_F_ACK, NetlinkDeserializable, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};

use super::*;
use crate::netlink::Socket;

struct Fixture {
    sent: Vec<Vec<u8>>,
    received: Vec<Vec<u8>>,
    fake_reply: Option<Vec<u8>>,
    output: Vec<String>,
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn fixture(name: &str) -> Fixture {
    let path = format!(
        "{}/tests/fixtures/dcb/{name}.strace",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut datagrams: Vec<(bool, Vec<u8>)> = Vec::new();
    let mut fx = Fixture {
        sent: Vec::new(),
        received: Vec::new(),
        fake_reply: None,
        output: Vec::new(),
    };
    for line in text.lines() {
        if let Some(hex) = line.strip_prefix("# fake IEEE_GET reply attributes (fake_reply.py): ") {
            fx.fake_reply = Some(unhex(hex.trim()));
        } else if let Some(out) = line.strip_prefix("# output: ") {
            fx.output.push(out.trim_end().to_owned());
        } else if line.starts_with("sendto(") || line.starts_with("sendmsg(") {
            datagrams.push((true, Vec::new()));
        } else if line.starts_with("recvmsg(") || line.starts_with("recvfrom(") {
            datagrams.push((false, Vec::new()));
        } else if let Some(rest) = line.strip_prefix(" | ") {
            let bytes = rest[7..7 + 48]
                .split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap());
            datagrams
                .last_mut()
                .expect("hex before a syscall")
                .1
                .extend(bytes);
        }
    }
    for (sent, dgram) in datagrams {
        let mut rest = dgram.as_slice();
        while rest.len() >= 16 {
            let len = u32::from_ne_bytes(rest[..4].try_into().unwrap()) as usize;
            let msg = rest[..len].to_vec();
            if sent {
                fx.sent.push(msg);
            } else {
                fx.received.push(msg);
            }
            rest = &rest[len.next_multiple_of(4).min(rest.len())..];
        }
    }
    fx
}

fn seq(msg: &[u8]) -> u32 {
    u32::from_ne_bytes(msg[8..12].try_into().unwrap())
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn assert_same_as_dcb(ours: DcbMessage, theirs: &[u8]) {
    let ours = Socket::<DcbMessage>::encode(ours, NLM_F_ACK, seq(theirs));
    assert_eq!(hex(&ours), hex(theirs));
}

/// The fake reply the shim gave `dcb`, decoded as a kernel reply.
fn fake_reply(name: &str) -> IeeeState {
    let attrs = fixture(name).fake_reply.expect("fixture has a fake reply");
    let mut payload = vec![0, DCB_CMD_IEEE_GET, 0, 0];
    payload.extend(attrs);
    let mut header = NetlinkHeader::default();
    header.message_type = RTM_GETDCB;
    let msg = DcbMessage::deserialize(&header, &payload).unwrap();
    IeeeState::from_message(&msg)
}

#[test]
fn every_show_is_one_ieee_get() {
    for name in ["ieee-get", "dcbx-show"] {
        let fx = fixture(name);
        assert_eq!(fx.sent.len(), 1, "{name}");
        assert_same_as_dcb(DcbMessage::ieee_get("dcb0"), &fx.sent[0]);
    }
}

#[test]
fn pfc_set_is_a_read_modify_write_like_dcb() {
    let mut pfc = fake_reply("pfc-set").pfc.unwrap();
    pfc.pfc_en = IeeePfc::bitmap(&[3]);
    assert_same_as_dcb(
        DcbMessage::ieee_set_pfc("dcb0", pfc),
        &fixture("pfc-set").sent[0],
    );
}

#[test]
fn ets_set_matches_dcb() {
    let mut ets = fake_reply("ets-set").ets.unwrap();
    ets.prio_tc = [0, 0, 0, 3, 0, 0, 6, 0];
    ets.tc_tsa = [2, 2, 2, 2, 2, 2, 0, 2];
    ets.tc_tx_bw = [50, 0, 0, 50, 0, 0, 0, 0];
    assert_same_as_dcb(
        DcbMessage::ieee_set_ets("dcb0", ets),
        &fixture("ets-set").sent[0],
    );
}

#[test]
fn app_add_and_del_match_dcb() {
    assert_same_as_dcb(
        DcbMessage::ieee_set_app("dcb0", vec![DcbApp::dscp(26, 3), DcbApp::dscp(48, 6)]),
        &fixture("app-add").sent[0],
    );
    assert_same_as_dcb(
        DcbMessage::ieee_del_app("dcb0", vec![DcbApp::dscp(24, 3)]),
        &fixture("app-del").sent[0],
    );
}

#[test]
fn dcbx_set_matches_dcb() {
    assert_same_as_dcb(
        DcbMessage::set_dcbx("dcb0", DCBX_HOST | DCBX_VER_IEEE),
        &fixture("dcbx-set").sent[0],
    );
}

#[test]
fn the_kernel_answers_eopnotsupp_for_a_veth() {
    for name in ["ieee-get", "pfc-set", "app-add", "dcbx-set"] {
        let fx = fixture(name);
        let reply = NetlinkMessage::<DcbMessage>::deserialize(&fx.received[0]).unwrap();
        let NetlinkPayload::Error(err) = reply.payload else {
            panic!("{name}: not an error reply");
        };
        assert_eq!(err.raw_code(), -libc::EOPNOTSUPP, "{name}");
    }
}

/// `prio-pfc 0:off 1:off ...` → the priorities that are on.
fn on_priorities(line: &str, key: &str) -> Vec<u8> {
    let rest = line.split(key).nth(1).unwrap();
    rest.split_whitespace()
        .take_while(|w| w.contains(':'))
        .filter(|w| w.ends_with(":on"))
        .map(|w| w.split(':').next().unwrap().parse().unwrap())
        .collect()
}

/// `tc-bw 0:50 1:0 ...` → the eight values.
fn per_index(output: &[String], key: &str) -> Vec<String> {
    let line = output
        .iter()
        .find(|l| l.starts_with(&format!("{key} ")))
        .unwrap_or_else(|| panic!("no {key} in {output:?}"));
    line.split_whitespace()
        .skip(1)
        .map(|w| w.split(':').nth(1).unwrap().to_owned())
        .collect()
}

#[test]
fn decoded_pfc_agrees_with_dcb_pfc_show() {
    let state = fake_reply("pfc-show-fake");
    let fx = fixture("pfc-show-fake");
    let pfc = state.pfc.unwrap();
    assert_eq!(
        fx.output[0],
        format!(
            "pfc-cap {} macsec-bypass off delay {}",
            pfc.pfc_cap, pfc.delay
        )
    );
    assert_eq!(pfc.enabled(), on_priorities(&fx.output[1], "prio-pfc"));
    assert_eq!(pfc.enabled(), vec![4]);
}

#[test]
fn decoded_ets_agrees_with_dcb_ets_show() {
    let ets = fake_reply("ets-show-fake").ets.unwrap();
    let out = fixture("ets-show-fake").output;
    assert_eq!(out[0], "willing on ets-cap 8 cbs off");
    assert_eq!((ets.willing, ets.ets_cap, ets.cbs), (1, 8, 0));
    let num = |a: &[u8; 8]| a.iter().map(u8::to_string).collect::<Vec<_>>();
    assert_eq!(per_index(&out, "tc-bw"), num(&ets.tc_tx_bw));
    assert_eq!(per_index(&out, "prio-tc"), num(&ets.prio_tc));
    let tsa = |t: &u8| match t {
        0 => "strict".to_owned(),
        1 => "cbs".to_owned(),
        2 => "ets".to_owned(),
        _ => "vendor".to_owned(),
    };
    assert_eq!(
        per_index(&out, "tc-tsa"),
        ets.tc_tsa.iter().map(tsa).collect::<Vec<_>>()
    );
}

#[test]
fn decoded_app_table_and_dcbx_agree_with_dcb() {
    let state = fake_reply("app-show-fake");
    // dcb names DSCP 26 AF31 and 48 CS6.
    assert_eq!(fixture("app-show-fake").output[0], "dscp-prio AF31:3 CS6:6");
    assert_eq!(state.dscp_priorities(), vec![(26, 3), (48, 6)]);
    assert_eq!(fixture("dcbx-show-fake").output[0], "host ieee");
    assert_eq!(dcbx_flag_names(state.dcbx.unwrap()), ["host", "ieee"]);
}

#[test]
fn a_set_reply_carries_the_drivers_status() {
    // dcbnl_ieee_set answers with DCB_ATTR_IEEE as a u8 status (kernel net/dcb/dcbnl.c).
    let payload = [0, DCB_CMD_IEEE_SET, 0, 0, 5, 0, 13, 0, 0xea, 0, 0, 0];
    let mut header = NetlinkHeader::default();
    header.message_type = RTM_SETDCB;
    let msg = DcbMessage::deserialize(&header, &payload).unwrap();
    assert_eq!(msg.attributes, vec![DcbAttribute::IeeeStatus(0xea)]);
}

#[test]
fn truncated_replies_are_errors_not_panics() {
    let attrs = fixture("pfc-show-fake").fake_reply.unwrap();
    let mut header = NetlinkHeader::default();
    header.message_type = RTM_GETDCB;
    for cut in 0..attrs.len() {
        let mut payload = vec![0, DCB_CMD_IEEE_GET, 0, 0];
        payload.extend(&attrs[..cut]);
        let _ = DcbMessage::deserialize(&header, &payload);
    }
    assert!(DcbMessage::deserialize(&header, &[0, 21]).is_err());
    header.message_type = 16;
    assert!(DcbMessage::deserialize(&header, &[0, 21, 0, 0]).is_err());
}

#[test]
fn a_trust_table_round_trips() {
    let msg = DcbMessage {
        message_type: RTM_GETDCB,
        command: DCB_CMD_IEEE_GET,
        attributes: vec![
            DcbAttribute::IfName("ens1f0np0".into()),
            DcbAttribute::Ieee(vec![IeeeAttribute::TrustTable(vec![
                APP_SEL_DSCP,
                APP_SEL_PCP,
            ])]),
        ],
    };
    let bytes = Socket::<DcbMessage>::encode(msg.clone(), 0, 1);
    let back = NetlinkMessage::<DcbMessage>::deserialize(&bytes).unwrap();
    let NetlinkPayload::InnerMessage(inner) = back.payload else {
        panic!("not a dcb message");
    };
    assert_eq!(
        IeeeState::from_message(&inner).trust,
        Some(vec![APP_SEL_DSCP, APP_SEL_PCP])
    );
}

#[test]
fn a_recorded_reply_payload_decodes_as_the_kernel_reply_does() {
    let attrs = fixture("pfc-set").fake_reply.unwrap();
    let mut payload = vec![0, DCB_CMD_IEEE_GET, 0, 0];
    payload.extend(attrs);
    let state = IeeeState::from_reply_payload(&payload).unwrap();
    assert_eq!(state, fake_reply("pfc-set"));
    assert!(state.pfc.is_some());
    assert!(IeeeState::from_reply_payload(&[0, 1]).is_err());
}
