//! [`FabricBuilder`]: takes neighbour tables one at a time and keeps only what inference needs,
//! interned, so a fleet's tables can be streamed without holding them all.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use spinel_wire::neighbor::{Capability, ChassisIdSubtype, NeighborTable, Observer, PortId, Role};

use super::Fabric;
use super::InferOptions;

/// What a switch advertises as Port ID on one of its ports (lldpd `show interfaces`). It maps
/// an alias such as SONiC's `Eth1/1` (subtype local) or a port MAC back to the interface name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvertisedPort {
    /// Local interface name (`Ethernet0`, `swp1`).
    pub port: String,
    /// The Port ID TLV it sends.
    pub port_id: PortId,
}

/// Sentinel for "no string" in the compact records.
pub(crate) const NONE: u32 = u32::MAX;

/// Capability bits kept per sighting.
pub(crate) mod caps {
    /// The System Capabilities TLV was present.
    pub const PRESENT: u8 = 1;
    /// Bridge enabled.
    pub const BRIDGE: u8 = 2;
    /// Router enabled.
    pub const ROUTER: u8 = 4;
}

/// Strings interned once; ids are only keys, never an order (they depend on input order).
#[derive(Debug, Default, Clone)]
pub(crate) struct Interner {
    map: FxHashMap<Arc<str>, u32>,
    strings: Vec<Arc<str>>,
}

impl Interner {
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.map.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        let arc: Arc<str> = Arc::from(s);
        self.strings.push(arc.clone());
        self.map.insert(arc, id);
        id
    }

    pub(crate) fn get(&self, id: u32) -> &Arc<str> {
        &self.strings[id as usize]
    }
}

/// One table's observer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawObserver {
    pub name: u32,
    pub chassis: u32,
    pub role: Option<Role>,
}

/// One neighbour seen on one port of one observer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RawNeighbor {
    pub observer: u32,
    pub port: u32,
    pub chassis: u32,
    pub port_subtype: u8,
    pub port_value: u32,
    pub port_descr: u32,
    pub sys_name: u32,
    pub caps: u8,
}

/// A port an observer listed (with or without neighbours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RawPort {
    pub observer: u32,
    pub port: u32,
}

/// A switch port and the Port ID it advertises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RawAdvertised {
    pub observer: u32,
    pub port: u32,
    pub subtype: u8,
    pub value: u32,
}

/// Collects neighbour tables for inference.
///
/// Order of calls never matters: the same set of tables gives the same [`Fabric`]. Tables that
/// describe one system twice are merged (their observations are unioned).
#[derive(Debug, Default, Clone)]
pub struct FabricBuilder {
    pub(crate) strings: Interner,
    /// Chassis IDs as (subtype, value string id) -> chassis id.
    pub(crate) chassis_map: FxHashMap<(u8, u32), u32>,
    pub(crate) chassis: Vec<(u8, u32)>,
    pub(crate) observers: Vec<RawObserver>,
    pub(crate) neighbors: Vec<RawNeighbor>,
    pub(crate) ports: Vec<RawPort>,
    pub(crate) advertised: Vec<RawAdvertised>,
}

impl FabricBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of tables added so far.
    pub fn table_count(&self) -> usize {
        self.observers.len()
    }

    /// Adds one system's neighbour table.
    pub fn add_table(&mut self, table: &NeighborTable) {
        let observer = self.add_observer(&table.observer);
        for port in &table.ports {
            let port_sym = self.strings.intern(&port.port);
            self.ports.push(RawPort {
                observer,
                port: port_sym,
            });
            for n in &port.neighbors {
                let chassis = self.intern_chassis(n.chassis_id.subtype, &n.chassis_id.value);
                let port_value = self.strings.intern(&n.port_id.value);
                let port_descr = self.opt(n.port_description.as_deref());
                let sys_name = self.opt(n.system_name.as_deref());
                let caps = n.capabilities.as_ref().map_or(0, |c| {
                    let mut bits = caps::PRESENT;
                    if c.enabled.contains(&Capability::Bridge) {
                        bits |= caps::BRIDGE;
                    }
                    if c.enabled.contains(&Capability::Router) {
                        bits |= caps::ROUTER;
                    }
                    bits
                });
                self.neighbors.push(RawNeighbor {
                    observer,
                    port: port_sym,
                    chassis,
                    port_subtype: n.port_id.subtype as u8,
                    port_value,
                    port_descr,
                    sys_name,
                    caps,
                });
            }
        }
    }

    /// Adds the Port IDs a switch advertises on its ports, so that neighbours' views of it (an
    /// alias, a MAC) resolve to its interface names.
    pub fn add_advertised_ports(&mut self, observer: &Observer, ports: &[AdvertisedPort]) {
        let observer = self.add_observer(observer);
        for p in ports {
            let port = self.strings.intern(&p.port);
            let value = self.strings.intern(&p.port_id.value);
            self.ports.push(RawPort { observer, port });
            self.advertised.push(RawAdvertised {
                observer,
                port,
                subtype: p.port_id.subtype as u8,
                value,
            });
        }
    }

    /// Runs inference over everything added.
    pub fn infer(self, options: &InferOptions) -> Fabric {
        super::infer::run(self, options)
    }

    fn add_observer(&mut self, observer: &Observer) -> u32 {
        let name = self.strings.intern(&observer.name);
        let chassis = match &observer.chassis_id {
            Some(c) => self.intern_chassis(c.subtype, &c.value),
            None => NONE,
        };
        self.observers.push(RawObserver {
            name,
            chassis,
            role: observer.role,
        });
        (self.observers.len() - 1) as u32
    }

    fn intern_chassis(&mut self, subtype: ChassisIdSubtype, value: &str) -> u32 {
        let value = self.strings.intern(value);
        let key = (subtype as u8, value);
        if let Some(&id) = self.chassis_map.get(&key) {
            return id;
        }
        let id = self.chassis.len() as u32;
        self.chassis.push(key);
        self.chassis_map.insert(key, id);
        id
    }

    fn opt(&mut self, s: Option<&str>) -> u32 {
        s.map_or(NONE, |s| self.strings.intern(s))
    }
}
