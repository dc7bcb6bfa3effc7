//! The 802.1AB basic TLVs: Chassis ID, Port ID, TTL, the string TLVs, System Capabilities and
//! Management Address.

use std::borrow::Cow;

use super::error::{DecodeError, EncodeError, Expected, Field, TlvError, TlvKind, len16};
use super::tlv::{RawTlv, be16, be32};
use crate::neighbor::{ChassisIdSubtype, PortIdSubtype};

/// Wire codes of the chassis and port ID subtypes (1-7; 0 and 8-255 are reserved).
pub trait IdSubtype: Sized + Copy {
    /// The subtype for a wire code, or `None` for reserved codes.
    fn from_code(code: u8) -> Option<Self>;
    /// The wire code.
    fn code(self) -> u8;
}

impl IdSubtype for ChassisIdSubtype {
    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => Self::ChassisComponent,
            2 => Self::InterfaceAlias,
            3 => Self::PortComponent,
            4 => Self::MacAddress,
            5 => Self::NetworkAddress,
            6 => Self::InterfaceName,
            7 => Self::Local,
            _ => return None,
        })
    }

    fn code(self) -> u8 {
        match self {
            Self::ChassisComponent => 1,
            Self::InterfaceAlias => 2,
            Self::PortComponent => 3,
            Self::MacAddress => 4,
            Self::NetworkAddress => 5,
            Self::InterfaceName => 6,
            Self::Local => 7,
        }
    }
}

impl IdSubtype for PortIdSubtype {
    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => Self::InterfaceAlias,
            2 => Self::PortComponent,
            3 => Self::MacAddress,
            4 => Self::NetworkAddress,
            5 => Self::InterfaceName,
            6 => Self::AgentCircuitId,
            7 => Self::Local,
            _ => return None,
        })
    }

    fn code(self) -> u8 {
        match self {
            Self::InterfaceAlias => 1,
            Self::PortComponent => 2,
            Self::MacAddress => 3,
            Self::NetworkAddress => 4,
            Self::InterfaceName => 5,
            Self::AgentCircuitId => 6,
            Self::Local => 7,
        }
    }
}

/// Chassis ID TLV: subtype plus 1-255 octets of ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChassisId<'a> {
    /// How to read `id`.
    pub subtype: ChassisIdSubtype,
    /// The ID octets (6 for a MAC; IANA family + address for a network address).
    pub id: Cow<'a, [u8]>,
}

/// Port ID TLV: subtype plus 1-255 octets of ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortId<'a> {
    /// How to read `id`.
    pub subtype: PortIdSubtype,
    /// The ID octets.
    pub id: Cow<'a, [u8]>,
}

impl ChassisId<'_> {
    /// A copy that owns its ID.
    pub fn into_owned(self) -> ChassisId<'static> {
        ChassisId {
            subtype: self.subtype,
            id: Cow::Owned(self.id.into_owned()),
        }
    }
}

impl PortId<'_> {
    /// A copy that owns its ID.
    pub fn into_owned(self) -> PortId<'static> {
        PortId {
            subtype: self.subtype,
            id: Cow::Owned(self.id.into_owned()),
        }
    }
}

/// Decodes the information string of a Chassis ID or Port ID TLV into (subtype, ID).
///
/// Rules (802.1AB, as lldpd applies them): 2-256 octets, subtype 1-7.
pub(crate) fn decode_id<'a, S: IdSubtype>(
    tlv: &RawTlv<'a>,
    kind: TlvKind,
) -> Result<(S, &'a [u8]), DecodeError> {
    let length = tlv.value.len();
    let (Some((&code, id)), true) = (tlv.value.split_first(), (2..=256).contains(&length)) else {
        return Err(TlvError::Length {
            kind,
            offset: tlv.offset,
            length: len16(length),
            expected: Expected::Between(2, 256),
        }
        .into());
    };
    let subtype = S::from_code(code).ok_or(DecodeError::IdSubtype {
        kind,
        offset: tlv.offset,
        subtype: code,
    })?;
    Ok((subtype, id))
}

