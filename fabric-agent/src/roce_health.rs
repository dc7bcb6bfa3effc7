//! RoCE health per NIC, and when the node counts as unhealthy: pure functions of what the
//! agent observed, so every rule is tested without a kernel.
//!
//! Findings, one per NIC and problem (stable reasons, used in the node condition and in the
//! `NodeFabric` report): `LinkDown`; `SpeedBelowExpected`, `MtuBelowExpected` (configured
//! minimums); `NoNeighbor` (no LLDP neighbour: a lost rail); `WrongLeafGroup` (the fabric
//! controller's cabling finding for the NIC); `PfcMismatch` (the host's PFC priorities, from
//! dcbnl, differ from what the leaf advertises in DCBX); `NoRoceV2Gid` (the GID table lacks a
//! RoCE v2 entry for an address of the NIC). A link that is down explains the rest, so a down
//! NIC reports only `LinkDown`.
//!
//! `PfcUnknown` says the host's PFC could not be read (a driver without DCB operations): the
//! agent cannot tell, so it reports that it does not know instead of claiming agreement, and
//! it neither marks the node unhealthy nor calls it fully checked.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use spinel_api::crd::{CablingFinding, HealthFinding};
use spinel_node::nics::RoceNic;
use spinel_wire::neighbor::NeighborTable;

use crate::settings::Health;

/// What the host's PFC is, as far as the agent can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPfc {
    /// Priorities with PFC enabled.
    Enabled(Vec<u8>),
    /// It could not be read, and why.
    Unknown(String),
}

/// The readings taken from the kernel for one pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Readings {
    /// Host PFC per NIC.
    pub pfc: BTreeMap<String, HostPfc>,
    /// Per NIC, its addresses that have no RoCE v2 GID (NICs without an RDMA device absent).
    pub missing_gids: BTreeMap<String, Vec<String>>,
}

/// Reasons that do not make the node unhealthy.
pub fn is_informational(reason: &str) -> bool {
    reason == "PfcUnknown"
}

/// Cabling finding kinds that put a NIC on the wrong leaf (group).
const WRONG_LEAF_KINDS: [&str; 3] = ["wrong_group", "swapped_rail", "shared_leaf"];

fn finding(nic: &str, reason: &str, message: String) -> HealthFinding {
    HealthFinding {
        nic: Some(nic.to_owned()),
        reason: reason.to_owned(),
        message,
    }
}

fn fmt_priorities(p: &[u8]) -> String {
    if p.is_empty() {
        "none".into()
    } else {
        p.iter().map(u8::to_string).collect::<Vec<_>>().join(",")
    }
}

/// What the leaf advertises on `nic`: the neighbours' DCBX PFC priorities (the first neighbour
/// that sends the TLV), and whether any neighbour was heard.
fn advertised_pfc(table: Option<&NeighborTable>, nic: &str) -> (bool, Option<Vec<u8>>) {
    let Some(port) = table.and_then(|t| t.ports.iter().find(|p| p.port == nic)) else {
        return (false, None);
    };
    let pfc = port
        .neighbors
        .iter()
        .find_map(|n| n.dcbx.pfc.as_ref())
        .map(|p| p.enabled_priorities.clone());
    (!port.neighbors.is_empty(), pfc)
}

