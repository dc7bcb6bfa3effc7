//! Receive rules that span TLVs: the mandatory Chassis ID / Port ID / TTL prefix, and TLVs that
//! may appear only once.

use super::error::{DecodeError, TlvError, TlvKind};
use super::tlv::{RawTlv, types};

/// Tracks the position in the mandatory prefix (802.1AB: Chassis ID, Port ID, TTL, in order,
/// each exactly once; lldpd rejects any deviation).
#[derive(Debug, Default)]
pub(crate) struct MandatoryOrder {
    seen: u8,
}

const MANDATORY: [(u8, TlvKind); 3] = [
    (types::CHASSIS_ID, TlvKind::ChassisId),
    (types::PORT_ID, TlvKind::PortId),
    (types::TTL, TlvKind::Ttl),
];

impl MandatoryOrder {
    /// Checks the next TLV. Returns true when it is the next mandatory one, false when the
    /// prefix is complete and the TLV is an optional one; an error otherwise.
    pub(crate) fn check(&mut self, tlv: &RawTlv<'_>) -> Result<bool, DecodeError> {
        let kind = TlvKind::basic(tlv.tlv_type);
        if let Some(&(want, expected)) = MANDATORY.get(usize::from(self.seen)) {
            if tlv.tlv_type == want {
                self.seen += 1;
                return Ok(true);
            }
            return Err(if tlv.tlv_type == types::END {
                DecodeError::Missing { kind: expected }
            } else {
                DecodeError::OutOfOrder {
                    expected,
                    found: kind,
                    offset: tlv.offset,
                }
            });
        }
        if MANDATORY.iter().any(|&(t, _)| t == tlv.tlv_type) {
            return Err(DecodeError::DuplicateMandatory {
                kind,
                offset: tlv.offset,
            });
        }
        Ok(false)
    }

    /// The first mandatory TLV not yet seen.
    pub(crate) fn missing(&self) -> Option<TlvKind> {
        MANDATORY.get(usize::from(self.seen)).map(|&(_, k)| k)
    }
}

/// Optional TLVs that 802.1AB / 802.1Q / 802.3 allow at most once per LLDPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Singleton {
    PortDescription,
    SystemName,
    SystemDescription,
    SystemCapabilities,
    PortVlanId,
    LinkAggregation,
    MacPhy,
    LegacyLinkAggregation,
    MaxFrameSize,
    EtsConfiguration,
    EtsRecommendation,
    Pfc,
    ApplicationPriority,
}

/// The set of singleton TLVs seen so far.
#[derive(Debug, Default)]
pub(crate) struct Singletons(u16);

impl Singletons {
    /// Records `s`; a second occurrence is a TLV error (the repeat is discarded). `kind`
    /// names the TLV in that error; it is only built when needed.
    #[inline]
    pub(crate) fn first(
        &mut self,
        s: Singleton,
        kind: impl FnOnce() -> TlvKind,
        offset: usize,
    ) -> Result<(), TlvError> {
        let bit = 1u16 << (s as u8);
        if self.0 & bit != 0 {
            return Err(TlvError::Duplicate {
                kind: kind(),
                offset,
            });
        }
        self.0 |= bit;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(tlv_type: u8) -> RawTlv<'static> {
        RawTlv {
            offset: 7,
            tlv_type,
            value: &[],
        }
    }

    #[test]
    fn mandatory_prefix_in_order_then_optional() {
        let mut o = MandatoryOrder::default();
        assert_eq!(o.missing(), Some(TlvKind::ChassisId));
        assert!(o.check(&raw(1)).unwrap());
        assert!(o.check(&raw(2)).unwrap());
        assert!(o.check(&raw(3)).unwrap());
        assert_eq!(o.missing(), None);
        assert!(!o.check(&raw(5)).unwrap());
        assert_eq!(
            o.check(&raw(2)).unwrap_err(),
            DecodeError::DuplicateMandatory {
                kind: TlvKind::PortId,
                offset: 7
            }
        );
    }

    #[test]
    fn wrong_order_and_early_end() {
        let mut o = MandatoryOrder::default();
        assert_eq!(
            o.check(&raw(2)).unwrap_err(),
            DecodeError::OutOfOrder {
                expected: TlvKind::ChassisId,
                found: TlvKind::PortId,
                offset: 7
            }
        );
        let mut o = MandatoryOrder::default();
        o.check(&raw(1)).unwrap();
        o.check(&raw(2)).unwrap();
        assert_eq!(
            o.check(&raw(0)).unwrap_err(),
            DecodeError::Missing { kind: TlvKind::Ttl }
        );
    }

    #[test]
    fn singletons_reject_repeats() {
        let mut s = Singletons::default();
        s.first(Singleton::SystemName, || TlvKind::SystemName, 1)
            .unwrap();
        s.first(Singleton::Pfc, || TlvKind::OrgHeader, 2).unwrap();
        assert!(
            s.first(Singleton::SystemName, || TlvKind::SystemName, 3)
                .is_err()
        );
    }
}
