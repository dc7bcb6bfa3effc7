//! A switch's RoCE configuration in one OS-neutral shape: what [`crate::observe`] reads from a
//! collected running configuration and what [`expected`] says the intent requires, so the
//! checker compares like with like whatever the OS.
//!
//! Every OS indirection is resolved: a port's DSCP map is the map its `PORT_QOS_MAP` names
//! (SONiC), the global DSCP → switch priority → traffic class maps (NVUE), or the global
//! `qos map` lines behind its `service-profile` (EOS). Absent means "not configured": the OS's
//! default applies, and defaults are what this checker refuses to trust.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;
use serde::Serialize;

use crate::intent::{SwitchOs, WatchdogAction};
use crate::plan::{FabricPlan, PortPeer, SwitchPlan};
use crate::qos::pfc_headroom_bytes;
use crate::render::sonic::peer_text;

/// One switch's RoCE-relevant configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SwitchState {
    /// Hostname, where the configuration carries it.
    pub hostname: Option<String>,
    /// ARP aging, seconds (NVUE base-reachable-time, EOS default timeout).
    pub arp_aging_seconds: Option<u32>,
    /// Priority advertised for RoCE (UDP 4791) in the DCBX Application Priority TLV.
    pub lldp_app_priority: Option<u8>,
    /// Ports by name.
    pub ports: BTreeMap<String, PortState>,
    /// Rail VLAN interfaces (SVIs) by VLAN ID.
    pub vlans: BTreeMap<u16, VlanState>,
}

/// One port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PortState {
    /// Description (the renderers write the peer: `host/nic`, `switch/port`).
    pub description: Option<String>,
    /// MTU.
    pub mtu: Option<u16>,
    /// Classifies by DSCP.
    pub trust_dscp: bool,
    /// Explicit DSCP → traffic class entries in effect on the port.
    pub dscp_to_tc: DscpMap,
    /// PFC-enabled priorities, ascending.
    pub pfc: Vec<u8>,
    /// PFC watchdog, when on.
    pub watchdog: Option<WatchdogState>,
    /// Egress queues by traffic class.
    pub queues: BTreeMap<u8, QueueState>,
    /// XOFF headroom of the priority group each PFC priority pauses, bytes, by priority, where
    /// the OS configures it per port (SONiC). Expected: the intent's lossless priorities only.
    pub headroom_xoff: BTreeMap<u8, u64>,
    /// Untagged (access) VLAN.
    pub access_vlan: Option<u16>,
    /// Routed address.
    pub address: Option<Ipv4Net>,
    /// DCBX ETS/PFC TLVs transmitted, where the OS has a per-port switch for it.
    pub dcbx_tlvs: Option<bool>,
}

/// DSCP → traffic class, entries 0-63, each set or not (the OS default applies). Sixty-four
/// bytes, copied freely: a 2,000-switch fabric has a quarter million of them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DscpMap([u8; 64]);

const UNSET: u8 = u8::MAX;

impl Default for DscpMap {
    fn default() -> Self {
        Self([UNSET; 64])
    }
}

impl DscpMap {
    /// The traffic class of `dscp`, when set.
    pub fn get(&self, dscp: u8) -> Option<u8> {
        self.0
            .get(usize::from(dscp))
            .copied()
            .filter(|tc| *tc != UNSET)
    }

    /// Sets `dscp` → `tc` (DSCPs above 63 and classes above 7 are ignored).
    pub fn set(&mut self, dscp: u8, tc: u8) {
        if let Some(slot) = self.0.get_mut(usize::from(dscp))
            && tc < 8
        {
            *slot = tc;
        }
    }

    /// The set entries, by DSCP.
    pub fn entries(&self) -> impl Iterator<Item = (u8, u8)> + '_ {
        (0..64u8).filter_map(|d| self.get(d).map(|tc| (d, tc)))
    }
}

impl FromIterator<(u8, u8)> for DscpMap {
    fn from_iter<I: IntoIterator<Item = (u8, u8)>>(iter: I) -> Self {
        let mut m = Self::default();
        for (d, tc) in iter {
            m.set(d, tc);
        }
        m
    }
}

impl std::fmt::Debug for DscpMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.entries()).finish()
    }
}

impl Serialize for DscpMap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.entries().map(|(d, tc)| (d.to_string(), tc)))
    }
}

/// PFC watchdog timers as the OS expresses them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WatchdogState {
    /// Detection time, ms.
    pub detection_ms: Option<u32>,
    /// Restoration time, ms.
    pub restoration_ms: Option<u32>,
    /// Poll interval, ms.
    pub poll_ms: Option<u32>,
    /// Action (`drop`, `forward`).
    pub action: Option<String>,
}

