//! The hand-computed worked example of research §2.6: a leaf port advertising RoCE in the
//! NVIDIA style. Decoded field by field, converted to the schema, and re-encoded byte for byte.

use spinel_wire::MacAddr;
use spinel_wire::lldp::dcbx::{AppEntry, selector};
use spinel_wire::lldp::{LldpFrame, LldpGroup, Tlv, decode_frame};
use spinel_wire::neighbor::{ChassisIdSubtype, Neighbor, PortIdSubtype};

#[rustfmt::skip]
const WORKED_EXAMPLE: &[u8] = &[
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x0c, 0x42, 0xa1, 0x00, 0x00, 0x01, 0x88, 0xcc,
    0x02, 0x07, 0x04, 0x0c, 0x42, 0xa1, 0x00, 0x00, 0x01,
    0x04, 0x05, 0x05, 0x73, 0x77, 0x70, 0x31,
    0x06, 0x02, 0x00, 0x78,
    0x0a, 0x06, 0x6c, 0x65, 0x61, 0x66, 0x30, 0x31,
    0x0e, 0x04, 0x00, 0x14, 0x00, 0x14,
    0xfe, 0x19, 0x00, 0x80, 0xc2, 0x09, 0x00, 0x00, 0x03, 0x00, 0x60,
    0x32, 0x00, 0x00, 0x32, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00,
    0xfe, 0x06, 0x00, 0x80, 0xc2, 0x0b, 0x08, 0x08,
    0xfe, 0x0e, 0x00, 0x80, 0xc2, 0x0c, 0x00, 0x63, 0x12, 0xb7, 0x65, 0x00, 0x1a, 0xc5, 0x00, 0x30,
    0xfe, 0x06, 0x00, 0x12, 0x0f, 0x04, 0x23, 0xf0,
    0x00, 0x00,
];

#[test]
fn worked_example_decodes_field_by_field() {
    let frame = decode_frame(WORKED_EXAMPLE).unwrap();
    assert_eq!(frame.destination, LldpGroup::NearestBridge);
    assert_eq!(frame.source, MacAddr([0x0c, 0x42, 0xa1, 0, 0, 1]));
    assert_eq!(frame.vlan, None);
    let pdu = &frame.lldpdu;
    assert_eq!(pdu.chassis_id.subtype, ChassisIdSubtype::MacAddress);
    assert_eq!(&*pdu.chassis_id.id, &[0x0c, 0x42, 0xa1, 0, 0, 1]);
    assert_eq!(pdu.port_id.subtype, PortIdSubtype::InterfaceName);
    assert_eq!(&*pdu.port_id.id, b"swp1");
    assert_eq!(pdu.ttl, 120);
    assert_eq!(pdu.tlvs.len(), 6);
    assert!(matches!(&pdu.tlvs[0], Tlv::SystemName(n) if &**n == b"leaf01"));
    match &pdu.tlvs[1] {
        Tlv::SystemCapabilities(c) => assert_eq!((c.supported, c.enabled), (0x14, 0x14)),
        other => panic!("{other:?}"),
    }
    match &pdu.tlvs[2] {
        Tlv::EtsConfiguration(e) => {
            assert!(!e.willing && !e.cbs);
            assert_eq!(e.max_tcs, 8);
            assert_eq!(e.tables.priority_tc, [0, 0, 0, 3, 0, 0, 6, 0]);
            assert_eq!(e.tables.tc_bandwidth, [50, 0, 0, 50, 0, 0, 0, 0]);
            assert_eq!(e.tables.tsa, [2, 0, 0, 2, 0, 0, 0, 0]);
        }
        other => panic!("{other:?}"),
    }
    match &pdu.tlvs[3] {
        Tlv::Pfc(p) => assert_eq!((p.willing, p.capability, p.enabled), (false, 8, 0x08)),
        other => panic!("{other:?}"),
    }
    match &pdu.tlvs[4] {
        Tlv::ApplicationPriority(t) => assert_eq!(
            t.iter().collect::<Vec<_>>(),
            [
                AppEntry {
                    priority: 3,
                    selector: selector::UDP_PORT,
                    protocol: 4791
                },
                AppEntry {
                    priority: 3,
                    selector: selector::DSCP,
                    protocol: 26
                },
                AppEntry {
                    priority: 6,
                    selector: selector::DSCP,
                    protocol: 48
                },
            ]
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(pdu.tlvs[5], Tlv::MaxFrameSize(9200));
}

#[test]
fn worked_example_re_encodes_byte_for_byte() {
    let frame = decode_frame(WORKED_EXAMPLE).unwrap();
    assert_eq!(frame.to_vec(1500).unwrap(), WORKED_EXAMPLE);
    // Also once it owns its octets, as a transmitter holds it.
    let owned = LldpFrame {
        lldpdu: frame.lldpdu.clone().into_owned(),
        ..frame
    };
    assert_eq!(owned.to_vec(1500).unwrap(), WORKED_EXAMPLE);
}

#[test]
fn worked_example_in_the_stable_schema() {
    let frame = decode_frame(WORKED_EXAMPLE).unwrap();
    let n = Neighbor::from(&frame.lldpdu);
    let json = serde_json::to_value(&n).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "chassis_id": {"subtype": "mac_address", "value": "0c:42:a1:00:00:01"},
            "port_id": {"subtype": "interface_name", "value": "swp1"},
            "ttl": 120,
            "system_name": "leaf01",
            "capabilities": {"supported": ["bridge", "router"], "enabled": ["bridge", "router"]},
            "max_frame_size": 9200,
            "dcbx": {
                "ets_configuration": {
                    "willing": false, "cbs": false, "max_tcs": 8,
                    "priority_tc": [0, 0, 0, 3, 0, 0, 6, 0],
                    "tc_bandwidth": [50, 0, 0, 50, 0, 0, 0, 0],
                    "tsa": ["ets", "strict", "strict", "ets", "strict", "strict", "strict", "strict"]
                },
                "pfc": {"willing": false, "mbc": false, "capability": 8, "enabled_priorities": [3]},
                "application_priority": [
                    {"priority": 3, "selector": "udp_port", "protocol": 4791},
                    {"priority": 3, "selector": "dscp", "protocol": 26},
                    {"priority": 6, "selector": "dscp", "protocol": 48}
                ]
            }
        })
    );
}

#[test]
fn tagged_worked_example_keeps_its_tag() {
    let mut tagged = WORKED_EXAMPLE[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0xe0, 0x64]);
    tagged.extend_from_slice(&WORKED_EXAMPLE[12..]);
    let frame = decode_frame(&tagged).unwrap();
    let tag = frame.vlan.unwrap();
    assert_eq!((tag.pcp, tag.dei, tag.vid), (7, false, 100));
    assert_eq!(frame.to_vec(1500).unwrap(), tagged);
}
