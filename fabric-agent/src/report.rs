//! The node's report (`NodeFabric.spec`) from what it observes: its RoCE NICs and its LLDP
//! neighbour table. Pure: the same observation always gives the same report, and a report
//! changes only when the node's cabling or links do (no ages, no counters).

use std::time::Instant;

use spinel_api::crd::{HealthFinding, NicReport, NodeFabricSpec};
use spinel_node::nics::RoceNic;
use spinel_wire::lldp::RemoteTable;
use spinel_wire::neighbor::{NeighborTable, Observer, Role};

/// Everything the node reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    /// The RoCE NICs.
    pub nics: Vec<RoceNic>,
    /// The neighbour table, as published (see [`stable_table`]).
    pub table: Option<NeighborTable>,
    /// LLDP frames ignored because they came from the node's own MACs.
    pub ignored: u64,
    /// Health findings.
    pub health: Vec<HealthFinding>,
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
    let nics = observation
        .nics
        .iter()
        .map(|n| NicReport {
            name: n.name.clone(),
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
    let table = observation.table.clone().unwrap_or_else(|| NeighborTable {
        schema: spinel_wire::neighbor::SCHEMA.to_owned(),
        observer: Observer {
            name: node.to_owned(),
            chassis_id: None,
            role: Some(Role::Host),
        },
        ports: Vec::new(),
    });
    NodeFabricSpec {
        node_name: node.to_owned(),
        agent_version: env!("CARGO_PKG_VERSION").to_owned(),
        nics,
        lldp: serde_json::to_value(&table).unwrap_or_default(),
        lldp_frames_ignored: observation.ignored,
        health: observation.health.clone(),
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
