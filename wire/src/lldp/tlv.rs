//! TLV framing: the 7-bit type / 9-bit length header, reading TLVs off a buffer and writing
//! them with their length patched in afterwards.

use super::error::{DecodeError, EncodeError, Expected, TlvKind};

/// Largest information string a TLV header can describe (9 bits).
pub const MAX_TLV_INFO_LEN: usize = 511;

/// TLV type numbers of 802.1AB.
pub mod types {
    /// End Of LLDPDU.
    pub const END: u8 = 0;
    /// Chassis ID.
    pub const CHASSIS_ID: u8 = 1;
    /// Port ID.
    pub const PORT_ID: u8 = 2;
    /// Time To Live.
    pub const TTL: u8 = 3;
    /// Port Description.
    pub const PORT_DESCRIPTION: u8 = 4;
    /// System Name.
    pub const SYSTEM_NAME: u8 = 5;
    /// System Description.
    pub const SYSTEM_DESCRIPTION: u8 = 6;
    /// System Capabilities.
    pub const SYSTEM_CAPABILITIES: u8 = 7;
    /// Management Address.
    pub const MANAGEMENT_ADDRESS: u8 = 8;
    /// Organisationally Specific.
    pub const ORG: u8 = 127;
}

/// One TLV as framed on the wire, before its contents are interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawTlv<'a> {
    /// Offset of the header from the start of the LLDPDU.
    pub offset: usize,
    /// The 7-bit type.
    pub tlv_type: u8,
    /// The information string.
    pub value: &'a [u8],
}

/// Iterates over the TLVs of an LLDPDU; stops after the first framing error.
#[derive(Debug, Clone)]
pub struct TlvReader<'a> {
    buf: &'a [u8],
    pos: usize,
    state: ReadState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadState {
    Reading,
    /// Stopped at a framing error at `pos`.
    Failed,
    /// The error was reported (iterator use).
    Done,
}

impl<'a> TlvReader<'a> {
    /// Reads TLVs from the start of `lldpdu`.
    pub fn new(lldpdu: &'a [u8]) -> Self {
        Self {
            buf: lldpdu,
            pos: 0,
            state: ReadState::Reading,
        }
    }

    /// Offset of the next TLV header (of the broken one after a framing error).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The next TLV; `None` at the end of the buffer or at a framing error (see
    /// [`Self::error`]).
    ///
    /// The decoder's fast path: returning a small `Option` instead of a `Result` carrying a
    /// `DecodeError` avoids copying error payloads on every TLV.
    #[inline]
    pub fn next_raw(&mut self) -> Option<RawTlv<'a>> {
        if self.state != ReadState::Reading {
            return None;
        }
        let offset = self.pos;
        let rest = self.buf.get(offset..)?;
        let (Some(&hi), Some(&lo)) = (rest.first(), rest.get(1)) else {
            if !rest.is_empty() {
                self.state = ReadState::Failed;
            }
            return None;
        };
        let length = (usize::from(hi & 1) << 8) | usize::from(lo);
        let Some(value) = rest.get(2..2 + length) else {
            self.state = ReadState::Failed;
            return None;
        };
        self.pos = offset + 2 + length;
        Some(RawTlv {
            offset,
            tlv_type: hi >> 1,
            value,
        })
    }

    /// The framing error [`Self::next_raw`] stopped at, if it stopped at one.
    #[cold]
    pub fn error(&self) -> Option<DecodeError> {
        if self.state == ReadState::Reading {
            return None;
        }
        let offset = self.pos;
        let rest = self.buf.get(offset..).unwrap_or_default();
        let (Some(&hi), Some(&lo)) = (rest.first(), rest.get(1)) else {
            return Some(DecodeError::TruncatedHeader {
                offset,
                remaining: rest.len(),
            });
        };
        Some(DecodeError::TruncatedTlv {
            kind: TlvKind::basic(hi >> 1),
            offset,
            // Nine bits: exact.
            length: (u16::from(hi & 1) << 8) | u16::from(lo),
            remaining: rest.len() - 2,
        })
    }
}

impl<'a> Iterator for TlvReader<'a> {
    type Item = Result<RawTlv<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(tlv) = self.next_raw() {
            return Some(Ok(tlv));
        }
        let error = self.error()?;
        if self.state == ReadState::Done {
            return None;
        }
        self.state = ReadState::Done;
        Some(Err(error))
    }
}

