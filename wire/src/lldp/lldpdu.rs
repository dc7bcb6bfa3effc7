//! The LLDPDU: decoding with 802.1AB receive validation (at least as strict as lldpd), and
//! encoding.
//!
//! Decoding borrows from the input and allocates once (the TLV list). An LLDPDU that breaks a
//! rule lldpd enforces is rejected with a [`DecodeError`]; a TLV that breaks only a rule lldpd
//! does not check (an exact length, a repeat of a once-only TLV) is kept as
//! [`Tlv::Discarded`] and the rest of the LLDPDU is used, as 802.1AB prescribes for TLV errors.

use std::borrow::Cow;

use super::basic::{self, ChassisId, IdSubtype, ManagementAddress, PortId, SystemCapabilities};
use super::dcbx::{self, AppPriorityTable, EtsConfiguration, EtsRecommendation, PfcConfiguration};
use super::error::{DecodeError, EncodeError, Expected, TlvError, TlvKind, len16};
use super::org::{self, LinkAggregation, MacPhy, OrgTlv, Oui, VlanName, dot1, dot3};
use super::tlv::{RawTlv, TlvReader, types, write_tlv};
use super::validate::{MandatoryOrder, Singleton, Singletons};

/// A decoded LLDPDU.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lldpdu<'a> {
    /// Chassis ID (first TLV).
    pub chassis_id: ChassisId<'a>,
    /// Port ID (second TLV).
    pub port_id: PortId<'a>,
    /// Time to live in seconds (third TLV); 0 is a shutdown LLDPDU.
    pub ttl: u16,
    /// The optional TLVs, in wire order (End not included).
    pub tlvs: Vec<Tlv<'a>>,
}

