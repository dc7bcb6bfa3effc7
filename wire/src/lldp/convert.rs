//! From a decoded LLDPDU to the stable schema ([`crate::neighbor::Neighbor`]), and the text
//! renderings both directions share.
//!
//! Rendering is reversible: [`super::local`] parses the same text back into octets, so a
//! neighbour printed by `spinelctl lldp listen` can be replayed by `spinelctl lldp send`.

use std::fmt::Write as _;
use std::net::Ipv6Addr;

use super::dcbx::{AppEntry, AppPriorityTable, EtsTables, selector};
use super::lldpdu::{Lldpdu, Tlv};
use super::org;
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

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex without separators.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    write_hex(&mut s, bytes);
    s
}

fn write_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
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

/// `aa:bb:cc:dd:ee:ff`, as [`crate::MacAddr`] displays it, without the formatting machinery.
fn write_mac(out: &mut String, mac: [u8; 6]) {
    write_mac_like(out, &mac);
}

/// Dotted quad, as [`std::net::Ipv4Addr`] displays it.
fn write_ipv4(out: &mut String, a: [u8; 4]) {
    let (buf, len) = ipv4_octets(a);
    out.extend(buf[..len].iter().map(|&b| char::from(b)));
}

/// Whether `text` is the dotted quad of `a`.
fn ipv4_is(text: &str, a: [u8; 4]) -> bool {
    let (buf, len) = ipv4_octets(a);
    text.as_bytes() == &buf[..len]
}

/// The dotted quad of `a` as ASCII, with its length.
fn ipv4_octets(a: [u8; 4]) -> ([u8; 15], usize) {
    let mut buf = [0u8; 15];
    let mut n = 0;
    for (i, &octet) in a.iter().enumerate() {
        if i > 0 {
            buf[n] = b'.';
            n += 1;
        }
        if octet >= 100 {
            buf[n] = b'0' + octet / 100;
            n += 1;
        }
        if octet >= 10 {
            buf[n] = b'0' + octet / 10 % 10;
            n += 1;
        }
        buf[n] = b'0' + octet % 10;
        n += 1;
    }
    (buf, n)
}

fn write_hex_id(out: &mut String, id: &[u8]) {
    out.push_str("0x");
    write_hex(out, id);
}

/// An ID as text: the string when it is UTF-8 and cannot be mistaken for hex, else `0x` + hex.
fn write_text_id(out: &mut String, id: &[u8]) {
    match std::str::from_utf8(id) {
        Ok(s) if !looks_like_hex(s) => out.push_str(s),
        _ => write_hex_id(out, id),
    }
}

fn looks_like_hex(s: &str) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|rest| !rest.is_empty() && unhex(rest).is_some())
}

/// An address with an IANA family prefix (chassis/port ID "network address" subtype).
fn write_network_address(out: &mut String, id: &[u8]) {
    match id.split_first() {
        Some((&family::IPV4, a)) => match <[u8; 4]>::try_from(a) {
            Ok(a) => write_ipv4(out, a),
            Err(_) => write_hex_id(out, id),
        },
        Some((&family::IPV6, a)) => match <[u8; 16]>::try_from(a) {
            // Writing to a String cannot fail.
            Ok(a) => {
                let _ = write!(out, "{}", Ipv6Addr::from(a));
            }
            Err(_) => write_hex_id(out, id),
        },
        _ => write_hex_id(out, id),
    }
}

fn write_mac_id(out: &mut String, id: &[u8]) {
    match <[u8; 6]>::try_from(id) {
        Ok(m) => write_mac(out, m),
        Err(_) => write_hex_id(out, id),
    }
}

fn write_chassis_id(out: &mut String, subtype: ChassisIdSubtype, id: &[u8]) {
    match subtype {
        ChassisIdSubtype::MacAddress => write_mac_id(out, id),
        ChassisIdSubtype::NetworkAddress => write_network_address(out, id),
        _ => write_text_id(out, id),
    }
}

