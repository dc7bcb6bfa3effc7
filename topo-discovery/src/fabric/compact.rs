//! A host's neighbour table kept for a long-running model: only what inference reads, in
//! boxed strings, so 100k nodes' tables fit in a few hundred MiB (a parsed `NeighborTable`
//! costs about 0.9 KiB a neighbour).

use spinel_wire::neighbor::{Capability, ChassisIdSubtype, NeighborTable, PortIdSubtype, Role};

use super::ingest::{FabricBuilder, NeighborSighting, ObserverFacts};

/// One host's neighbour table, reduced to what inference reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactTable {
    chassis: Option<(ChassisIdSubtype, Box<str>)>,
    ports: Vec<CompactPort>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CompactPort {
    name: Box<str>,
    neighbors: Vec<Seen>,
}

/// One neighbour on one port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    chassis: (ChassisIdSubtype, Box<str>),
    port: (PortIdSubtype, Box<str>),
    port_description: Option<Box<str>>,
    system_name: Option<Box<str>>,
    capabilities: Option<Box<[Capability]>>,
}

impl CompactTable {
    /// The compact form of `table` (its observer's name and role are the caller's to keep).
    pub fn from_table(table: &NeighborTable) -> Self {
        let boxed = |s: &Option<String>| s.as_deref().map(Box::from);
        Self {
            chassis: table
                .observer
                .chassis_id
                .as_ref()
                .map(|c| (c.subtype, Box::from(c.value.as_str()))),
            ports: table
                .ports
                .iter()
                .map(|p| CompactPort {
                    name: Box::from(p.port.as_str()),
                    neighbors: p
                        .neighbors
                        .iter()
                        .map(|n| Seen {
                            chassis: (n.chassis_id.subtype, Box::from(n.chassis_id.value.as_str())),
                            port: (n.port_id.subtype, Box::from(n.port_id.value.as_str())),
                            port_description: boxed(&n.port_description),
                            system_name: boxed(&n.system_name),
                            capabilities: n
                                .capabilities
                                .as_ref()
                                .map(|c| c.enabled.clone().into_boxed_slice()),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Adds the table to `builder` as host `node`'s.
    pub fn add_to(&self, node: &str, builder: &mut FabricBuilder) {
        let chassis = self.chassis.as_ref().map(|(s, v)| (*s, &**v));
        let table = builder.begin_table(node, chassis, Some(Role::Host), &ObserverFacts::default());
        for port in &self.ports {
            let handle = builder.add_port(table, &port.name);
            for n in &port.neighbors {
                builder.add_neighbor(
                    handle,
                    &NeighborSighting {
                        chassis_id: (n.chassis.0, &n.chassis.1),
                        port_id: (n.port.0, &n.port.1),
                        port_description: n.port_description.as_deref(),
                        system_name: n.system_name.as_deref(),
                        capabilities: n.capabilities.as_deref(),
                    },
                );
            }
        }
    }

    /// Whether the table states a chassis ID of its own.
    pub fn has_chassis(&self) -> bool {
        self.chassis.is_some()
    }

    /// The ports, by name, with how many neighbours each lists.
    pub fn ports(&self) -> impl Iterator<Item = (&str, usize)> {
        self.ports.iter().map(|p| (&*p.name, p.neighbors.len()))
    }

    /// Every neighbour's chassis ID, port by port.
    pub fn chassis_seen(&self) -> impl Iterator<Item = (ChassisIdSubtype, &str)> {
        self.ports
            .iter()
            .flat_map(|p| p.neighbors.iter().map(|n| (n.chassis.0, &*n.chassis.1)))
    }

    /// Neighbours in the table.
    pub fn neighbor_count(&self) -> usize {
        self.ports.iter().map(|p| p.neighbors.len()).sum()
    }
}