/// Everything wrong with the node's RoCE NICs. `lldp_settled` is false while neighbours may
/// not have been heard yet (just after the agent started).
pub fn findings(
    settings: &Health,
    nics: &[RoceNic],
    table: Option<&NeighborTable>,
    cabling: &[CablingFinding],
    readings: &Readings,
    lldp_settled: bool,
) -> Vec<HealthFinding> {
    let mut out = Vec::new();
    for nic in nics {
        let name = nic.name.as_str();
        if !nic.carrier {
            out.push(finding(
                name,
                "LinkDown",
                format!(
                    "{name} has no carrier: check the cable, the transceiver and the leaf port"
                ),
            ));
            continue;
        }
        if let (Some(min), Some(speed)) = (settings.min_speed_mbps, nic.speed_mbps)
            && speed < min
        {
            out.push(finding(
                name,
                "SpeedBelowExpected",
                format!("{name} runs at {speed} Mb/s, below the expected {min} Mb/s: check autonegotiation, the cable and the transceiver"),
            ));
        }
        if let Some(min) = settings.min_mtu
            && nic.mtu < min
        {
            out.push(finding(
                name,
                "MtuBelowExpected",
                format!(
                    "{name} has MTU {}, below the expected {min}: ip link set dev {name} mtu {min}",
                    nic.mtu
                ),
            ));
        }
        let (heard, leaf_pfc) = advertised_pfc(table, name);
        if settings.require_neighbor && lldp_settled && !heard {
            out.push(finding(
                name,
                "NoNeighbor",
                format!("{name} hears no LLDP neighbour: the rail is lost (cable, leaf port down, or LLDP off on the leaf)"),
            ));
        }
        for c in cabling {
            if c.nic.as_deref() == Some(name)
                && c.severity == "error"
                && WRONG_LEAF_KINDS.contains(&c.kind.as_str())
            {
                out.push(finding(name, "WrongLeafGroup", c.message.clone()));
            }
        }
        match (readings.pfc.get(name), leaf_pfc) {
            (Some(HostPfc::Enabled(host)), Some(leaf)) if *host != leaf => out.push(finding(
                name,
                "PfcMismatch",
                format!(
                    "{name} has PFC on priorities {} but its leaf advertises {} (DCBX): dcb pfc set dev {name} prio-pfc all:off {}",
                    fmt_priorities(host),
                    fmt_priorities(&leaf),
                    leaf.iter().map(|p| format!("{p}:on")).collect::<Vec<_>>().join(" ")
                ),
            )),
            (Some(HostPfc::Unknown(why)), Some(_)) => out.push(finding(
                name,
                "PfcUnknown",
                format!("{name}: the host's PFC cannot be read ({why}), so it is not known to agree with the leaf's DCBX"),
            )),
            _ => {}
        }
        if let Some(missing) = readings.missing_gids.get(name)
            && !missing.is_empty()
        {
            out.push(finding(
                name,
                "NoRoceV2Gid",
                format!(
                    "{name}: no RoCE v2 GID for {} in {}'s GID table: RoCE traffic for it cannot be addressed",
                    missing.join(", "),
                    nic.rdma_device.as_deref().unwrap_or("its RDMA device")
                ),
            ));
        }
    }
    out
}

/// The node condition's decision, with hysteresis: a problem must last `unhealthy_after`
/// before the node is shielded, and the node must stay clean for `healthy_after` before it is
/// released, so a flapping link neither taints nor untaints at every flap.
#[derive(Debug, Clone)]
pub struct Shield {
    ready: Option<bool>,
    troubled_since: Option<Instant>,
    clean_since: Option<Instant>,
}

impl Default for Shield {
    fn default() -> Self {
        Self::new()
    }
}

impl Shield {
    /// No decision yet.
    pub fn new() -> Self {
        Self {
            ready: None,
            troubled_since: None,
            clean_since: None,
        }
    }

    /// The decision after a pass at `now` that saw (or not) blocking problems; `None` until
    /// the first decision (a problem seen at start must last before it counts, too).
    pub fn update(
        &mut self,
        now: Instant,
        troubled: bool,
        unhealthy_after: Duration,
        healthy_after: Duration,
    ) -> Option<bool> {
        if troubled {
            self.clean_since = None;
            let since = *self.troubled_since.get_or_insert(now);
            if now.duration_since(since) >= unhealthy_after {
                self.ready = Some(false);
            }
        } else {
            self.troubled_since = None;
            let since = *self.clean_since.get_or_insert(now);
            match self.ready {
                // Nothing to recover from: healthy at once.
                None => self.ready = Some(true),
                Some(false) if now.duration_since(since) >= healthy_after => {
                    self.ready = Some(true);
                }
                _ => {}
            }
        }
        self.ready
    }
}

/// A condition reason from a finding: `Reason:nic`, in the characters a reason may hold.
pub fn condition_reason(f: &HealthFinding) -> String {
    let nic: String = f
        .nic
        .as_deref()
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if nic.is_empty() {
        f.reason.clone()
    } else {
        format!("{}:{nic}", f.reason)
    }
}

#[cfg(test)]
mod tests {
    use spinel_wire::neighbor::{
        ChassisId, ChassisIdSubtype, Neighbor, Observer, PfcConfiguration, PortId, PortIdSubtype,
        PortNeighbors,
    };

    use super::*;
    use crate::settings::{DutiesFile, DutyFlags};

    fn settings() -> Health {
        let mut h = DutiesFile::default()
            .resolve(&DutyFlags::default())
            .unwrap()
            .health;
        h.min_speed_mbps = Some(100_000);
        h.min_mtu = Some(9000);
        h
    }

    fn nic(name: &str) -> RoceNic {
        RoceNic {
            name: name.parse().unwrap(),
            index: 2,
            pci: "0000:3b:00.0".parse().unwrap(),
            rdma_device: Some("mlx5_0".into()),
            mac: None,
            mtu: 9000,
            carrier: true,
            speed_mbps: Some(200_000),
            addresses: vec!["10.56.0.7/24".parse().unwrap()],
        }
    }