fn write_port_id(out: &mut String, subtype: PortIdSubtype, id: &[u8]) {
    match subtype {
        PortIdSubtype::MacAddress => write_mac_id(out, id),
        PortIdSubtype::NetworkAddress => write_network_address(out, id),
        _ => write_text_id(out, id),
    }
}

/// Renders a chassis ID per its subtype.
pub fn render_chassis_id(subtype: ChassisIdSubtype, id: &[u8]) -> String {
    let mut s = String::new();
    write_chassis_id(&mut s, subtype, id);
    s
}

/// Renders a port ID per its subtype.
pub fn render_port_id(subtype: PortIdSubtype, id: &[u8]) -> String {
    let mut s = String::new();
    write_port_id(&mut s, subtype, id);
    s
}

fn write_management_address(out: &mut String, family_number: u8, address: &[u8]) {
    match (family_number, address.len()) {
        (family::IPV4, 4) => write_ipv4(out, [address[0], address[1], address[2], address[3]]),
        (family::IPV6, 16) => match <[u8; 16]>::try_from(address) {
            // Writing to a String cannot fail.
            Ok(a) => {
                let _ = write!(out, "{}", Ipv6Addr::from(a));
            }
            Err(_) => write_hex(out, address),
        },
        (family::MAC, 6) => write_mac_id(out, address),
        _ => write_hex(out, address),
    }
}

/// Renders a management address per its IANA family.
pub fn render_management_address(family_number: u8, address: &[u8]) -> String {
    let mut s = String::new();
    write_management_address(&mut s, family_number, address);
    s
}

/// Sets a text field to a TLV's string (reusing its allocation); lldpd ignores empty string
/// TLVs, and so do we. Text equal to what the field holds costs one comparison.
fn set_text(slot: &mut Option<String>, s: &[u8]) {
    if s.is_empty() {
        *slot = None;
        return;
    }
    if slot.as_deref().map(str::as_bytes) == Some(s) {
        return;
    }
    let out = slot.get_or_insert_with(String::new);
    out.clear();
    match std::str::from_utf8(s) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&String::from_utf8_lossy(s)),
    }
}

/// The list's element `i`, pushed with `make` when the list is that short.
fn slot<T>(list: &mut Vec<T>, i: usize, make: impl FnOnce() -> T) -> &mut T {
    if list.len() <= i {
        list.push(make());
    }
    let last = list.len() - 1;
    &mut list[i.min(last)]
}

/// The capabilities named in a bitmap (bits above 0x0400 are reserved and dropped).
pub fn capabilities_from_bits(bits: u16) -> Vec<Capability> {
    let mut out = Vec::new();
    fill_capabilities(&mut out, bits);
    out
}

fn fill_capabilities(out: &mut Vec<Capability>, bits: u16) {
    out.clear();
    for &(bit, c) in &CAPABILITIES {
        if bits & bit != 0 {
            out.push(c);
        }
    }
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
    let mut tsa = [Tsa::Strict; 8];
    for (out, &code) in tsa.iter_mut().zip(&t.tsa) {
        *out = tsa_from_code(code);
    }
    (t.priority_tc, t.tc_bandwidth, tsa)
}

fn fill_app_entries(out: &mut Vec<AppPriority>, t: &AppPriorityTable<'_>) {
    out.clear();
    out.extend(t.iter().map(
        |AppEntry {
             priority,
             selector,
             protocol,
         }| AppPriority {
            priority,
            selector: selector_from_code(selector),
            protocol,
        },
    ));
}

/// Priorities whose bit is set in a PFC enable bitmap, ascending.
pub fn pfc_priorities(bitmap: u8) -> Vec<u8> {
    let mut out = Vec::new();
    fill_pfc_priorities(&mut out, bitmap);
    out
}

fn fill_pfc_priorities(out: &mut Vec<u8>, bitmap: u8) {
    out.clear();
    for p in 0..8 {
        if bitmap & (1 << p) != 0 {
            out.push(p);
        }
    }
}

