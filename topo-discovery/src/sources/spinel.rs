//! The fast path for Spinel tables: documents deserialised straight into the builder, borrowing
//! from the file's bytes and reading only what inference uses. A fleet's tables are mostly this
//! format, and reading them through owned tables (or `serde_json::Value`) dominated the
//! end-to-end time. Fields inference does not read are skipped after a shape check only;
//! [`super::parse`] validates every field when a table is needed whole, and handles whatever
//! this path declines (other formats, invalid tables, fields in an unusual order).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use spinel_wire::neighbor::{Capability, ChassisIdSubtype, PortIdSubtype, Role, SCHEMA};

use crate::fabric::{FabricBuilder, NeighborSighting, ObserverFacts, PortHandle, TableHandle};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Observer<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    chassis_id: Option<Id<'a, ChassisIdSubtype>>,
    #[serde(default)]
    role: Option<Role>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Id<'a, S> {
    subtype: S,
    #[serde(borrow)]
    value: Cow<'a, str>,
}

// Fields inference does not read are kept to check the document's shape.
#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Neighbor<'a> {
    #[serde(borrow)]
    chassis_id: Id<'a, ChassisIdSubtype>,
    #[serde(borrow)]
    port_id: Id<'a, PortIdSubtype>,
    ttl: u16,
    #[serde(default)]
    age_seconds: Option<IgnoredAny>,
    #[serde(default, borrow)]
    port_description: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    system_name: Option<Cow<'a, str>>,
    #[serde(default)]
    system_description: Option<IgnoredAny>,
    #[serde(default)]
    capabilities: Option<Capabilities>,
    #[serde(default)]
    management_addresses: Option<IgnoredAny>,
    #[serde(default)]
    port_vlan_id: Option<IgnoredAny>,
    #[serde(default)]
    vlan_names: Option<IgnoredAny>,
    #[serde(default)]
    link_aggregation: Option<IgnoredAny>,
    #[serde(default)]
    mac_phy: Option<IgnoredAny>,
    #[serde(default)]
    max_frame_size: Option<IgnoredAny>,
    #[serde(default)]
    dcbx: Option<IgnoredAny>,
    #[serde(default)]
    unknown_tlvs: Option<IgnoredAny>,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Capabilities {
    supported: CapabilityList,
    enabled: CapabilityList,
}

/// A capability list kept on the stack (there are 11 capabilities): no allocation per
/// neighbour.
#[derive(Default)]
struct CapabilityList {
    list: [Option<Capability>; 11],
    len: usize,
}

impl CapabilityList {
    fn to_array(&self) -> ([Capability; 11], usize) {
        let mut out = [Capability::Other; 11];
        for (o, c) in out.iter_mut().zip(self.list.iter().flatten()) {
            *o = *c;
        }
        (out, self.len)
    }
}

impl<'de> Deserialize<'de> for CapabilityList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CapabilityList;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of capabilities")
            }

            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                let mut out = CapabilityList::default();
                while let Some(c) = seq.next_element::<Capability>()? {
                    if out.len == out.list.len() {
                        return Err(S::Error::custom("more capabilities than exist"));
                    }
                    out.list[out.len] = Some(c);
                    out.len += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

/// One document (a table, or an array of tables), added as it is read.
struct Document<'b> {
    builder: &'b mut FabricBuilder,
    tables: &'b mut usize,
}

impl<'de> DeserializeSeed<'de> for Document<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Document<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a neighbour table or an array of them")
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<(), M::Error> {
        *self.tables += 1;
        TableSeed(self.builder).visit_map(map)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while seq
            .next_element_seed(TableSeedWrap(&mut *self.builder))?
            .is_some()
        {
            *self.tables += 1;
        }
        Ok(())
    }
}

struct TableSeedWrap<'b>(&'b mut FabricBuilder);

impl<'de> DeserializeSeed<'de> for TableSeedWrap<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(TableSeed(self.0))
    }
}

/// A table: `schema`, then `observer`, then `ports` (the order Spinel writes them).
struct TableSeed<'b>(&'b mut FabricBuilder);

