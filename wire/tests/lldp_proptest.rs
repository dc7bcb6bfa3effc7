//! Property tests of the LLDP codec: encode/decode round trips over arbitrary valid LLDPDUs,
//! no panics on arbitrary or mutated input, decode idempotence, the schema round trip through
//! a local-system description, and the receive table's bookkeeping.

// Strategy helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::borrow::Cow;
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use spinel_wire::MacAddr;
use spinel_wire::lldp::basic::{ChassisId, ManagementAddress, PortId, SystemCapabilities};
use spinel_wire::lldp::dcbx::{
    AppEntry, AppPriorityTable, EtsConfiguration, EtsRecommendation, EtsTables, PfcConfiguration,
};
use spinel_wire::lldp::org::{LinkAggregation, MacPhy, OrgTlv, Oui, VlanName};
use spinel_wire::lldp::remote::RxOutcome;
use spinel_wire::lldp::{
    LldpFrame, LldpGroup, Lldpdu, LocalSystem, RemoteTable, Tlv, decode_frame,
};
use spinel_wire::neighbor::{ChassisIdSubtype, Neighbor, Observer, PortIdSubtype};

fn chassis_subtype() -> impl Strategy<Value = ChassisIdSubtype> {
    prop_oneof![
        Just(ChassisIdSubtype::ChassisComponent),
        Just(ChassisIdSubtype::InterfaceAlias),
        Just(ChassisIdSubtype::PortComponent),
        Just(ChassisIdSubtype::MacAddress),
        Just(ChassisIdSubtype::NetworkAddress),
        Just(ChassisIdSubtype::InterfaceName),
        Just(ChassisIdSubtype::Local),
    ]
}

fn port_subtype() -> impl Strategy<Value = PortIdSubtype> {
    prop_oneof![
        Just(PortIdSubtype::InterfaceAlias),
        Just(PortIdSubtype::PortComponent),
        Just(PortIdSubtype::MacAddress),
        Just(PortIdSubtype::NetworkAddress),
        Just(PortIdSubtype::InterfaceName),
        Just(PortIdSubtype::AgentCircuitId),
        Just(PortIdSubtype::Local),
    ]
}

/// Octet strings of `len` octets: arbitrary, or UTF-8 text (which survives the schema's
/// lossy string conversion unchanged).
fn octets(len: std::ops::RangeInclusive<usize>, text: bool) -> BoxedStrategy<Cow<'static, [u8]>> {
    if text {
        let max = *len.end();
        let min = *len.start();
        proptest::string::string_regex(&format!("[a-zA-Z0-9 ./:_-]{{{min},{max}}}"))
            .unwrap()
            .prop_map(|s| Cow::Owned(s.into_bytes()))
            .boxed()
    } else {
        vec(any::<u8>(), len).prop_map(Cow::Owned).boxed()
    }
}

/// IDs that are valid for their subtype in practice: MACs are 6 octets, network addresses
/// carry a family octet; anything else is arbitrary.
fn id_octets(mac: bool, network: bool, text: bool) -> BoxedStrategy<Cow<'static, [u8]>> {
    if mac {
        prop_oneof![
            4 => any::<[u8; 6]>().prop_map(|m| Cow::Owned(m.to_vec())),
            1 => octets(1..=20, false),
        ]
        .boxed()
    } else if network {
        prop_oneof![
            any::<[u8; 4]>().prop_map(|a| Cow::Owned([&[1u8][..], &a].concat())),
            any::<[u8; 16]>().prop_map(|a| Cow::Owned([&[2u8][..], &a].concat())),
            octets(1..=20, false),
        ]
        .boxed()
    } else {
        prop_oneof![octets(1..=255, text), octets(1..=40, false)].boxed()
    }
}

fn chassis_id(text: bool) -> impl Strategy<Value = ChassisId<'static>> {
    chassis_subtype().prop_flat_map(move |subtype| {
        id_octets(
            subtype == ChassisIdSubtype::MacAddress,
            subtype == ChassisIdSubtype::NetworkAddress,
            text,
        )
        .prop_map(move |id| ChassisId { subtype, id })
    })
}

fn port_id(text: bool) -> impl Strategy<Value = PortId<'static>> {
    port_subtype().prop_flat_map(move |subtype| {
        id_octets(
            subtype == PortIdSubtype::MacAddress,
            subtype == PortIdSubtype::NetworkAddress,
            text,
        )
        .prop_map(move |id| PortId { subtype, id })
    })
}

