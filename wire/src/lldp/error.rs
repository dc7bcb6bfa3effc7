//! Typed errors: what is wrong with a frame, an LLDPDU or one TLV, and where.
//!
//! Offsets count octets from the start of the LLDPDU (the first TLV header), except in
//! [`FrameError`], which names where the LLDPDU starts inside the Ethernet frame.

use std::fmt;

use super::oui::{Oui, org_tlv_name};
use crate::mac::MacAddr;

/// What kind of TLV an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TlvKind {
    /// Type 0: End Of LLDPDU.
    End,
    /// Type 1.
    ChassisId,
    /// Type 2.
    PortId,
    /// Type 3.
    Ttl,
    /// Type 4.
    PortDescription,
    /// Type 5.
    SystemName,
    /// Type 6.
    SystemDescription,
    /// Type 7.
    SystemCapabilities,
    /// Type 8.
    ManagementAddress,
    /// Types 9-126, reserved by 802.1AB.
    Reserved(u8),
    /// Type 127 with its OUI and subtype.
    Org {
        /// Organisationally unique identifier.
        oui: Oui,
        /// Organisationally defined subtype.
        subtype: u8,
    },
    /// Type 127 too short to carry an OUI and subtype.
    OrgHeader,
}

impl TlvKind {
    /// The kind of a basic (non-organisational) TLV type.
    pub fn basic(tlv_type: u8) -> Self {
        match tlv_type {
            0 => Self::End,
            1 => Self::ChassisId,
            2 => Self::PortId,
            3 => Self::Ttl,
            4 => Self::PortDescription,
            5 => Self::SystemName,
            6 => Self::SystemDescription,
            7 => Self::SystemCapabilities,
            8 => Self::ManagementAddress,
            127 => Self::OrgHeader,
            other => Self::Reserved(other),
        }
    }
}

impl fmt::Display for TlvKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::End => f.write_str("End Of LLDPDU"),
            Self::ChassisId => f.write_str("Chassis ID"),
            Self::PortId => f.write_str("Port ID"),
            Self::Ttl => f.write_str("Time To Live"),
            Self::PortDescription => f.write_str("Port Description"),
            Self::SystemName => f.write_str("System Name"),
            Self::SystemDescription => f.write_str("System Description"),
            Self::SystemCapabilities => f.write_str("System Capabilities"),
            Self::ManagementAddress => f.write_str("Management Address"),
            Self::Reserved(t) => write!(f, "reserved type {t}"),
            Self::Org { oui, subtype } => match org_tlv_name(*oui, *subtype) {
                Some(name) => write!(f, "{name} ({oui} subtype {subtype})"),
                None => write!(f, "organisational ({oui} subtype {subtype})"),
            },
            Self::OrgHeader => f.write_str("organisational"),
        }
    }
}

/// The length a TLV (or a field inside it) must have.
///
/// Error types are kept small (lengths in LLDP fit 16 bits) because decoding moves them
/// around on its fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Expected {
    /// Exactly this many octets.
    Exactly(u16),
    /// At least this many octets.
    AtLeast(u16),
    /// Between these bounds, inclusive.
    Between(u16, u16),
    /// A fixed part plus any number of fixed-size entries.
    Entries {
        /// Octets before the entries.
        fixed: u16,
        /// Octets per entry.
        entry: u16,
    },
}

/// A length as the 16-bit figure errors carry (saturating; LLDP lengths are 9 bits).
pub(crate) fn len16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// A length field inside a TLV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// Management Address: address string length (family octet + address).
    AddressStringLength,
    /// Management Address: OID string length.
    OidLength,
    /// VLAN Name: name length.
    VlanNameLength,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::AddressStringLength => "address string length",
            Self::OidLength => "OID length",
            Self::VlanNameLength => "VLAN name length",
        })
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exactly(n) => write!(f, "exactly {n}"),
            Self::AtLeast(n) => write!(f, "at least {n}"),
            Self::Between(a, b) => write!(f, "{a} to {b}"),
            Self::Entries { fixed, entry } => write!(f, "{fixed} + {entry}*N"),
        }
    }
}

/// A problem with one TLV.
///
/// Depending on the rule it breaks, the whole LLDPDU is rejected ([`DecodeError::Tlv`]) or only
/// this TLV is discarded and kept in the LLDPDU as `Tlv::Discarded`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
pub enum TlvError {
    /// The information string has a length the TLV does not allow.
    #[error(
        "{kind} TLV at offset {offset} has {length} octets of information, expected {expected}"
    )]
    Length {
        /// Which TLV.
        kind: TlvKind,
        /// Offset of its header.
        offset: usize,
        /// Its information string length.
        length: u16,
        /// What the standard (or lldpd) allows.
        expected: Expected,
    },
    /// A length field inside the TLV disagrees with the TLV length or exceeds its bound.
    #[error(
        "{kind} TLV at offset {offset}: {field} is {value} octets, allowed {expected} in a TLV of {length} octets"
    )]
    Field {
        /// Which TLV.
        kind: TlvKind,
        /// Offset of its header.
        offset: usize,
        /// The inner length field.
        field: Field,
        /// Its value.
        value: u16,
        /// What it may be.
        expected: Expected,
        /// The TLV's information string length.
        length: u16,
    },
    /// A TLV that may appear only once appeared again.
    #[error("second {kind} TLV at offset {offset}; only one is allowed per LLDPDU")]
    Duplicate {
        /// Which TLV.
        kind: TlvKind,
        /// Offset of the repeated header.
        offset: usize,
    },
}

