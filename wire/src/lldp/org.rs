//! Organisationally specific TLVs (type 127): the IEEE 802.1 (00-80-C2) and 802.3 (00-12-0F)
//! ones we decode, the length rules lldpd enforces on the ones we keep raw, and raw storage for
//! everything else.

use std::borrow::Cow;

use super::error::{EncodeError, Expected, Field, TlvError, TlvKind, len16};
use super::tlv::be16;

pub use super::oui::{Oui, dot1, dot3, org_tlv_name};

/// The kind named by an organisational TLV's first four octets.
pub(crate) fn org_kind(key: u32) -> TlvKind {
    let [a, b, c, subtype] = key.to_be_bytes();
    TlvKind::Org {
        oui: Oui([a, b, c]),
        subtype,
    }
}

/// An organisational TLV we do not decode, kept raw.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrgTlv<'a> {
    /// Its OUI.
    pub oui: Oui,
    /// Its subtype.
    pub subtype: u8,
    /// The information after OUI and subtype (0-507 octets).
    pub info: Cow<'a, [u8]>,
}

impl OrgTlv<'_> {
    /// A copy that owns its octets.
    pub fn into_owned(self) -> OrgTlv<'static> {
        OrgTlv {
            oui: self.oui,
            subtype: self.subtype,
            info: Cow::Owned(self.info.into_owned()),
        }
    }
}

/// 802.1 VLAN Name TLV.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VlanName<'a> {
    /// VLAN ID.
    pub vid: u16,
    /// Name, 0-32 octets.
    pub name: Cow<'a, [u8]>,
}

impl VlanName<'_> {
    /// A copy that owns its name.
    pub fn into_owned(self) -> VlanName<'static> {
        VlanName {
            vid: self.vid,
            name: Cow::Owned(self.name.into_owned()),
        }
    }
}

/// Link Aggregation TLV (802.1 subtype 7 or the legacy 802.3 subtype 3; same layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LinkAggregation {
    /// Bit 0: the link can be aggregated.
    pub capable: bool,
    /// Bit 1: the link is aggregated.
    pub enabled: bool,
    /// Bits 2-3 (802.1AX-2014 port type: 0 unspecified, 1 standby, 2 active, 3 other).
    pub port_type: u8,
    /// ifIndex of the aggregated port.
    pub port_id: u32,
}

/// 802.3 MAC/PHY Configuration/Status TLV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MacPhy {
    /// Auto-negotiation supported.
    pub autoneg_supported: bool,
    /// Auto-negotiation enabled.
    pub autoneg_enabled: bool,
    /// PMD auto-negotiation advertised capability bits.
    pub advertised: u16,
    /// Operational MAU type (RFC 4836).
    pub mau_type: u16,
}

/// Length rule of a decoded organisational TLV's information (after OUI and subtype):
/// `fatal_min` is lldpd's minimum (shorter rejects the whole LLDPDU), `exact` is the standard's
/// length (anything else discards only the TLV).
#[inline]
pub(crate) fn check_len(
    info: &[u8],
    kind: impl FnOnce() -> TlvKind,
    offset: usize,
    fatal_min: u16,
    exact: u16,
) -> Result<Result<(), TlvError>, TlvError> {
    // Lengths are reported for the whole information string, as they appear on the wire.
    let length = len16(info.len() + 4);
    let wrong = |expected| TlvError::Length {
        kind: kind(),
        offset,
        length,
        expected,
    };
    if info.len() < usize::from(fatal_min) {
        return Err(wrong(Expected::AtLeast(fatal_min + 4)));
    }
    if info.len() != usize::from(exact) {
        return Ok(Err(wrong(Expected::Exactly(exact + 4))));
    }
    Ok(Ok(()))
}

/// lldpd's minimum information lengths (after OUI and subtype) for organisational TLVs we keep
/// raw; shorter ones make lldpd reject the LLDPDU, so we do too.
pub(crate) fn raw_fatal_min(oui: Oui, subtype: u8, info: &[u8]) -> Option<usize> {
    match (oui, subtype) {
        (Oui::DOT1, dot1::PORT_PROTOCOL_VLAN_ID) => Some(3),
        // A length octet, then that many octets.
        (Oui::DOT1, dot1::PROTOCOL_IDENTITY) => {
            Some(1 + info.first().map_or(0, |&n| usize::from(n)))
        }
        (Oui::DOT3, dot3::POWER_VIA_MDI) => Some(3),
        // LLDP-MED capabilities, network policy, location, extended power.
        (Oui::MED, 1) => Some(3),
        (Oui::MED, 2) => Some(4),
        (Oui::MED, 3) => Some(1),
        (Oui::MED, 4) => Some(3),
        _ => None,
    }
}

pub(crate) fn decode_link_aggregation(&[status, a, b, c, d]: &[u8; 5]) -> LinkAggregation {
    LinkAggregation {
        capable: status & 0x01 != 0,
        enabled: status & 0x02 != 0,
        port_type: (status >> 2) & 0x03,
        port_id: u32::from_be_bytes([a, b, c, d]),
    }
}