/// One egress queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QueueState {
    /// Scheduling.
    pub scheduler: Option<Sched>,
    /// ECN marking.
    pub ecn: Option<EcnState>,
}

/// Queue scheduling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sched {
    /// Strict priority.
    Strict,
    /// DWRR with this weight / bandwidth percent.
    Dwrr(u8),
}

/// ECN thresholds of a queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EcnState {
    /// Marking starts, bytes.
    pub min_bytes: u32,
    /// Every packet marked, bytes.
    pub max_bytes: u32,
    /// Probability at max, percent.
    pub probability: u8,
}

/// A rail VLAN's SVI.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VlanState {
    /// Gateway address with prefix (`10.0.0.1/24`).
    pub gateway: Option<String>,
    /// MTU.
    pub mtu: Option<u16>,
    /// Dynamic ARP capacity (EOS).
    pub arp_capacity: Option<u64>,
}

/// What the intent requires of `sp`, in what its OS can express.
pub fn expected(plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>) -> SwitchState {
    let os = sp.switch.os;
    let q = &plan.qos;
    let w = &q.watchdog;
    let action = match w.action {
        WatchdogAction::Drop => "drop",
        WatchdogAction::Forward => "forward",
    };
    let watchdog = match os {
        SwitchOs::Sonic | SwitchOs::Eos => WatchdogState {
            detection_ms: Some(w.detection_ms),
            restoration_ms: Some(w.restoration_ms),
            poll_ms: Some(w.poll_ms),
            action: Some(action.to_owned()),
        },
        // NVUE: polls × robustness, restoration and action are the switch's own.
        SwitchOs::Cumulus => WatchdogState {
            detection_ms: Some(w.poll_ms * w.detection_ms.div_ceil(w.poll_ms.max(1))),
            restoration_ms: None,
            poll_ms: Some(w.poll_ms),
            action: None,
        },
    };
    let lossless = q.lossless_tcs(&sp.pfc);
    let mut queues = BTreeMap::new();
    queues.insert(
        0,
        QueueState {
            scheduler: Some(Sched::Dwrr(q.scheduler.default_percent)),
            ecn: None,
        },
    );
    for tc in &lossless {
        queues.insert(
            *tc,
            QueueState {
                scheduler: Some(Sched::Dwrr(q.scheduler.data_percent)),
                ecn: Some(EcnState {
                    min_bytes: q.ecn.min_bytes,
                    max_bytes: q.ecn.max_bytes,
                    probability: q.ecn.mark_probability,
                }),
            },
        );
    }
    queues.insert(
        q.cnp.traffic_class,
        QueueState {
            scheduler: Some(Sched::Strict),
            ecn: None,
        },
    );
    let dscp_to_tc: DscpMap = (0..64u8)
        .map(|d| (d, q.dscp_to_tc[usize::from(d)]))
        .collect();
    let ports = sp
        .ports
        .iter()
        .map(|p| {
            let state = PortState {
                description: Some(peer_text(&p.peer)),
                mtu: Some(sp.mtu),
                trust_dscp: true,
                dscp_to_tc,
                pfc: sp.pfc.clone(),
                watchdog: Some(watchdog.clone()),
                queues: queues.clone(),
                headroom_xoff: if os == SwitchOs::Sonic {
                    let xoff = pfc_headroom_bytes(p.speed_gbps, p.cable_m, sp.mtu);
                    sp.pfc.iter().map(|prio| (*prio, xoff)).collect()
                } else {
                    BTreeMap::new()
                },
                access_vlan: match &p.peer {
                    PortPeer::Host { network, .. } => network.map(|n| n.vlan),
                    PortPeer::Switch { .. } => None,
                },
                address: p.address,
                dcbx_tlvs: (os != SwitchOs::Sonic).then_some(true),
            };
            (p.name.to_owned(), state)
        })
        .collect();
    let vlans = sp
        .networks()
        .into_iter()
        .map(|n| {
            let v = VlanState {
                gateway: Some(format!("{}/{}", n.gateway, n.subnet.prefix_len())),
                mtu: Some(sp.mtu),
                arp_capacity: (os == SwitchOs::Eos)
                    .then(|| sp.network_entries(plan.intent, &n.rail))
                    .filter(|e| *e > 0),
            };
            (n.vlan, v)
        })
        .collect();
    SwitchState {
        hostname: (os != SwitchOs::Cumulus).then(|| sp.switch.name.clone()),
        arp_aging_seconds: (os != SwitchOs::Sonic).then_some(plan.intent.arp.aging_seconds),
        lldp_app_priority: (os != SwitchOs::Sonic).then_some(q.data.priority),
        ports,
        vlans,
    }
}
