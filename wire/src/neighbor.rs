//! Neighbour tables: the stable JSON schema shared by every LLDP source and the fabric model.
//!
//! One [`NeighborTable`] describes what one system (a host or a switch) sees on its ports.
//! The shape never changes with cardinality: lists are always arrays, numbers are numbers,
//! absent optional data is omitted. The schema is versioned by [`SCHEMA`].

use serde::{Deserialize, Serialize};

/// Schema identifier written in every table.
pub const SCHEMA: &str = "spinel.dev/neighbors/v1";

/// What one system sees on its ports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborTable {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The system that observed these neighbours.
    pub observer: Observer,
    /// One entry per local port that was listened on, in a stable order (by name).
    pub ports: Vec<PortNeighbors>,
}

/// The observing system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observer {
    /// Its name: the Kubernetes node name for hosts, the system name for switches.
    pub name: String,
    /// Its chassis ID, when known (switch tables from lldpd carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chassis_id: Option<ChassisId>,
    /// Whether the observer is a host (a Kubernetes node) or a switch, when the source knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
}

/// Role of a system in the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A server, normally a Kubernetes node.
    Host,
    /// A bridge or router.
    Switch,
}

/// Neighbours seen on one local port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortNeighbors {
    /// Local interface name (for example `ens1f0np0`, `Ethernet0`, `swp1`).
    pub port: String,
    /// Neighbours currently valid on the port (TTL not expired), ordered by MSAP.
    pub neighbors: Vec<Neighbor>,
    /// Receive statistics for the port, when the source keeps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<PortCounters>,
}

/// 802.1AB receive statistics for one port (names follow the standard's MIB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortCounters {
    /// Frames received, valid or not.
    pub frames_in: u64,
    /// Frames discarded because they failed validation.
    pub frames_discarded: u64,
    /// Frames with at least one TLV error.
    pub frames_in_errors: u64,
    /// TLVs discarded.
    pub tlvs_discarded: u64,
    /// TLVs not recognised (kept raw).
    pub tlvs_unrecognized: u64,
    /// Neighbours removed because their TTL expired.
    pub ageouts: u64,
    /// Neighbours added.
    pub inserts: u64,
    /// Neighbours removed (ageout or shutdown LLDPDU).
    pub deletes: u64,
    /// Frames sent.
    pub frames_out: u64,
}

/// One neighbour (one MSAP: chassis ID + port ID) as decoded from its latest LLDPDU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Neighbor {
    /// Chassis ID TLV.
    pub chassis_id: ChassisId,
    /// Port ID TLV.
    pub port_id: PortId,
    /// TTL advertised, in seconds.
    pub ttl: u16,
    /// Seconds since the last LLDPDU from this neighbour, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_seconds: Option<u64>,
    /// Port Description TLV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_description: Option<String>,
    /// System Name TLV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_name: Option<String>,
    /// System Description TLV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_description: Option<String>,
    /// System Capabilities TLV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
    /// Management Address TLVs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub management_addresses: Vec<ManagementAddress>,
    /// 802.1 Port VLAN ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_vlan_id: Option<u16>,
    /// 802.1 VLAN Name TLVs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vlan_names: Vec<VlanName>,
    /// 802.1 (or legacy 802.3) Link Aggregation TLV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_aggregation: Option<LinkAggregation>,
    /// 802.3 MAC/PHY Configuration/Status TLV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_phy: Option<MacPhy>,
    /// 802.3 Maximum Frame Size TLV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_frame_size: Option<u16>,
    /// 802.1Qaz DCBX TLVs, decoded.
    #[serde(default, skip_serializing_if = "Dcbx::is_empty")]
    pub dcbx: Dcbx,
    /// TLVs kept raw because they are not decoded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_tlvs: Vec<UnknownTlv>,
}

impl Neighbor {
    /// A neighbour that advertised only the mandatory TLVs.
    pub fn new(chassis_id: ChassisId, port_id: PortId, ttl: u16) -> Self {
        Self {
            chassis_id,
            port_id,
            ttl,
            age_seconds: None,
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
}

/// Chassis ID with its subtype.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChassisId {
    /// How to read `value`.
    pub subtype: ChassisIdSubtype,
    /// The ID: `aa:bb:..` for MAC, dotted/colon text for network addresses, else the string
    /// (non-UTF-8 bytes as lowercase hex with a `0x` prefix).
    pub value: String,
}

/// 802.1AB chassis ID subtypes 1-7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChassisIdSubtype {
    /// 1: entPhysicalAlias of a chassis component.
    ChassisComponent,
    /// 2: ifAlias.
    InterfaceAlias,
    /// 3: entPhysicalAlias of a port component.
    PortComponent,
    /// 4: MAC address.
    MacAddress,
    /// 5: network address.
    NetworkAddress,
    /// 6: ifName.
    InterfaceName,
    /// 7: locally assigned.
    Local,
}

/// Port ID with its subtype.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortId {
    /// How to read `value`.
    pub subtype: PortIdSubtype,
    /// The ID, rendered like [`ChassisId::value`].
    pub value: String,
}

/// 802.1AB port ID subtypes 1-7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortIdSubtype {
    /// 1: ifAlias.
    InterfaceAlias,
    /// 2: entPhysicalAlias of a port component.
    PortComponent,
    /// 3: MAC address.
    MacAddress,
    /// 4: network address.
    NetworkAddress,
    /// 5: ifName.
    InterfaceName,
    /// 6: agent circuit ID.
    AgentCircuitId,
    /// 7: locally assigned (SONiC sends its port alias here).
    Local,
}