/// One optional TLV.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tlv<'a> {
    /// Port Description (0-255 octets, usually text).
    PortDescription(Cow<'a, [u8]>),
    /// System Name.
    SystemName(Cow<'a, [u8]>),
    /// System Description.
    SystemDescription(Cow<'a, [u8]>),
    /// System Capabilities.
    SystemCapabilities(SystemCapabilities),
    /// Management Address (may repeat).
    ManagementAddress(ManagementAddress<'a>),
    /// 802.1 Port VLAN ID (0: none).
    PortVlanId(u16),
    /// 802.1 VLAN Name (may repeat).
    VlanName(VlanName<'a>),
    /// 802.1 Link Aggregation (subtype 7).
    LinkAggregation(LinkAggregation),
    /// 802.3 MAC/PHY Configuration/Status.
    MacPhy(MacPhy),
    /// 802.3 Link Aggregation (subtype 3, deprecated).
    LegacyLinkAggregation(LinkAggregation),
    /// 802.3 Maximum Frame Size.
    MaxFrameSize(u16),
    /// 802.1Qaz ETS Configuration.
    EtsConfiguration(EtsConfiguration),
    /// 802.1Qaz ETS Recommendation.
    EtsRecommendation(EtsRecommendation),
    /// 802.1Qaz PFC Configuration.
    Pfc(PfcConfiguration),
    /// 802.1Qaz Application Priority.
    ApplicationPriority(AppPriorityTable<'a>),
    /// An organisational TLV we do not decode (counted as unrecognised).
    Org(OrgTlv<'a>),
    /// A reserved TLV type, 9-126 (counted as unrecognised).
    Reserved {
        /// The type.
        tlv_type: u8,
        /// Its information string.
        value: Cow<'a, [u8]>,
    },
    /// A TLV that broke a TLV-level rule; not used, counted as discarded, re-encoded as is.
    Discarded {
        /// The type.
        tlv_type: u8,
        /// Its information string.
        value: Cow<'a, [u8]>,
        /// What is wrong with it.
        error: TlvError,
    },
}

impl Tlv<'_> {
    /// True for TLVs kept raw because we do not know them.
    pub fn is_unrecognized(&self) -> bool {
        matches!(self, Self::Org(_) | Self::Reserved { .. })
    }

    /// A copy that owns its octets.
    pub fn into_owned(self) -> Tlv<'static> {
        fn own(c: Cow<'_, [u8]>) -> Cow<'static, [u8]> {
            Cow::Owned(c.into_owned())
        }
        match self {
            Self::PortDescription(s) => Tlv::PortDescription(own(s)),
            Self::SystemName(s) => Tlv::SystemName(own(s)),
            Self::SystemDescription(s) => Tlv::SystemDescription(own(s)),
            Self::SystemCapabilities(c) => Tlv::SystemCapabilities(c),
            Self::ManagementAddress(m) => Tlv::ManagementAddress(m.into_owned()),
            Self::PortVlanId(v) => Tlv::PortVlanId(v),
            Self::VlanName(v) => Tlv::VlanName(v.into_owned()),
            Self::LinkAggregation(l) => Tlv::LinkAggregation(l),
            Self::MacPhy(m) => Tlv::MacPhy(m),
            Self::LegacyLinkAggregation(l) => Tlv::LegacyLinkAggregation(l),
            Self::MaxFrameSize(m) => Tlv::MaxFrameSize(m),
            Self::EtsConfiguration(e) => Tlv::EtsConfiguration(e),
            Self::EtsRecommendation(e) => Tlv::EtsRecommendation(e),
            Self::Pfc(p) => Tlv::Pfc(p),
            Self::ApplicationPriority(a) => Tlv::ApplicationPriority(a.into_owned()),
            Self::Org(o) => Tlv::Org(o.into_owned()),
            Self::Reserved { tlv_type, value } => Tlv::Reserved {
                tlv_type,
                value: own(value),
            },
            Self::Discarded {
                tlv_type,
                value,
                error,
            } => Tlv::Discarded {
                tlv_type,
                value: own(value),
                error,
            },
        }
    }

    /// Appends the TLV (header and information string).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let org = |subtype| TlvKind::Org {
            oui: Oui::DOT1,
            subtype,
        };
        let dot3 = |subtype| TlvKind::Org {
            oui: Oui::DOT3,
            subtype,
        };
        match self {
            Self::PortDescription(s) => string_tlv(out, types::PORT_DESCRIPTION, s),
            Self::SystemName(s) => string_tlv(out, types::SYSTEM_NAME, s),
            Self::SystemDescription(s) => string_tlv(out, types::SYSTEM_DESCRIPTION, s),
            Self::SystemCapabilities(c) => write_tlv(
                out,
                types::SYSTEM_CAPABILITIES,
                TlvKind::SystemCapabilities,
                |o| {
                    o.extend_from_slice(&c.supported.to_be_bytes());
                    o.extend_from_slice(&c.enabled.to_be_bytes());
                    Ok(())
                },
            ),
            Self::ManagementAddress(m) => write_tlv(
                out,
                types::MANAGEMENT_ADDRESS,
                TlvKind::ManagementAddress,
                |o| basic::encode_management_address(o, m),
            ),
            Self::PortVlanId(v) => org_tlv(out, org(dot1::PORT_VLAN_ID), |o| {
                o.extend_from_slice(&v.to_be_bytes());
                Ok(())
            }),
            Self::VlanName(v) => org_tlv(out, org(dot1::VLAN_NAME), |o| {
                org::encode_vlan_name(o, org(dot1::VLAN_NAME), v)
            }),
            Self::LinkAggregation(l) => org_tlv(out, org(dot1::LINK_AGGREGATION), |o| {
                org::encode_link_aggregation(o, org(dot1::LINK_AGGREGATION), l)
            }),
            Self::MacPhy(m) => org_tlv(out, dot3(dot3::MAC_PHY), |o| {
                org::encode_mac_phy(o, m);
                Ok(())
            }),
            Self::LegacyLinkAggregation(l) => org_tlv(out, dot3(dot3::LINK_AGGREGATION), |o| {
                org::encode_link_aggregation(o, dot3(dot3::LINK_AGGREGATION), l)
            }),
            Self::MaxFrameSize(m) => org_tlv(out, dot3(dot3::MAX_FRAME_SIZE), |o| {
                o.extend_from_slice(&m.to_be_bytes());
                Ok(())
            }),
            Self::EtsConfiguration(e) => org_tlv(out, org(dot1::ETS_CONFIGURATION), |o| {
                dcbx::encode_ets_configuration(o, org(dot1::ETS_CONFIGURATION), e)
            }),
            Self::EtsRecommendation(e) => org_tlv(out, org(dot1::ETS_RECOMMENDATION), |o| {
                dcbx::encode_ets_recommendation(o, org(dot1::ETS_RECOMMENDATION), e)
            }),
            Self::Pfc(p) => org_tlv(out, org(dot1::PFC_CONFIGURATION), |o| {
                dcbx::encode_pfc(o, org(dot1::PFC_CONFIGURATION), p)
            }),
            Self::ApplicationPriority(t) => org_tlv(out, org(dot1::APPLICATION_PRIORITY), |o| {
                dcbx::encode_app(o, t);
                Ok(())
            }),
            Self::Org(o) => org_tlv(
                out,
                TlvKind::Org {
                    oui: o.oui,
                    subtype: o.subtype,
                },
                |w| {
                    w.extend_from_slice(&o.info);
                    Ok(())
                },
            ),
            Self::Reserved { tlv_type, value } => {
                raw_tlv(out, *tlv_type, 9..=126, TlvKind::Reserved(*tlv_type), value)
            }
            Self::Discarded {
                tlv_type, value, ..
            } => raw_tlv(out, *tlv_type, 4..=127, TlvKind::basic(*tlv_type), value),
        }
    }
}

fn string_tlv(out: &mut Vec<u8>, tlv_type: u8, s: &[u8]) -> Result<(), EncodeError> {
    let kind = TlvKind::basic(tlv_type);
    write_tlv(out, tlv_type, kind, |o| basic::encode_string(o, kind, s))
}

fn org_tlv(
    out: &mut Vec<u8>,
    kind: TlvKind,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let TlvKind::Org { oui, subtype } = kind else {
        return Err(EncodeError::Range {
            kind,
            field: "type",
            value: 0,
            min: 127,
            max: 127,
        });
    };
    write_tlv(out, types::ORG, kind, |o| {
        o.extend_from_slice(&oui.0);
        o.push(subtype);
        body(o)
    })
}

fn raw_tlv(
    out: &mut Vec<u8>,
    tlv_type: u8,
    allowed: std::ops::RangeInclusive<u8>,
    kind: TlvKind,
    value: &[u8],
) -> Result<(), EncodeError> {
    if !allowed.contains(&tlv_type) {
        return Err(EncodeError::Range {
            kind,
            field: "type",
            value: tlv_type.into(),
            min: (*allowed.start()).into(),
            max: (*allowed.end()).into(),
        });
    }
    write_tlv(out, tlv_type, kind, |o| {
        o.extend_from_slice(value);
        Ok(())
    })
}

impl<'a> Lldpdu<'a> {
    /// An LLDPDU with just the mandatory TLVs.
    pub fn new(chassis_id: ChassisId<'a>, port_id: PortId<'a>, ttl: u16) -> Self {
        Self {
            chassis_id,
            port_id,
            ttl,
            tlvs: Vec::new(),
        }
    }

    /// Decodes an LLDPDU (the Ethernet payload), validating it as 802.1AB and lldpd do.
    ///
    /// Octets after the End TLV (frame padding) are ignored.
    pub fn decode(lldpdu: &'a [u8]) -> Result<Self, DecodeError> {
        Self::decode_reusing(lldpdu, &mut Vec::new())
    }

    /// [`Self::decode`], keeping the TLV list in the allocation `spare` holds (left empty);
    /// [`Self::recycle`] hands it back after use. A receiver decoding frame after frame then
    /// allocates nothing for the list.
    pub fn decode_reusing(
        lldpdu: &'a [u8],
        spare: &mut Vec<Tlv<'static>>,
    ) -> Result<Self, DecodeError> {
        let mut tlvs = relabel(std::mem::take(spare));
        if tlvs.capacity() == 0 {
            // One allocation sized for a typical switch LLDPDU.
            tlvs.reserve(16);
        }
        Self::decode_into(lldpdu, tlvs)
    }

    /// Gives the TLV list's allocation back, for [`Self::decode_reusing`].
    pub fn recycle(self, spare: &mut Vec<Tlv<'static>>) {
        *spare = relabel(self.tlvs);
    }

    fn decode_into(lldpdu: &'a [u8], mut tlvs: Vec<Tlv<'a>>) -> Result<Self, DecodeError> {
        let mut reader = TlvReader::new(lldpdu);
        let mut order = MandatoryOrder::default();
        let chassis = mandatory(&mut reader, &mut order)?;
        let (subtype, id) = basic::decode_id(&chassis, TlvKind::ChassisId)?;
        let chassis_id = ChassisId {
            subtype,
            id: Cow::Borrowed(id),
        };
        let port = mandatory(&mut reader, &mut order)?;
        let (subtype, id) = basic::decode_id(&port, TlvKind::PortId)?;
        let port_id = PortId {
            subtype,
            id: Cow::Borrowed(id),
        };
        let ttl = basic::decode_ttl(&mandatory(&mut reader, &mut order)?)?;

        let mut singletons = Singletons::default();
        loop {
            let Some(tlv) = reader.next_raw() else {
                return Err(reader.error().unwrap_or(DecodeError::MissingEnd {
                    length: lldpdu.len(),
                }));
            };
            match tlv.tlv_type {
                types::END if tlv.value.is_empty() => {
                    return Ok(Self {
                        chassis_id,
                        port_id,
                        ttl,
                        tlvs,
                    });
                }
                types::END => {
                    return Err(DecodeError::EndLength {
                        offset: tlv.offset,
                        length: len16(tlv.value.len()),
                    });
                }
                types::CHASSIS_ID | types::PORT_ID | types::TTL => {
                    return Err(DecodeError::DuplicateMandatory {
                        kind: TlvKind::basic(tlv.tlv_type),
                        offset: tlv.offset,
                    });
                }
                _ => decode_optional(&tlv, &mut singletons, &mut tlvs)?,
            }
        }
    }

    /// Appends the encoded LLDPDU, End TLV included. On error `out` is left as it was.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let start = out.len();
        let result = self.encode_inner(out);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn encode_inner(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        write_tlv(out, types::CHASSIS_ID, TlvKind::ChassisId, |o| {
            basic::encode_id(
                o,
                TlvKind::ChassisId,
                self.chassis_id.subtype.code(),
                &self.chassis_id.id,
            )
        })?;
        write_tlv(out, types::PORT_ID, TlvKind::PortId, |o| {
            basic::encode_id(
                o,
                TlvKind::PortId,
                self.port_id.subtype.code(),
                &self.port_id.id,
            )
        })?;
        write_tlv(out, types::TTL, TlvKind::Ttl, |o| {
            o.extend_from_slice(&self.ttl.to_be_bytes());
            Ok(())
        })?;
        for tlv in &self.tlvs {
            tlv.encode(out)?;
        }
        out.extend_from_slice(&[0, 0]);
        Ok(())
    }

    /// The encoded LLDPDU.
    pub fn to_vec(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(256);
        self.encode(&mut out)?;
        Ok(out)
    }

    /// True for a shutdown LLDPDU (TTL 0): the receiver forgets this MSAP at once.
    pub fn is_shutdown(&self) -> bool {
        self.ttl == 0
    }

    /// The shutdown LLDPDU for this one's MSAP: same IDs, TTL 0, no optional TLVs.
    pub fn shutdown(&self) -> Lldpdu<'a> {
        Lldpdu::new(self.chassis_id.clone(), self.port_id.clone(), 0)
    }

    /// A copy that owns all its octets.
    pub fn into_owned(self) -> Lldpdu<'static> {
        Lldpdu {
            chassis_id: self.chassis_id.into_owned(),
            port_id: self.port_id.into_owned(),
            ttl: self.ttl,
            tlvs: self.tlvs.into_iter().map(Tlv::into_owned).collect(),
        }
    }
}

/// An emptied TLV list, to hold TLVs of another lifetime in the same allocation (the standard
/// library collects a filtered vector in place when the element layout is the same).
// `filter` cannot change the element type; the lifetime is what changes here.
#[allow(clippy::unnecessary_filter_map)]
fn relabel<'x, 'y>(mut list: Vec<Tlv<'x>>) -> Vec<Tlv<'y>> {
    list.clear();
    list.into_iter().filter_map(|_| None).collect()
}

/// The next TLV, which must be the next of Chassis ID, Port ID, TTL.
fn mandatory<'a>(
    reader: &mut TlvReader<'a>,
    order: &mut MandatoryOrder,
) -> Result<RawTlv<'a>, DecodeError> {
    match reader.next_raw() {
        Some(tlv) => {
            order.check(&tlv)?;
            Ok(tlv)
        }
        None => Err(reader.error().unwrap_or(DecodeError::Missing {
            kind: order.missing().unwrap_or(TlvKind::ChassisId),
        })),
    }
}

