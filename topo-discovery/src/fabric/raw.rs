//! The compact records a [`super::FabricBuilder`] keeps per table: interned strings and integer
//! records, so a fleet's tables can be streamed without holding them. Inference reads these.
//!
//! Interned ids depend on the order tables were added, so they are keys only, never an order.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use spinel_wire::neighbor::Role;

/// Sentinel for "no string" (or "no index") in the compact records.
pub(crate) const NONE: u32 = u32::MAX;

/// Capability bits kept per sighting.
pub(crate) mod caps {
    use spinel_wire::neighbor::{Capabilities, Capability};

    /// The System Capabilities TLV was present.
    pub const PRESENT: u8 = 1;
    /// Bridge enabled.
    pub const BRIDGE: u8 = 2;
    /// Router enabled.
    pub const ROUTER: u8 = 4;

    /// The bits of a System Capabilities TLV (0 when absent).
    pub fn bits(c: Option<&Capabilities>) -> u8 {
        enabled_bits(c.map(|c| c.enabled.as_slice()))
    }

    /// The bits of a System Capabilities TLV's enabled list (0 when the TLV is absent).
    pub fn enabled_bits(enabled: Option<&[Capability]>) -> u8 {
        enabled.map_or(0, |enabled| {
            let mut bits = PRESENT;
            if enabled.contains(&Capability::Bridge) {
                bits |= BRIDGE;
            }
            if enabled.contains(&Capability::Router) {
                bits |= ROUTER;
            }
            bits
        })
    }
}

/// Packs two 32-bit ids into one sortable key.
pub(crate) fn key(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// The first id of a [`key`].
pub(crate) fn hi(k: u64) -> u32 {
    (k >> 32) as u32
}

/// The second id of a [`key`].
pub(crate) fn lo(k: u64) -> u32 {
    k as u32
}

/// Strings interned once; ids are only keys, never an order (they depend on input order).
#[derive(Debug, Default, Clone)]
pub(crate) struct Interner {
    map: FxHashMap<Arc<str>, u32>,
    strings: Vec<Arc<str>>,
}

impl Interner {
    /// The id of `s`, interning it on first sight.
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

    /// The id of a string interned earlier (tests only).
    #[cfg(test)]
    pub(crate) fn id_of(&self, s: &str) -> u32 {
        self.map[s]
    }

    /// The id of a string already shared elsewhere (no copy when it is new).
    pub(crate) fn intern_arc(&mut self, s: &Arc<str>) -> u32 {
        if let Some(&id) = self.map.get(&**s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.clone());
        self.map.insert(s.clone(), id);
        id
    }

    /// Every interned string, by id.
    pub(crate) fn all(&self) -> &[Arc<str>] {
        &self.strings
    }

    /// The string behind an id.
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
    /// The role was derived from the capabilities the system advertises (lldpd), not stated
    /// by the table's writer: capability evidence, not an explicit role.
    pub role_from_caps: bool,
    /// The capabilities the observer itself advertises, when the capture says ([`caps`] bits).
    pub caps: u8,
    /// For a capture of neighbours only whose name stands in for the box (a file name):
    /// where it came from (interned), to name in messages; [`NONE`] otherwise.
    pub stand_in: u32,
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

/// Everything collected from the tables, as interned records.
#[derive(Debug, Default, Clone)]
pub(crate) struct RawTables {
    pub strings: Interner,
    /// Chassis IDs as (subtype, value string id) -> chassis id.
    pub chassis_map: FxHashMap<(u8, u32), u32>,
    pub chassis: Vec<(u8, u32)>,
    pub observers: Vec<RawObserver>,
    pub neighbors: Vec<RawNeighbor>,
    pub ports: Vec<RawPort>,
    pub advertised: Vec<RawAdvertised>,
}

impl RawTables {
    /// The chassis id of (subtype, value), interning both.
    pub(crate) fn intern_chassis(&mut self, subtype: u8, value: &str) -> u32 {
        let value = self.strings.intern(value);
        self.chassis_of(subtype, value)
    }

    /// The chassis id of (subtype, interned value).
    pub(crate) fn chassis_of(&mut self, subtype: u8, value: u32) -> u32 {
        let key = (subtype, value);
        if let Some(&id) = self.chassis_map.get(&key) {
            return id;
        }
        let id = self.chassis.len() as u32;
        self.chassis.push(key);
        self.chassis_map.insert(key, id);
        id
    }

    /// An optional string's id, or [`NONE`].
    pub(crate) fn opt(&mut self, s: Option<&str>) -> u32 {
        s.map_or(NONE, |s| self.strings.intern(s))
    }
}
