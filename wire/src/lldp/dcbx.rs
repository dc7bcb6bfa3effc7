//! IEEE 802.1Qaz DCBX TLVs (OUI 00-80-C2, subtypes 9-12): ETS Configuration and
//! Recommendation, PFC Configuration and Application Priority.
//!
//! Values are kept as on the wire (TSA and selector codes, the PFC bitmap); reserved bits are
//! ignored on receive and sent as zero. [`super::convert`] interprets them for the schema.

use std::borrow::Cow;

use super::error::{EncodeError, TlvKind};
use super::org::{Oui, dot1};

/// The three ETS tables shared by the Configuration and Recommendation TLVs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EtsTables {
    /// Traffic class of each priority 0-7 (4-bit values; 0-7 are TCs, 15 vendor-specific).
    pub priority_tc: [u8; 8],
    /// Bandwidth percent of each traffic class 0-7.
    pub tc_bandwidth: [u8; 8],
    /// Transmission selection algorithm code of each traffic class 0-7
    /// (0 strict priority, 1 credit-based shaper, 2 ETS, 255 vendor-specific).
    pub tsa: [u8; 8],
}

/// ETS Configuration TLV (subtype 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EtsConfiguration {
    /// Willing to accept the peer's recommendation.
    pub willing: bool,
    /// Credit-based shaper supported.
    pub cbs: bool,
    /// Traffic classes supported, 1-8 (sent as 0 for 8).
    pub max_tcs: u8,
    /// The tables.
    pub tables: EtsTables,
}

/// ETS Recommendation TLV (subtype 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EtsRecommendation {
    /// The tables.
    pub tables: EtsTables,
}

/// PFC Configuration TLV (subtype 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PfcConfiguration {
    /// Willing to accept the peer's configuration.
    pub willing: bool,
    /// MACsec bypass capability.
    pub mbc: bool,
    /// How many priorities can have PFC enabled at once (4 bits; 0-8 meaningful).
    pub capability: u8,
    /// Bit n set: PFC enabled on priority n.
    pub enabled: u8,
}

/// Application Priority selector codes.
pub mod selector {
    /// Ethertype.
    pub const ETHERTYPE: u8 = 1;
    /// TCP/SCTP well-known port.
    pub const TCP_PORT: u8 = 2;
    /// UDP/DCCP port.
    pub const UDP_PORT: u8 = 3;
    /// TCP/SCTP/UDP/DCCP port.
    pub const ANY_PORT: u8 = 4;
    /// DSCP value (802.1Qcd).
    pub const DSCP: u8 = 5;
}

/// One Application Priority entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AppEntry {
    /// 802.1p priority, 0-7.
    pub priority: u8,
    /// Selector code, 0-7 (see [`selector`]).
    pub selector: u8,
    /// Ethertype, port or DSCP.
    pub protocol: u16,
}

/// Application Priority TLV (subtype 12): a table of 3-octet entries, kept as received so that
/// decoding never allocates.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct AppPriorityTable<'a> {
    entries: Cow<'a, [u8]>,
}

/// Most entries that fit a TLV: (511 - 5) / 3.
pub const MAX_APP_ENTRIES: usize = 168;

impl<'a> AppPriorityTable<'a> {
    /// Wraps received entry octets; `None` unless their length is a multiple of 3.
    pub(crate) fn from_wire(entries: &'a [u8]) -> Option<Self> {
        entries.len().is_multiple_of(3).then_some(Self {
            entries: Cow::Borrowed(entries),
        })
    }