fn discard<'a>(tlv: &RawTlv<'a>, error: TlvError) -> Tlv<'a> {
    Tlv::Discarded {
        tlv_type: tlv.tlv_type,
        value: Cow::Borrowed(tlv.value),
        error,
    }
}

/// Appends the TLV `make` builds, building it in its slot of the vector.
///
/// Building a `Tlv` first and pushing it after stores it on the stack with narrow writes and
/// copies it with wide reads: store-forwarding stalls that once took half the decoding time.
#[inline(always)]
fn put<'a>(out: &mut Vec<Tlv<'a>>, make: impl FnOnce() -> Tlv<'a>) {
    // `once_with` is TrustedLen: `extend` reserves first, then calls `make` and writes.
    out.extend(std::iter::once_with(make));
}

/// Appends a TLV that passed its own checks unless it repeats a once-only one.
#[inline(always)]
fn put_once<'a>(
    out: &mut Vec<Tlv<'a>>,
    singletons: &mut Singletons,
    which: Singleton,
    kind: impl FnOnce() -> TlvKind,
    tlv: &RawTlv<'a>,
    make: impl FnOnce() -> Tlv<'a>,
) {
    match singletons.first(which, kind, tlv.offset) {
        Ok(()) => put(out, make),
        Err(e) => put(out, || discard(tlv, e)),
    }
}

