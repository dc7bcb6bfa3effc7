//! The lossless chain every renderer and the checker share, derived once from the profile:
//! DSCP → priority → traffic class → priority group / queue → PFC → ECN → scheduler, plus the
//! PFC headroom arithmetic.
//!
//! Unlisted DSCPs go to priority 0 and traffic class 0 explicitly. Switch defaults differ
//! (Cumulus maps DSCP >> 3, so DSCP 24-31 would share RoCE's lossless class; SONiC's `AZURE`
//! template maps DSCP 26 itself to a lossy class), and a default that differs between two hops
//! is exactly the disagreement this crate exists to prevent.

use crate::intent::{Ecn, RoceProfile, Scheduler, Watchdog};

/// Bytes of headers the RDMA core keeps off the netdev MTU before choosing the RoCE MTU
/// (GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4; `iboe_get_mtu`).
pub const ROCE_HEADER_BYTES: u16 = 96;

/// Ethernet header, one VLAN tag and FCS around an IP packet: a frame is MTU + this.
pub const FRAME_OVERHEAD_BYTES: u32 = 22;

/// One class of traffic: its DSCPs, priority and traffic class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassPlan {
    /// DSCP values classified into it.
    pub dscp: Vec<u8>,
    /// 802.1p / switch priority.
    pub priority: u8,
    /// Traffic class (= egress queue).
    pub traffic_class: u8,
}

/// The fabric-wide lossless chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosPlan {
    /// Object name on the switches.
    pub name: String,
    /// RoCE data.
    pub data: ClassPlan,
    /// Congestion notifications.
    pub cnp: ClassPlan,
    /// Priority of every DSCP.
    pub dscp_to_priority: [u8; 64],
    /// Traffic class of every DSCP (through its priority).
    pub dscp_to_tc: [u8; 64],
    /// Traffic class of every priority.
    pub priority_to_tc: [u8; 8],
    /// PFC-enabled priorities, ascending (the profile's; switches may override).
    pub pfc: Vec<u8>,
    /// ECN on the data traffic class.
    pub ecn: Ecn,
    /// DWRR shares.
    pub scheduler: Scheduler,
    /// PFC watchdog.
    pub watchdog: Watchdog,
    /// IP ToS byte hosts send RoCE with.
    pub roce_tos: u8,
    /// Whether hosts enable ECN on the data priority.
    pub host_ecn: bool,
}

impl QosPlan {
    /// Derives the chain from the profile (which [`crate::intent::validate`] has checked; out of
    /// range values are clamped here, never trusted as indices).
    pub fn new(profile: &RoceProfile) -> Self {
        let data = ClassPlan {
            dscp: sorted_unique(&profile.data.dscp),
            priority: profile.data.priority & 7,
            traffic_class: profile.data.traffic_class.unwrap_or(profile.data.priority) & 7,
        };
        let cnp = ClassPlan {
            dscp: vec![profile.cnp.dscp & 63],
            priority: profile.cnp.priority & 7,
            traffic_class: profile.cnp.traffic_class.unwrap_or(profile.cnp.priority) & 7,
        };
        let mut dscp_to_priority = [0u8; 64];
        for d in &data.dscp {
            dscp_to_priority[usize::from(*d & 63)] = data.priority;
        }
        for d in &cnp.dscp {
            dscp_to_priority[usize::from(*d & 63)] = cnp.priority;
        }
        let mut priority_to_tc: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
        // Priorities other than RoCE's and CNP's share TC 0 (as `nv set qos roce` does), except
        // extra PFC priorities, which keep their own class so that they stay lossless.
        for (p, tc) in priority_to_tc.iter_mut().enumerate() {
            if !profile.pfc.priorities.contains(&(p as u8)) {
                *tc = 0;
            }
        }
        priority_to_tc[usize::from(data.priority)] = data.traffic_class;
        priority_to_tc[usize::from(cnp.priority)] = cnp.traffic_class;
        let mut dscp_to_tc = [0u8; 64];
        for (d, tc) in dscp_to_tc.iter_mut().enumerate() {
            *tc = priority_to_tc[usize::from(dscp_to_priority[d])];
        }
        let roce_tos = profile
            .host
            .roce_tos
            .unwrap_or_else(|| (data.dscp.first().copied().unwrap_or(0) << 2) | 0b10);
        Self {
            name: profile.name.clone(),
            data,
            cnp,
            dscp_to_priority,
            dscp_to_tc,
            priority_to_tc,
            pfc: sorted_unique(&profile.pfc.priorities),
            ecn: profile.ecn.clone(),
            scheduler: profile.scheduler.clone(),
            watchdog: profile.pfc.watchdog.clone(),
            roce_tos,
            host_ecn: profile.host.ecn,
        }
    }

