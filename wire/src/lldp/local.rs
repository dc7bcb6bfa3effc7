//! What a local system advertises: a description (JSON) with the same field names and text
//! forms as [`crate::neighbor::Neighbor`], turned into an LLDPDU.
//!
//! Anything a listener printed can be fed back, so `spinelctl lldp send` can emulate a switch
//! (any chassis/port ID subtype, capabilities, management addresses, MFS, DCBX ETS/PFC/APP,
//! raw organisational TLVs).

use std::borrow::Cow;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::basic::{self, ManagementAddress, SystemCapabilities};
use super::convert::{self, family};
use super::dcbx::{self, AppEntry, AppPriorityTable, EtsTables};
use super::error::EncodeError;
use super::lldpdu::{Lldpdu, Tlv};
use super::org::{self, OrgTlv, Oui};
use crate::mac::MacAddr;
use crate::neighbor::{
    self, Capabilities, ChassisId, ChassisIdSubtype, Dcbx, Neighbor, PortId, PortIdSubtype,
    UnknownTlv,
};

/// A local system's advertisement for one port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalSystem {
    /// Chassis ID. MAC subtype: `aa:bb:cc:dd:ee:ff`; network address: an IP; others: text,
    /// or `0x` + hex for arbitrary octets.
    pub chassis_id: ChassisId,
    /// Port ID, written like the chassis ID.
    pub port_id: PortId,
    /// Port Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_description: Option<String>,
    /// System Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_name: Option<String>,
    /// System Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_description: Option<String>,
    /// System Capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
    /// Management Addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub management_addresses: Vec<neighbor::ManagementAddress>,
    /// 802.1 Port VLAN ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_vlan_id: Option<u16>,
    /// 802.1 VLAN Names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vlan_names: Vec<neighbor::VlanName>,
    /// 802.1 Link Aggregation (sent as the 802.1 subtype 7 TLV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_aggregation: Option<neighbor::LinkAggregation>,
    /// 802.3 MAC/PHY Configuration/Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_phy: Option<neighbor::MacPhy>,
    /// 802.3 Maximum Frame Size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_frame_size: Option<u16>,
    /// 802.1Qaz DCBX TLVs.
    #[serde(default, skip_serializing_if = "Dcbx::is_empty")]
    pub dcbx: Dcbx,
    /// Extra TLVs sent as given (organisational ones with `oui` and `subtype`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_tlvs: Vec<UnknownTlv>,
}

/// Why a description cannot be advertised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalSystemError {
    /// A text field cannot be read as the octets its subtype or family needs.
    #[error("{field} {value:?}: {reason}")]
    Value {
        /// Which field.
        field: &'static str,
        /// The text given.
        value: String,
        /// What was expected.
        reason: &'static str,
    },
    /// The values do not fit their TLVs.
    #[error("cannot encode the advertisement")]
    Encode(#[from] EncodeError),
}

fn bad(field: &'static str, value: &str, reason: &'static str) -> LocalSystemError {
    LocalSystemError::Value {
        field,
        value: value.to_owned(),
        reason,
    }
}

/// `0x` + hex octets, as rendered for IDs that are not text.
fn parse_hex_id(value: &str) -> Option<Vec<u8>> {
    value
        .strip_prefix("0x")
        .filter(|rest| !rest.is_empty())
        .and_then(convert::unhex)
}

fn parse_text_id(value: &str) -> Vec<u8> {
    parse_hex_id(value).unwrap_or_else(|| value.as_bytes().to_vec())
}

fn parse_mac_id(field: &'static str, value: &str) -> Result<Vec<u8>, LocalSystemError> {
    if let Ok(mac) = value.parse::<MacAddr>() {
        return Ok(mac.0.to_vec());
    }
    parse_hex_id(value).ok_or_else(|| bad(field, value, "expected a MAC address or 0x + hex"))
}

fn parse_network_id(field: &'static str, value: &str) -> Result<Vec<u8>, LocalSystemError> {
    match value.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => Ok([&[family::IPV4][..], &a.octets()].concat()),
        Ok(IpAddr::V6(a)) => Ok([&[family::IPV6][..], &a.octets()].concat()),
        Err(_) => parse_hex_id(value)
            .ok_or_else(|| bad(field, value, "expected an IP address or 0x + hex")),
    }
}

/// The octets of a chassis ID given as text.
pub fn chassis_id_octets(id: &ChassisId) -> Result<Vec<u8>, LocalSystemError> {
    match id.subtype {
        ChassisIdSubtype::MacAddress => parse_mac_id("chassis_id", &id.value),
        ChassisIdSubtype::NetworkAddress => parse_network_id("chassis_id", &id.value),
        _ => Ok(parse_text_id(&id.value)),
    }
}