impl<'de> Visitor<'de> for TableSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a neighbour table")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let mut schema = false;
        let mut table: Option<TableHandle> = None;
        let mut ports = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "schema" => {
                    let s: Cow<'de, str> = map.next_value()?;
                    if s != SCHEMA {
                        return Err(M::Error::custom("another schema version"));
                    }
                    schema = true;
                }
                "observer" if table.is_none() => {
                    let o: Observer<'de> = map.next_value()?;
                    let chassis = o.chassis_id.as_ref().map(|c| (c.subtype, c.value.as_ref()));
                    let facts = ObserverFacts::default();
                    table = Some(self.0.begin_table(&o.name, chassis, o.role, &facts));
                }
                "ports" => {
                    let Some(t) = table else {
                        return Err(M::Error::custom("ports before observer"));
                    };
                    map.next_value_seed(Ports(&mut *self.0, t))?;
                    ports = true;
                }
                _ => return Err(M::Error::custom("not a field of a neighbour table")),
            }
        }
        if schema && table.is_some() && ports {
            Ok(())
        } else {
            Err(M::Error::custom("incomplete neighbour table"))
        }
    }
}

struct Ports<'b>(&'b mut FabricBuilder, TableHandle);

impl<'de> DeserializeSeed<'de> for Ports<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Ports<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of ports")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while seq
            .next_element_seed(PortSeed(&mut *self.0, self.1))?
            .is_some()
        {}
        Ok(())
    }
}

/// A port: `port`, then `neighbors` (and `counters`, skipped).
struct PortSeed<'b>(&'b mut FabricBuilder, TableHandle);

impl<'de> DeserializeSeed<'de> for PortSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PortSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a port and its neighbours")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let mut port: Option<PortHandle> = None;
        let mut neighbors = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "port" if port.is_none() => {
                    let name: Cow<'de, str> = map.next_value()?;
                    port = Some(self.0.add_port(self.1, &name));
                }
                "neighbors" => {
                    let Some(p) = port else {
                        return Err(M::Error::custom("neighbors before port"));
                    };
                    map.next_value_seed(Neighbors(&mut *self.0, p))?;
                    neighbors = true;
                }
                "counters" => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => return Err(M::Error::custom("not a field of a port")),
            }
        }
        if neighbors {
            Ok(())
        } else {
            Err(M::Error::custom("incomplete port"))
        }
    }
}

struct Neighbors<'b>(&'b mut FabricBuilder, PortHandle);

impl<'de> DeserializeSeed<'de> for Neighbors<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Neighbors<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of neighbours")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while let Some(n) = seq.next_element::<Neighbor<'de>>()? {
            let caps = n.capabilities.as_ref().map(|c| c.enabled.to_array());
            self.0.add_neighbor(
                self.1,
                &NeighborSighting {
                    chassis_id: (n.chassis_id.subtype, &n.chassis_id.value),
                    port_id: (n.port_id.subtype, &n.port_id.value),
                    port_description: n.port_description.as_deref(),
                    system_name: n.system_name.as_deref(),
                    capabilities: caps.as_ref().map(|(list, len)| &list[..*len]),
                },
            );
        }
        Ok(())
    }
}

/// Adds every table of `bytes` when all of it is Spinel tables of the current schema, in the
/// order Spinel writes their fields; `None` (nothing added) otherwise, for the full reader to
/// handle or explain.
pub(super) fn ingest(bytes: &[u8], builder: &mut FabricBuilder) -> Option<usize> {
    let at = builder.checkpoint();
    let mut tables = 0usize;
    // Most files hold one document: read it, and check nothing follows.
    if document(bytes, builder, &mut tables) {
        return (tables > 0).then_some(tables);
    }
    builder.rollback(at);
    // Several documents one after another: find where each ends, then read each.
    let mut ranges = Vec::new();
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<IgnoredAny>();
    let mut start = 0;
    while let Some(doc) = stream.next() {
        if doc.is_err() {
            return None;
        }
        ranges.push(start..stream.byte_offset());
        start = stream.byte_offset();
    }
    tables = 0;
    for r in ranges {
        if !document(&bytes[r], builder, &mut tables) {
            builder.rollback(at);
            return None;
        }
    }
    if tables == 0 {
        builder.rollback(at);
        return None;
    }
    Some(tables)
}

/// Reads exactly one document from `bytes` into `builder`; false when it is not one table (or
/// array of tables) of the current schema, or more follows.
fn document(bytes: &[u8], builder: &mut FabricBuilder, tables: &mut usize) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let read = de.deserialize_any(Document { builder, tables });
    read.is_ok() && de.end().is_ok()
}