    /// Builds a table from entries.
    pub fn from_entries(entries: &[AppEntry]) -> Result<AppPriorityTable<'static>, EncodeError> {
        let kind = TlvKind::Org {
            oui: Oui::DOT1,
            subtype: dot1::APPLICATION_PRIORITY,
        };
        if entries.len() > MAX_APP_ENTRIES {
            return Err(EncodeError::Range {
                kind,
                field: "entry count",
                value: entries.len() as u64,
                min: 0,
                max: MAX_APP_ENTRIES as u64,
            });
        }
        let mut raw = Vec::with_capacity(entries.len() * 3);
        for e in entries {
            for (field, value) in [("priority", e.priority), ("selector", e.selector)] {
                if value > 7 {
                    return Err(EncodeError::Range {
                        kind,
                        field,
                        value: value.into(),
                        min: 0,
                        max: 7,
                    });
                }
            }
            raw.push((e.priority << 5) | e.selector);
            raw.extend_from_slice(&e.protocol.to_be_bytes());
        }
        Ok(AppPriorityTable {
            entries: Cow::Owned(raw),
        })
    }

    /// The entries, in wire order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = AppEntry> + '_ {
        self.entries.chunks_exact(3).map(|c| match *c {
            [ps, hi, lo] => AppEntry {
                priority: ps >> 5,
                selector: ps & 0x07,
                protocol: u16::from_be_bytes([hi, lo]),
            },
            // chunks_exact yields only 3-octet chunks.
            _ => AppEntry {
                priority: 0,
                selector: 0,
                protocol: 0,
            },
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() / 3
    }

    /// True without entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry octets as sent.
    pub fn as_wire(&self) -> &[u8] {
        &self.entries
    }

    /// A copy that owns its octets.
    pub fn into_owned(self) -> AppPriorityTable<'static> {
        AppPriorityTable {
            entries: Cow::Owned(self.entries.into_owned()),
        }
    }
}

fn decode_tables(t: &[u8; 20]) -> EtsTables {
    let mut tables = EtsTables::default();
    for (i, byte) in t[..4].iter().enumerate() {
        tables.priority_tc[2 * i] = byte >> 4;
        tables.priority_tc[2 * i + 1] = byte & 0x0f;
    }
    tables.tc_bandwidth.copy_from_slice(&t[4..12]);
    tables.tsa.copy_from_slice(&t[12..20]);
    tables
}

fn encode_tables(out: &mut Vec<u8>, kind: TlvKind, t: &EtsTables) -> Result<(), EncodeError> {
    if let Some(&bad) = t.priority_tc.iter().find(|&&tc| tc > 15) {
        return Err(EncodeError::Range {
            kind,
            field: "priority traffic class",
            value: bad.into(),
            min: 0,
            max: 15,
        });
    }
    for pair in t.priority_tc.chunks_exact(2) {
        if let [hi, lo] = *pair {
            out.push((hi << 4) | lo);
        }
    }
    out.extend_from_slice(&t.tc_bandwidth);
    out.extend_from_slice(&t.tsa);
    Ok(())
}

/// Decodes ETS Configuration information (after OUI and subtype).
pub(crate) fn decode_ets_configuration(info: &[u8; 21]) -> EtsConfiguration {
    let [flags, tables @ ..] = info;
    let max_tcs = flags & 0x07;
    EtsConfiguration {
        willing: flags & 0x80 != 0,
        cbs: flags & 0x40 != 0,
        max_tcs: if max_tcs == 0 { 8 } else { max_tcs },
        tables: decode_tables(tables),
    }
}

/// Decodes ETS Recommendation information (the first octet is reserved).
pub(crate) fn decode_ets_recommendation(info: &[u8; 21]) -> EtsRecommendation {
    let [_reserved, tables @ ..] = info;
    EtsRecommendation {
        tables: decode_tables(tables),
    }
}

pub(crate) fn encode_ets_configuration(
    out: &mut Vec<u8>,
    kind: TlvKind,
    e: &EtsConfiguration,
) -> Result<(), EncodeError> {
    if !(1..=8).contains(&e.max_tcs) {
        return Err(EncodeError::Range {
            kind,
            field: "max TCs",
            value: e.max_tcs.into(),
            min: 1,
            max: 8,
        });
    }
    out.push((u8::from(e.willing) << 7) | (u8::from(e.cbs) << 6) | (e.max_tcs & 0x07));
    encode_tables(out, kind, &e.tables)
}

pub(crate) fn encode_ets_recommendation(
    out: &mut Vec<u8>,
    kind: TlvKind,
    e: &EtsRecommendation,
) -> Result<(), EncodeError> {
    out.push(0);
    encode_tables(out, kind, &e.tables)
}

/// Decodes PFC Configuration information.
pub(crate) fn decode_pfc(&[flags, enabled]: &[u8; 2]) -> PfcConfiguration {
    PfcConfiguration {
        willing: flags & 0x80 != 0,
        mbc: flags & 0x40 != 0,
        capability: flags & 0x0f,
        enabled,
    }
}