/// Why an LLDPDU was rejected as a whole (802.1AB: the frame is discarded).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer than two octets remain where a TLV header should start.
    #[error("truncated TLV header at offset {offset}: {remaining} octet(s) left")]
    TruncatedHeader {
        /// Where the header starts.
        offset: usize,
        /// Octets left in the buffer.
        remaining: usize,
    },
    /// The TLV claims more octets than the LLDPDU holds.
    #[error("{kind} TLV at offset {offset} claims {length} octets but only {remaining} remain")]
    TruncatedTlv {
        /// Which TLV (organisational TLVs are named only by type here).
        kind: TlvKind,
        /// Where its header starts.
        offset: usize,
        /// Declared information string length.
        length: u16,
        /// Octets left after the header.
        remaining: usize,
    },
    /// Chassis ID, Port ID and TTL must be the first three TLVs, in that order.
    #[error("{found} TLV at offset {offset} where the {expected} TLV must be")]
    OutOfOrder {
        /// The mandatory TLV expected at this position.
        expected: TlvKind,
        /// What was found instead.
        found: TlvKind,
        /// Where.
        offset: usize,
    },
    /// A mandatory TLV appeared a second time.
    #[error("second {kind} TLV at offset {offset}")]
    DuplicateMandatory {
        /// Which TLV.
        kind: TlvKind,
        /// Where the repeat starts.
        offset: usize,
    },
    /// The LLDPDU ended before a mandatory TLV.
    #[error("the {kind} TLV is missing")]
    Missing {
        /// Which TLV.
        kind: TlvKind,
    },
    /// The LLDPDU has no End Of LLDPDU TLV.
    #[error("no End Of LLDPDU TLV in {length} octets")]
    MissingEnd {
        /// Length of the LLDPDU.
        length: usize,
    },
    /// The End Of LLDPDU TLV must have length 0.
    #[error("End Of LLDPDU TLV at offset {offset} has length {length}, must be 0")]
    EndLength {
        /// Where.
        offset: usize,
        /// Its length.
        length: u16,
    },
    /// Chassis and Port ID subtypes 0 and 8-255 are reserved.
    #[error("{kind} TLV at offset {offset} has reserved subtype {subtype} (allowed 1 to 7)")]
    IdSubtype {
        /// Chassis ID or Port ID.
        kind: TlvKind,
        /// Where.
        offset: usize,
        /// The subtype.
        subtype: u8,
    },
    /// A TLV broke a rule that invalidates the whole LLDPDU (lldpd rejects it too).
    #[error(transparent)]
    Tlv(#[from] TlvError),
}

/// Why an Ethernet frame is not a valid LLDP frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Shorter than the Ethernet (and, if tagged, 802.1Q) header.
    #[error("frame of {length} octets is shorter than its Ethernet header")]
    TooShort {
        /// Frame length.
        length: usize,
    },
    /// The destination is not one of the three LLDP group addresses.
    #[error("destination {destination} is not an LLDP group address")]
    Destination {
        /// The destination MAC.
        destination: MacAddr,
    },
    /// The EtherType is not 0x88cc.
    #[error("EtherType {ethertype:#06x} is not LLDP (0x88cc)")]
    Ethertype {
        /// The EtherType found.
        ethertype: u16,
    },
    /// The LLDPDU inside the frame is invalid.
    #[error("invalid LLDPDU (it starts at frame offset {offset})")]
    Lldpdu {
        /// Where the LLDPDU starts in the frame.
        offset: usize,
        /// What is wrong with it.
        #[source]
        source: DecodeError,
    },
}

/// Why a value cannot be encoded as a valid LLDPDU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A field's length is outside what its TLV allows.
    #[error("{kind} TLV: {field} of {length} octets, allowed {expected}")]
    Length {
        /// Which TLV.
        kind: TlvKind,
        /// Which field.
        field: &'static str,
        /// Its length.
        length: usize,
        /// What is allowed.
        expected: Expected,
    },
    /// A field's value does not fit its bits or range.
    #[error("{kind} TLV: {field} is {value}, allowed {min} to {max}")]
    Range {
        /// Which TLV.
        kind: TlvKind,
        /// Which field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// Smallest allowed value.
        min: u64,
        /// Largest allowed value.
        max: u64,
    },
    /// The encoded LLDPDU does not fit the frame.
    #[error("LLDPDU of {length} octets exceeds the {max}-octet frame payload")]
    TooLarge {
        /// Encoded length.
        length: usize,
        /// Allowed payload.
        max: usize,
    },
}
