//! From a decoded LLDPDU to the stable schema ([`crate::neighbor::Neighbor`]), and the text
//! renderings both directions share.
//!
//! Rendering is reversible: [`super::local`] parses the same text back into octets, so a
//! neighbour printed by `spinelctl lldp listen` can be replayed by `spinelctl lldp send`.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::dcbx::{AppEntry, AppPriorityTable, EtsTables, selector};
use super::lldpdu::{Lldpdu, Tlv};
use super::org;
use crate::mac::MacAddr;
use crate::neighbor::{
    self, AppPriority, AppSelector, Capabilities, Capability, ChassisId, ChassisIdSubtype,
    EtsConfiguration, EtsRecommendation, Neighbor, PfcConfiguration, PortId, PortIdSubtype, Tsa,
    UnknownTlv,
};

/// IANA address family numbers used by LLDP.
pub mod family {
    /// IPv4.
    pub const IPV4: u8 = 1;
    /// IPv6.
    pub const IPV6: u8 = 2;
    /// IEEE 802 MAC address.
    pub const MAC: u8 = 6;
}

/// Capability bits in wire order, with their schema names.
pub const CAPABILITIES: [(u16, Capability); 11] = [
    (0x0001, Capability::Other),
    (0x0002, Capability::Repeater),
    (0x0004, Capability::Bridge),
    (0x0008, Capability::WlanAccessPoint),
    (0x0010, Capability::Router),
    (0x0020, Capability::Telephone),
    (0x0040, Capability::Docsis),
    (0x0080, Capability::Station),
    (0x0100, Capability::CVlan),
    (0x0200, Capability::SVlan),
    (0x0400, Capability::Tpmr),
];

/// Lowercase hex without separators.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Parses lowercase or uppercase hex without separators.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|p| u8::from_str_radix(p, 16).ok()))
        .collect()
}

/// An ID as text: the string when it is UTF-8 and cannot be mistaken for hex, else `0x` + hex.
fn render_text(id: &[u8]) -> String {
    match std::str::from_utf8(id) {
        Ok(s) if !looks_like_hex(s) => s.to_owned(),
        _ => format!("0x{}", hex(id)),
    }
}

fn looks_like_hex(s: &str) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|rest| !rest.is_empty() && unhex(rest).is_some())
}

/// An address with an IANA family prefix (chassis/port ID "network address" subtype).
fn render_network_address(id: &[u8]) -> String {
    match id.split_first() {
        Some((&family::IPV4, a)) => match <[u8; 4]>::try_from(a) {
            Ok(a) => Ipv4Addr::from(a).to_string(),
            Err(_) => format!("0x{}", hex(id)),
        },
        Some((&family::IPV6, a)) => match <[u8; 16]>::try_from(a) {
            Ok(a) => Ipv6Addr::from(a).to_string(),
            Err(_) => format!("0x{}", hex(id)),
        },
        _ => format!("0x{}", hex(id)),
    }
}

fn render_mac_id(id: &[u8]) -> String {
    match <[u8; 6]>::try_from(id) {
        Ok(m) => MacAddr(m).to_string(),
        Err(_) => format!("0x{}", hex(id)),
    }
}

/// Renders a chassis ID per its subtype.
pub fn render_chassis_id(subtype: ChassisIdSubtype, id: &[u8]) -> String {
    match subtype {
        ChassisIdSubtype::MacAddress => render_mac_id(id),
        ChassisIdSubtype::NetworkAddress => render_network_address(id),
        _ => render_text(id),
    }
}

/// Renders a port ID per its subtype.
pub fn render_port_id(subtype: PortIdSubtype, id: &[u8]) -> String {
    match subtype {
        PortIdSubtype::MacAddress => render_mac_id(id),
        PortIdSubtype::NetworkAddress => render_network_address(id),
        _ => render_text(id),
    }
}

/// Renders a management address per its IANA family.
pub fn render_management_address(family_number: u8, address: &[u8]) -> String {
    match family_number {
        family::IPV4 => <[u8; 4]>::try_from(address).map(|a| Ipv4Addr::from(a).to_string()),
        family::IPV6 => <[u8; 16]>::try_from(address).map(|a| Ipv6Addr::from(a).to_string()),
        family::MAC => <[u8; 6]>::try_from(address).map(|a| MacAddr(a).to_string()),
        _ => Ok(hex(address)),
    }
    .unwrap_or_else(|_| hex(address))
}

fn text(s: &[u8]) -> Option<String> {
    // lldpd ignores empty string TLVs; so do we.
    (!s.is_empty()).then(|| String::from_utf8_lossy(s).into_owned())
}

/// The capabilities named in a bitmap (bits above 0x0400 are reserved and dropped).
pub fn capabilities_from_bits(bits: u16) -> Vec<Capability> {
    CAPABILITIES
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|&(_, c)| c)
        .collect()
}

