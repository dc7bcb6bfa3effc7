//! The fuzz corpus in the regular test suite.
//!
//! - Every file under `fuzz/seeds/lldp_decode` and `fuzz/regressions/lldp_decode` (and the
//!   working corpus `fuzz/corpus/lldp_decode`, where a local fuzzing run left one) goes through
//!   the same checks as the fuzz target: no panic, and a decoded LLDPDU survives an
//!   encode/decode round trip unchanged.
//! - The seed files are our own frames, generated here; the test fails when they are stale.
//!   Regenerate with `SPINEL_WRITE_SEEDS=1 cargo test -p spinel-wire --test lldp_corpus`.

// Corpus plumbing fails loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use spinel_wire::MacAddr;
use spinel_wire::lldp::{
    LldpFrame, LldpGroup, Lldpdu, LocalSystem, RemoteTable, VlanTag, decode_frame,
};
use spinel_wire::neighbor::{
    AppPriority, AppSelector, Capabilities, Capability, ChassisId, ChassisIdSubtype, Dcbx,
    EtsConfiguration, EtsRecommendation, LinkAggregation, MacPhy, ManagementAddress, Neighbor,
    PfcConfiguration, PortId, PortIdSubtype, Tsa, UnknownTlv, VlanName,
};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The fuzz target's checks (`fuzz/fuzz_targets/lldp_decode.rs`), replayed.
fn check_like_the_fuzz_target(data: &[u8]) {
    fn check(pdu: &Lldpdu<'_>) {
        let wire = pdu.to_vec().expect("a decoded LLDPDU must re-encode");
        let again = Lldpdu::decode(&wire).expect("a re-encoded LLDPDU must decode");
        assert_eq!(&again, pdu, "decode is not idempotent");
        let neighbor = Neighbor::from(pdu);
        serde_json::to_string(&neighbor).unwrap();
        let _ = LocalSystem::from(&neighbor).lldpdu(neighbor.ttl);
    }
    if let Ok(frame) = decode_frame(data) {
        check(&frame.lldpdu);
        let wire = frame.to_vec(usize::MAX).unwrap();
        assert_eq!(decode_frame(&wire).unwrap(), frame);
    }
    if let Ok(pdu) = Lldpdu::decode(data) {
        check(&pdu);
    }
    let mut table = RemoteTable::new(2);
    table.receive_frame("eth0", data, Instant::now());
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn every_corpus_file_replays_cleanly() {
    let mut count = 0;
    for dir in [
        "seeds/lldp_decode",
        "regressions/lldp_decode",
        "corpus/lldp_decode",
    ] {
        for path in files(&fuzz_dir().join(dir)) {
            let data = std::fs::read(&path).unwrap();
            let result = std::panic::catch_unwind(|| check_like_the_fuzz_target(&data));
            assert!(result.is_ok(), "{} fails the fuzz checks", path.display());
            count += 1;
        }
    }
    assert!(count >= seeds().len(), "only {count} corpus files found");
}

const LEAF_MAC: MacAddr = MacAddr([0x0c, 0x42, 0xa1, 0x00, 0x00, 0x01]);

fn frame(destination: LldpGroup, vlan: Option<VlanTag>, lldpdu: Lldpdu<'static>) -> Vec<u8> {
    LldpFrame {
        destination,
        source: LEAF_MAC,
        vlan,
        lldpdu,
    }
    .to_vec(usize::MAX)
    .unwrap()
}

/// What a SONiC leaf with RoCE QoS says on a host-facing port: the benchmark's frame.
pub fn typical_switch() -> LocalSystem {
    let tables = (
        [0, 0, 0, 3, 0, 0, 6, 0],
        [50, 0, 0, 50, 0, 0, 0, 0],
        [
            Tsa::Ets,
            Tsa::Strict,
            Tsa::Strict,
            Tsa::Ets,
            Tsa::Strict,
            Tsa::Strict,
            Tsa::Strict,
            Tsa::Strict,
        ],
    );
    LocalSystem {
        chassis_id: ChassisId {
            subtype: ChassisIdSubtype::MacAddress,
            value: LEAF_MAC.to_string(),
        },
        port_id: PortId {
            subtype: PortIdSubtype::Local,
            value: "etp1".into(),
        },
        port_description: Some("gpu-node-17:ens1f0np0".into()),
        system_name: Some("leaf01".into()),
        system_description: Some(
            "SONiC Software Version: SONiC.202405 - HwSku: Mellanox-SN5600 - Distribution: Debian 12.6 - Kernel: 6.1.0-22-2-amd64".into(),
        ),
        capabilities: Some(Capabilities {
            supported: vec![Capability::Bridge, Capability::Router],
            enabled: vec![Capability::Bridge, Capability::Router],
        }),
        management_addresses: vec![ManagementAddress {
            family: 1,
            address: "10.0.0.11".into(),
            interface_numbering: 2,
            interface_number: 2,
            oid: None,
        }],
        port_vlan_id: Some(100),
        vlan_names: vec![VlanName {
            vid: 100,
            name: "Vlan100".into(),
        }],
        link_aggregation: Some(LinkAggregation {
            capable: true,
            enabled: false,
            port_id: 0,
        }),
        mac_phy: Some(MacPhy {
            autoneg_supported: true,
            autoneg_enabled: false,
            advertised: 0x0000,
            mau_type: 0,
        }),
        max_frame_size: Some(9216),
        dcbx: Dcbx {
            ets_configuration: Some(EtsConfiguration {
                willing: false,
                cbs: false,
                max_tcs: 8,
                priority_tc: tables.0,
                tc_bandwidth: tables.1,
                tsa: tables.2,
            }),
            ets_recommendation: Some(EtsRecommendation {
                priority_tc: tables.0,
                tc_bandwidth: tables.1,
                tsa: tables.2,
            }),
            pfc: Some(PfcConfiguration {
                willing: false,
                mbc: false,
                capability: 8,
                enabled_priorities: vec![3],
            }),
            application_priority: Some(vec![
                AppPriority {
                    priority: 3,
                    selector: AppSelector::UdpPort,
                    protocol: 4791,
                },
                AppPriority {
                    priority: 3,
                    selector: AppSelector::Dscp,
                    protocol: 26,
                },
                AppPriority {
                    priority: 6,
                    selector: AppSelector::Dscp,
                    protocol: 48,
                },
            ]),
        },
        unknown_tlvs: Vec::new(),
    }
}

/// A frame lldpd 1.0.16 sent as "leaf01" in our interop setup, captured with tcpdump.
#[rustfmt::skip]
const LLDPD_CAPTURE: &[u8] = &[
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x7e, 0x47, 0x06, 0x09, 0xce, 0x01, 0x88, 0xcc, 0x02, 0x07,
    0x04, 0x7e, 0x47, 0x06, 0x09, 0xce, 0x01, 0x04, 0x07, 0x07, 0x45, 0x74, 0x68, 0x31, 0x2f, 0x31,
    0x06, 0x02, 0x00, 0x04, 0x0a, 0x06, 0x6c, 0x65, 0x61, 0x66, 0x30, 0x31, 0x0c, 0x22, 0x4e, 0x56,
    0x49, 0x44, 0x49, 0x41, 0x20, 0x43, 0x75, 0x6d, 0x75, 0x6c, 0x75, 0x73, 0x20, 0x4c, 0x69, 0x6e,
    0x75, 0x78, 0x20, 0x35, 0x2e, 0x39, 0x20, 0x6f, 0x6e, 0x20, 0x53, 0x4e, 0x35, 0x36, 0x30, 0x30,
    0x0e, 0x04, 0x00, 0x9c, 0x00, 0x14, 0x10, 0x18, 0x11, 0x02, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x7c, 0x47, 0x06, 0xff, 0xfe, 0x09, 0xce, 0x01, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00,
    0x08, 0x15, 0x74, 0x6f, 0x20, 0x67, 0x70, 0x75, 0x2d, 0x6e, 0x6f, 0x64, 0x65, 0x2d, 0x31, 0x37,
    0x20, 0x6d, 0x6c, 0x78, 0x35, 0x5f, 0x30, 0xfe, 0x09, 0x00, 0x12, 0x0f, 0x03, 0x01, 0x00, 0x00,
    0x00, 0x00, 0xfe, 0x09, 0x00, 0x12, 0x0f, 0x01, 0x00, 0x80, 0x00, 0x00, 0x36, 0xfe, 0x06, 0x00,
    0x80, 0xc2, 0x0b, 0x08, 0x08, 0x00, 0x00,
];

/// Seed name and octets, all whole Ethernet frames.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let switch = typical_switch().lldpdu(120).unwrap();
    let mut host = LocalSystem::new(MacAddr([0x02, 0, 0, 0, 0, 0x17]), "ens1f0np0");
    host.system_name = Some("gpu-node-17".into());
    let host_pdu = host.lldpdu(121).unwrap();

    let mut odd = LocalSystem::new(LEAF_MAC, "x");
    odd.chassis_id = ChassisId {
        subtype: ChassisIdSubtype::NetworkAddress,
        value: "fd00::11".into(),
    };
    odd.port_id = PortId {
        subtype: PortIdSubtype::AgentCircuitId,
        value: "0x00ff10".into(),
    };
    odd.management_addresses.push(ManagementAddress {
        family: 6,
        address: "0c:42:a1:00:00:01".into(),
        interface_numbering: 3,
        interface_number: 7,
        oid: Some("2b0601".into()),
    });
    odd.unknown_tlvs = vec![
        UnknownTlv {
            tlv_type: 127,
            oui: Some("00:1b:21".into()),
            subtype: Some(2),
            data: "000102030405".into(),
        },
        UnknownTlv {
            tlv_type: 9,
            oui: None,
            subtype: None,
            data: "ff".into(),
        },
    ];

    // Frames built by hand, without padding, so appended octets are not hidden behind it.
    let unpadded = |pdu: &Lldpdu<'_>, tail: &[u8]| {
        let mut f = LldpGroup::NearestBridge.mac().0.to_vec();
        f.extend_from_slice(&LEAF_MAC.0);
        f.extend_from_slice(&[0x88, 0xcc]);
        let mut body = pdu.to_vec().unwrap();
        body.truncate(body.len() - 2);
        f.extend_from_slice(&body);
        f.extend_from_slice(tail);
        f
    };
    // TLV-level errors: an ETS TLV of the wrong length and a repeated System Name.
    let discards = unpadded(
        &host_pdu,
        &[
            0xfe, 0x08, 0x00, 0x80, 0xc2, 0x09, 0, 0, 0, 0, 0x0a, 0x01, b'x', 0x00, 0x00,
        ],
    );
    // Accepted by lldpd 1.0.16, rejected since 1.0.22 (and by us).
    let zero_mgmt = unpadded(
        &host_pdu,
        &[0x10, 0x07, 0x00, 0x02, 0, 0, 0, 0, 0, 0x00, 0x00],
    );

    let mut truncated = frame(LldpGroup::NearestBridge, None, switch.clone());
    truncated.truncate(truncated.len() / 2);

    vec![
        (
            "switch-typical.bin",
            frame(LldpGroup::NearestBridge, None, switch.clone()),
        ),
        (
            "switch-tagged-nontpmr.bin",
            frame(
                LldpGroup::NearestNonTpmrBridge,
                Some(VlanTag {
                    pcp: 7,
                    dei: false,
                    vid: 100,
                }),
                switch.clone(),
            ),
        ),
        (
            "switch-shutdown.bin",
            frame(LldpGroup::NearestBridge, None, switch.shutdown()),
        ),
        (
            "host.bin",
            frame(LldpGroup::NearestCustomerBridge, None, host_pdu),
        ),
        (
            "odd-ids-and-raw-tlvs.bin",
            frame(LldpGroup::NearestBridge, None, odd.lldpdu(4).unwrap()),
        ),
        ("lldpd-1.0.16-leaf01.bin", LLDPD_CAPTURE.to_vec()),
        ("tlv-discards.bin", discards),
        ("invalid-zero-length-mgmt-address.bin", zero_mgmt),
        ("invalid-truncated.bin", truncated),
    ]
}