    /// Traffic classes that are lossless under the PFC priorities `pfc`.
    pub fn lossless_tcs(&self, pfc: &[u8]) -> Vec<u8> {
        sorted_unique(
            &pfc.iter()
                .map(|p| self.priority_to_tc[usize::from(*p & 7)])
                .collect::<Vec<_>>(),
        )
    }

    /// Priority group of each traffic class: a lossless class has its own PG (numbered like
    /// the class), everything else shares PG 0.
    pub fn tc_to_pg(&self, pfc: &[u8]) -> [u8; 8] {
        let lossless = self.lossless_tcs(pfc);
        let mut map = [0u8; 8];
        for (tc, pg) in map.iter_mut().enumerate() {
            if lossless.contains(&(tc as u8)) {
                *pg = tc as u8;
            }
        }
        map
    }

    /// The DSCP hosts put on RoCE data (the ToS byte's upper six bits).
    pub fn host_dscp(&self) -> u8 {
        self.roce_tos >> 2
    }
}

/// PFC headroom of one port, bytes: what still arrives after the port sends a pause.
///
/// Model (documented in docs/switch-config.md): the round trip on the cable at 5 ns/m, 1 µs for
/// both ends' MAC/PHY and the peer's pause response, and one largest frame in flight each way;
/// rounded up to 1 KiB. Vendors' lookup tables (SONiC `pg_profile_lookup.ini`) are the
/// authority on real ASICs; this is the sanity floor the checker holds them to.
pub fn pfc_headroom_bytes(speed_gbps: u32, cable_m: u16, mtu: u16) -> u64 {
    let bits_in_flight = u64::from(speed_gbps) * (10 * u64::from(cable_m) + 1_000); // Gb/s × ns
    let bytes = bits_in_flight.div_ceil(8) + 2 * (u64::from(mtu) + u64::from(FRAME_OVERHEAD_BYTES));
    bytes.div_ceil(1024) * 1024
}

/// XON threshold: resume once two largest frames fit again.
pub fn pfc_xon_bytes(mtu: u16) -> u64 {
    (2 * (u64::from(mtu) + u64::from(FRAME_OVERHEAD_BYTES))).div_ceil(1024) * 1024
}

/// The largest IB MTU (256..4096) the RDMA core picks for a netdev MTU.
pub fn roce_active_mtu(netdev_mtu: u16) -> Option<u16> {
    let room = netdev_mtu.checked_sub(ROCE_HEADER_BYTES)?;
    [4096u16, 2048, 1024, 512, 256]
        .into_iter()
        .find(|m| *m <= room)
}

/// Sorted, deduplicated copy.
pub fn sorted_unique(values: &[u8]) -> Vec<u8> {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// `3,4` style list.
pub fn comma_list(values: &[u8]) -> String {
    values
        .iter()
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_nvidia_chain() {
        let q = QosPlan::new(&RoceProfile::default());
        assert_eq!(q.dscp_to_tc[26], 3);
        assert_eq!(q.dscp_to_tc[48], 6);
        assert_eq!(
            q.dscp_to_tc[24], 0,
            "DSCP 24 must not share the lossless class"
        );
        assert_eq!(q.dscp_to_tc[46], 0);
        assert_eq!(q.roce_tos, 106);
        assert_eq!(q.lossless_tcs(&q.pfc), vec![3]);
        assert_eq!(q.tc_to_pg(&q.pfc), [0, 0, 0, 3, 0, 0, 0, 0]);
    }

    #[test]
    fn headroom_grows_with_speed_and_cable() {
        let short = pfc_headroom_bytes(400, 5, 9100);
        let long = pfc_headroom_bytes(400, 300, 9100);
        assert!(long > short);
        assert_eq!(short % 1024, 0);
        // 400 Gb/s × 1.05 µs = 52 500 B, plus two 9122-byte frames.
        assert_eq!(short, (52_500u64 + 18_244).div_ceil(1024) * 1024);
    }

    #[test]
    fn roce_mtu_follows_the_rdma_core() {
        assert_eq!(roce_active_mtu(1500), Some(1024));
        assert_eq!(roce_active_mtu(4200), Some(4096));
        assert_eq!(roce_active_mtu(4150), Some(2048));
        assert_eq!(roce_active_mtu(9000), Some(4096));
        assert_eq!(roce_active_mtu(90), None);
    }
}
