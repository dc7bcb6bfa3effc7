//! Ethernet framing of LLDPDUs: the three LLDP group addresses, EtherType 0x88cc, an optional
//! 802.1Q tag, and padding to the 60-octet minimum on transmit.

use super::error::{EncodeError, FrameError};
use super::lldpdu::Lldpdu;
use crate::ethertype::{LLDP as ETHERTYPE_LLDP, VLAN as ETHERTYPE_VLAN};
use crate::mac::MacAddr;

/// Shortest Ethernet frame without FCS; shorter frames are padded.
pub const MIN_FRAME_LEN: usize = 60;
/// Largest LLDPDU sent by default: one standard-MTU payload.
pub const DEFAULT_MAX_LLDPDU: usize = 1500;

/// The LLDP group destination addresses (the agent types of 802.1AB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LldpGroup {
    /// 01:80:c2:00:00:0e, never forwarded by bridges: what host-to-ToR discovery uses.
    #[default]
    NearestBridge,
    /// 01:80:c2:00:00:03.
    NearestNonTpmrBridge,
    /// 01:80:c2:00:00:00.
    NearestCustomerBridge,
}

impl LldpGroup {
    /// All three, nearest bridge first.
    pub const ALL: [Self; 3] = [
        Self::NearestBridge,
        Self::NearestNonTpmrBridge,
        Self::NearestCustomerBridge,
    ];

    /// The group MAC address.
    pub const fn mac(self) -> MacAddr {
        let last = match self {
            Self::NearestBridge => 0x0e,
            Self::NearestNonTpmrBridge => 0x03,
            Self::NearestCustomerBridge => 0x00,
        };
        MacAddr([0x01, 0x80, 0xc2, 0x00, 0x00, last])
    }

    /// The group for a destination MAC, if it is one.
    pub fn from_mac(mac: MacAddr) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.mac() == mac)
    }
}

/// An 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority code point, 0-7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN ID, 0-4095.
    pub vid: u16,
}

impl VlanTag {
    fn tci(self) -> u16 {
        (u16::from(self.pcp & 0x07) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0x0fff)
    }

    fn from_tci(tci: u16) -> Self {
        Self {
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        }
    }
}

/// An LLDP frame: Ethernet header and LLDPDU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LldpFrame<'a> {
    /// Destination group.
    pub destination: LldpGroup,
    /// Source MAC: the sending port's.
    pub source: MacAddr,
    /// 802.1Q tag, if the frame carries one.
    pub vlan: Option<VlanTag>,
    /// The LLDPDU.
    pub lldpdu: Lldpdu<'a>,
}

fn mac_at(frame: &[u8], at: usize) -> Option<MacAddr> {
    frame
        .get(at..at + 6)
        .and_then(|b| <[u8; 6]>::try_from(b).ok())
        .map(MacAddr)
}

/// Decodes an Ethernet frame (no FCS) carrying an LLDPDU, as lldpd validates it: LLDP group
/// destination, EtherType 0x88cc (after an optional 802.1Q tag), then the LLDPDU rules.
pub fn decode_frame(frame: &[u8]) -> Result<LldpFrame<'_>, FrameError> {
    decode_frame_reusing(frame, &mut Vec::new())
}

/// [`decode_frame`] keeping the TLV list in `spare`'s allocation (see
/// [`Lldpdu::decode_reusing`]).
pub fn decode_frame_reusing<'a>(
    frame: &'a [u8],
    spare: &mut Vec<super::lldpdu::Tlv<'static>>,
) -> Result<LldpFrame<'a>, FrameError> {
    let too_short = || FrameError::TooShort {
        length: frame.len(),
    };
    let (Some(dst), Some(src), Some(mut ethertype)) = (
        mac_at(frame, 0),
        mac_at(frame, 6),
        super::tlv::be16(frame, 12),
    ) else {
        return Err(too_short());
    };
    let destination =
        LldpGroup::from_mac(dst).ok_or(FrameError::Destination { destination: dst })?;
    let mut offset = 14;
    let mut vlan = None;
    if ethertype == ETHERTYPE_VLAN {
        let (Some(tci), Some(inner)) = (super::tlv::be16(frame, 14), super::tlv::be16(frame, 16))
        else {
            return Err(too_short());
        };
        vlan = Some(VlanTag::from_tci(tci));
        ethertype = inner;
        offset = 18;
    }
    if ethertype != ETHERTYPE_LLDP {
        return Err(FrameError::Ethertype { ethertype });
    }
    let payload = frame.get(offset..).unwrap_or_default();
    let lldpdu = Lldpdu::decode_reusing(payload, spare)
        .map_err(|source| FrameError::Lldpdu { offset, source })?;
    Ok(LldpFrame {
        destination,
        source: src,
        vlan,
        lldpdu,
    })
}

impl LldpFrame<'_> {
    /// Appends the frame, padded to 60 octets. Fails if the LLDPDU exceeds `max_lldpdu` octets
    /// (the interface MTU; [`DEFAULT_MAX_LLDPDU`] for a standard one).
    pub fn encode(&self, out: &mut Vec<u8>, max_lldpdu: usize) -> Result<(), EncodeError> {
        let start = out.len();
        out.extend_from_slice(&self.destination.mac().0);
        out.extend_from_slice(&self.source.0);
        if let Some(tag) = self.vlan {
            out.extend_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
            out.extend_from_slice(&tag.tci().to_be_bytes());
        }
        out.extend_from_slice(&ETHERTYPE_LLDP.to_be_bytes());
        let payload_start = out.len();
        if let Err(e) = self.lldpdu.encode(out) {
            out.truncate(start);
            return Err(e);
        }
        let length = out.len() - payload_start;
        if length > max_lldpdu {
            out.truncate(start);
            return Err(EncodeError::TooLarge {
                length,
                max: max_lldpdu,
            });
        }
        if out.len() - start < MIN_FRAME_LEN {
            out.resize(start + MIN_FRAME_LEN, 0);
        }
        Ok(())
    }

    /// The encoded frame.
    pub fn to_vec(&self, max_lldpdu: usize) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(MIN_FRAME_LEN.max(256));
        self.encode(&mut out, max_lldpdu)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_round_trip() {
        for g in LldpGroup::ALL {
            assert_eq!(LldpGroup::from_mac(g.mac()), Some(g));
        }
        assert_eq!(LldpGroup::from_mac(MacAddr([0xff; 6])), None);
    }

    #[test]
    fn vlan_tci_bits() {
        let t = VlanTag {
            pcp: 7,
            dei: true,
            vid: 100,
        };
        assert_eq!(t.tci(), 0xf064);
        assert_eq!(VlanTag::from_tci(0xf064), t);
    }

    #[test]
    fn header_rules() {
        assert!(matches!(
            decode_frame(&[0; 13]),
            Err(FrameError::TooShort { length: 13 })
        ));
        let mut f = vec![0xff; 12];
        f.extend_from_slice(&[0x88, 0xcc, 0, 0]);
        assert!(matches!(
            decode_frame(&f),
            Err(FrameError::Destination { .. })
        ));
        f[..6].copy_from_slice(&LldpGroup::NearestBridge.mac().0);
        f[12] = 0x08;
        f[13] = 0x00;
        assert!(matches!(
            decode_frame(&f),
            Err(FrameError::Ethertype { ethertype: 0x0800 })
        ));
        // Tagged but cut inside the tag.
        f[12] = 0x81;
        f[13] = 0x00;
        f.truncate(15);
        assert!(matches!(decode_frame(&f), Err(FrameError::TooShort { .. })));
    }
}
