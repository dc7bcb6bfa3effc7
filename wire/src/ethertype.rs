//! The EtherTypes Spinel sends and receives (host byte order).

/// ARP.
pub const ARP: u16 = 0x0806;
/// IPv6 (unsolicited neighbour advertisements).
pub const IPV6: u16 = 0x86dd;
/// LLDP (IEEE 802.1AB).
pub const LLDP: u16 = 0x88cc;
/// 802.1Q C-tag TPID.
pub const VLAN: u16 = 0x8100;