/// The bitmap of a capability list.
pub fn capabilities_to_bits(caps: &[Capability]) -> u16 {
    CAPABILITIES
        .iter()
        .filter(|(_, c)| caps.contains(c))
        .fold(0, |acc, (bit, _)| acc | bit)
}

/// The schema's TSA for a wire code.
pub fn tsa_from_code(code: u8) -> Tsa {
    match code {
        0 => Tsa::Strict,
        1 => Tsa::CreditBasedShaper,
        2 => Tsa::Ets,
        255 => Tsa::VendorSpecific,
        other => Tsa::Reserved(other),
    }
}

/// The wire code of a schema TSA.
pub fn tsa_code(tsa: Tsa) -> u8 {
    match tsa {
        Tsa::Strict => 0,
        Tsa::CreditBasedShaper => 1,
        Tsa::Ets => 2,
        Tsa::VendorSpecific => 255,
        Tsa::Reserved(v) => v,
    }
}

/// The schema's selector for a wire code.
pub fn selector_from_code(code: u8) -> AppSelector {
    match code {
        selector::ETHERTYPE => AppSelector::Ethertype,
        selector::TCP_PORT => AppSelector::TcpPort,
        selector::UDP_PORT => AppSelector::UdpPort,
        selector::ANY_PORT => AppSelector::AnyPort,
        selector::DSCP => AppSelector::Dscp,
        other => AppSelector::Reserved(other),
    }
}

/// The wire code of a schema selector.
pub fn selector_code(s: AppSelector) -> u8 {
    match s {
        AppSelector::Ethertype => selector::ETHERTYPE,
        AppSelector::TcpPort => selector::TCP_PORT,
        AppSelector::UdpPort => selector::UDP_PORT,
        AppSelector::AnyPort => selector::ANY_PORT,
        AppSelector::Dscp => selector::DSCP,
        AppSelector::Reserved(v) => v,
    }
}

fn ets_tables(t: &EtsTables) -> ([u8; 8], [u8; 8], [Tsa; 8]) {
    (t.priority_tc, t.tc_bandwidth, t.tsa.map(tsa_from_code))
}

fn app_entries(t: &AppPriorityTable<'_>) -> Vec<AppPriority> {
    t.iter()
        .map(
            |AppEntry {
                 priority,
                 selector,
                 protocol,
             }| AppPriority {
                priority,
                selector: selector_from_code(selector),
                protocol,
            },
        )
        .collect()
}

/// Priorities whose bit is set in a PFC enable bitmap, ascending.
pub fn pfc_priorities(bitmap: u8) -> Vec<u8> {
    (0..8).filter(|p| bitmap & (1 << p) != 0).collect()
}

impl From<&Lldpdu<'_>> for Neighbor {
    /// The neighbour an LLDPDU describes (age unknown: the receive table fills it in).
    fn from(pdu: &Lldpdu<'_>) -> Self {
        let mut n = Neighbor::new(
            ChassisId {
                subtype: pdu.chassis_id.subtype,
                value: render_chassis_id(pdu.chassis_id.subtype, &pdu.chassis_id.id),
            },
            PortId {
                subtype: pdu.port_id.subtype,
                value: render_port_id(pdu.port_id.subtype, &pdu.port_id.id),
            },
            pdu.ttl,
        );
        let mut legacy_aggregation = None;
        for tlv in &pdu.tlvs {
            match tlv {
                Tlv::PortDescription(s) => n.port_description = text(s),
                Tlv::SystemName(s) => n.system_name = text(s),
                Tlv::SystemDescription(s) => n.system_description = text(s),
                Tlv::SystemCapabilities(c) => {
                    n.capabilities = Some(Capabilities {
                        supported: capabilities_from_bits(c.supported),
                        enabled: capabilities_from_bits(c.enabled),
                    })
                }
                Tlv::ManagementAddress(m) => {
                    n.management_addresses.push(neighbor::ManagementAddress {
                        family: m.family,
                        address: render_management_address(m.family, &m.address),
                        interface_numbering: m.interface_numbering,
                        interface_number: m.interface_number,
                        oid: (!m.oid.is_empty()).then(|| hex(&m.oid)),
                    })
                }
                Tlv::PortVlanId(v) => n.port_vlan_id = Some(*v),
                Tlv::VlanName(v) => n.vlan_names.push(neighbor::VlanName {
                    vid: v.vid,
                    name: String::from_utf8_lossy(&v.name).into_owned(),
                }),
                Tlv::LinkAggregation(l) => n.link_aggregation = Some(link_aggregation(l)),
                Tlv::LegacyLinkAggregation(l) => legacy_aggregation = Some(link_aggregation(l)),
                Tlv::MacPhy(m) => {
                    n.mac_phy = Some(neighbor::MacPhy {
                        autoneg_supported: m.autoneg_supported,
                        autoneg_enabled: m.autoneg_enabled,
                        advertised: m.advertised,
                        mau_type: m.mau_type,
                    })
                }
                Tlv::MaxFrameSize(m) => n.max_frame_size = Some(*m),
                Tlv::EtsConfiguration(e) => {
                    let (priority_tc, tc_bandwidth, tsa) = ets_tables(&e.tables);
                    n.dcbx.ets_configuration = Some(EtsConfiguration {
                        willing: e.willing,
                        cbs: e.cbs,
                        max_tcs: e.max_tcs,
                        priority_tc,
                        tc_bandwidth,
                        tsa,
                    });
                }
                Tlv::EtsRecommendation(e) => {
                    let (priority_tc, tc_bandwidth, tsa) = ets_tables(&e.tables);
                    n.dcbx.ets_recommendation = Some(EtsRecommendation {
                        priority_tc,
                        tc_bandwidth,
                        tsa,
                    });
                }
                Tlv::Pfc(p) => {
                    n.dcbx.pfc = Some(PfcConfiguration {
                        willing: p.willing,
                        mbc: p.mbc,
                        capability: p.capability,
                        enabled_priorities: pfc_priorities(p.enabled),
                    })
                }
                Tlv::ApplicationPriority(t) => n.dcbx.application_priority = Some(app_entries(t)),
                Tlv::Org(o) => n.unknown_tlvs.push(UnknownTlv {
                    tlv_type: super::tlv::types::ORG,
                    oui: Some(oui_text(o.oui)),
                    subtype: Some(o.subtype),
                    data: hex(&o.info),
                }),
                Tlv::Reserved { tlv_type, value } => n.unknown_tlvs.push(UnknownTlv {
                    tlv_type: *tlv_type,
                    oui: None,
                    subtype: None,
                    data: hex(value),
                }),
                // Broken TLVs are counted by the receive table, not reported as data.
                Tlv::Discarded { .. } => {}
            }
        }
        // The 802.1 TLV supersedes the deprecated 802.3 one when both are present.
        if n.link_aggregation.is_none() {
            n.link_aggregation = legacy_aggregation;
        }
        n
    }
}