/// Writes the information string of a Chassis ID or Port ID TLV.
pub(crate) fn encode_id(
    out: &mut Vec<u8>,
    kind: TlvKind,
    code: u8,
    id: &[u8],
) -> Result<(), EncodeError> {
    if id.is_empty() || id.len() > 255 {
        return Err(EncodeError::Length {
            kind,
            field: "ID",
            length: id.len(),
            expected: Expected::Between(1, 255),
        });
    }
    out.push(code);
    out.extend_from_slice(id);
    Ok(())
}

/// System Capabilities TLV: two bitmaps (see [`capability_bits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SystemCapabilities {
    /// Capabilities the system has.
    pub supported: u16,
    /// Capabilities currently enabled.
    pub enabled: u16,
}

/// Bits of the System Capabilities bitmaps.
pub mod capability_bits {
    /// Other.
    pub const OTHER: u16 = 0x0001;
    /// Repeater.
    pub const REPEATER: u16 = 0x0002;
    /// MAC bridge.
    pub const BRIDGE: u16 = 0x0004;
    /// WLAN access point.
    pub const WLAN_AP: u16 = 0x0008;
    /// Router.
    pub const ROUTER: u16 = 0x0010;
    /// Telephone.
    pub const TELEPHONE: u16 = 0x0020;
    /// DOCSIS cable device.
    pub const DOCSIS: u16 = 0x0040;
    /// Station only.
    pub const STATION: u16 = 0x0080;
    /// C-VLAN component.
    pub const C_VLAN: u16 = 0x0100;
    /// S-VLAN component.
    pub const S_VLAN: u16 = 0x0200;
    /// Two-port MAC relay.
    pub const TPMR: u16 = 0x0400;
}

/// Management Address TLV.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ManagementAddress<'a> {
    /// IANA address family number (1 IPv4, 2 IPv6, 6 802 MAC, ...).
    pub family: u8,
    /// The address, 1-31 octets.
    pub address: Cow<'a, [u8]>,
    /// Interface numbering subtype (1 unknown, 2 ifIndex, 3 system port number).
    pub interface_numbering: u8,
    /// Interface number.
    pub interface_number: u32,
    /// Object identifier of the hardware component, 0-128 octets (BER-encoded).
    pub oid: Cow<'a, [u8]>,
}

impl ManagementAddress<'_> {
    /// A copy that owns its octets.
    pub fn into_owned(self) -> ManagementAddress<'static> {
        ManagementAddress {
            family: self.family,
            address: Cow::Owned(self.address.into_owned()),
            interface_numbering: self.interface_numbering,
            interface_number: self.interface_number,
            oid: Cow::Owned(self.oid.into_owned()),
        }
    }
}

/// Interface numbering subtype 2: ifIndex.
pub const IF_NUMBERING_IFINDEX: u8 = 2;

/// Outcome of decoding a TLV that has both LLDPDU-fatal rules (lldpd's) and TLV-only rules.
pub(crate) type TlvResult<T> = Result<Result<T, TlvError>, DecodeError>;

/// Decodes a Management Address information string.
///
/// LLDPDU-fatal, as in lldpd 1.0.22: address string length 0 or above 32, or a TLV too short
/// for it plus the interface fields. We also reject an address string of length 1 (no address
/// at all). TLV-only (discarded): a missing OID length octet, an OID above 128 octets, or
/// octets that do not match the declared lengths.
pub(crate) fn decode_management_address<'a>(tlv: &RawTlv<'a>) -> TlvResult<ManagementAddress<'a>> {
    let kind = TlvKind::ManagementAddress;
    let v = tlv.value;
    let length = len16(v.len());
    let field = |field, value, expected| TlvError::Field {
        kind,
        offset: tlv.offset,
        field,
        value: len16(value),
        expected,
        length,
    };
    let wrong_length = |expected| TlvError::Length {
        kind,
        offset: tlv.offset,
        length,
        expected,
    };
    let Some(&str_len) = v.first() else {
        return Err(wrong_length(Expected::AtLeast(9)).into());
    };
    let str_len = usize::from(str_len);
    if !(2..=32).contains(&str_len) {
        return Err(field(
            Field::AddressStringLength,
            str_len,
            Expected::Between(2, 32),
        )
        .into());
    }
    // str_len <= 32, so these lengths fit 16 bits.
    let (Some(addr_str), Some(numbering), Some(number)) = (
        v.get(1..1 + str_len),
        v.get(1 + str_len),
        be32(v, 2 + str_len),
    ) else {
        return Err(wrong_length(Expected::AtLeast(len16(1 + str_len + 5))).into());
    };
    let Some(&oid_len) = v.get(6 + str_len) else {
        return Ok(Err(wrong_length(Expected::AtLeast(len16(1 + str_len + 6)))));
    };
    let oid_len = usize::from(oid_len);
    if oid_len > 128 {
        return Ok(Err(field(
            Field::OidLength,
            oid_len,
            Expected::Between(0, 128),
        )));
    }
    let Some(oid) = v.get(7 + str_len..).filter(|oid| oid.len() == oid_len) else {
        return Ok(Err(wrong_length(Expected::Exactly(len16(
            7 + str_len + oid_len,
        )))));
    };
    let Some((&family, address)) = addr_str.split_first() else {
        return Err(field(Field::AddressStringLength, 0, Expected::Between(2, 32)).into());
    };
    Ok(Ok(ManagementAddress {
        family,
        address: Cow::Borrowed(address),
        interface_numbering: *numbering,
        interface_number: number,
        oid: Cow::Borrowed(oid),
    }))
}

