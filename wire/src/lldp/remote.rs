//! The receive side's neighbour table (802.1AB's remote systems data), sans-IO.
//!
//! Per local port, neighbours are keyed by MSAP (chassis ID + port ID). The TTL each neighbour
//! advertised is the only authority for ageing; a shutdown LLDPDU (TTL 0) removes its MSAP at
//! once. Each port holds at most `max_neighbors` (lldpd's default is 32); a new MSAP arriving
//! at a full port is dropped, as 802.1AB's tooManyNeighbors rule says. Counters follow the
//! standard's statistics and land in [`PortCounters`].

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::basic::IdSubtype;
use super::error::FrameError;
use super::frame::decode_frame_reusing;
use super::lldpdu::{Lldpdu, Tlv};
use crate::neighbor::{Neighbor, NeighborTable, Observer, PortCounters, PortNeighbors, SCHEMA};

/// lldpd's default cap on neighbours per port.
pub const DEFAULT_MAX_NEIGHBORS: usize = 32;

/// MSAP identifier in wire form: (chassis subtype, chassis ID, port subtype, port ID).
type Msap = (u8, Vec<u8>, u8, Vec<u8>);

#[derive(Debug, Clone)]
struct Entry {
    neighbor: Neighbor,
    updated: Instant,
    expires: Instant,
}

#[derive(Debug, Clone, Default)]
struct PortState {
    neighbors: BTreeMap<Msap, Entry>,
    counters: PortCounters,
    table_drops: u64,
}

/// What a received frame did to the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RxOutcome {
    /// A new MSAP was added.
    Inserted,
    /// A known MSAP's information and TTL were refreshed.
    Updated,
    /// A shutdown LLDPDU removed a known MSAP.
    Removed,
    /// A shutdown LLDPDU for an MSAP we did not know.
    ShutdownUnknown,
    /// The port already holds the maximum number of neighbours; the new MSAP was dropped.
    TableFull,
    /// The frame failed validation and was discarded.
    Discarded(FrameError),
}

/// Neighbours per local port, with ageing and counters.
#[derive(Debug, Clone)]
pub struct RemoteTable {
    max_neighbors: usize,
    ports: BTreeMap<String, PortState>,
    /// The TLV list's allocation, reused frame after frame.
    spare: Vec<Tlv<'static>>,
}

impl Default for RemoteTable {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_NEIGHBORS)
    }
}

fn is_msap(key: &Msap, pdu: &Lldpdu<'_>) -> bool {
    key.0 == pdu.chassis_id.subtype.code()
        && key.2 == pdu.port_id.subtype.code()
        && *key.1 == *pdu.chassis_id.id
        && *key.3 == *pdu.port_id.id
}

fn msap(pdu: &Lldpdu<'_>) -> Msap {
    (
        pdu.chassis_id.subtype.code(),
        pdu.chassis_id.id.to_vec(),
        pdu.port_id.subtype.code(),
        pdu.port_id.id.to_vec(),
    )
}

impl RemoteTable {
    /// An empty table holding at most `max_neighbors` per port (at least 1).
    pub fn new(max_neighbors: usize) -> Self {
        Self {
            max_neighbors: max_neighbors.max(1),
            ports: BTreeMap::new(),
            spare: Vec::new(),
        }
    }

    /// Makes `port` appear in snapshots even before anything is received on it.
    pub fn add_port(&mut self, port: &str) {
        self.ports.entry(port.to_owned()).or_default();
    }

    fn port_mut(&mut self, port: &str) -> &mut PortState {
        self.ports.entry(port.to_owned()).or_default()
    }

    /// Handles one received Ethernet frame on `port` at `now`.
    pub fn receive_frame(&mut self, port: &str, frame: &[u8], now: Instant) -> RxOutcome {
        let mut spare = std::mem::take(&mut self.spare);
        let outcome = match decode_frame_reusing(frame, &mut spare) {
            Ok(f) => {
                let outcome = self.receive_lldpdu(port, &f.lldpdu, now);
                f.lldpdu.recycle(&mut spare);
                outcome
            }
            Err(e) => {
                let p = self.port_mut(port);
                p.counters.frames_in += 1;
                p.counters.frames_discarded += 1;
                p.counters.frames_in_errors += 1;
                RxOutcome::Discarded(e)
            }
        };
        self.spare = spare;
        outcome
    }

