//! Organisationally unique identifiers and the subtypes of the organisational TLVs we know:
//! the vocabulary that errors, the codec and the schema conversion share. A leaf module, so
//! error types can name an organisational TLV without depending on the codec.

use std::fmt;

/// An organisationally unique identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Oui(pub [u8; 3]);

impl Oui {
    /// IEEE 802.1.
    pub const DOT1: Self = Self([0x00, 0x80, 0xc2]);
    /// IEEE 802.3.
    pub const DOT3: Self = Self([0x00, 0x12, 0x0f]);
    /// TIA LLDP-MED.
    pub const MED: Self = Self([0x00, 0x12, 0xbb]);
    /// Pre-standard (CEE) DCBX, kept raw.
    pub const CEE_DCBX: Self = Self([0x00, 0x1b, 0x21]);
}

impl Oui {
    /// The OUI and subtype of an organisational TLV as one big-endian word (OUI in the top 24
    /// bits): one comparison per known TLV instead of four.
    pub(crate) const fn key(self, subtype: u8) -> u32 {
        let [a, b, c] = self.0;
        u32::from_be_bytes([a, b, c, subtype])
    }
}

impl fmt::Display for Oui {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c] = self.0;
        write!(f, "{a:02x}-{b:02x}-{c:02x}")
    }
}

/// IEEE 802.1 subtypes.
pub mod dot1 {
    /// Port VLAN ID.
    pub const PORT_VLAN_ID: u8 = 1;
    /// Port And Protocol VLAN ID (kept raw).
    pub const PORT_PROTOCOL_VLAN_ID: u8 = 2;
    /// VLAN Name.
    pub const VLAN_NAME: u8 = 3;
    /// Protocol Identity (kept raw).
    pub const PROTOCOL_IDENTITY: u8 = 4;
    /// Link Aggregation (802.1AX; replaces the 802.3 one).
    pub const LINK_AGGREGATION: u8 = 7;
    /// 802.1Qaz ETS Configuration.
    pub const ETS_CONFIGURATION: u8 = 9;
    /// 802.1Qaz ETS Recommendation.
    pub const ETS_RECOMMENDATION: u8 = 10;
    /// 802.1Qaz PFC Configuration.
    pub const PFC_CONFIGURATION: u8 = 11;
    /// 802.1Qaz Application Priority.
    pub const APPLICATION_PRIORITY: u8 = 12;
}

/// IEEE 802.3 subtypes.
pub mod dot3 {
    /// MAC/PHY Configuration/Status.
    pub const MAC_PHY: u8 = 1;
    /// Power via MDI (kept raw).
    pub const POWER_VIA_MDI: u8 = 2;
    /// Link Aggregation (deprecated by the 802.1 one).
    pub const LINK_AGGREGATION: u8 = 3;
    /// Maximum Frame Size.
    pub const MAX_FRAME_SIZE: u8 = 4;
}

/// A human name for an organisational TLV we know.
pub fn org_tlv_name(oui: Oui, subtype: u8) -> Option<&'static str> {
    Some(match (oui, subtype) {
        (Oui::DOT1, dot1::PORT_VLAN_ID) => "802.1 Port VLAN ID",
        (Oui::DOT1, dot1::PORT_PROTOCOL_VLAN_ID) => "802.1 Port And Protocol VLAN ID",
        (Oui::DOT1, dot1::VLAN_NAME) => "802.1 VLAN Name",
        (Oui::DOT1, dot1::PROTOCOL_IDENTITY) => "802.1 Protocol Identity",
        (Oui::DOT1, dot1::LINK_AGGREGATION) => "802.1 Link Aggregation",
        (Oui::DOT1, dot1::ETS_CONFIGURATION) => "DCBX ETS Configuration",
        (Oui::DOT1, dot1::ETS_RECOMMENDATION) => "DCBX ETS Recommendation",
        (Oui::DOT1, dot1::PFC_CONFIGURATION) => "DCBX PFC Configuration",
        (Oui::DOT1, dot1::APPLICATION_PRIORITY) => "DCBX Application Priority",
        (Oui::DOT3, dot3::MAC_PHY) => "802.3 MAC/PHY Configuration/Status",
        (Oui::DOT3, dot3::POWER_VIA_MDI) => "802.3 Power via MDI",
        (Oui::DOT3, dot3::LINK_AGGREGATION) => "802.3 Link Aggregation",
        (Oui::DOT3, dot3::MAX_FRAME_SIZE) => "802.3 Maximum Frame Size",
        (Oui::MED, _) => "LLDP-MED",
        (Oui::CEE_DCBX, _) => "CEE DCBX",
        _ => return None,
    })
}