pub(crate) fn encode_link_aggregation(
    out: &mut Vec<u8>,
    kind: TlvKind,
    la: &LinkAggregation,
) -> Result<(), EncodeError> {
    if la.port_type > 3 {
        return Err(EncodeError::Range {
            kind,
            field: "port type",
            value: la.port_type.into(),
            min: 0,
            max: 3,
        });
    }
    out.push(u8::from(la.capable) | (u8::from(la.enabled) << 1) | (la.port_type << 2));
    out.extend_from_slice(&la.port_id.to_be_bytes());
    Ok(())
}

pub(crate) fn decode_mac_phy(&[status, a1, a2, m1, m2]: &[u8; 5]) -> MacPhy {
    MacPhy {
        autoneg_supported: status & 0x01 != 0,
        autoneg_enabled: status & 0x02 != 0,
        advertised: u16::from_be_bytes([a1, a2]),
        mau_type: u16::from_be_bytes([m1, m2]),
    }
}

pub(crate) fn encode_mac_phy(out: &mut Vec<u8>, m: &MacPhy) {
    out.push(u8::from(m.autoneg_supported) | (u8::from(m.autoneg_enabled) << 1));
    out.extend_from_slice(&m.advertised.to_be_bytes());
    out.extend_from_slice(&m.mau_type.to_be_bytes());
}

/// VLAN Name: lldpd rejects fewer than 3 octets or a name longer than the TLV; we also discard
/// a TLV whose length disagrees with the name length, or a name above 32 octets.
pub(crate) fn decode_vlan_name<'a>(
    info: &'a [u8],
    kind: TlvKind,
    offset: usize,
) -> Result<Result<VlanName<'a>, TlvError>, TlvError> {
    let length = len16(info.len() + 4);
    let (Some(vid), Some(&name_len)) = (be16(info, 0), info.get(2)) else {
        return Err(TlvError::Length {
            kind,
            offset,
            length,
            expected: Expected::AtLeast(7),
        });
    };
    let field = |expected| TlvError::Field {
        kind,
        offset,
        field: Field::VlanNameLength,
        value: name_len.into(),
        expected,
        length,
    };
    let name_len = usize::from(name_len);
    let Some(name) = info.get(3..3 + name_len) else {
        return Err(field(Expected::Between(0, length.saturating_sub(7))));
    };
    if name_len > 32 {
        return Ok(Err(field(Expected::Between(0, 32))));
    }
    if info.len() != 3 + name_len {
        return Ok(Err(TlvError::Length {
            kind,
            offset,
            length,
            expected: Expected::Exactly(len16(7 + name_len)),
        }));
    }
    Ok(Ok(VlanName {
        vid,
        name: Cow::Borrowed(name),
    }))
}

pub(crate) fn encode_vlan_name(
    out: &mut Vec<u8>,
    kind: TlvKind,
    v: &VlanName<'_>,
) -> Result<(), EncodeError> {
    if v.name.len() > 32 {
        return Err(EncodeError::Length {
            kind,
            field: "VLAN name",
            length: v.name.len(),
            expected: Expected::Between(0, 32),
        });
    }
    out.extend_from_slice(&v.vid.to_be_bytes());
    out.push(v.name.len() as u8);
    out.extend_from_slice(&v.name);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oui_displays_with_dashes_and_names_known_tlvs() {
        assert_eq!(Oui::DOT1.to_string(), "00-80-c2");
        let k = TlvKind::Org {
            oui: Oui::DOT1,
            subtype: 11,
        };
        assert_eq!(
            k.to_string(),
            "DCBX PFC Configuration (00-80-c2 subtype 11)"
        );
    }

    #[test]
    fn vlan_name_rules() {
        let k = TlvKind::Org {
            oui: Oui::DOT1,
            subtype: 3,
        };
        let ok = [0, 100, 7, b'V', b'l', b'a', b'n', b'1', b'0', b'0'];
        let v = decode_vlan_name(&ok, k, 0).unwrap().unwrap();
        assert_eq!(v.vid, 100);
        assert_eq!(&*v.name, b"Vlan100");
        // Name longer than the TLV: lldpd rejects the LLDPDU.
        assert!(decode_vlan_name(&[0, 100, 9, b'V'], k, 0).is_err());
        assert!(decode_vlan_name(&[0, 100], k, 0).is_err());
        // Extra octets after the name: only the TLV is discarded.
        assert!(
            decode_vlan_name(&[0, 100, 1, b'V', 0], k, 0)
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn link_aggregation_and_mac_phy_bits() {
        let la = decode_link_aggregation(&[0x0b, 0, 0, 0, 42]);
        assert!(la.capable && la.enabled);
        assert_eq!(la.port_type, 2);
        assert_eq!(la.port_id, 42);
        let mut out = Vec::new();
        encode_link_aggregation(&mut out, TlvKind::OrgHeader, &la).unwrap();
        assert_eq!(out, [0x0b, 0, 0, 0, 42]);
        let m = decode_mac_phy(&[0x03, 0x6c, 0x00, 0x00, 0x10]);
        assert!(m.autoneg_supported && m.autoneg_enabled);
        assert_eq!(m.advertised, 0x6c00);
        assert_eq!(m.mau_type, 16);
    }
}
