//! LLDP (IEEE 802.1AB) with 802.1 / 802.3 organisational TLVs and IEEE 802.1Qaz DCBX.
//!
//! Everything here is sans-IO: functions and state machines on bytes and instants, so the
//! codec, the receive table and the transmit schedule are tested without sockets. The socket
//! lives in `hostnet::packet`; `spinelctl lldp` wires the two together.
//!
//! - [`tlv`]: TLV header framing.
//! - [`oui`]: OUIs and organisational subtypes (a leaf: errors name TLVs with it).
//! - [`basic`], [`org`], [`dcbx`]: the TLVs we decode and encode.
//! - `validate` and [`lldpdu`]: the LLDPDU with lldpd-grade receive validation.
//! - [`frame`]: Ethernet header, LLDP group addresses, optional 802.1Q tag.
//! - [`convert`]: decoded LLDPDU to the stable schema ([`crate::neighbor`]).
//! - [`local`]: a local system description (the schema's field names) to an LLDPDU.
//! - [`remote`]: the per-port neighbour table with TTL ageing and 802.1AB counters.
//! - [`tx`]: the 802.1AB transmit schedule (fast start, credit, shutdown).

pub mod basic;
pub mod convert;
pub mod dcbx;
pub mod error;
pub mod frame;
pub mod lldpdu;
pub mod local;
pub mod org;
pub mod oui;
pub mod remote;
pub mod tlv;
pub mod tx;
mod validate;

pub use error::{DecodeError, EncodeError, Expected, FrameError, TlvError, TlvKind};
pub use frame::{LldpFrame, LldpGroup, VlanTag, decode_frame, decode_frame_reusing};
pub use lldpdu::{Lldpdu, Tlv};
pub use local::{LocalSystem, LocalSystemError};
pub use remote::RemoteTable;
pub use tx::{TxSchedule, TxTiming, TxTimingError};
