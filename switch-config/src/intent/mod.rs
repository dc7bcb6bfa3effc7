//! The fabric intent: what the operator means, in one YAML file.
//!
//! One lossless RoCE profile for the whole fabric ([`RoceProfile`]), an ARP policy sized from the
//! pod count ([`ArpPolicy`]), the rails, and the switches with their ports, each port naming
//! what is cabled to it (`host/nic` or `switch/port`). Hosts are implied by the leaves' ports.
//! `switch-config/examples/fabric-intent.yaml` is the annotated example.
//!
//! [`load`] parses with hard limits on size, depth and node count; [`validate`] checks what YAML
//! cannot (overlapping subnets, a rail without a leaf, PFC beyond the buffer profile, MTU below
//! the RoCE payload, ...) and names the field and the switch in every error.

mod defaults;
mod load;
mod peer;
pub mod software;
mod validate;
mod write;

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

pub use load::{IntentError, Limits, load, load_with_limits, read};
pub use peer::{Peer, Port, Ports};
pub use validate::{Issue, validate};
pub use write::to_yaml;

/// Schema identifier every intent file starts with.
pub const SCHEMA: &str = "spinel.dev/fabric-intent/v1";

/// The whole intent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The fabric's name (used in descriptions and file names).
    pub fabric: String,
    /// The lossless RoCE profile every switch and host follows.
    #[serde(default)]
    pub roce: RoceProfile,
    /// ARP aging and neighbour-table sizing.
    #[serde(default)]
    pub arp: ArpPolicy,
    /// The rails: NIC k of every host belongs to rail k.
    pub rails: Vec<Rail>,
    /// Every switch, leaves first by convention (order never matters).
    pub switches: Vec<Switch>,
}

/// The lossless RoCE profile: the chain DSCP → priority → traffic class → priority group →
/// queue → PFC → ECN → watchdog, the MTUs and the buffer headroom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoceProfile {
    /// Name of the objects created on the switches (SONiC maps, EOS qos profile).
    pub name: String,
    /// RoCE data: the lossless class.
    pub data: DataClass,
    /// Congestion notification packets: strict priority, never paused.
    pub cnp: CnpClass,
    /// Priority flow control.
    pub pfc: Pfc,
    /// ECN marking on the data queue.
    pub ecn: Ecn,
    /// Egress scheduling.
    pub scheduler: Scheduler,
    /// Ingress buffers and PFC headroom.
    pub buffer: Buffer,
    /// MTUs and the RoCE payload.
    pub mtu: Mtu,
    /// What hosts must send.
    pub host: HostQos,
}

/// The lossless RoCE data class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataClass {
    /// DSCP values classified as RoCE data (the first is what hosts send).
    pub dscp: Vec<u8>,
    /// 802.1p priority (switch priority) of RoCE data.
    pub priority: u8,
    /// Traffic class (egress queue); the priority when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_class: Option<u8>,
}

/// The CNP class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CnpClass {
    /// DSCP of congestion notification packets.
    pub dscp: u8,
    /// Their priority.
    pub priority: u8,
    /// Their traffic class; the priority when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_class: Option<u8>,
}

/// PFC settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Pfc {
    /// Priorities with PFC (lossless); must include the data priority.
    pub priorities: Vec<u8>,
    /// The PFC watchdog (pause-storm protection).
    pub watchdog: Watchdog,
}

/// PFC watchdog timers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Watchdog {
    /// How long a queue may stay paused before the watchdog acts, ms (SONiC 100-5000).
    pub detection_ms: u32,
    /// How long without pauses before PFC is restored, ms (SONiC 100-60000).
    pub restoration_ms: u32,
    /// Polling interval, ms (SONiC 100-1000; at most the detection time).
    pub poll_ms: u32,
    /// What to do with the stormed queue.
    pub action: WatchdogAction,
}

/// PFC watchdog action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchdogAction {
    /// Drop the queue's packets while the storm lasts (the usual choice).
    Drop,
    /// Forward them, ignoring pauses.
    Forward,
}

/// ECN marking on the RoCE data queue (DCQCN's notification point).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ecn {
    /// Queue depth where marking starts, bytes.
    pub min_bytes: u32,
    /// Queue depth where every packet is marked, bytes.
    pub max_bytes: u32,
    /// Marking probability at `max_bytes`, percent.
    pub mark_probability: u8,
}

/// Egress scheduling: DWRR between default and data, strict priority for CNP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scheduler {
    /// DWRR share of the RoCE data traffic class, percent.
    pub data_percent: u8,
    /// DWRR share of traffic class 0 (everything else), percent.
    pub default_percent: u8,
}