    /// Handles one valid LLDPDU received on `port` at `now`.
    pub fn receive_lldpdu(&mut self, port: &str, pdu: &Lldpdu<'_>, now: Instant) -> RxOutcome {
        let max = self.max_neighbors;
        let p = self.port_mut(port);
        let c = &mut p.counters;
        c.frames_in += 1;
        let mut discarded = 0;
        for tlv in &pdu.tlvs {
            match tlv {
                Tlv::Discarded { .. } => discarded += 1,
                t if t.is_unrecognized() => c.tlvs_unrecognized += 1,
                _ => {}
            }
        }
        if discarded > 0 {
            c.tlvs_discarded += discarded;
            c.frames_in_errors += 1;
        }
        if pdu.is_shutdown() {
            return if p.neighbors.remove(&msap(pdu)).is_some() {
                p.counters.deletes += 1;
                RxOutcome::Removed
            } else {
                RxOutcome::ShutdownUnknown
            };
        }
        let expires = now + Duration::from_secs(pdu.ttl.into());
        // A known MSAP (every refresh) is found without building a key, and its neighbour is
        // updated in place: no allocation.
        if let Some((_, entry)) = p.neighbors.iter_mut().find(|(k, _)| is_msap(k, pdu)) {
            entry.neighbor.update_from(pdu);
            entry.updated = now;
            entry.expires = expires;
            return RxOutcome::Updated;
        }
        let key = msap(pdu);
        let neighbor = Neighbor::from(pdu);
        if p.neighbors.len() >= max {
            p.table_drops += 1;
            return RxOutcome::TableFull;
        }
        p.neighbors.insert(
            key,
            Entry {
                neighbor,
                updated: now,
                expires,
            },
        );
        p.counters.inserts += 1;
        RxOutcome::Inserted
    }

    /// Counts a frame sent on `port`.
    pub fn record_sent(&mut self, port: &str) {
        self.port_mut(port).counters.frames_out += 1;
    }