#[test]
fn seed_corpus_is_current() {
    let dir = fuzz_dir().join("seeds/lldp_decode");
    let write = std::env::var_os("SPINEL_WRITE_SEEDS").is_some();
    let mut stale = Vec::new();
    for (name, bytes) in seeds() {
        let path = dir.join(name);
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(bytes.as_slice()) {
            stale.push(name);
        }
        // Valid seeds are valid, invalid ones invalid.
        assert_eq!(
            decode_frame(&bytes).is_ok(),
            !name.starts_with("invalid-"),
            "{name}: {:?}",
            decode_frame(&bytes).err()
        );
    }
    assert!(
        stale.is_empty(),
        "stale or missing seeds {stale:?}: run SPINEL_WRITE_SEEDS=1 cargo test -p spinel-wire --test lldp_corpus"
    );
}

#[test]
fn the_typical_switch_frame_is_what_the_benchmark_decodes() {
    let bytes = std::fs::read(fuzz_dir().join("seeds/lldp_decode/switch-typical.bin")).unwrap();
    let f = decode_frame(&bytes).unwrap();
    assert_eq!(f.lldpdu.tlvs.len(), 14);
    let n = Neighbor::from(&f.lldpdu);
    assert_eq!(LocalSystem::from(&n), typical_switch());
}