pub(crate) fn encode_pfc(
    out: &mut Vec<u8>,
    kind: TlvKind,
    p: &PfcConfiguration,
) -> Result<(), EncodeError> {
    if p.capability > 15 {
        return Err(EncodeError::Range {
            kind,
            field: "PFC capability",
            value: p.capability.into(),
            min: 0,
            max: 15,
        });
    }
    out.push((u8::from(p.willing) << 7) | (u8::from(p.mbc) << 6) | p.capability);
    out.push(p.enabled);
    Ok(())
}

/// Decodes Application Priority information: a reserved octet, then 3-octet entries.
pub(crate) fn decode_app(info: &[u8]) -> Option<AppPriorityTable<'_>> {
    let (_reserved, entries) = info.split_first()?;
    AppPriorityTable::from_wire(entries)
}

pub(crate) fn encode_app(out: &mut Vec<u8>, t: &AppPriorityTable<'_>) {
    out.push(0);
    out.extend_from_slice(t.as_wire());
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: TlvKind = TlvKind::OrgHeader;

    #[test]
    fn ets_configuration_from_the_worked_example() {
        // research §2.6: W=0, MaxTCs=8 (0), prio3->TC3, prio6->TC6, TC0/TC3 50% ETS.
        let info = [
            0x00, 0x00, 0x03, 0x00, 0x60, 0x32, 0, 0, 0x32, 0, 0, 0, 0, 2, 0, 0, 2, 0, 0, 0, 0,
        ];
        let e = decode_ets_configuration(&info);
        assert!(!e.willing);
        assert_eq!(e.max_tcs, 8);
        assert_eq!(e.tables.priority_tc, [0, 0, 0, 3, 0, 0, 6, 0]);
        assert_eq!(e.tables.tc_bandwidth, [50, 0, 0, 50, 0, 0, 0, 0]);
        assert_eq!(e.tables.tsa, [2, 0, 0, 2, 0, 0, 0, 0]);
        let mut out = Vec::new();
        encode_ets_configuration(&mut out, KIND, &e).unwrap();
        assert_eq!(out, info);
    }

    #[test]
    fn ets_flags_and_ranges() {
        let mut info = [0u8; 21];
        info[0] = 0xc3;
        let e = decode_ets_configuration(&info);
        assert!(e.willing && e.cbs);
        assert_eq!(e.max_tcs, 3);
        let bad = EtsConfiguration { max_tcs: 0, ..e };
        assert!(encode_ets_configuration(&mut Vec::new(), KIND, &bad).is_err());
        let mut bad_tc = e;
        bad_tc.tables.priority_tc[2] = 16;
        assert!(encode_ets_configuration(&mut Vec::new(), KIND, &bad_tc).is_err());
    }

    #[test]
    fn pfc_from_lldpd_man_page_example() {
        // `configure lldp custom-tlv oui 00,80,c2 subtype 11 oui-info 08,08`
        let p = decode_pfc(&[0x08, 0x08]);
        assert!(!p.willing && !p.mbc);
        assert_eq!(p.capability, 8);
        assert_eq!(p.enabled, 0b0000_1000);
        let mut out = Vec::new();
        encode_pfc(&mut out, KIND, &p).unwrap();
        assert_eq!(out, [0x08, 0x08]);
    }

    #[test]
    fn app_entries_with_dscp_selector() {
        let info = [0x00, 0x63, 0x12, 0xb7, 0x65, 0x00, 0x1a, 0xc5, 0x00, 0x30];
        let t = decode_app(&info).unwrap();
        let entries: Vec<_> = t.iter().collect();
        assert_eq!(
            entries,
            [
                AppEntry {
                    priority: 3,
                    selector: selector::UDP_PORT,
                    protocol: 4791
                },
                AppEntry {
                    priority: 3,
                    selector: selector::DSCP,
                    protocol: 26
                },
                AppEntry {
                    priority: 6,
                    selector: selector::DSCP,
                    protocol: 48
                },
            ]
        );
        assert_eq!(AppPriorityTable::from_entries(&entries).unwrap(), t);
        assert!(
            decode_app(&info[..9]).is_none(),
            "entries are 3 octets each"
        );
        let bad = AppEntry {
            priority: 8,
            selector: 1,
            protocol: 0,
        };
        assert!(AppPriorityTable::from_entries(&[bad]).is_err());
    }
}