fn management_address() -> impl Strategy<Value = ManagementAddress<'static>> {
    let address = prop_oneof![
        Just(1u8).prop_flat_map(|f| (Just(f), any::<[u8; 4]>().prop_map(|a| a.to_vec()))),
        Just(2u8).prop_flat_map(|f| (Just(f), any::<[u8; 16]>().prop_map(|a| a.to_vec()))),
        Just(6u8).prop_flat_map(|f| (Just(f), any::<[u8; 6]>().prop_map(|a| a.to_vec()))),
        (any::<u8>(), vec(any::<u8>(), 1..=31)),
    ];
    (
        address,
        any::<u8>(),
        any::<u32>(),
        vec(any::<u8>(), 0..=128),
    )
        .prop_map(
            |((family, address), interface_numbering, interface_number, oid)| ManagementAddress {
                family,
                address: Cow::Owned(address),
                interface_numbering,
                interface_number,
                oid: Cow::Owned(oid),
            },
        )
}

fn ets_tables() -> impl Strategy<Value = EtsTables> {
    (any::<[u8; 8]>(), any::<[u8; 8]>(), any::<[u8; 8]>()).prop_map(|(tc, bw, tsa)| EtsTables {
        priority_tc: tc.map(|t| t & 0x0f),
        tc_bandwidth: bw,
        tsa,
    })
}

fn link_aggregation() -> impl Strategy<Value = LinkAggregation> {
    (any::<bool>(), any::<bool>(), 0u8..=3, any::<u32>()).prop_map(
        |(capable, enabled, port_type, port_id)| LinkAggregation {
            capable,
            enabled,
            port_type,
            port_id,
        },
    )
}

/// Organisational TLVs we keep raw: unknown OUIs, and subtypes of 802.1/802.3 we do not
/// decode (other than those lldpd checks lengths of).
fn raw_org() -> impl Strategy<Value = OrgTlv<'static>> {
    let oui = prop_oneof![
        any::<[u8; 3]>()
            .prop_map(Oui)
            .prop_filter("not a decoded OUI", |o| ![Oui::DOT1, Oui::DOT3, Oui::MED]
                .contains(o))
            .prop_map(|o| (o, None)),
        (13u8..=255).prop_map(|s| (Oui::DOT1, Some(s))),
        (5u8..=255).prop_map(|s| (Oui::DOT3, Some(s))),
    ];
    (oui, any::<u8>(), octets(0..=60, false)).prop_map(|((oui, fixed), subtype, info)| OrgTlv {
        oui,
        subtype: fixed.unwrap_or(subtype),
        info,
    })
}

fn tlv(text: bool) -> impl Strategy<Value = Tlv<'static>> {
    prop_oneof![
        octets(0..=255, text).prop_map(Tlv::PortDescription),
        octets(0..=255, text).prop_map(Tlv::SystemName),
        octets(0..=255, text).prop_map(Tlv::SystemDescription),
        (any::<u16>(), any::<u16>()).prop_map(|(supported, enabled)| Tlv::SystemCapabilities(
            SystemCapabilities { supported, enabled }
        )),
        management_address().prop_map(Tlv::ManagementAddress),
        any::<u16>().prop_map(Tlv::PortVlanId),
        (any::<u16>(), octets(0..=32, text))
            .prop_map(|(vid, name)| Tlv::VlanName(VlanName { vid, name })),
        link_aggregation().prop_map(Tlv::LinkAggregation),
        (any::<bool>(), any::<bool>(), any::<u16>(), any::<u16>()).prop_map(|(s, e, a, m)| {
            Tlv::MacPhy(MacPhy {
                autoneg_supported: s,
                autoneg_enabled: e,
                advertised: a,
                mau_type: m,
            })
        }),
        link_aggregation().prop_map(Tlv::LegacyLinkAggregation),
        any::<u16>().prop_map(Tlv::MaxFrameSize),
        (any::<bool>(), any::<bool>(), 1u8..=8, ets_tables()).prop_map(|(w, c, m, tables)| {
            Tlv::EtsConfiguration(EtsConfiguration {
                willing: w,
                cbs: c,
                max_tcs: m,
                tables,
            })
        }),
        ets_tables().prop_map(|tables| Tlv::EtsRecommendation(EtsRecommendation { tables })),
        (any::<bool>(), any::<bool>(), 0u8..=15, any::<u8>()).prop_map(|(w, m, c, e)| {
            Tlv::Pfc(PfcConfiguration {
                willing: w,
                mbc: m,
                capability: c,
                enabled: e,
            })
        }),
        vec((0u8..=7, 0u8..=7, any::<u16>()), 0..=40).prop_map(|entries| {
            let entries: Vec<AppEntry> = entries
                .into_iter()
                .map(|(priority, selector, protocol)| AppEntry {
                    priority,
                    selector,
                    protocol,
                })
                .collect();
            Tlv::ApplicationPriority(AppPriorityTable::from_entries(&entries).unwrap())
        }),
        raw_org().prop_map(Tlv::Org),
        (9u8..=126, octets(0..=60, false))
            .prop_map(|(tlv_type, value)| Tlv::Reserved { tlv_type, value }),
    ]
}

