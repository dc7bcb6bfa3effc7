//! [`FabricBuilder`]: takes neighbour tables one at a time and keeps only what inference needs,
//! interned, so a fleet's tables can be streamed without holding them all.

use spinel_wire::neighbor::{Capabilities, NeighborTable, Observer, PortId};

use super::model::Fabric;
use super::options::InferOptions;
use super::raw::{NONE, RawAdvertised, RawNeighbor, RawObserver, RawPort, RawTables, caps};

/// What a switch advertises as Port ID on one of its ports (lldpd `show interfaces`). It maps
/// an alias such as SONiC's `Eth1/1` (subtype local) or a port MAC back to the interface name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvertisedPort {
    /// Local interface name (`Ethernet0`, `swp1`).
    pub port: String,
    /// The Port ID TLV it sends.
    pub port_id: PortId,
}

/// What a capture says about its observer beyond the table itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct ObserverFacts<'a> {
    /// The capabilities the observer advertises (lldpd's own chassis).
    pub capabilities: Option<&'a Capabilities>,
    /// The table's role was derived from those capabilities (lldpd: Bridge means switch,
    /// Station means host), not stated by whoever wrote the table. Such a role is capability
    /// evidence, weaker than a host list or the fabric NICs.
    pub role_from_capabilities: bool,
}

/// Collects neighbour tables for inference.
///
/// Order of calls never matters: the same set of tables gives the same [`Fabric`]. Tables that
/// describe one system twice are merged (their observations are unioned).
#[derive(Debug, Default, Clone)]
pub struct FabricBuilder {
    raw: RawTables,
}

impl FabricBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of tables added so far.
    pub fn table_count(&self) -> usize {
        self.raw.observers.len()
    }

    /// Adds one system's neighbour table.
    pub fn add_table(&mut self, table: &NeighborTable) {
        self.add_table_with(table, &ObserverFacts::default());
    }

    /// Adds one system's neighbour table with what its capture says about the observer.
    pub fn add_table_with(&mut self, table: &NeighborTable, facts: &ObserverFacts<'_>) {
        self.add_capture(table, facts, &[]);
    }

    /// Adds one system's capture: its table, what the capture says about the observer, and
    /// the Port IDs it advertises on its ports (see [`Self::add_advertised_ports`]).
    pub fn add_capture(
        &mut self,
        table: &NeighborTable,
        facts: &ObserverFacts<'_>,
        advertised: &[AdvertisedPort],
    ) {
        let observer = self.add_observer(&table.observer, facts);
        self.add_advertised(observer, advertised);
        let raw = &mut self.raw;
        for port in &table.ports {
            let port_sym = raw.strings.intern(&port.port);
            raw.ports.push(RawPort {
                observer,
                port: port_sym,
            });
            for n in &port.neighbors {
                let chassis = raw.intern_chassis(n.chassis_id.subtype as u8, &n.chassis_id.value);
                let port_value = raw.strings.intern(&n.port_id.value);
                let port_descr = raw.opt(n.port_description.as_deref());
                let sys_name = raw.opt(n.system_name.as_deref());
                let caps = caps::bits(n.capabilities.as_ref());
                raw.neighbors.push(RawNeighbor {
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
        let observer = self.add_observer(observer, &ObserverFacts::default());
        self.add_advertised(observer, ports);
    }

    fn add_advertised(&mut self, observer: u32, ports: &[AdvertisedPort]) {
        let raw = &mut self.raw;
        for p in ports {
            let port = raw.strings.intern(&p.port);
            let value = raw.strings.intern(&p.port_id.value);
            raw.ports.push(RawPort { observer, port });
            raw.advertised.push(RawAdvertised {
                observer,
                port,
                subtype: p.port_id.subtype as u8,
                value,
            });
        }
    }

    /// Runs inference over everything added.
    pub fn infer(self, options: &InferOptions) -> Fabric {
        super::infer::run(self.raw, options)
    }

    /// The interned records, for testing inference phases on their own.
    #[cfg(test)]
    pub(crate) fn into_raw(self) -> RawTables {
        self.raw
    }

    fn add_observer(&mut self, observer: &Observer, facts: &ObserverFacts<'_>) -> u32 {
        let raw = &mut self.raw;
        let name = raw.strings.intern(&observer.name);
        let chassis = match &observer.chassis_id {
            Some(c) => raw.intern_chassis(c.subtype as u8, &c.value),
            None => NONE,
        };
        raw.observers.push(RawObserver {
            name,
            chassis,
            role: observer.role,
            role_from_caps: facts.role_from_capabilities,
            caps: caps::bits(facts.capabilities),
        });
        (raw.observers.len() - 1) as u32
    }
}