fn decode_optional<'a>(
    tlv: &RawTlv<'a>,
    singletons: &mut Singletons,
    out: &mut Vec<Tlv<'a>>,
) -> Result<(), DecodeError> {
    let kind = TlvKind::basic(tlv.tlv_type);
    let which = match tlv.tlv_type {
        types::PORT_DESCRIPTION => Singleton::PortDescription,
        types::SYSTEM_NAME => Singleton::SystemName,
        types::SYSTEM_DESCRIPTION => Singleton::SystemDescription,
        types::SYSTEM_CAPABILITIES => {
            match basic::decode_capabilities(tlv)? {
                Ok(c) => put_once(
                    out,
                    singletons,
                    Singleton::SystemCapabilities,
                    || kind,
                    tlv,
                    || Tlv::SystemCapabilities(c),
                ),
                Err(e) => put(out, || discard(tlv, e)),
            }
            return Ok(());
        }
        types::MANAGEMENT_ADDRESS => {
            match basic::decode_management_address(tlv)? {
                Ok(m) => put(out, || Tlv::ManagementAddress(m)),
                Err(e) => put(out, || discard(tlv, e)),
            }
            return Ok(());
        }
        types::ORG => return decode_org(tlv, singletons, out),
        other => {
            put(out, || Tlv::Reserved {
                tlv_type: other,
                value: Cow::Borrowed(tlv.value),
            });
            return Ok(());
        }
    };
    // The string TLVs.
    let text = match basic::check_string(tlv, kind) {
        Ok(text) => text,
        Err(e) => {
            put(out, || discard(tlv, e));
            return Ok(());
        }
    };
    put_once(
        out,
        singletons,
        which,
        || kind,
        tlv,
        || {
            let text = Cow::Borrowed(text);
            match which {
                Singleton::PortDescription => Tlv::PortDescription(text),
                Singleton::SystemName => Tlv::SystemName(text),
                _ => Tlv::SystemDescription(text),
            }
        },
    );
    Ok(())
}