/// The octets of a port ID given as text.
pub fn port_id_octets(id: &PortId) -> Result<Vec<u8>, LocalSystemError> {
    match id.subtype {
        PortIdSubtype::MacAddress => parse_mac_id("port_id", &id.value),
        PortIdSubtype::NetworkAddress => parse_network_id("port_id", &id.value),
        _ => Ok(parse_text_id(&id.value)),
    }
}

fn management_address(
    m: &neighbor::ManagementAddress,
) -> Result<ManagementAddress<'static>, LocalSystemError> {
    let field = "management address";
    let address = match m.family {
        family::IPV4 => m
            .address
            .parse::<std::net::Ipv4Addr>()
            .map(|a| a.octets().to_vec())
            .map_err(|_| bad(field, &m.address, "family 1 needs an IPv4 address")),
        family::IPV6 => m
            .address
            .parse::<std::net::Ipv6Addr>()
            .map(|a| a.octets().to_vec())
            .map_err(|_| bad(field, &m.address, "family 2 needs an IPv6 address")),
        family::MAC => m
            .address
            .parse::<MacAddr>()
            .map(|a| a.0.to_vec())
            .map_err(|_| bad(field, &m.address, "family 6 needs a MAC address")),
        _ => convert::unhex(&m.address)
            .ok_or_else(|| bad(field, &m.address, "other families need hex octets")),
    }
    // Renderings fall back to hex when an address has an odd length for its family.
    .or_else(|e| convert::unhex(&m.address).ok_or(e))?;
    let oid = match &m.oid {
        Some(o) => convert::unhex(o).ok_or_else(|| bad("OID", o, "expected hex octets"))?,
        None => Vec::new(),
    };
    Ok(ManagementAddress {
        family: m.family,
        address: Cow::Owned(address),
        interface_numbering: m.interface_numbering,
        interface_number: m.interface_number,
        oid: Cow::Owned(oid),
    })
}

impl LocalSystem {
    /// A minimal advertisement: chassis ID = MAC, port ID = interface name.
    pub fn new(chassis_mac: MacAddr, ifname: &str) -> Self {
        Self {
            chassis_id: ChassisId {
                subtype: ChassisIdSubtype::MacAddress,
                value: chassis_mac.to_string(),
            },
            port_id: PortId {
                subtype: PortIdSubtype::InterfaceName,
                value: ifname.to_owned(),
            },
            port_description: None,
            system_name: None,
            system_description: None,
            capabilities: None,
            management_addresses: Vec::new(),
            port_vlan_id: None,
            vlan_names: Vec::new(),
            link_aggregation: None,
            mac_phy: None,
            max_frame_size: None,
            dcbx: Dcbx::default(),
            unknown_tlvs: Vec::new(),
        }
    }

    /// The LLDPDU advertising this system with `ttl`. TLVs follow the order lldpd uses for the
    /// basic ones, then 802.1, 802.3 and DCBX, then the extra TLVs.
    pub fn lldpdu(&self, ttl: u16) -> Result<Lldpdu<'static>, LocalSystemError> {
        let mut pdu = Lldpdu::new(
            basic::ChassisId {
                subtype: self.chassis_id.subtype,
                id: Cow::Owned(chassis_id_octets(&self.chassis_id)?),
            },
            basic::PortId {
                subtype: self.port_id.subtype,
                id: Cow::Owned(port_id_octets(&self.port_id)?),
            },
            ttl,
        );
        let t = &mut pdu.tlvs;
        let owned = |s: &str| Cow::Owned(s.as_bytes().to_vec());
        if let Some(s) = &self.port_description {
            t.push(Tlv::PortDescription(owned(s)));
        }
        if let Some(s) = &self.system_name {
            t.push(Tlv::SystemName(owned(s)));
        }
        if let Some(s) = &self.system_description {
            t.push(Tlv::SystemDescription(owned(s)));
        }
        if let Some(c) = &self.capabilities {
            t.push(Tlv::SystemCapabilities(SystemCapabilities {
                supported: convert::capabilities_to_bits(&c.supported),
                enabled: convert::capabilities_to_bits(&c.enabled),
            }));
        }
        for m in &self.management_addresses {
            t.push(Tlv::ManagementAddress(management_address(m)?));
        }
        if let Some(v) = self.port_vlan_id {
            t.push(Tlv::PortVlanId(v));
        }
        for v in &self.vlan_names {
            t.push(Tlv::VlanName(org::VlanName {
                vid: v.vid,
                name: owned(&v.name),
            }));
        }
        if let Some(l) = &self.link_aggregation {
            t.push(Tlv::LinkAggregation(org::LinkAggregation {
                capable: l.capable,
                enabled: l.enabled,
                port_type: 0,
                port_id: l.port_id,
            }));
        }
        if let Some(m) = &self.mac_phy {
            t.push(Tlv::MacPhy(org::MacPhy {
                autoneg_supported: m.autoneg_supported,
                autoneg_enabled: m.autoneg_enabled,
                advertised: m.advertised,
                mau_type: m.mau_type,
            }));
        }
        if let Some(m) = self.max_frame_size {
            t.push(Tlv::MaxFrameSize(m));
        }
        push_dcbx(t, &self.dcbx)?;
        for u in &self.unknown_tlvs {
            t.push(extra_tlv(u)?);
        }
        // Catch range and length problems here, with the field named, rather than at send.
        pdu.to_vec()?;
        Ok(pdu)
    }
}

