//! [`FabricBuilder`]: takes neighbour tables one at a time and keeps only what inference needs,
//! interned, so a fleet's tables can be streamed without holding them all.

use spinel_wire::neighbor::{
    Capabilities, Capability, ChassisIdSubtype, NeighborTable, Observer, PortId, PortIdSubtype,
    Role,
};

use super::infer::{StandInError, StandInNote};
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
    /// The capture has no chassis of its own, and its observer's name is a stand-in taken
    /// from where it came from (this file, or ConfigMap key): which box it is will be decided
    /// by its cabling ([`FabricBuilder::resolve_stand_ins`]).
    pub stand_in: Option<&'a str>,
}

/// One neighbour as inference reads it, borrowed from wherever it was parsed: what
/// [`FabricBuilder::add_neighbor`] takes, so readers need not build a [`NeighborTable`].
#[derive(Debug, Clone, Copy)]
pub struct NeighborSighting<'a> {
    /// Chassis ID TLV.
    pub chassis_id: (ChassisIdSubtype, &'a str),
    /// Port ID TLV.
    pub port_id: (PortIdSubtype, &'a str),
    /// Port Description TLV.
    pub port_description: Option<&'a str>,
    /// System Name TLV.
    pub system_name: Option<&'a str>,
    /// The enabled capabilities, when the System Capabilities TLV was sent.
    pub capabilities: Option<&'a [Capability]>,
}

/// A table being added piece by piece ([`FabricBuilder::begin_table`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableHandle(u32);

/// A port of a table being added ([`FabricBuilder::add_port`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortHandle {
    table: u32,
    port: u32,
}