/// System Capabilities TLV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Capabilities the system supports.
    pub supported: Vec<Capability>,
    /// Capabilities currently enabled.
    pub enabled: Vec<Capability>,
}

/// One System Capabilities bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// 0x0001
    Other,
    /// 0x0002
    Repeater,
    /// 0x0004 MAC bridge.
    Bridge,
    /// 0x0008 WLAN access point.
    WlanAccessPoint,
    /// 0x0010
    Router,
    /// 0x0020
    Telephone,
    /// 0x0040 DOCSIS cable device.
    Docsis,
    /// 0x0080 station only.
    Station,
    /// 0x0100 C-VLAN component.
    CVlan,
    /// 0x0200 S-VLAN component.
    SVlan,
    /// 0x0400 two-port MAC relay.
    Tpmr,
}

/// Management Address TLV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagementAddress {
    /// IANA address family number (1 IPv4, 2 IPv6, 6 802 MAC, ...).
    pub family: u8,
    /// The address, rendered as text for IPv4/IPv6/MAC and hex otherwise.
    pub address: String,
    /// Interface numbering subtype (1 unknown, 2 ifIndex, 3 system port number).
    pub interface_numbering: u8,
    /// Interface number.
    pub interface_number: u32,
    /// Object identifier, hex, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oid: Option<String>,
}

/// 802.1 VLAN Name TLV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VlanName {
    /// VLAN ID.
    pub vid: u16,
    /// VLAN name.
    pub name: String,
}

/// Link Aggregation TLV (802.1 subtype 7, or the legacy 802.3 subtype 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkAggregation {
    /// Aggregation capable.
    pub capable: bool,
    /// Currently aggregated.
    pub enabled: bool,
    /// ifIndex of the aggregated port.
    pub port_id: u32,
}

/// 802.3 MAC/PHY Configuration/Status TLV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MacPhy {
    /// Auto-negotiation supported.
    pub autoneg_supported: bool,
    /// Auto-negotiation enabled.
    pub autoneg_enabled: bool,
    /// PMD auto-negotiation advertised capability bits.
    pub advertised: u16,
    /// Operational MAU type (RFC 4836 dot3MauType).
    pub mau_type: u16,
}

/// The 802.1Qaz DCBX TLVs a neighbour advertised.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dcbx {
    /// ETS Configuration TLV (subtype 9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ets_configuration: Option<EtsConfiguration>,
    /// ETS Recommendation TLV (subtype 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ets_recommendation: Option<EtsRecommendation>,
    /// PFC Configuration TLV (subtype 11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc: Option<PfcConfiguration>,
    /// Application Priority TLV entries (subtype 12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_priority: Option<Vec<AppPriority>>,
}

impl Dcbx {
    /// True when no DCBX TLV was received.
    pub fn is_empty(&self) -> bool {
        self.ets_configuration.is_none()
            && self.ets_recommendation.is_none()
            && self.pfc.is_none()
            && self.application_priority.is_none()
    }
}

/// ETS Configuration TLV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtsConfiguration {
    /// Willing bit.
    pub willing: bool,
    /// Credit-based shaper supported.
    pub cbs: bool,
    /// Number of traffic classes supported (1-8; the wire's 0 means 8).
    pub max_tcs: u8,
    /// Traffic class of each priority 0-7.
    pub priority_tc: [u8; 8],
    /// Bandwidth percent of each traffic class 0-7.
    pub tc_bandwidth: [u8; 8],
    /// Transmission selection algorithm of each traffic class 0-7.
    pub tsa: [Tsa; 8],
}

/// ETS Recommendation TLV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtsRecommendation {
    /// Traffic class of each priority 0-7.
    pub priority_tc: [u8; 8],
    /// Bandwidth percent of each traffic class 0-7.
    pub tc_bandwidth: [u8; 8],
    /// Transmission selection algorithm of each traffic class 0-7.
    pub tsa: [Tsa; 8],
}

/// Transmission selection algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tsa {
    /// 0: strict priority.
    Strict,
    /// 1: credit-based shaper.
    CreditBasedShaper,
    /// 2: enhanced transmission selection.
    Ets,
    /// 255: vendor specific.
    VendorSpecific,
    /// 3-254: reserved values, kept.
    Reserved(u8),
}

/// PFC Configuration TLV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcConfiguration {
    /// Willing bit.
    pub willing: bool,
    /// MACsec bypass capability.
    pub mbc: bool,
    /// How many priorities can have PFC enabled at once (0-8).
    pub capability: u8,
    /// Priorities with PFC enabled (ascending, 0-7).
    pub enabled_priorities: Vec<u8>,
}

/// One Application Priority entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppPriority {
    /// 802.1p priority 0-7.
    pub priority: u8,
    /// What `protocol` means.
    pub selector: AppSelector,
    /// Ethertype, port number or DSCP value.
    pub protocol: u16,
}

/// Application Priority selector field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppSelector {
    /// 1: Ethertype.
    Ethertype,
    /// 2: TCP/SCTP well-known port.
    TcpPort,
    /// 3: UDP/DCCP port (RoCE v2 is UDP 4791).
    UdpPort,
    /// 4: TCP/SCTP/UDP/DCCP port.
    AnyPort,
    /// 5: DSCP value.
    Dscp,
    /// 0, 6, 7: reserved values, kept.
    Reserved(u8),
}

/// A TLV kept raw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnknownTlv {
    /// TLV type (127 for organisationally specific).
    pub tlv_type: u8,
    /// OUI as `xx:xx:xx`, for type 127.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oui: Option<String>,
    /// Organisational subtype, for type 127.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<u8>,
    /// Information string (after OUI and subtype for type 127), lowercase hex.
    pub data: String,
}
