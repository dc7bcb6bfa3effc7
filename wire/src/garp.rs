//! Gratuitous ARP and unsolicited Neighbour Advertisements: the frames that tell the fabric a
//! pod's address now lives at a new MAC (pod IPs are reused; a leaf or a peer still holding the
//! old MAC black-holes traffic until its entry ages out, which can take hours).
//!
//! Each IPv4 address is announced in both forms, an ARP request and an ARP reply, because
//! some stacks act on only one; Linux treats a request with sender = target address, and a
//! reply whose target MAC is also the sender's, as gratuitous and overrides an existing entry.
//! Each IPv6 address is announced with an unsolicited NA with the Override flag.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::ethertype::{ARP as ETH_P_ARP, IPV6 as ETH_P_IPV6};
use crate::mac::MacAddr;

fn ethernet(dst: MacAddr, src: MacAddr, ethertype: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(&dst.octets());
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&ethertype.to_be_bytes());
}

/// An ARP announcement of `ip` at `mac`: operation 1 (request, target MAC zero) or 2 (reply,
/// target MAC = sender MAC), sender address = target address, sent to broadcast.
pub fn arp(mac: MacAddr, ip: Ipv4Addr, reply: bool) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    ethernet(MacAddr::BROADCAST, mac, ETH_P_ARP, &mut f);
    f.extend_from_slice(&[0, 1, 0x08, 0x00, 6, 4]); // Ethernet, IPv4, address lengths
    f.extend_from_slice(&(if reply { 2u16 } else { 1 }).to_be_bytes());
    f.extend_from_slice(&mac.octets());
    f.extend_from_slice(&ip.octets());
    f.extend_from_slice(&if reply { mac.octets() } else { [0; 6] });
    f.extend_from_slice(&ip.octets());
    f.resize(60, 0); // minimum Ethernet frame, without FCS
    f
}

/// An unsolicited Neighbour Advertisement of `ip` at `mac` to all nodes (ff02::1), with the
/// Override flag and the target link-layer address option.
pub fn unsolicited_na(mac: MacAddr, ip: Ipv6Addr) -> Vec<u8> {
    let all_nodes = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
    let mut icmp = Vec::with_capacity(32);
    icmp.extend_from_slice(&[136, 0, 0, 0]); // type NA, code 0, checksum (below)
    icmp.extend_from_slice(&0x2000_0000u32.to_be_bytes()); // Override
    icmp.extend_from_slice(&ip.octets());
    icmp.extend_from_slice(&[2, 1]); // target link-layer address option, 8 octets
    icmp.extend_from_slice(&mac.octets());
    let sum = checksum(&ip, &all_nodes, &icmp);
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());

    let mut f = Vec::with_capacity(14 + 40 + icmp.len());
    ethernet(MacAddr([0x33, 0x33, 0, 0, 0, 1]), mac, ETH_P_IPV6, &mut f);
    f.extend_from_slice(&[0x60, 0, 0, 0]); // version 6, no traffic class or flow label
    f.extend_from_slice(&(icmp.len() as u16).to_be_bytes());
    f.extend_from_slice(&[58, 255]); // ICMPv6, hop limit 255 (required for ND)
    f.extend_from_slice(&ip.octets());
    f.extend_from_slice(&all_nodes.octets());
    f.extend_from_slice(&icmp);
    f
}

/// The ICMPv6 checksum over the IPv6 pseudo-header and `icmp` (whose checksum field is 0).
fn checksum(src: &Ipv6Addr, dst: &Ipv6Addr, icmp: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut add = |bytes: &[u8]| {
        for pair in bytes.chunks(2) {
            sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
        }
    };
    add(&src.octets());
    add(&dst.octets());
    add(&(icmp.len() as u32).to_be_bytes());
    add(&[0, 0, 0, 58]);
    add(icmp);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Every frame announcing `addresses` at `mac`: both ARP forms per IPv4 address, one NA per
/// IPv6 address.
pub fn frames(mac: MacAddr, addresses: &[IpAddr]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for ip in addresses {
        match ip {
            IpAddr::V4(v4) => {
                out.push(arp(mac, *v4, false));
                out.push(arp(mac, *v4, true));
            }
            IpAddr::V6(v6) => out.push(unsolicited_na(mac, *v6)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac() -> MacAddr {
        "02:00:00:00:00:05".parse().unwrap()
    }

    #[test]
    fn arp_request_and_reply_forms() {
        let ip: Ipv4Addr = "10.56.0.5".parse().unwrap();
        let req = arp(mac(), ip, false);
        assert_eq!(req.len(), 60);
        assert_eq!(&req[0..6], &[0xff; 6]);
        assert_eq!(&req[12..14], &[0x08, 0x06]);
        assert_eq!(&req[20..22], &[0, 1], "request");
        assert_eq!(&req[28..32], &ip.octets(), "sender IP");
        assert_eq!(&req[32..38], &[0; 6], "target MAC zero");
        assert_eq!(&req[38..42], &ip.octets(), "target IP = sender IP");
        let rep = arp(mac(), ip, true);
        assert_eq!(&rep[20..22], &[0, 2], "reply");
        assert_eq!(
            &rep[32..38],
            &mac().octets(),
            "reply target MAC = sender MAC"
        );
    }

    #[test]
    fn na_checksum_verifies() {
        let ip: Ipv6Addr = "fd00::5".parse().unwrap();
        let f = unsolicited_na(mac(), ip);
        assert_eq!(&f[12..14], &[0x86, 0xdd]);
        assert_eq!(f[20], 58);
        assert_eq!(f[21], 255);
        let icmp = &f[54..];
        assert_eq!(icmp[0], 136);
        assert_eq!(&icmp[4..8], &0x2000_0000u32.to_be_bytes());
        // Summing the whole message with its checksum in place gives 0 when it is right.
        let dst = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
        let mut zeroed = icmp.to_vec();
        let sum = u16::from_be_bytes([zeroed[2], zeroed[3]]);
        zeroed[2..4].fill(0);
        assert_eq!(checksum(&ip, &dst, &zeroed), sum);
        assert_ne!(sum, 0);
    }

    #[test]
    fn two_frames_per_ipv4_one_per_ipv6() {
        let f = frames(
            mac(),
            &["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()],
        );
        assert_eq!(f.len(), 3);
    }
}