/// Applies the length rules of a fixed-length organisational TLV (lldpd's minimum is fatal,
/// the exact length `N` is checked per TLV) and the once-only rule, then appends what
/// `make` builds from the information. A TLV that fails the TLV-level rules is appended as
/// discarded.
#[inline(always)]
fn put_fixed<'a, const N: usize>(
    out: &mut Vec<Tlv<'a>>,
    singletons: &mut Singletons,
    (which, fatal_min): (Singleton, u16),
    tlv: &RawTlv<'a>,
    key: u32,
    info: &[u8],
    make: impl FnOnce(&[u8; N]) -> Tlv<'a>,
) -> Result<(), DecodeError> {
    // N is at most 21 (ETS).
    let exact = N as u16;
    let kind = || org::org_kind(key);
    if let Err(e) = org::check_len(info, kind, tlv.offset, fatal_min, exact)? {
        put(out, || discard(tlv, e));
        return Ok(());
    }
    let Ok(fixed) = <&[u8; N]>::try_from(info) else {
        // check_len saw exactly N octets; report rather than trust it.
        let e = TlvError::Length {
            kind: kind(),
            offset: tlv.offset,
            length: len16(tlv.value.len()),
            expected: Expected::Exactly(exact + 4),
        };
        put(out, || discard(tlv, e));
        return Ok(());
    };
    put_once(out, singletons, which, kind, tlv, || make(fixed));
    Ok(())
}

/// Known organisational TLVs by OUI and subtype (see [`Oui::key`]).
mod org_key {
    use super::{Oui, dot1, dot3};

    pub const PORT_VLAN_ID: u32 = Oui::DOT1.key(dot1::PORT_VLAN_ID);
    pub const VLAN_NAME: u32 = Oui::DOT1.key(dot1::VLAN_NAME);
    pub const LINK_AGGREGATION: u32 = Oui::DOT1.key(dot1::LINK_AGGREGATION);
    pub const ETS_CONFIGURATION: u32 = Oui::DOT1.key(dot1::ETS_CONFIGURATION);
    pub const ETS_RECOMMENDATION: u32 = Oui::DOT1.key(dot1::ETS_RECOMMENDATION);
    pub const PFC_CONFIGURATION: u32 = Oui::DOT1.key(dot1::PFC_CONFIGURATION);
    pub const APPLICATION_PRIORITY: u32 = Oui::DOT1.key(dot1::APPLICATION_PRIORITY);
    pub const MAC_PHY: u32 = Oui::DOT3.key(dot3::MAC_PHY);
    pub const LEGACY_LINK_AGGREGATION: u32 = Oui::DOT3.key(dot3::LINK_AGGREGATION);
    pub const MAX_FRAME_SIZE: u32 = Oui::DOT3.key(dot3::MAX_FRAME_SIZE);
}