fn push_dcbx(t: &mut Vec<Tlv<'static>>, d: &Dcbx) -> Result<(), LocalSystemError> {
    if let Some(e) = &d.ets_configuration {
        t.push(Tlv::EtsConfiguration(dcbx::EtsConfiguration {
            willing: e.willing,
            cbs: e.cbs,
            max_tcs: e.max_tcs,
            tables: EtsTables {
                priority_tc: e.priority_tc,
                tc_bandwidth: e.tc_bandwidth,
                tsa: e.tsa.map(convert::tsa_code),
            },
        }));
    }
    if let Some(e) = &d.ets_recommendation {
        t.push(Tlv::EtsRecommendation(dcbx::EtsRecommendation {
            tables: EtsTables {
                priority_tc: e.priority_tc,
                tc_bandwidth: e.tc_bandwidth,
                tsa: e.tsa.map(convert::tsa_code),
            },
        }));
    }
    if let Some(p) = &d.pfc {
        let mut enabled = 0u8;
        for &prio in &p.enabled_priorities {
            if prio > 7 {
                return Err(bad(
                    "PFC enabled priority",
                    &prio.to_string(),
                    "priorities are 0 to 7",
                ));
            }
            enabled |= 1 << prio;
        }
        t.push(Tlv::Pfc(dcbx::PfcConfiguration {
            willing: p.willing,
            mbc: p.mbc,
            capability: p.capability,
            enabled,
        }));
    }
    if let Some(app) = &d.application_priority {
        let entries: Vec<AppEntry> = app
            .iter()
            .map(|a| AppEntry {
                priority: a.priority,
                selector: convert::selector_code(a.selector),
                protocol: a.protocol,
            })
            .collect();
        t.push(Tlv::ApplicationPriority(AppPriorityTable::from_entries(
            &entries,
        )?));
    }
    Ok(())
}

fn extra_tlv(u: &UnknownTlv) -> Result<Tlv<'static>, LocalSystemError> {
    let data = convert::unhex(&u.data)
        .ok_or_else(|| bad("unknown TLV data", &u.data, "expected hex octets"))?;
    match (u.tlv_type, &u.oui, u.subtype) {
        (127, Some(oui), Some(subtype)) => {
            let octets = convert::unhex(&oui.replace([':', '-'], ""))
                .and_then(|o| <[u8; 3]>::try_from(o).ok())
                .ok_or_else(|| bad("OUI", oui, "expected three octets like 00:80:c2"))?;
            Ok(Tlv::Org(OrgTlv {
                oui: Oui(octets),
                subtype,
                info: Cow::Owned(data),
            }))
        }
        (127, _, _) => Err(bad(
            "unknown TLV",
            "127",
            "organisational TLVs need an oui and a subtype",
        )),
        (tlv_type @ 9..=126, None, None) => Ok(Tlv::Reserved {
            tlv_type,
            value: Cow::Owned(data),
        }),
        (other, _, _) => Err(bad(
            "unknown TLV type",
            &other.to_string(),
            "extra TLVs are reserved types 9 to 126 or 127 with an oui and subtype",
        )),
    }
}

