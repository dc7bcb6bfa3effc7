//! The node's report (`NodeFabric.spec`) from what it observes: its RoCE NICs and its LLDP
//! neighbour table. Pure: the same observation always gives the same report, and a report
//! changes only when the node's cabling or links do (no ages, no counters).
//!
//! A restarted agent does not publish less than it knows: the neighbours its predecessor
//! published are carried over ([`Carryover`]) until each one's advertised TTL has passed since
//! the restart, exactly as an agent that kept running would have kept them, unless LLDP says
//! otherwise first. So a rolling update of the DaemonSet changes nothing the cluster sees.

use std::time::{Duration, Instant};

use spinel_api::crd::{
    HealthFinding, LISTENING_SINCE_ANNOTATION, MAX_CARRY_OVER, MAX_HEALTH_FINDINGS,
    MAX_NEIGHBORS_PER_PORT, MAX_NICS, NicReport, NodeFabricSpec,
};
use spinel_node::nics::RoceNic;
use spinel_wire::lldp::RemoteTable;
use spinel_wire::neighbor::{Neighbor, NeighborTable, Observer, Role};

/// Everything the node reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    /// The RoCE NICs.
    pub nics: Vec<RoceNic>,
    /// The neighbour table LLDP shows now (see [`stable_table`]).
    pub table: Option<NeighborTable>,
    /// What the previous agent published, kept until its TTLs pass.
    pub carried: Option<Carryover>,
    /// When this agent run began listening (RFC 3339): names the run in the report.
    pub listening_since: Option<String>,
    /// LLDP frames ignored because they came from the node's own MACs.
    pub ignored: u64,
    /// Health findings.
    pub health: Vec<HealthFinding>,
}

/// Neighbours a previous agent published, each with the instant its TTL ends (counted from
/// this agent's start: the last LLDPDU may have been later, never earlier).
#[derive(Debug, Clone, PartialEq)]
pub struct Carryover {
    neighbors: Vec<(String, Neighbor, Instant)>,
}

impl Carryover {
    /// The neighbours of `published` (a `spinel.dev/neighbors/v1` table), from `start`.
    pub fn new(published: &NeighborTable, start: Instant) -> Self {
        let neighbors = published
            .ports
            .iter()
            .flat_map(|p| {
                p.neighbors.iter().map(|n| {
                    let ttl = Duration::from_secs(u64::from(n.ttl)).min(MAX_CARRY_OVER);
                    let until = start + ttl;
                    (p.port.clone(), n.clone(), until)
                })
            })
            .collect();
        Self { neighbors }
    }

    /// When the next carried neighbour's TTL ends, if any is left at `now`.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        self.neighbors
            .iter()
            .map(|(_, _, until)| *until)
            .filter(|until| *until > now)
            .min()
    }
}

/// What `NodeFabric/<node>` holds, to start from: its neighbours, carried over from now, and
/// its health findings (kept until the first health pass replaces them). An empty start when
/// there is no such report or it cannot be read or parsed: the agent then goes by what it sees.
pub async fn published(
    fabrics: &kube::Api<spinel_api::crd::NodeFabric>,
    node: &str,
) -> (Option<Carryover>, Vec<HealthFinding>) {
    let published = match fabrics.get_opt(node).await {
        Ok(Some(found)) => found,
        Ok(None) => return (None, Vec::new()),
        Err(e) => {
            tracing::warn!(
                node,
                "cannot read the published report; starting from LLDP alone: {e}"
            );
            return (None, Vec::new());
        }
    };
    // Only what an agent run published is carried: a report without its run's annotation was
    // written by someone else (a compromised agent's token, a person), and is not believed.
    let by_an_agent = published
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(LISTENING_SINCE_ANNOTATION));
    if !by_an_agent {
        tracing::warn!(
            node,
            "the published report names no agent run; starting from LLDP alone"
        );
        return (None, Vec::new());
    }
    let carried = match serde_json::from_value::<NeighborTable>(published.spec.lldp) {
        Ok(table) => {
            let carried = Carryover::new(&table, Instant::now());
            tracing::info!(
                node,
                neighbors = carried.neighbors.len(),
                "carrying the published neighbours over until their TTLs pass"
            );
            Some(carried)
        }
        Err(e) => {
            tracing::warn!(
                node,
                "the published neighbour table does not parse; not carried over: {e}"
            );
            None
        }
    };
    (carried, published.spec.health)
}