    /// Removes neighbours whose TTL has run out by `now`; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let mut removed = 0;
        for p in self.ports.values_mut() {
            let before = p.neighbors.len();
            p.neighbors.retain(|_, e| e.expires > now);
            let aged = (before - p.neighbors.len()) as u64;
            p.counters.ageouts += aged;
            p.counters.deletes += aged;
            removed += aged as usize;
        }
        removed
    }

    /// When the next neighbour will age out, if any.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.ports
            .values()
            .flat_map(|p| p.neighbors.values().map(|e| e.expires))
            .min()
    }

    /// Neighbours currently held, over all ports.
    pub fn len(&self) -> usize {
        self.ports.values().map(|p| p.neighbors.len()).sum()
    }

    /// True when no port has a neighbour.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters of `port`.
    pub fn counters(&self, port: &str) -> Option<PortCounters> {
        self.ports.get(port).map(|p| p.counters)
    }

    /// New MSAPs dropped on `port` because it was full (802.1AB lldpStatsRemTablesDrops; the
    /// schema has no field for it).
    pub fn table_drops(&self, port: &str) -> u64 {
        self.ports.get(port).map_or(0, |p| p.table_drops)
    }

    /// The table in the stable schema as of `now`: ports by name, neighbours by MSAP, each with
    /// its age; neighbours already past their TTL are left out.
    pub fn snapshot(&self, observer: Observer, now: Instant) -> NeighborTable {
        let ports = self
            .ports
            .iter()
            .map(|(name, p)| PortNeighbors {
                port: name.clone(),
                neighbors: p
                    .neighbors
                    .values()
                    .filter(|e| e.expires > now)
                    .map(|e| Neighbor {
                        age_seconds: Some(now.saturating_duration_since(e.updated).as_secs()),
                        ..e.neighbor.clone()
                    })
                    .collect(),
                counters: Some(p.counters),
            })
            .collect();
        NeighborTable {
            schema: SCHEMA.to_owned(),
            observer,
            ports,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::lldp::basic::{ChassisId, PortId};
    use crate::lldp::frame::{LldpFrame, LldpGroup};
    use crate::mac::MacAddr;
    use crate::neighbor::{ChassisIdSubtype, PortIdSubtype};

    fn pdu(chassis: u8, port: &str, ttl: u16) -> Lldpdu<'static> {
        let mut p = Lldpdu::new(
            ChassisId {
                subtype: ChassisIdSubtype::MacAddress,
                id: Cow::Owned(vec![2, 0, 0, 0, 0, chassis]),
            },
            PortId {
                subtype: PortIdSubtype::InterfaceName,
                id: Cow::Owned(port.as_bytes().to_vec()),
            },
            ttl,
        );
        p.tlvs.push(Tlv::SystemName(Cow::Borrowed(b"leaf01")));
        p
    }

    fn frame(p: &Lldpdu<'_>) -> Vec<u8> {
        LldpFrame {
            destination: LldpGroup::NearestBridge,
            source: MacAddr([2, 0, 0, 0, 0, 9]),
            vlan: None,
            lldpdu: p.clone(),
        }
        .to_vec(1500)
        .unwrap()
    }

    fn observer() -> Observer {
        Observer {
            name: "node1".into(),
            chassis_id: None,
            role: None,
        }
    }

    #[test]
    fn ttl_ages_neighbours_out() {
        let t0 = Instant::now();
        let mut t = RemoteTable::default();
        assert_eq!(
            t.receive_frame("eth0", &frame(&pdu(1, "swp1", 120)), t0),
            RxOutcome::Inserted
        );
        assert_eq!(t.next_expiry(), Some(t0 + Duration::from_secs(120)));
        assert_eq!(t.expire(t0 + Duration::from_secs(119)), 0);
        let snap = t.snapshot(observer(), t0 + Duration::from_secs(30));
        let n = &snap.ports[0].neighbors[0];
        assert_eq!(n.age_seconds, Some(30));
        assert_eq!(n.system_name.as_deref(), Some("leaf01"));
        assert_eq!(t.expire(t0 + Duration::from_secs(120)), 1);
        assert!(t.is_empty());
        let c = t.counters("eth0").unwrap();
        assert_eq!((c.inserts, c.ageouts, c.deletes), (1, 1, 1));
    }

    #[test]
    fn refresh_extends_the_ttl() {
        let t0 = Instant::now();
        let mut t = RemoteTable::default();
        t.receive_lldpdu("eth0", &pdu(1, "swp1", 10), t0);
        assert_eq!(
            t.receive_lldpdu("eth0", &pdu(1, "swp1", 10), t0 + Duration::from_secs(8)),
            RxOutcome::Updated
        );
        assert_eq!(t.expire(t0 + Duration::from_secs(12)), 0);
        assert_eq!(t.len(), 1);
        assert_eq!(t.counters("eth0").unwrap().inserts, 1);
    }

    #[test]
    fn shutdown_removes_at_once() {
        let t0 = Instant::now();
        let mut t = RemoteTable::default();
        let p = pdu(1, "swp1", 120);
        t.receive_lldpdu("eth0", &p, t0);
        t.receive_lldpdu("eth0", &pdu(2, "swp1", 120), t0);
        assert_eq!(
            t.receive_lldpdu("eth0", &p.shutdown(), t0),
            RxOutcome::Removed
        );
        assert_eq!(t.len(), 1, "only the shut-down MSAP goes");
        assert_eq!(
            t.receive_lldpdu("eth0", &p.shutdown(), t0),
            RxOutcome::ShutdownUnknown
        );
        let c = t.counters("eth0").unwrap();
        assert_eq!((c.deletes, c.ageouts), (1, 0));
    }

    #[test]
    fn msap_is_chassis_and_port() {
        let t0 = Instant::now();
        let mut t = RemoteTable::default();
        t.receive_lldpdu("eth0", &pdu(1, "swp1", 120), t0);
        t.receive_lldpdu("eth0", &pdu(1, "swp2", 120), t0);
        t.receive_lldpdu("eth1", &pdu(1, "swp1", 120), t0);
        assert_eq!(t.len(), 3);
        let snap = t.snapshot(observer(), t0);
        assert_eq!(snap.ports.len(), 2);
        assert_eq!(snap.ports[0].port, "eth0");
        assert_eq!(snap.ports[0].neighbors[0].port_id.value, "swp1");
        assert_eq!(snap.ports[0].neighbors[1].port_id.value, "swp2");
    }

    #[test]
    fn per_port_cap_drops_newcomers() {
        let t0 = Instant::now();
        let mut t = RemoteTable::new(2);
        t.receive_lldpdu("eth0", &pdu(1, "a", 120), t0);
        t.receive_lldpdu("eth0", &pdu(2, "a", 120), t0);
        assert_eq!(
            t.receive_lldpdu("eth0", &pdu(3, "a", 120), t0),
            RxOutcome::TableFull
        );
        assert_eq!(
            t.receive_lldpdu("eth0", &pdu(1, "a", 120), t0),
            RxOutcome::Updated,
            "known MSAPs still refresh at the cap"
        );
        assert_eq!(t.table_drops("eth0"), 1);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn counters_follow_802_1ab() {
        let t0 = Instant::now();
        let mut t = RemoteTable::default();
        t.add_port("eth0");
        assert!(matches!(
            t.receive_frame("eth0", &[0u8; 20], t0),
            RxOutcome::Discarded(_)
        ));
        let mut p = pdu(1, "swp1", 120);
        p.tlvs.push(Tlv::Reserved {
            tlv_type: 9,
            value: Cow::Borrowed(b"x"),
        });
        // A second System Name is discarded by the decoder, not the whole LLDPDU.
        p.tlvs.push(Tlv::SystemName(Cow::Borrowed(b"again")));
        let wire = frame(&p);
        assert_eq!(t.receive_frame("eth0", &wire, t0), RxOutcome::Inserted);
        t.record_sent("eth0");
        let c = t.counters("eth0").unwrap();
        assert_eq!(c.frames_in, 2);
        assert_eq!(c.frames_discarded, 1);
        assert_eq!(c.frames_in_errors, 2);
        assert_eq!(c.tlvs_discarded, 1);
        assert_eq!(c.tlvs_unrecognized, 1);
        assert_eq!(c.frames_out, 1);
        let snap = t.snapshot(observer(), t0);
        assert_eq!(
            snap.ports[0].neighbors[0].system_name.as_deref(),
            Some("leaf01")
        );
    }
}