fn decode_org<'a>(
    tlv: &RawTlv<'a>,
    singletons: &mut Singletons,
    out: &mut Vec<Tlv<'a>>,
) -> Result<(), DecodeError> {
    let Some((head, info)) = tlv.value.split_first_chunk::<4>() else {
        return Err(short_org(tlv));
    };
    // Matched as one word: building the OUI octet by octet and comparing it piecewise cost a
    // store-forwarding stall per TLV.
    let key = u32::from_be_bytes(*head);
    let kind = || org::org_kind(key);
    let offset = tlv.offset;
    match key {
        org_key::PORT_VLAN_ID => put_fixed(
            out,
            singletons,
            (Singleton::PortVlanId, 2),
            tlv,
            key,
            info,
            |v| Tlv::PortVlanId(u16::from_be_bytes(*v)),
        ),
        org_key::VLAN_NAME => {
            match org::decode_vlan_name(info, kind(), offset)? {
                Ok(v) => put(out, || Tlv::VlanName(v)),
                Err(e) => put(out, || discard(tlv, e)),
            }
            Ok(())
        }
        org_key::LINK_AGGREGATION => put_fixed(
            out,
            singletons,
            (Singleton::LinkAggregation, 0),
            tlv,
            key,
            info,
            |v| Tlv::LinkAggregation(org::decode_link_aggregation(v)),
        ),
        org_key::ETS_CONFIGURATION => put_fixed(
            out,
            singletons,
            (Singleton::EtsConfiguration, 0),
            tlv,
            key,
            info,
            |v| Tlv::EtsConfiguration(dcbx::decode_ets_configuration(v)),
        ),
        org_key::ETS_RECOMMENDATION => put_fixed(
            out,
            singletons,
            (Singleton::EtsRecommendation, 0),
            tlv,
            key,
            info,
            |v| Tlv::EtsRecommendation(dcbx::decode_ets_recommendation(v)),
        ),
        org_key::PFC_CONFIGURATION => {
            put_fixed(out, singletons, (Singleton::Pfc, 0), tlv, key, info, |v| {
                Tlv::Pfc(dcbx::decode_pfc(v))
            })
        }
        org_key::APPLICATION_PRIORITY => {
            match dcbx::decode_app(info) {
                Some(table) => put_once(
                    out,
                    singletons,
                    Singleton::ApplicationPriority,
                    kind,
                    tlv,
                    || Tlv::ApplicationPriority(table),
                ),
                None => {
                    let e = TlvError::Length {
                        kind: kind(),
                        offset,
                        length: len16(tlv.value.len()),
                        expected: Expected::Entries { fixed: 5, entry: 3 },
                    };
                    put(out, || discard(tlv, e));
                }
            }
            Ok(())
        }
        org_key::MAC_PHY => put_fixed(
            out,
            singletons,
            (Singleton::MacPhy, 5),
            tlv,
            key,
            info,
            |v| Tlv::MacPhy(org::decode_mac_phy(v)),
        ),
        org_key::LEGACY_LINK_AGGREGATION => put_fixed(
            out,
            singletons,
            (Singleton::LegacyLinkAggregation, 5),
            tlv,
            key,
            info,
            |v| Tlv::LegacyLinkAggregation(org::decode_link_aggregation(v)),
        ),
        org_key::MAX_FRAME_SIZE => put_fixed(
            out,
            singletons,
            (Singleton::MaxFrameSize, 2),
            tlv,
            key,
            info,
            |v| Tlv::MaxFrameSize(u16::from_be_bytes(*v)),
        ),
        _ => {
            let [a, b, c, subtype] = *head;
            let oui = Oui([a, b, c]);
            if let Some(min) = org::raw_fatal_min(oui, subtype, info)
                && info.len() < min
            {
                return Err(TlvError::Length {
                    kind: kind(),
                    offset,
                    length: len16(tlv.value.len()),
                    expected: Expected::AtLeast(len16(min + 4)),
                }
                .into());
            }
            put(out, || {
                Tlv::Org(OrgTlv {
                    oui,
                    subtype,
                    info: Cow::Borrowed(info),
                })
            });
            Ok(())
        }
    }
}