/// A kind key for TLVs 802.1AB allows only once (`None` for repeatable ones).
fn once_key(t: &Tlv<'_>) -> Option<u8> {
    Some(match t {
        Tlv::PortDescription(_) => 1,
        Tlv::SystemName(_) => 2,
        Tlv::SystemDescription(_) => 3,
        Tlv::SystemCapabilities(_) => 4,
        Tlv::PortVlanId(_) => 5,
        Tlv::LinkAggregation(_) => 6,
        Tlv::MacPhy(_) => 7,
        Tlv::LegacyLinkAggregation(_) => 8,
        Tlv::MaxFrameSize(_) => 9,
        Tlv::EtsConfiguration(_) => 10,
        Tlv::EtsRecommendation(_) => 11,
        Tlv::Pfc(_) => 12,
        Tlv::ApplicationPriority(_) => 13,
        _ => return None,
    })
}

/// Arbitrary valid LLDPDUs (TLVs that may appear only once do).
fn lldpdu(text: bool) -> impl Strategy<Value = Lldpdu<'static>> {
    (
        chassis_id(text),
        port_id(text),
        any::<u16>(),
        vec(tlv(text), 0..16),
    )
        .prop_map(|(chassis_id, port_id, ttl, tlvs)| {
            let mut seen = Vec::new();
            let tlvs = tlvs
                .into_iter()
                .filter(|t| match once_key(t) {
                    Some(k) if seen.contains(&k) => false,
                    Some(k) => {
                        seen.push(k);
                        true
                    }
                    None => true,
                })
                .collect();
            Lldpdu {
                chassis_id,
                port_id,
                ttl,
                tlvs,
            }
        })
}

fn frame_of(pdu: Lldpdu<'static>, vlan: bool) -> LldpFrame<'static> {
    LldpFrame {
        destination: LldpGroup::NearestBridge,
        source: MacAddr([0x02, 0, 0, 0, 0, 1]),
        vlan: vlan.then_some(spinel_wire::lldp::VlanTag {
            pcp: 7,
            dei: false,
            vid: 100,
        }),
        lldpdu: pdu,
    }
}

/// Decoding what we encoded from a decode gives the same value: decode is idempotent.
fn assert_idempotent(bytes: &[u8]) {
    if let Ok(first) = Lldpdu::decode(bytes) {
        let again = first.to_vec().expect("a decoded LLDPDU re-encodes");
        let second = Lldpdu::decode(&again).expect("a re-encoded LLDPDU decodes");
        assert_eq!(first, second);
        let _ = Neighbor::from(&first);
    }
}

proptest! {
    #[test]
    fn encode_then_decode_is_identity(pdu in lldpdu(false)) {
        let wire = pdu.to_vec().unwrap();
        let back = Lldpdu::decode(&wire).unwrap();
        prop_assert_eq!(&back, &pdu);
        prop_assert_eq!(back.to_vec().unwrap(), wire);
    }

    #[test]
    fn frames_round_trip_tagged_or_not(pdu in lldpdu(false), vlan in any::<bool>()) {
        let frame = frame_of(pdu, vlan);
        let wire = frame.to_vec(usize::MAX).unwrap();
        prop_assert!(wire.len() >= 60);
        let back = decode_frame(&wire).unwrap();
        prop_assert_eq!(back, frame);
    }

    #[test]
    fn schema_round_trip_through_a_local_description(pdu in lldpdu(true)) {
        // What a listener prints can be advertised again and heard the same.
        let heard = Neighbor::from(&pdu);
        let replayed = LocalSystem::from(&heard).lldpdu(heard.ttl).unwrap();
        let wire = replayed.to_vec().unwrap();
        prop_assert_eq!(Neighbor::from(&Lldpdu::decode(&wire).unwrap()), heard);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..700)) {
        let _ = decode_frame(&bytes);
        assert_idempotent(&bytes);
    }

    #[test]
    fn arbitrary_tlv_sequences_never_panic(
        tlvs in vec((0u8..=127, vec(any::<u8>(), 0..40)), 0..12),
        prefix in any::<bool>(),
    ) {
        // Well-framed TLVs with random types and contents reach deeper than random bytes.
        let mut bytes = Vec::new();
        if prefix {
            bytes.extend_from_slice(&[0x02, 0x07, 4, 2, 0, 0, 0, 0, 1, 0x04, 0x02, 7, b'p', 0x06, 0x02, 0, 120]);
        }
        for (t, v) in &tlvs {
            bytes.extend_from_slice(&((u16::from(*t) << 9) | v.len() as u16).to_be_bytes());
            bytes.extend_from_slice(v);
        }
        assert_idempotent(&bytes);
    }

    #[test]
    fn mutated_valid_frames_never_panic(
        pdu in lldpdu(false),
        edits in vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 1..8),
    ) {
        let mut bytes = frame_of(pdu, false).to_vec(usize::MAX).unwrap();
        for (at, value, op) in edits {
            let i = at.index(bytes.len().max(1));
            match op {
                0 if i < bytes.len() => bytes[i] = value,
                1 if i < bytes.len() => bytes[i] ^= 1 << (value % 8),
                2 => bytes.truncate(i),
                _ => bytes.insert(i.min(bytes.len()), value),
            }
        }
        let _ = decode_frame(&bytes);
        if bytes.len() > 14 {
            assert_idempotent(&bytes[14..]);
        }
    }
}