fn same_msap(a: &Neighbor, b: &Neighbor) -> bool {
    a.chassis_id == b.chassis_id && a.port_id == b.port_id
}

impl Observation {
    /// The table to publish at `now`: what LLDP shows, plus the carried neighbours whose TTL
    /// has not passed, on ports that are still RoCE NICs, where LLDP has not replaced them.
    pub fn table_at(&self, node: &str, now: Instant) -> Option<NeighborTable> {
        let carried: Vec<&(String, Neighbor, Instant)> = self
            .carried
            .iter()
            .flat_map(|c| &c.neighbors)
            .filter(|(port, _, until)| *until > now && self.nics.iter().any(|n| &n.name == port))
            .collect();
        if carried.is_empty() {
            return self.table.clone();
        }
        let mut table = self.table.clone().unwrap_or_else(|| empty_table(node));
        for (port, neighbor, _) in carried {
            let index = match table.ports.iter().position(|p| &p.port == port) {
                Some(i) => i,
                None => {
                    table.ports.push(spinel_wire::neighbor::PortNeighbors {
                        port: port.clone(),
                        neighbors: Vec::new(),
                        counters: None,
                    });
                    table.ports.len() - 1
                }
            };
            let live = &mut table.ports[index].neighbors;
            if !live.iter().any(|n| same_msap(n, neighbor)) {
                live.push(neighbor.clone());
            }
        }
        table.ports.sort_by(|a, b| a.port.cmp(&b.port));
        Some(table)
    }
}

fn empty_table(node: &str) -> NeighborTable {
    NeighborTable {
        schema: spinel_wire::neighbor::SCHEMA.to_owned(),
        observer: Observer {
            name: node.to_owned(),
            chassis_id: None,
            role: Some(Role::Host),
        },
        ports: Vec::new(),
    }
}

/// The table without what changes on its own (ages, counters): the cabling, nothing else.
pub fn stable_table(table: &RemoteTable, node: &str) -> NeighborTable {
    let observer = Observer {
        name: node.to_owned(),
        chassis_id: None,
        role: Some(Role::Host),
    };
    let mut t = table.snapshot(observer, Instant::now());
    for port in &mut t.ports {
        port.counters = None;
        for n in &mut port.neighbors {
            n.age_seconds = None;
        }
    }
    t
}