/// Appends one TLV: writes the header, lets `body` write the information string, then patches
/// the length in. Fails if the body exceeds 511 octets (and leaves `out` as it was).
pub fn write_tlv(
    out: &mut Vec<u8>,
    tlv_type: u8,
    kind: TlvKind,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let start = out.len();
    out.extend_from_slice(&[0, 0]);
    if let Err(e) = body(out) {
        out.truncate(start);
        return Err(e);
    }
    let length = out.len() - start - 2;
    if length > MAX_TLV_INFO_LEN {
        out.truncate(start);
        return Err(EncodeError::Length {
            kind,
            field: "information string",
            length,
            expected: Expected::Between(0, MAX_TLV_INFO_LEN as u16),
        });
    }
    // Both fit: type is 7 bits (checked by callers' constants), length 9 bits (checked above).
    let header = (u16::from(tlv_type & 0x7f) << 9) | length as u16;
    if let Some(slot) = out.get_mut(start..start + 2) {
        slot.copy_from_slice(&header.to_be_bytes());
    }
    Ok(())
}

/// Reads a big-endian u16 at `at`, if the slice is long enough.
pub(crate) fn be16(buf: &[u8], at: usize) -> Option<u16> {
    match buf.get(at..at + 2) {
        Some(&[a, b]) => Some(u16::from_be_bytes([a, b])),
        _ => None,
    }
}

/// Reads a big-endian u32 at `at`, if the slice is long enough.
pub(crate) fn be32(buf: &[u8], at: usize) -> Option<u32> {
    match buf.get(at..at + 4) {
        Some(&[a, b, c, d]) => Some(u32::from_be_bytes([a, b, c, d])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_headers_and_values() {
        let buf = [
            0x02, 0x07, 4, 1, 2, 3, 4, 5, 6, 0x06, 0x02, 0x00, 0x78, 0, 0,
        ];
        let tlvs: Vec<_> = TlvReader::new(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(tlvs.len(), 3);
        assert_eq!(tlvs[0].tlv_type, 1);
        assert_eq!(tlvs[0].value, &[4, 1, 2, 3, 4, 5, 6]);
        assert_eq!(tlvs[1].offset, 9);
        assert_eq!(tlvs[1].tlv_type, 3);
        assert_eq!(tlvs[2].tlv_type, 0);
        assert!(tlvs[2].value.is_empty());
    }

    #[test]
    fn nine_bit_length_is_honoured() {
        let mut buf = vec![(127 << 1) | 1, 0xff];
        buf.extend(std::iter::repeat_n(0xab, 511));
        let tlv = TlvReader::new(&buf).next().unwrap().unwrap();
        assert_eq!(tlv.tlv_type, 127);
        assert_eq!(tlv.value.len(), 511);
    }

    #[test]
    fn truncation_is_reported_with_offsets() {
        let err = TlvReader::new(&[0x02]).next().unwrap().unwrap_err();
        assert_eq!(
            err,
            DecodeError::TruncatedHeader {
                offset: 0,
                remaining: 1
            }
        );
        let mut r = TlvReader::new(&[0x06, 0x02, 0x00, 0x78, 0x0a, 0x05, b'a']);
        r.next().unwrap().unwrap();
        let err = r.next().unwrap().unwrap_err();
        assert_eq!(
            err,
            DecodeError::TruncatedTlv {
                kind: TlvKind::SystemName,
                offset: 4,
                length: 5,
                remaining: 1
            }
        );
        assert!(r.next().is_none(), "the reader stops after an error");
    }

    #[test]
    fn writer_patches_length_and_refuses_oversize() {
        let mut out = vec![0xee];
        write_tlv(&mut out, 5, TlvKind::SystemName, |o| {
            o.extend_from_slice(b"leaf01");
            Ok(())
        })
        .unwrap();
        assert_eq!(out, [0xee, 0x0a, 0x06, b'l', b'e', b'a', b'f', b'0', b'1']);
        let err = write_tlv(&mut out, 6, TlvKind::SystemDescription, |o| {
            o.resize(o.len() + 512, 0);
            Ok(())
        })
        .unwrap_err();
        assert!(matches!(err, EncodeError::Length { length: 512, .. }));
        assert_eq!(out.len(), 9, "a failed TLV leaves the buffer untouched");
    }
}