impl From<&Lldpdu<'_>> for Neighbor {
    /// The neighbour an LLDPDU describes (age unknown: the receive table fills it in).
    fn from(pdu: &Lldpdu<'_>) -> Self {
        let mut n = Neighbor::new(
            ChassisId {
                subtype: pdu.chassis_id.subtype,
                value: String::new(),
            },
            PortId {
                subtype: pdu.port_id.subtype,
                value: String::new(),
            },
            pdu.ttl,
        );
        n.update_from(pdu);
        n
    }
}

/// How an ID subtype renders.
#[derive(Clone, Copy)]
enum IdKind {
    Mac,
    Network,
    Text,
}

/// Whether `value` is already the rendering of an ID, checked without rendering: a MAC
/// compared digit by digit, text compared as is (addresses are rendered again).
fn renders_as(value: &str, id: &[u8], kind: IdKind) -> bool {
    let v = value.as_bytes();
    match kind {
        IdKind::Mac if id.len() == 6 => {
            v.len() == 17
                && id.iter().enumerate().all(|(i, b)| {
                    v[3 * i] == HEX[usize::from(b >> 4)]
                        && v[3 * i + 1] == HEX[usize::from(b & 0x0f)]
                        && (i == 5 || v[3 * i + 2] == b':')
                })
        }
        IdKind::Text => v == id && !looks_like_hex(value),
        IdKind::Mac | IdKind::Network => false,
    }
}

/// Which optional fields an LLDPDU set, and how many of each repeated one.
#[derive(Default)]
struct Filled {
    port_description: bool,
    system_name: bool,
    system_description: bool,
    capabilities: bool,
    port_vlan_id: bool,
    mac_phy: bool,
    max_frame_size: bool,
    ets_configuration: bool,
    ets_recommendation: bool,
    pfc: bool,
    application_priority: bool,
    management_addresses: usize,
    vlan_names: usize,
    unknown_tlvs: usize,
}

impl Neighbor {
    /// Makes this the neighbour `pdu` describes, reusing its strings and lists: the same
    /// result as `Neighbor::from(pdu)`, without allocating when the neighbour sends what it
    /// sent before (every 30 s, for as long as the link is up). The age is cleared.
    pub fn update_from(&mut self, pdu: &Lldpdu<'_>) {
        let (cs, cid) = (pdu.chassis_id.subtype, &pdu.chassis_id.id);
        let kind = match cs {
            ChassisIdSubtype::MacAddress => IdKind::Mac,
            ChassisIdSubtype::NetworkAddress => IdKind::Network,
            _ => IdKind::Text,
        };
        if self.chassis_id.subtype != cs || !renders_as(&self.chassis_id.value, cid, kind) {
            self.chassis_id.subtype = cs;
            self.chassis_id.value.clear();
            write_chassis_id(&mut self.chassis_id.value, cs, cid);
        }
        let (ps, pid) = (pdu.port_id.subtype, &pdu.port_id.id);
        let kind = match ps {
            PortIdSubtype::MacAddress => IdKind::Mac,
            PortIdSubtype::NetworkAddress => IdKind::Network,
            _ => IdKind::Text,
        };
        if self.port_id.subtype != ps || !renders_as(&self.port_id.value, pid, kind) {
            self.port_id.subtype = ps;
            self.port_id.value.clear();
            write_port_id(&mut self.port_id.value, ps, pid);
        }
        self.ttl = pdu.ttl;
        self.age_seconds = None;
        let mut filled = Filled::default();
        let mut aggregation = None;
        let mut legacy_aggregation = None;
        for tlv in &pdu.tlvs {
            self.fill(tlv, &mut filled, &mut aggregation, &mut legacy_aggregation);
        }
        self.clear_unfilled(&filled);
        // The 802.1 TLV supersedes the deprecated 802.3 one when both are present.
        self.link_aggregation = aggregation.or(legacy_aggregation);
    }