proptest! {
    #[test]
    fn receive_table_bookkeeping_holds(
        events in vec((0u8..6, 0u8..4, 0u16..5, 0u64..4), 1..80),
        cap in 1usize..5,
    ) {
        // (chassis, port name, ttl (0 = shutdown), seconds elapsed before the event)
        let t0 = Instant::now();
        let mut now = t0;
        let mut table = RemoteTable::new(cap);
        for (chassis, port, ttl, wait) in events {
            now += Duration::from_secs(wait);
            table.expire(now);
            let pdu = Lldpdu::new(
                ChassisId { subtype: ChassisIdSubtype::MacAddress, id: Cow::Owned(vec![2, 0, 0, 0, 0, chassis]) },
                PortId { subtype: PortIdSubtype::Local, id: Cow::Owned(vec![b'p', port]) },
                ttl,
            );
            let local = ["eth0", "eth1"][usize::from(port % 2)];
            let outcome = table.receive_lldpdu(local, &pdu, now);
            if ttl == 0 {
                prop_assert!(matches!(outcome, RxOutcome::Removed | RxOutcome::ShutdownUnknown));
            }
            let snap = table.snapshot(Observer { name: "n".into(), chassis_id: None, role: None }, now);
            for p in &snap.ports {
                let c = p.counters.unwrap();
                prop_assert!(p.neighbors.len() <= cap);
                prop_assert_eq!(c.inserts, c.deletes + p.neighbors.len() as u64);
                prop_assert!(c.ageouts <= c.deletes);
                prop_assert!(p.neighbors.iter().all(|n| n.ttl > 0 && n.age_seconds.unwrap() < u64::from(n.ttl)));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Updating a neighbour in place (what the receive table does on every refresh) gives the
    /// neighbour a fresh conversion gives, whatever it held before.
    #[test]
    fn updating_in_place_equals_converting_afresh(a in lldpdu(true), b in lldpdu(true)) {
        let mut n = Neighbor::from(&a);
        n.update_from(&b);
        prop_assert_eq!(&n, &Neighbor::from(&b));
        // And decoding with a recycled TLV list decodes the same.
        let wire = b.to_vec().unwrap();
        let mut spare = Vec::new();
        let first = Lldpdu::decode_reusing(&wire, &mut spare).unwrap();
        let capacity = first.tlvs.capacity();
        first.recycle(&mut spare);
        prop_assert!(spare.is_empty() && spare.capacity() == capacity);
        let again = Lldpdu::decode_reusing(&wire, &mut spare).unwrap();
        prop_assert_eq!(&again, &Lldpdu::decode(&wire).unwrap());
    }
}
