//! Spinel's wire formats, without I/O: what goes into and comes out of an Ethernet frame.
//!
//! - [`mac`]: the Ethernet MAC address every crate shares.
//! - [`ethertype`]: the EtherTypes Spinel sends and receives.
//! - [`garp`]: gratuitous ARP and unsolicited neighbour advertisements (a pod's or a host's
//!   addresses announced at its MAC).
//! - [`lldp`]: IEEE 802.1AB LLDP with 802.1/802.3 organisational TLVs and 802.1Qaz DCBX: the
//!   codec, lldpd-grade receive validation, the per-port receive table with TTL ageing and the
//!   transmit schedule, all as functions and state machines over bytes and instants.
//! - [`neighbor`]: the stable, versioned neighbour-table schema (`spinel.dev/neighbors/v1`)
//!   that LLDP listeners publish and the fabric inference reads.
//!
//! Sockets live in `hostnet`; nothing here touches the kernel.

pub mod ethertype;
pub mod garp;
pub mod ifname;
pub mod lldp;
pub mod mac;
pub mod neighbor;

pub use mac::MacAddr;