/// Buffer and headroom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Buffer {
    /// Lossless priority groups the buffer profile reserves headroom for: PFC may be enabled
    /// on at most this many priorities.
    pub lossless_groups: u8,
    /// Cable length of host-facing ports, metres.
    pub host_cable_m: u16,
    /// Cable length of switch-to-switch ports, metres.
    pub uplink_cable_m: u16,
    /// Share of the switch buffer given to the lossless ingress pool, percent.
    pub lossless_pool_percent: u8,
}

/// MTUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Mtu {
    /// Switch port MTU (IP MTU, like Linux's); at least the host MTU.
    pub switch: u16,
    /// Host NIC MTU.
    pub host: u16,
    /// RoCE payload (the IB MTU: 256-4096) the host MTU must carry plus 96 bytes of headers.
    pub roce_payload: u16,
}

/// What hosts send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostQos {
    /// IP ToS byte of RoCE traffic (`NCCL_IB_TC`, rdma_cm `default_roce_tos`); the first data
    /// DSCP with ECT(0) when absent (DSCP 26 → 106).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roce_tos: Option<u8>,
    /// Enable ECN (DCQCN reaction and notification points) on the data priority.
    pub ecn: bool,
}

/// ARP aging and neighbour-table sizing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArpPolicy {
    /// Switch ARP aging, seconds: short enough that a reused pod address is not black-holed for
    /// long when a gratuitous ARP is lost.
    pub aging_seconds: u32,
    /// Most pods per host with an address on each rail.
    pub pods_per_host: u32,
    /// Spare neighbour-table entries, percent on top of what the pods need.
    pub headroom_percent: u32,
}

/// One rail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rail {
    /// Rail name.
    pub name: String,
    /// The host NIC on this rail, when every host names it alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<String>,
}

/// A switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Switch {
    /// System name (hostname); unique.
    pub name: String,
    /// Tier.
    pub role: SwitchRole,
    /// Network operating system.
    pub os: SwitchOs,
    /// The OS release it runs (`5.15` Cumulus Linux, `4.33` EOS): configuration is rendered in
    /// what that release accepts; required for Cumulus and EOS, none for SONiC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// EOS hardware family (`strata` or `sand`): the queue command differs between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<crate::intent::software::EosPlatform>,
    /// Per rail it serves: VLAN, subnet and gateway (leaves).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<Network>,
    /// Port name → what is cabled to it.
    #[serde(default)]
    pub ports: Ports,
    /// Port speed in Gb/s (default for every port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_gbps: Option<u32>,
    /// The ASIC's packet buffer, bytes (needed for SONiC buffer pools and the headroom check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<u64>,
    /// The ASIC's neighbour (ARP) table capacity, entries, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbor_capacity: Option<u32>,
    /// Override of the profile's switch MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u16>,
    /// Override of the profile's PFC priorities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc_priorities: Option<Vec<u8>>,
}

/// Switch tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwitchRole {
    /// Tier 1: hosts are cabled to it.
    Leaf,
    /// Tier 2.
    Spine,
    /// Tier 3.
    SuperSpine,
}

/// Network operating system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchOs {
    /// Community SONiC (config_db.json).
    Sonic,
    /// NVIDIA Cumulus Linux 5.x (NVUE).
    Cumulus,
    /// Arista EOS.
    Eos,
}

impl SwitchOs {
    /// Largest port MTU the OS accepts.
    pub fn max_mtu(self) -> u16 {
        match self {
            Self::Sonic | Self::Cumulus => 9216,
            Self::Eos => 9214,
        }
    }

    /// The name used in messages and file names.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sonic => "sonic",
            Self::Cumulus => "cumulus",
            Self::Eos => "eos",
        }
    }
}

/// A rail's network on one leaf: an SVI in a VLAN whose untagged members are the rail's host
/// ports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// The rail.
    pub rail: String,
    /// VLAN ID (2-4094).
    pub vlan: u16,
    /// Subnet of the rail's hosts and pods under this leaf.
    pub subnet: Ipv4Net,
    /// The leaf's address in it (the hosts' gateway).
    pub gateway: Ipv4Addr,
}

/// Longest value echoed in a message, bytes: a hostile 10 MB name is cut, not repeated.
pub const MAX_ECHO_BYTES: usize = 64;

/// `value` for a message: quoted, cut to [`MAX_ECHO_BYTES`] with its full length said.
pub fn cut(value: &str) -> String {
    if value.len() <= MAX_ECHO_BYTES {
        return format!("{value:?}");
    }
    let mut end = MAX_ECHO_BYTES;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}... ({} bytes)", &value[..end], value.len())
}

impl Intent {
    /// The switch called `name`.
    pub fn switch(&self, name: &str) -> Option<&Switch> {
        self.switches.iter().find(|s| s.name == name)
    }
}