fn link_aggregation(l: &org::LinkAggregation) -> neighbor::LinkAggregation {
    neighbor::LinkAggregation {
        capable: l.capable,
        enabled: l.enabled,
        port_id: l.port_id,
    }
}

/// An OUI as the schema writes it: `00:80:c2`.
pub fn oui_text(oui: org::Oui) -> String {
    let [a, b, c] = oui.0;
    format!("{a:02x}:{b:02x}:{c:02x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_rendering() {
        assert_eq!(
            render_chassis_id(ChassisIdSubtype::MacAddress, &[0x0c, 0x42, 0xa1, 0, 0, 1]),
            "0c:42:a1:00:00:01"
        );
        assert_eq!(
            render_chassis_id(ChassisIdSubtype::MacAddress, &[1, 2, 3]),
            "0x010203"
        );
        assert_eq!(
            render_port_id(PortIdSubtype::NetworkAddress, &[1, 10, 0, 0, 1]),
            "10.0.0.1"
        );
        let mut v6 = vec![2];
        v6.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        assert_eq!(render_port_id(PortIdSubtype::NetworkAddress, &v6), "::1");
        assert_eq!(render_port_id(PortIdSubtype::Local, b"Eth1/1"), "Eth1/1");
        assert_eq!(
            render_port_id(PortIdSubtype::Local, &[0xff, 0x00]),
            "0xff00"
        );
        // A string that looks like our hex rendering is rendered as hex, so parsing it back
        // is unambiguous.
        assert_eq!(render_port_id(PortIdSubtype::Local, b"0xab"), "0x30786162");
        assert_eq!(render_port_id(PortIdSubtype::Local, b"0x"), "0x");
    }

    #[test]
    fn management_address_rendering() {
        assert_eq!(render_management_address(1, &[10, 0, 0, 11]), "10.0.0.11");
        assert_eq!(
            render_management_address(6, &[2, 0, 0, 0, 0, 1]),
            "02:00:00:00:00:01"
        );
        assert_eq!(render_management_address(1, &[10, 0, 0]), "0a0000");
        assert_eq!(render_management_address(9, &[0xab]), "ab");
    }

    #[test]
    fn bit_helpers() {
        assert_eq!(
            capabilities_from_bits(0x0014 | 0x8000),
            [Capability::Bridge, Capability::Router]
        );
        assert_eq!(
            capabilities_to_bits(&[Capability::Router, Capability::Bridge]),
            0x14
        );
        assert_eq!(pfc_priorities(0b1001_1000), [3, 4, 7]);
        assert_eq!(unhex("0aFf"), Some(vec![0x0a, 0xff]));
        assert_eq!(unhex("0a f"), None);
        assert_eq!(unhex("é0"), None);
        for code in 0..=255u8 {
            assert_eq!(tsa_code(tsa_from_code(code)), code);
        }
        for code in 0..8u8 {
            assert_eq!(selector_code(selector_from_code(code)), code);
        }
    }
}