/// The report for node `node`.
pub fn spec(node: &str, observation: &Observation) -> NodeFabricSpec {
    let nics: Vec<NicReport> = observation
        .nics
        .iter()
        .take(MAX_NICS)
        .map(|n| NicReport {
            name: n.name.to_string(),
            pci: Some(n.pci.to_string()),
            rdma_device: n.rdma_device.clone(),
            mac: n.mac.map(|m| m.to_string()),
            mtu: n.mtu,
            speed_mbps: n.speed_mbps,
            carrier: n.carrier,
            addresses: n.addresses.iter().map(ToString::to_string).collect(),
            host_pfc: None,
        })
        .collect();
    let mut table = observation
        .table_at(node, Instant::now())
        .unwrap_or_else(|| empty_table(node));
    // The report speaks for the node's RoCE NICs only (the schema refuses any other port),
    // within the sizes the schema allows.
    table
        .ports
        .retain(|p| observation.nics.iter().any(|n| n.name == p.port));
    for port in &mut table.ports {
        port.neighbors.truncate(MAX_NEIGHBORS_PER_PORT);
    }
    table.ports.truncate(MAX_NICS);
    NodeFabricSpec {
        node_name: node.to_owned(),
        agent_version: env!("CARGO_PKG_VERSION").to_owned(),
        nics,
        lldp: serde_json::to_value(&table).unwrap_or_default(),
        lldp_frames_ignored: observation.ignored,
        health: observation
            .health
            .iter()
            .take(MAX_HEALTH_FINDINGS)
            .cloned()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use spinel_wire::MacAddr;
    use spinel_wire::lldp::{LldpFrame, LldpGroup, LocalSystem};

    use super::*;

    fn frame(ttl: u16) -> Vec<u8> {
        let mut leaf = LocalSystem::new(MacAddr([0x0c, 0x42, 0xa1, 0, 0, 1]), "swp1");
        leaf.system_name = Some("leaf01".into());
        LldpFrame {
            destination: LldpGroup::NearestBridge,
            source: MacAddr([0x0c, 0x42, 0xa1, 0, 0, 2]),
            vlan: None,
            lldpdu: leaf.lldpdu(ttl).unwrap(),
        }
        .to_vec(1500)
        .unwrap()
    }

    fn nic(name: &str) -> RoceNic {
        RoceNic {
            name: name.parse().unwrap(),
            index: 2,
            pci: "0000:3b:00.0".parse().unwrap(),
            rdma_device: None,
            mac: None,
            mtu: 9000,
            carrier: true,
            speed_mbps: None,
            addresses: Vec::new(),
        }
    }

    fn lldp_of(report: &NodeFabricSpec) -> Vec<(String, usize)> {
        let t: NeighborTable = serde_json::from_value(report.lldp.clone()).unwrap();
        t.ports
            .iter()
            .map(|p| (p.port.clone(), p.neighbors.len()))
            .collect()
    }

    /// A restarted agent publishes what its predecessor did: carried neighbours stay until
    /// their TTL passes, LLDP replaces them (one entry per MSAP), and a port that is no longer
    /// a RoCE NIC is never reported.
    #[test]
    fn a_restart_carries_the_published_neighbours_until_their_ttl() {
        let mut before = RemoteTable::new(32);
        let t0 = Instant::now();
        before.add_port("ens1f0np0");
        before.add_port("eth9");
        before.receive_frame("ens1f0np0", &frame(120), t0);
        before.receive_frame("eth9", &frame(120), t0);
        let published = stable_table(&before, "n1");

        let start = Instant::now();
        let mut obs = Observation {
            nics: vec![nic("ens1f0np0")],
            carried: Some(Carryover::new(&published, start)),
            ..Observation::default()
        };
        let first = spec("n1", &obs);
        assert_eq!(
            lldp_of(&first),
            [("ens1f0np0".to_owned(), 1)],
            "eth9 is no NIC"
        );
        // LLDP arrives with the same neighbour: the report does not change.
        let mut live = RemoteTable::new(32);
        live.add_port("ens1f0np0");
        live.receive_frame("ens1f0np0", &frame(120), start);
        obs.table = Some(stable_table(&live, "n1"));
        assert_eq!(spec("n1", &obs), first);
        // Without LLDP the carried neighbour ends with its TTL, not before.
        obs.table = None;
        let c = obs.carried.as_ref().unwrap();
        assert_eq!(
            c.next_deadline(start),
            Some(start + Duration::from_secs(120))
        );
        assert!(
            obs.table_at("n1", start + Duration::from_secs(119))
                .is_some_and(|t| t.ports[0].neighbors.len() == 1)
        );
        assert!(
            obs.table_at("n1", start + Duration::from_secs(121))
                .is_none()
        );
    }

    /// A neighbour claiming a TTL of 18 hours is carried no longer than lldpd's own TTL.
    #[test]
    fn a_carried_ttl_is_capped() {
        let mut before = RemoteTable::new(32);
        let t0 = Instant::now();
        before.add_port("ens1f0np0");
        before.receive_frame("ens1f0np0", &frame(65535), t0);
        let start = Instant::now();
        let carried = Carryover::new(&stable_table(&before, "n1"), start);
        assert_eq!(carried.next_deadline(start), Some(start + MAX_CARRY_OVER));
    }

    #[test]
    fn the_report_changes_with_the_cabling_not_with_time() {
        let mut table = RemoteTable::new(32);
        table.add_port("ens1f0np0");
        let t0 = Instant::now();
        table.receive_frame("ens1f0np0", &frame(120), t0);
        let first = stable_table(&table, "n1");
        // Thirty seconds later the same neighbour refreshes: ages and counters moved on.
        table.receive_frame("ens1f0np0", &frame(120), t0 + Duration::from_secs(30));
        let again = stable_table(&table, "n1");
        assert_eq!(first, again);
        let obs = |t: NeighborTable| Observation {
            nics: vec![nic("ens1f0np0")],
            table: Some(t),
            ..Observation::default()
        };
        assert_eq!(spec("n1", &obs(first.clone())), spec("n1", &obs(again)));
        let json = serde_json::to_string(&spec("n1", &obs(first))).unwrap();
        assert!(
            json.contains("leaf01") && !json.contains("age_seconds"),
            "{json}"
        );
        // A shutdown LLDPDU (recabling) changes it.
        table.receive_frame("ens1f0np0", &frame(0), t0 + Duration::from_secs(31));
        assert!(stable_table(&table, "n1").ports[0].neighbors.is_empty());
    }
}