impl From<&Neighbor> for LocalSystem {
    /// Advertise what a neighbour advertised (TTL and age are the sender's business).
    fn from(n: &Neighbor) -> Self {
        Self {
            chassis_id: n.chassis_id.clone(),
            port_id: n.port_id.clone(),
            port_description: n.port_description.clone(),
            system_name: n.system_name.clone(),
            system_description: n.system_description.clone(),
            capabilities: n.capabilities.clone(),
            management_addresses: n.management_addresses.clone(),
            port_vlan_id: n.port_vlan_id,
            vlan_names: n.vlan_names.clone(),
            link_aggregation: n.link_aggregation,
            mac_phy: n.mac_phy,
            max_frame_size: n.max_frame_size,
            dcbx: n.dcbx.clone(),
            unknown_tlvs: n.unknown_tlvs.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neighbor::{AppPriority, AppSelector, Capability, PfcConfiguration};

    #[test]
    fn switch_description_from_json_round_trips_through_the_wire() {
        let json = r#"{
            "chassis_id": {"subtype": "mac_address", "value": "0c:42:a1:00:00:01"},
            "port_id": {"subtype": "local", "value": "Eth1/1"},
            "system_name": "leaf01",
            "capabilities": {"supported": ["bridge", "router"], "enabled": ["bridge", "router"]},
            "management_addresses": [
                {"family": 1, "address": "10.0.0.11", "interface_numbering": 2, "interface_number": 7}
            ],
            "max_frame_size": 9216,
            "dcbx": {
                "pfc": {"willing": false, "mbc": false, "capability": 8, "enabled_priorities": [3]},
                "application_priority": [{"priority": 3, "selector": "dscp", "protocol": 26}]
            },
            "unknown_tlvs": [{"tlv_type": 127, "oui": "00:1b:21", "subtype": 2, "data": "0102"}]
        }"#;
        let local: LocalSystem = serde_json::from_str(json).unwrap();
        let pdu = local.lldpdu(121).unwrap();
        let wire = pdu.to_vec().unwrap();
        let back = Lldpdu::decode(&wire).unwrap();
        let n = Neighbor::from(&back);
        assert_eq!(n.ttl, 121);
        assert_eq!(n.system_name.as_deref(), Some("leaf01"));
        assert_eq!(n.port_id.value, "Eth1/1");
        assert_eq!(
            n.capabilities.as_ref().unwrap().enabled,
            [Capability::Bridge, Capability::Router]
        );
        assert_eq!(n.management_addresses[0].address, "10.0.0.11");
        assert_eq!(
            n.dcbx.pfc,
            Some(PfcConfiguration {
                willing: false,
                mbc: false,
                capability: 8,
                enabled_priorities: vec![3]
            })
        );
        assert_eq!(
            n.dcbx.application_priority,
            Some(vec![AppPriority {
                priority: 3,
                selector: AppSelector::Dscp,
                protocol: 26
            }])
        );
        assert_eq!(n.unknown_tlvs[0].oui.as_deref(), Some("00:1b:21"));
        assert_eq!(LocalSystem::from(&n), local);
    }

    #[test]
    fn ids_in_every_text_form() {
        let cases = [
            (
                ChassisIdSubtype::MacAddress,
                "02:00:00:00:00:01",
                vec![2, 0, 0, 0, 0, 1],
            ),
            (
                ChassisIdSubtype::NetworkAddress,
                "10.1.2.3",
                vec![1, 10, 1, 2, 3],
            ),
            (
                ChassisIdSubtype::Local,
                "leaf01-chassis",
                b"leaf01-chassis".to_vec(),
            ),
            (ChassisIdSubtype::Local, "0xff00", vec![0xff, 0]),
            (ChassisIdSubtype::MacAddress, "0x0102", vec![1, 2]),
        ];
        for (subtype, value, octets) in cases {
            let id = ChassisId {
                subtype,
                value: value.into(),
            };
            assert_eq!(chassis_id_octets(&id).unwrap(), octets, "{value}");
            assert_eq!(convert::render_chassis_id(subtype, &octets), value);
        }
        let bad_mac = ChassisId {
            subtype: ChassisIdSubtype::MacAddress,
            value: "leaf01".into(),
        };
        assert!(chassis_id_octets(&bad_mac).is_err());
    }

    #[test]
    fn out_of_range_values_are_refused_with_the_field_named() {
        let mut l = LocalSystem::new(MacAddr([2, 0, 0, 0, 0, 1]), "eth0");
        l.dcbx.pfc = Some(PfcConfiguration {
            willing: false,
            mbc: false,
            capability: 8,
            enabled_priorities: vec![8],
        });
        let e = l.lldpdu(120).unwrap_err();
        assert!(e.to_string().contains("PFC enabled priority"), "{e}");
        let mut l = LocalSystem::new(MacAddr([2, 0, 0, 0, 0, 1]), "eth0");
        l.system_name = Some("x".repeat(256));
        assert!(matches!(
            l.lldpdu(120).unwrap_err(),
            LocalSystemError::Encode(EncodeError::Length { .. })
        ));
    }
}
