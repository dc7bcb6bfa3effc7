//! A switch's ports: `port: system/interface` (short) or `port: {peer: system/interface,
//! speed_gbps: 200, address: 10.254.0.0/31}` (long), in the order written.

use std::fmt;

use ipnet::Ipv4Net;
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a port is cabled to: a host's NIC or another switch's port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Peer {
    /// Host or switch name.
    pub system: String,
    /// NIC (host) or port (switch) name.
    pub interface: String,
}

/// A peer that is not `system/interface`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("peer {0} is not HOST/NIC or SWITCH/PORT (for example node001/ens1f0np0)")]
pub struct PeerError(String);

impl Peer {
    /// Parses `system/interface`; the system name never contains `/`, interface names may
    /// (`spine01/Ethernet1/1`).
    pub fn parse(text: &str) -> Result<Self, PeerError> {
        match text.split_once('/') {
            Some((system, interface)) if !system.is_empty() && !interface.is_empty() => Ok(Self {
                system: system.to_owned(),
                interface: interface.to_owned(),
            }),
            _ => Err(PeerError(super::cut(text))),
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.system, self.interface)
    }
}

/// One port of a switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// Port name as the switch's OS spells it (`Ethernet0`, `swp1`, `Ethernet1/1`).
    pub name: String,
    /// What is cabled to it.
    pub peer: Peer,
    /// Speed override, Gb/s.
    pub speed_gbps: Option<u32>,
    /// Routed address on this port (switch-to-switch links), for example a /31.
    pub address: Option<Ipv4Net>,
}

/// A switch's ports, in the order written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ports(pub Vec<Port>);

impl Ports {
    /// Iterates over the ports.
    pub fn iter(&self) -> std::slice::Iter<'_, Port> {
        self.0.iter()
    }

    /// Number of ports.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LongForm {
    peer: String,
    #[serde(default)]
    speed_gbps: Option<u32>,
    #[serde(default)]
    address: Option<Ipv4Net>,
}

/// The value side of one port entry.
struct PortValue {
    peer: Peer,
    speed_gbps: Option<u32>,
    address: Option<Ipv4Net>,
}

impl<'de> Deserialize<'de> for PortValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PortValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("HOST/NIC, SWITCH/PORT, or {peer: ..., speed_gbps: ..., address: ...}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PortValue, E> {
                Ok(PortValue {
                    peer: Peer::parse(v).map_err(E::custom)?,
                    speed_gbps: None,
                    address: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PortValue, A::Error> {
                let long = LongForm::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(PortValue {
                    peer: Peer::parse(&long.peer).map_err(de::Error::custom)?,
                    speed_gbps: long.speed_gbps,
                    address: long.address,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Ports {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ports;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of port name to HOST/NIC or SWITCH/PORT")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ports, A::Error> {
                let mut ports = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
                while let Some((name, value)) = map.next_entry::<String, PortValue>()? {
                    ports.push(Port {
                        name,
                        peer: value.peer,
                        speed_gbps: value.speed_gbps,
                        address: value.address,
                    });
                }
                Ok(Ports(ports))
            }
        }
        d.deserialize_map(V)
    }
}

impl Serialize for Ports {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for p in &self.0 {
            if p.speed_gbps.is_none() && p.address.is_none() {
                map.serialize_entry(&p.name, &p.peer.to_string())?;
            } else {
                map.serialize_entry(&p.name, &LongOut::from(p))?;
            }
        }
        map.end()
    }
}

#[derive(Serialize)]
struct LongOut {
    peer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    speed_gbps: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    address: Option<Ipv4Net>,
}

impl From<&Port> for LongOut {
    fn from(p: &Port) -> Self {
        Self {
            peer: p.peer.to_string(),
            speed_gbps: p.speed_gbps,
            address: p.address,
        }
    }
}