    fn table(nic: &str, pfc: Option<Vec<u8>>) -> NeighborTable {
        let mut neighbor = Neighbor::new(
            ChassisId {
                subtype: ChassisIdSubtype::MacAddress,
                value: "0c:42:a1:00:00:01".into(),
            },
            PortId {
                subtype: PortIdSubtype::InterfaceName,
                value: "Ethernet0".into(),
            },
            120,
        );
        neighbor.dcbx.pfc = pfc.map(|p| PfcConfiguration {
            willing: false,
            mbc: false,
            capability: 8,
            enabled_priorities: p,
        });
        NeighborTable {
            schema: spinel_wire::neighbor::SCHEMA.into(),
            observer: Observer {
                name: "n1".into(),
                chassis_id: None,
                role: None,
            },
            ports: vec![PortNeighbors {
                port: nic.into(),
                neighbors: vec![neighbor],
                counters: None,
            }],
        }
    }

    fn reasons(f: &[HealthFinding]) -> Vec<&str> {
        f.iter().map(|f| f.reason.as_str()).collect()
    }

    #[test]
    fn each_problem_is_one_finding_with_its_reason() {
        let s = settings();
        let t = table("ens1f0np0", Some(vec![3]));
        let mut readings = Readings::default();
        readings
            .pfc
            .insert("ens1f0np0".into(), HostPfc::Enabled(vec![3]));
        let healthy = findings(&s, &[nic("ens1f0np0")], Some(&t), &[], &readings, true);
        assert!(healthy.is_empty(), "{healthy:?}");

        let mut slow = nic("ens1f0np0");
        slow.speed_mbps = Some(25_000);
        slow.mtu = 1500;
        let f = findings(&s, &[slow], Some(&t), &[], &readings, true);
        assert_eq!(reasons(&f), ["SpeedBelowExpected", "MtuBelowExpected"]);

        let mut down = nic("ens1f0np0");
        down.carrier = false;
        let f = findings(&s, &[down], None, &[], &readings, true);
        assert_eq!(reasons(&f), ["LinkDown"], "down explains the rest");

        let f = findings(&s, &[nic("ens1f0np0")], None, &[], &readings, true);
        assert_eq!(reasons(&f), ["NoNeighbor"]);
        let f = findings(&s, &[nic("ens1f0np0")], None, &[], &readings, false);
        assert!(f.is_empty(), "no verdict on LLDP before it settled");

        readings
            .pfc
            .insert("ens1f0np0".into(), HostPfc::Enabled(vec![3, 4]));
        let f = findings(&s, &[nic("ens1f0np0")], Some(&t), &[], &readings, true);
        assert_eq!(reasons(&f), ["PfcMismatch"]);
        assert!(f[0].message.contains("priorities 3,4") && f[0].message.contains("advertises 3"));

        readings.pfc.insert(
            "ens1f0np0".into(),
            HostPfc::Unknown("no DCB operations".into()),
        );
        readings
            .missing_gids
            .insert("ens1f0np0".into(), vec!["10.56.0.7".into()]);
        let cabling = [CablingFinding {
            severity: "error".into(),
            kind: "wrong_group".into(),
            nic: Some("ens1f0np0".into()),
            message: "ens1f0np0 is on leaf07, outside group a".into(),
        }];
        let f = findings(&s, &[nic("ens1f0np0")], Some(&t), &cabling, &readings, true);
        assert_eq!(reasons(&f), ["WrongLeafGroup", "PfcUnknown", "NoRoceV2Gid"]);
        assert!(is_informational("PfcUnknown") && !is_informational("PfcMismatch"));
        assert_eq!(condition_reason(&f[0]), "WrongLeafGroup:ens1f0np0");
    }

    #[test]
    fn the_shield_waits_before_it_goes_up_and_before_it_comes_down() {
        let (up, down) = (Duration::from_secs(10), Duration::from_secs(60));
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut shield = Shield::new();
        assert_eq!(
            shield.update(at(0), true, up, down),
            None,
            "a problem must last"
        );
        assert_eq!(shield.update(at(5), true, up, down), None);
        assert_eq!(shield.update(at(10), true, up, down), Some(false));
        // A flap that clears for a moment does not release the node.
        assert_eq!(shield.update(at(11), false, up, down), Some(false));
        assert_eq!(shield.update(at(12), true, up, down), Some(false));
        assert_eq!(shield.update(at(20), false, up, down), Some(false));
        assert_eq!(shield.update(at(79), false, up, down), Some(false));
        assert_eq!(shield.update(at(80), false, up, down), Some(true));
        // Healthy again: a short problem does not shield it.
        assert_eq!(shield.update(at(81), true, up, down), Some(true));
        assert_eq!(shield.update(at(82), false, up, down), Some(true));
        let mut fresh = Shield::new();
        assert_eq!(
            fresh.update(at(0), false, up, down),
            Some(true),
            "clean at start"
        );
    }
}