/// Writes a Management Address information string.
pub(crate) fn encode_management_address(
    out: &mut Vec<u8>,
    m: &ManagementAddress<'_>,
) -> Result<(), EncodeError> {
    let kind = TlvKind::ManagementAddress;
    if m.address.is_empty() || m.address.len() > 31 {
        return Err(EncodeError::Length {
            kind,
            field: "address",
            length: m.address.len(),
            expected: Expected::Between(1, 31),
        });
    }
    if m.oid.len() > 128 {
        return Err(EncodeError::Length {
            kind,
            field: "OID",
            length: m.oid.len(),
            expected: Expected::Between(0, 128),
        });
    }
    // Both lengths were bounded above, so the casts are exact.
    out.push(m.address.len() as u8 + 1);
    out.push(m.family);
    out.extend_from_slice(&m.address);
    out.push(m.interface_numbering);
    out.extend_from_slice(&m.interface_number.to_be_bytes());
    out.push(m.oid.len() as u8);
    out.extend_from_slice(&m.oid);
    Ok(())
}

/// Decodes a System Capabilities information string (lldpd rejects fewer than 4 octets; we
/// discard a longer one).
pub(crate) fn decode_capabilities(tlv: &RawTlv<'_>) -> TlvResult<SystemCapabilities> {
    let wrong = |expected| TlvError::Length {
        kind: TlvKind::SystemCapabilities,
        offset: tlv.offset,
        length: len16(tlv.value.len()),
        expected,
    };
    let (Some(supported), Some(enabled)) = (be16(tlv.value, 0), be16(tlv.value, 2)) else {
        return Err(wrong(Expected::Exactly(4)).into());
    };
    if tlv.value.len() != 4 {
        return Ok(Err(wrong(Expected::Exactly(4))));
    }
    Ok(Ok(SystemCapabilities { supported, enabled }))
}

/// Decodes a TTL information string: exactly 2 octets (lldpd accepts longer; we do not).
pub(crate) fn decode_ttl(tlv: &RawTlv<'_>) -> Result<u16, DecodeError> {
    match tlv.value {
        &[a, b] => Ok(u16::from_be_bytes([a, b])),
        other => Err(TlvError::Length {
            kind: TlvKind::Ttl,
            offset: tlv.offset,
            length: len16(other.len()),
            expected: Expected::Exactly(2),
        }
        .into()),
    }
}

/// Checks a string TLV (Port Description, System Name, System Description): 0-255 octets.
pub(crate) fn check_string<'a>(tlv: &RawTlv<'a>, kind: TlvKind) -> Result<&'a [u8], TlvError> {
    if tlv.value.len() > 255 {
        return Err(TlvError::Length {
            kind,
            offset: tlv.offset,
            length: len16(tlv.value.len()),
            expected: Expected::Between(0, 255),
        });
    }
    Ok(tlv.value)
}