    fn fill(
        &mut self,
        tlv: &Tlv<'_>,
        filled: &mut Filled,
        aggregation: &mut Option<neighbor::LinkAggregation>,
        legacy_aggregation: &mut Option<neighbor::LinkAggregation>,
    ) {
        match tlv {
            Tlv::PortDescription(s) => {
                set_text(&mut self.port_description, s);
                filled.port_description = true;
            }
            Tlv::SystemName(s) => {
                set_text(&mut self.system_name, s);
                filled.system_name = true;
            }
            Tlv::SystemDescription(s) => {
                set_text(&mut self.system_description, s);
                filled.system_description = true;
            }
            Tlv::SystemCapabilities(c) => {
                let caps = self.capabilities.get_or_insert_with(|| Capabilities {
                    supported: Vec::new(),
                    enabled: Vec::new(),
                });
                fill_capabilities(&mut caps.supported, c.supported);
                fill_capabilities(&mut caps.enabled, c.enabled);
                filled.capabilities = true;
            }
            Tlv::ManagementAddress(m) => {
                let a = slot(
                    &mut self.management_addresses,
                    filled.management_addresses,
                    || neighbor::ManagementAddress {
                        family: 0,
                        address: String::new(),
                        interface_numbering: 0,
                        interface_number: 0,
                        oid: None,
                    },
                );
                filled.management_addresses += 1;
                let same = a.family == m.family
                    && match (m.family, <[u8; 4]>::try_from(&m.address[..])) {
                        (family::IPV4, Ok(v4)) => ipv4_is(&a.address, v4),
                        _ => false,
                    };
                if !same {
                    a.family = m.family;
                    a.address.clear();
                    write_management_address(&mut a.address, m.family, &m.address);
                }
                a.interface_numbering = m.interface_numbering;
                a.interface_number = m.interface_number;
                if m.oid.is_empty() {
                    a.oid = None;
                } else {
                    let oid = a.oid.get_or_insert_with(String::new);
                    oid.clear();
                    write_hex(oid, &m.oid);
                }
            }
            Tlv::PortVlanId(v) => {
                self.port_vlan_id = Some(*v);
                filled.port_vlan_id = true;
            }
            Tlv::VlanName(v) => {
                let n = slot(&mut self.vlan_names, filled.vlan_names, || {
                    neighbor::VlanName {
                        vid: 0,
                        name: String::new(),
                    }
                });
                filled.vlan_names += 1;
                n.vid = v.vid;
                if n.name.as_bytes() != &*v.name {
                    n.name.clear();
                    n.name.push_str(&String::from_utf8_lossy(&v.name));
                }
            }
            Tlv::LinkAggregation(l) => *aggregation = Some(link_aggregation(l)),
            Tlv::LegacyLinkAggregation(l) => *legacy_aggregation = Some(link_aggregation(l)),
            Tlv::MacPhy(m) => {
                self.mac_phy = Some(neighbor::MacPhy {
                    autoneg_supported: m.autoneg_supported,
                    autoneg_enabled: m.autoneg_enabled,
                    advertised: m.advertised,
                    mau_type: m.mau_type,
                });
                filled.mac_phy = true;
            }
            Tlv::MaxFrameSize(m) => {
                self.max_frame_size = Some(*m);
                filled.max_frame_size = true;
            }
            _ => self.fill_dcbx_or_unknown(tlv, filled),
        }
    }