fn short_org(tlv: &RawTlv<'_>) -> DecodeError {
    TlvError::Length {
        kind: TlvKind::OrgHeader,
        offset: tlv.offset,
        length: len16(tlv.value.len()),
        expected: Expected::AtLeast(4),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neighbor::{ChassisIdSubtype, PortIdSubtype};

    const CHASSIS: (u8, &[u8]) = (1, &[4, 2, 0, 0, 0, 0, 1]);
    const PORT: (u8, &[u8]) = (2, &[5, b's', b'w', b'p', b'1']);
    const TTL: (u8, &[u8]) = (3, &[0, 120]);
    const END: (u8, &[u8]) = (0, &[]);

    fn build(tlvs: &[(u8, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(t, v) in tlvs {
            let header = (u16::from(t) << 9) | v.len() as u16;
            out.extend_from_slice(&header.to_be_bytes());
            out.extend_from_slice(v);
        }
        out
    }

    fn with(optional: &[(u8, &[u8])]) -> Vec<u8> {
        let mut all = vec![CHASSIS, PORT, TTL];
        all.extend_from_slice(optional);
        all.push(END);
        build(&all)
    }

    fn org(oui: [u8; 3], subtype: u8, info: &[u8]) -> Vec<u8> {
        let mut v = oui.to_vec();
        v.push(subtype);
        v.extend_from_slice(info);
        v
    }

    fn fatal(bytes: &[u8]) -> DecodeError {
        Lldpdu::decode(bytes).unwrap_err()
    }

    fn only_tlv(bytes: &[u8]) -> Tlv<'_> {
        let mut pdu = Lldpdu::decode(bytes).unwrap();
        assert_eq!(pdu.tlvs.len(), 1, "{:?}", pdu.tlvs);
        pdu.tlvs.remove(0)
    }

    #[test]
    fn minimal_lldpdu() {
        let bytes = with(&[]);
        let pdu = Lldpdu::decode(&bytes).unwrap();
        assert_eq!(pdu.chassis_id.subtype, ChassisIdSubtype::MacAddress);
        assert_eq!(&*pdu.chassis_id.id, &[2, 0, 0, 0, 0, 1]);
        assert_eq!(pdu.port_id.subtype, PortIdSubtype::InterfaceName);
        assert_eq!(pdu.ttl, 120);
        assert!(pdu.tlvs.is_empty());
        assert_eq!(pdu.to_vec().unwrap(), bytes);
    }

    #[test]
    fn mandatory_rules() {
        assert_eq!(
            fatal(&[]),
            DecodeError::Missing {
                kind: TlvKind::ChassisId
            }
        );
        assert_eq!(
            fatal(&build(&[END])),
            DecodeError::Missing {
                kind: TlvKind::ChassisId
            }
        );
        assert!(matches!(
            fatal(&build(&[PORT, CHASSIS, TTL, END])),
            DecodeError::OutOfOrder {
                expected: TlvKind::ChassisId,
                found: TlvKind::PortId,
                offset: 0
            }
        ));
        assert!(matches!(
            fatal(&build(&[CHASSIS, TTL, PORT, END])),
            DecodeError::OutOfOrder {
                expected: TlvKind::PortId,
                found: TlvKind::Ttl,
                offset: 9
            }
        ));
        assert!(matches!(
            fatal(&build(&[CHASSIS, PORT, (5, b"x"), TTL, END])),
            DecodeError::OutOfOrder {
                expected: TlvKind::Ttl,
                ..
            }
        ));
        for dup in [CHASSIS, PORT, TTL] {
            assert!(matches!(
                fatal(&with(&[dup])),
                DecodeError::DuplicateMandatory { offset: 20, .. }
            ));
        }
        assert_eq!(
            fatal(&build(&[CHASSIS, PORT, TTL])),
            DecodeError::MissingEnd { length: 20 }
        );
        assert_eq!(
            fatal(&build(&[CHASSIS, PORT, TTL, (0, &[0])])),
            DecodeError::EndLength {
                offset: 20,
                length: 1
            }
        );
    }

    #[test]
    fn id_and_ttl_rules() {
        for subtype in [0u8, 8] {
            let bytes = build(&[(1, &[subtype, 1]), PORT, TTL, END]);
            assert!(matches!(fatal(&bytes), DecodeError::IdSubtype { .. }));
        }
        assert!(matches!(
            fatal(&build(&[(1, &[4]), PORT, TTL, END])),
            DecodeError::Tlv(TlvError::Length { .. })
        ));
        assert!(matches!(
            fatal(&build(&[CHASSIS, (2, &[9, b'x']), TTL, END])),
            DecodeError::IdSubtype {
                kind: TlvKind::PortId,
                subtype: 9,
                ..
            }
        ));
        assert!(matches!(
            fatal(&build(&[CHASSIS, PORT, (3, &[0]), END])),
            DecodeError::Tlv(TlvError::Length {
                kind: TlvKind::Ttl,
                ..
            })
        ));
    }

    #[test]
    fn truncation_and_padding() {
        let mut bytes = with(&[(5, b"leaf01")]);
        let cut = bytes.len() - 4;
        assert!(matches!(
            fatal(&bytes[..cut]),
            DecodeError::TruncatedTlv {
                kind: TlvKind::SystemName,
                offset: 20,
                length: 6,
                remaining: 4
            }
        ));
        // Padding after End is ignored, whatever it holds.
        bytes.extend_from_slice(&[0xff; 17]);
        assert!(Lldpdu::decode(&bytes).is_ok());
    }

    #[test]
    fn lldpd_fatal_length_rules() {
        let dot1 = [0x00, 0x80, 0xc2];
        let dot3 = [0x00, 0x12, 0x0f];
        let med = [0x00, 0x12, 0xbb];
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("capabilities < 4", with(&[(7, &[0, 4, 0])])),
            ("org < 4", with(&[(127, &[0, 0x80, 0xc2])])),
            ("PVID < 6", with(&[(127, &org(dot1, 1, &[1]))])),
            ("PPVID < 7", with(&[(127, &org(dot1, 2, &[0, 1]))])),
            ("VLAN name < 7", with(&[(127, &org(dot1, 3, &[0, 1]))])),
            (
                "VLAN name longer than TLV",
                with(&[(127, &org(dot1, 3, &[0, 1, 5, b'a']))]),
            ),
            ("PI < 5", with(&[(127, &org(dot1, 4, &[]))])),
            (
                "PI shorter than its length",
                with(&[(127, &org(dot1, 4, &[3, 1]))]),
            ),
            ("MAC/PHY < 9", with(&[(127, &org(dot3, 1, &[0, 0, 0, 0]))])),
            ("power < 7", with(&[(127, &org(dot3, 2, &[0, 0]))])),
            ("802.3 LA < 9", with(&[(127, &org(dot3, 3, &[0, 0, 0, 0]))])),
            ("MFS < 6", with(&[(127, &org(dot3, 4, &[0x23]))])),
            (
                "MED capabilities < 7",
                with(&[(127, &org(med, 1, &[0, 0]))]),
            ),
            ("MED policy < 8", with(&[(127, &org(med, 2, &[0, 0, 0]))])),
            ("MED location < 5", with(&[(127, &org(med, 3, &[]))])),
            ("MED power < 7", with(&[(127, &org(med, 4, &[0, 0]))])),
            (
                "management address string 0",
                with(&[(8, &[0, 2, 0, 0, 0, 0, 0])]),
            ),
            (
                "management address too short for interface",
                with(&[(8, &[5, 1, 10, 0, 0, 1, 2, 0])]),
            ),
        ];
        for (what, bytes) in cases {
            let e = fatal(&bytes);
            assert!(matches!(e, DecodeError::Tlv(_)), "{what}: {e}");
            assert!(e.to_string().contains("offset 20"), "{what}: {e}");
        }
    }

    #[test]
    fn tlv_level_errors_discard_only_the_tlv() {
        let dot1 = [0x00, 0x80, 0xc2];
        let dot3 = [0x00, 0x12, 0x0f];
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("capabilities > 4", with(&[(7, &[0, 4, 0, 4, 0])])),
            ("PVID > 6", with(&[(127, &org(dot1, 1, &[0, 1, 0]))])),
            ("ETS short", with(&[(127, &org(dot1, 9, &[0; 20]))])),
            ("ETS rec long", with(&[(127, &org(dot1, 10, &[0; 22]))])),
            ("PFC long", with(&[(127, &org(dot1, 11, &[0, 0, 0]))])),
            (
                "APP entries",
                with(&[(127, &org(dot1, 12, &[0, 0x63, 0x12]))]),
            ),
            (
                "APP without reserved octet",
                with(&[(127, &org(dot1, 12, &[]))]),
            ),
            ("LA 802.1 short", with(&[(127, &org(dot1, 7, &[0, 0]))])),
            ("MFS long", with(&[(127, &org(dot3, 4, &[0x23, 0xf0, 0]))])),
            (
                "VLAN name > 32",
                with(&[(
                    127,
                    &org(dot1, 3, &[0, 1, 33])
                        .into_iter()
                        .chain([b'v'; 33])
                        .collect::<Vec<_>>(),
                )]),
            ),
            (
                "management address OID mismatch",
                with(&[(8, &[5, 1, 10, 0, 0, 1, 2, 0, 0, 0, 1, 2, 0x2b])]),
            ),
        ];
        for (what, bytes) in cases {
            match only_tlv(&bytes) {
                Tlv::Discarded { error, .. } => {
                    assert!(error.to_string().contains("offset 20"), "{what}: {error}")
                }
                other => panic!("{what}: {other:?}"),
            }
            // Discarded TLVs are re-encoded as received.
            let pdu = Lldpdu::decode(&bytes).unwrap();
            assert_eq!(pdu.to_vec().unwrap(), bytes, "{what}");
        }
    }

    #[test]
    fn once_only_tlvs() {
        let bytes = with(&[
            (5, b"a"),
            (5, b"b"),
            (127, &[0, 0x80, 0xc2, 11, 8, 8]),
            (127, &[0, 0x80, 0xc2, 11, 8, 8]),
        ]);
        let pdu = Lldpdu::decode(&bytes).unwrap();
        assert_eq!(pdu.tlvs[0], Tlv::SystemName(Cow::Borrowed(b"a")));
        assert!(matches!(
            &pdu.tlvs[1],
            Tlv::Discarded {
                error: TlvError::Duplicate { offset: 23, .. },
                ..
            }
        ));
        assert!(matches!(pdu.tlvs[2], Tlv::Pfc(_)));
        assert!(matches!(pdu.tlvs[3], Tlv::Discarded { .. }));
        // Management Address and VLAN Name may repeat.
        let m: &[u8] = &[5, 1, 10, 0, 0, 1, 2, 0, 0, 0, 1, 0];
        let bytes = with(&[(8, m), (8, m)]);
        let pdu = Lldpdu::decode(&bytes).unwrap();
        assert!(
            pdu.tlvs
                .iter()
                .all(|t| matches!(t, Tlv::ManagementAddress(_)))
        );
    }

    #[test]
    fn unknown_tlvs_are_kept_raw() {
        let bytes = with(&[
            (9, b"future"),
            (126, b""),
            (127, &[0x00, 0x1b, 0x21, 2, 0xaa]),
            (127, &[0x00, 0x80, 0xc2, 2, 0x06, 0x00, 0x64]),
            (127, &[0x00, 0x12, 0x0f, 5, 1]),
        ]);
        let pdu = Lldpdu::decode(&bytes).unwrap();
        assert_eq!(
            pdu.tlvs[0],
            Tlv::Reserved {
                tlv_type: 9,
                value: Cow::Borrowed(b"future")
            }
        );
        assert!(pdu.tlvs.iter().all(Tlv::is_unrecognized));
        assert_eq!(pdu.to_vec().unwrap(), bytes);
    }

    #[test]
    fn encode_refuses_invalid_values_and_leaves_buffer_alone() {
        let mut pdu = Lldpdu::decode(&with(&[])).unwrap().into_owned();
        pdu.chassis_id.id = Cow::Owned(Vec::new());
        let mut out = vec![1, 2, 3];
        assert!(pdu.encode(&mut out).is_err());
        assert_eq!(out, [1, 2, 3]);
        let mut pdu = Lldpdu::decode(&with(&[])).unwrap().into_owned();
        pdu.tlvs.push(Tlv::Reserved {
            tlv_type: 127,
            value: Cow::Borrowed(b""),
        });
        assert!(pdu.to_vec().is_err());
    }

    #[test]
    fn shutdown_keeps_the_msap() {
        let bytes = with(&[(5, b"leaf01")]);
        let pdu = Lldpdu::decode(&bytes).unwrap();
        let s = pdu.shutdown();
        assert!(s.is_shutdown());
        assert_eq!(s.chassis_id, pdu.chassis_id);
        assert_eq!(s.port_id, pdu.port_id);
        assert!(s.tlvs.is_empty());
    }
}