/// Writes a string TLV's information string (0-255 octets).
pub(crate) fn encode_string(out: &mut Vec<u8>, kind: TlvKind, s: &[u8]) -> Result<(), EncodeError> {
    if s.len() > 255 {
        return Err(EncodeError::Length {
            kind,
            field: "string",
            length: s.len(),
            expected: Expected::Between(0, 255),
        });
    }
    out.extend_from_slice(s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(tlv_type: u8, value: &[u8]) -> RawTlv<'_> {
        RawTlv {
            offset: 0,
            tlv_type,
            value,
        }
    }

    #[test]
    fn id_length_and_subtype_rules() {
        let ok = raw(1, &[4, 1, 2, 3, 4, 5, 6]);
        let (s, id): (ChassisIdSubtype, _) = decode_id(&ok, TlvKind::ChassisId).unwrap();
        assert_eq!(s, ChassisIdSubtype::MacAddress);
        assert_eq!(id.len(), 6);
        for bad in [&[4u8][..], &[]] {
            let e = decode_id::<ChassisIdSubtype>(&raw(1, bad), TlvKind::ChassisId).unwrap_err();
            assert!(
                matches!(e, DecodeError::Tlv(TlvError::Length { .. })),
                "{e}"
            );
        }
        let long = vec![7u8; 257];
        assert!(decode_id::<PortIdSubtype>(&raw(2, &long), TlvKind::PortId).is_err());
        assert!(decode_id::<PortIdSubtype>(&raw(2, &long[..256]), TlvKind::PortId).is_ok());
        for code in [0u8, 8, 255] {
            let e =
                decode_id::<PortIdSubtype>(&raw(2, &[code, b'x']), TlvKind::PortId).unwrap_err();
            assert_eq!(
                e,
                DecodeError::IdSubtype {
                    kind: TlvKind::PortId,
                    offset: 0,
                    subtype: code
                }
            );
        }
    }

    #[test]
    fn management_address_bounds() {
        // IPv4 10.0.0.11, ifIndex 2, no OID.
        let v = [5, 1, 10, 0, 0, 11, 2, 0, 0, 0, 2, 0];
        let m = decode_management_address(&raw(8, &v)).unwrap().unwrap();
        assert_eq!(m.family, 1);
        assert_eq!(&*m.address, &[10, 0, 0, 11]);
        assert_eq!(m.interface_number, 2);
        let mut out = Vec::new();
        encode_management_address(&mut out, &m).unwrap();
        assert_eq!(out, v);

        // Zero-length address string: the CVE-class case lldpd 1.0.22 started rejecting.
        assert!(decode_management_address(&raw(8, &[0, 2, 0, 0, 0, 0, 0])).is_err());
        assert!(decode_management_address(&raw(8, &[1, 1, 2, 0, 0, 0, 0, 0])).is_err());
        // Above 32 octets.
        let mut big = vec![33u8];
        big.extend(std::iter::repeat_n(1, 40));
        assert!(decode_management_address(&raw(8, &big)).is_err());
        // Too short for the interface fields: fatal.
        assert!(decode_management_address(&raw(8, &v[..8])).is_err());
        // Missing OID length octet: TLV discarded, LLDPDU kept.
        assert!(matches!(
            decode_management_address(&raw(8, &v[..11])),
            Ok(Err(TlvError::Length { .. }))
        ));
        // OID length disagrees with the TLV length.
        let mut bad_oid = v.to_vec();
        bad_oid[11] = 3;
        bad_oid.push(1);
        assert!(matches!(
            decode_management_address(&raw(8, &bad_oid)),
            Ok(Err(TlvError::Length { .. }))
        ));
    }

    #[test]
    fn capabilities_and_ttl_lengths() {
        assert_eq!(
            decode_capabilities(&raw(7, &[0, 0x14, 0, 0x10])).unwrap(),
            Ok(SystemCapabilities {
                supported: 0x14,
                enabled: 0x10
            })
        );
        assert!(decode_capabilities(&raw(7, &[0, 0x14, 0])).is_err());
        assert!(
            decode_capabilities(&raw(7, &[0, 0x14, 0, 0, 0]))
                .unwrap()
                .is_err()
        );
        assert_eq!(decode_ttl(&raw(3, &[0, 120])).unwrap(), 120);
        assert!(decode_ttl(&raw(3, &[0])).is_err());
        assert!(decode_ttl(&raw(3, &[0, 1, 2])).is_err());
    }
}