    fn fill_dcbx_or_unknown(&mut self, tlv: &Tlv<'_>, filled: &mut Filled) {
        match tlv {
            Tlv::EtsConfiguration(e) => {
                let (priority_tc, tc_bandwidth, tsa) = ets_tables(&e.tables);
                self.dcbx.ets_configuration = Some(EtsConfiguration {
                    willing: e.willing,
                    cbs: e.cbs,
                    max_tcs: e.max_tcs,
                    priority_tc,
                    tc_bandwidth,
                    tsa,
                });
                filled.ets_configuration = true;
            }
            Tlv::EtsRecommendation(e) => {
                let (priority_tc, tc_bandwidth, tsa) = ets_tables(&e.tables);
                self.dcbx.ets_recommendation = Some(EtsRecommendation {
                    priority_tc,
                    tc_bandwidth,
                    tsa,
                });
                filled.ets_recommendation = true;
            }
            Tlv::Pfc(p) => {
                let pfc = self.dcbx.pfc.get_or_insert_with(|| PfcConfiguration {
                    willing: false,
                    mbc: false,
                    capability: 0,
                    enabled_priorities: Vec::new(),
                });
                pfc.willing = p.willing;
                pfc.mbc = p.mbc;
                pfc.capability = p.capability;
                fill_pfc_priorities(&mut pfc.enabled_priorities, p.enabled);
                filled.pfc = true;
            }
            Tlv::ApplicationPriority(t) => {
                let app = self.dcbx.application_priority.get_or_insert_with(Vec::new);
                fill_app_entries(app, t);
                filled.application_priority = true;
            }
            Tlv::Org(o) => {
                let u = self.next_unknown(filled);
                u.tlv_type = super::tlv::types::ORG;
                let [a, b, c] = o.oui.0;
                let oui = u.oui.get_or_insert_with(String::new);
                oui.clear();
                write_mac_like(oui, &[a, b, c]);
                u.subtype = Some(o.subtype);
                u.data.clear();
                write_hex(&mut u.data, &o.info);
            }
            Tlv::Reserved { tlv_type, value } => {
                let u = self.next_unknown(filled);
                u.tlv_type = *tlv_type;
                u.oui = None;
                u.subtype = None;
                u.data.clear();
                write_hex(&mut u.data, value);
            }
            // Broken TLVs are counted by the receive table, not reported as data.
            _ => {}
        }
    }

    fn next_unknown(&mut self, filled: &mut Filled) -> &mut UnknownTlv {
        let i = filled.unknown_tlvs;
        filled.unknown_tlvs += 1;
        slot(&mut self.unknown_tlvs, i, || UnknownTlv {
            tlv_type: 0,
            oui: None,
            subtype: None,
            data: String::new(),
        })
    }

    /// What the last LLDPDU did not carry is gone.
    fn clear_unfilled(&mut self, f: &Filled) {
        if !f.port_description {
            self.port_description = None;
        }
        if !f.system_name {
            self.system_name = None;
        }
        if !f.system_description {
            self.system_description = None;
        }
        if !f.capabilities {
            self.capabilities = None;
        }
        if !f.port_vlan_id {
            self.port_vlan_id = None;
        }
        if !f.mac_phy {
            self.mac_phy = None;
        }
        if !f.max_frame_size {
            self.max_frame_size = None;
        }
        if !f.ets_configuration {
            self.dcbx.ets_configuration = None;
        }
        if !f.ets_recommendation {
            self.dcbx.ets_recommendation = None;
        }
        if !f.pfc {
            self.dcbx.pfc = None;
        }
        if !f.application_priority {
            self.dcbx.application_priority = None;
        }
        self.management_addresses.truncate(f.management_addresses);
        self.vlan_names.truncate(f.vlan_names);
        self.unknown_tlvs.truncate(f.unknown_tlvs);
    }
}

/// Octets as `aa:bb:cc` (OUIs).
fn write_mac_like(out: &mut String, octets: &[u8]) {
    for (i, b) in octets.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
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
    let mut s = String::with_capacity(8);
    write_mac_like(&mut s, &oui.0);
    s
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
    fn hand_rendering_matches_the_standard_library() {
        for a in [
            [0, 0, 0, 0],
            [10, 0, 0, 11],
            [255, 255, 255, 255],
            [1, 20, 100, 199],
        ] {
            let mut s = String::new();
            write_ipv4(&mut s, a);
            assert_eq!(s, std::net::Ipv4Addr::from(a).to_string());
        }
        for octet in 0..=255u8 {
            let mut s = String::new();
            write_ipv4(&mut s, [octet, 9, 99, octet]);
            assert_eq!(
                s,
                std::net::Ipv4Addr::from([octet, 9, 99, octet]).to_string()
            );
            let m = [octet, 0x0f, 0xf0, 0xab, octet, 0];
            let mut s = String::new();
            write_mac(&mut s, m);
            assert_eq!(s, crate::MacAddr(m).to_string());
        }
        assert_eq!(hex(&[0x0a, 0xff, 0]), "0aff00");
        assert_eq!(oui_text(org::Oui::DOT1), "00:80:c2");
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