/// Record counts of a [`FabricBuilder`] at one moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checkpoint {
    observers: usize,
    neighbors: usize,
    ports: usize,
    advertised: usize,
    chassis: usize,
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
        let o = &table.observer;
        let chassis = o.chassis_id.as_ref().map(|c| (c.subtype, c.value.as_str()));
        let handle = self.begin_table(&o.name, chassis, o.role, facts);
        self.add_advertised(handle.0, advertised);
        for port in &table.ports {
            let p = self.add_port(handle, &port.port);
            for n in &port.neighbors {
                self.add_neighbor(
                    p,
                    &NeighborSighting {
                        chassis_id: (n.chassis_id.subtype, &n.chassis_id.value),
                        port_id: (n.port_id.subtype, &n.port_id.value),
                        port_description: n.port_description.as_deref(),
                        system_name: n.system_name.as_deref(),
                        capabilities: n.capabilities.as_ref().map(|c| c.enabled.as_slice()),
                    },
                );
            }
        }
    }

    /// Starts a table piece by piece: its observer's name, chassis ID and stated role. Ports
    /// and neighbours follow with [`Self::add_port`] and [`Self::add_neighbor`].
    pub fn begin_table(
        &mut self,
        name: &str,
        chassis: Option<(ChassisIdSubtype, &str)>,
        role: Option<Role>,
        facts: &ObserverFacts<'_>,
    ) -> TableHandle {
        let raw = &mut self.raw;
        let name = raw.strings.intern(name);
        let chassis = match chassis {
            Some((subtype, value)) => raw.intern_chassis(subtype as u8, value),
            None => NONE,
        };
        let stand_in = match facts.stand_in {
            Some(source) if chassis == NONE => raw.strings.intern(source),
            _ => NONE,
        };
        raw.observers.push(RawObserver {
            name,
            chassis,
            role,
            role_from_caps: facts.role_from_capabilities,
            caps: caps::bits(facts.capabilities),
            stand_in,
        });
        TableHandle((raw.observers.len() - 1) as u32)
    }

    /// Lists a port of a table (with or without neighbours).
    pub fn add_port(&mut self, table: TableHandle, port: &str) -> PortHandle {
        let port = self.raw.strings.intern(port);
        self.raw.ports.push(RawPort {
            observer: table.0,
            port,
        });
        PortHandle {
            table: table.0,
            port,
        }
    }

    /// Adds a neighbour seen on a port.
    pub fn add_neighbor(&mut self, port: PortHandle, n: &NeighborSighting<'_>) {
        let raw = &mut self.raw;
        let chassis = raw.intern_chassis(n.chassis_id.0 as u8, n.chassis_id.1);
        let port_value = raw.strings.intern(n.port_id.1);
        let port_descr = raw.opt(n.port_description);
        let sys_name = raw.opt(n.system_name);
        raw.neighbors.push(RawNeighbor {
            observer: port.table,
            port: port.port,
            chassis,
            port_subtype: n.port_id.0 as u8,
            port_value,
            port_descr,
            sys_name,
            caps: caps::enabled_bits(n.capabilities),
        });
    }

    /// Where the builder stands, to undo what a failed reader added ([`Self::rollback`]).
    pub(crate) fn checkpoint(&self) -> Checkpoint {
        let r = &self.raw;
        Checkpoint {
            observers: r.observers.len(),
            neighbors: r.neighbors.len(),
            ports: r.ports.len(),
            advertised: r.advertised.len(),
            chassis: r.chassis.len(),
        }
    }

    /// Forgets everything added since `at` (interned strings stay: they are keys only).
    pub(crate) fn rollback(&mut self, at: Checkpoint) {
        let r = &mut self.raw;
        r.observers.truncate(at.observers);
        r.neighbors.truncate(at.neighbors);
        r.ports.truncate(at.ports);
        r.advertised.truncate(at.advertised);
        for key in r.chassis.drain(at.chassis..) {
            r.chassis_map.remove(&key);
        }
    }

    /// Takes in everything another builder collected (builders filled in parallel, one per
    /// thread, then merged: the result does not depend on how tables were split).
    pub fn merge(&mut self, other: FabricBuilder) {
        let o = other.raw;
        let raw = &mut self.raw;
        let s: Vec<u32> = o
            .strings
            .all()
            .iter()
            .map(|x| raw.strings.intern_arc(x))
            .collect();
        let opt = |x: u32| if x == NONE { NONE } else { s[x as usize] };
        let c: Vec<u32> = o
            .chassis
            .iter()
            .map(|&(st, v)| raw.chassis_of(st, s[v as usize]))
            .collect();
        let base = raw.observers.len() as u32;
        raw.observers
            .extend(o.observers.iter().map(|ob| RawObserver {
                name: s[ob.name as usize],
                chassis: if ob.chassis == NONE {
                    NONE
                } else {
                    c[ob.chassis as usize]
                },
                stand_in: opt(ob.stand_in),
                ..*ob
            }));
        raw.neighbors
            .extend(o.neighbors.iter().map(|n| RawNeighbor {
                observer: n.observer + base,
                port: s[n.port as usize],
                chassis: c[n.chassis as usize],
                port_value: s[n.port_value as usize],
                port_descr: opt(n.port_descr),
                sys_name: opt(n.sys_name),
                ..*n
            }));
        raw.ports.extend(o.ports.iter().map(|p| RawPort {
            observer: p.observer + base,
            port: s[p.port as usize],
        }));
        raw.advertised
            .extend(o.advertised.iter().map(|a| RawAdvertised {
                observer: a.observer + base,
                port: s[a.port as usize],
                value: s[a.value as usize],
                ..*a
            }));
    }

    /// Adds the Port IDs a switch advertises on its ports, so that neighbours' views of it (an
    /// alias, a MAC) resolve to its interface names.
    pub fn add_advertised_ports(&mut self, observer: &Observer, ports: &[AdvertisedPort]) {
        let chassis = observer
            .chassis_id
            .as_ref()
            .map(|c| (c.subtype, c.value.as_str()));
        let handle = self.begin_table(
            &observer.name,
            chassis,
            observer.role,
            &ObserverFacts::default(),
        );
        self.add_advertised(handle.0, ports);
    }

    /// Adds the Port IDs the switch of table `table` advertises.
    pub(crate) fn add_advertised_to(&mut self, table: TableHandle, ports: &[AdvertisedPort]) {
        self.add_advertised(table.0, ports);
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

    /// Decides which box each capture of neighbours only is (those added with
    /// [`ObserverFacts::stand_in`]), by its cabling: when it lists neighbour H on its port P and
    /// H's own table lists Y on the port the capture saw, with P as Y's port there, the capture
    /// is Y's. Then the stand-in names that cabling cannot place are matched by name, as
    /// before. Returns what was decided, one note per capture, or, when a capture cannot be
    /// told (two candidates, or none while it is cabled to described boxes) or two captures
    /// turn out to be one box, why; nothing is changed then.
    pub fn resolve_stand_ins(&mut self) -> Result<Vec<StandInNote>, StandInError> {
        super::infer::resolve_stand_ins(&mut self.raw)
    }

    /// Runs inference over everything added.
    pub fn infer(self, options: &InferOptions) -> Fabric {
        super::infer::run(self.raw, options)
    }

    /// The interned records (inference phases run on their own, tests).
    pub(crate) fn into_raw(self) -> RawTables {
        self.raw
    }
}
