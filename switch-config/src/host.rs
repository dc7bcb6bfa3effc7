//! Hosts: the profile a node must match (rendered from the intent) and the state it actually
//! has (read from its kernel), both plain, schema-versioned data.
//!
//! The state is read on the node ([`kernel::read`] through hostnet's DCB netlink, rtnetlink and
//! the RDMA stack's files) and may travel as JSON to wherever the checker runs. Everything a
//! driver cannot report is a [`Reading::CannotRead`] with the reason, never a default: a veth
//! has no DCB operations, and "no PFC" is not the same as "cannot tell".

pub mod kernel;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::plan::{FabricPlan, NicPlan};

/// Schema of [`HostState`] documents.
pub const STATE_SCHEMA: &str = "spinel.dev/host-qos/v1";
/// Schema of [`HostProfile`] documents.
pub const PROFILE_SCHEMA: &str = "spinel.dev/host-profile/v1";

/// A value read from a host, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Reading<T> {
    /// What the kernel reported.
    Value(T),
    /// Why nothing could be read (the driver has no DCB operations, no RDMA device, ...).
    CannotRead(String),
}

impl<T> Reading<T> {
    /// The value, when there is one.
    pub fn value(&self) -> Option<&T> {
        match self {
            Self::Value(v) => Some(v),
            Self::CannotRead(_) => None,
        }
    }
}

/// What one host's kernel says about its RoCE NICs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostState {
    /// Always [`STATE_SCHEMA`].
    pub schema: String,
    /// Node name.
    pub host: String,
    /// One entry per NIC looked at.
    pub nics: Vec<NicState>,
}

/// One NIC's QoS state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicState {
    /// Interface name.
    pub nic: String,
    /// MTU (rtnetlink).
    pub mtu: Reading<u32>,
    /// Priorities with PFC enabled (dcbnl IEEE PFC).
    pub pfc: Reading<Vec<u8>>,
    /// DSCP → priority entries of the APP table (dcbnl IEEE APP, selector DSCP): on mlx5, the
    /// first such entry switches the port to trust DSCP.
    pub dscp_priority: Reading<Vec<(u8, u8)>>,
    /// Trusted selectors in order (`dscp`, `pcp`), when the driver reports the trust table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<Vec<String>>,
    /// DCBX mode flags (`host`, `lld_managed`, `cee`, `ieee`, `static`).
    pub dcbx: Reading<Vec<String>>,
    /// The ETS willing bit: true lets a DCBX peer (the switch) rewrite the host's settings.
    pub willing: Reading<bool>,
    /// ToS byte RoCE connections get (rdma_cm `default_roce_tos`, or the OFED
    /// `traffic_class`).
    pub roce_tos: Reading<u8>,
    /// Priorities with DCQCN ECN enabled (both reaction and notification point).
    pub ecn: Reading<Vec<u8>>,
}

/// The profile one host must match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProfile {
    /// Always [`PROFILE_SCHEMA`].
    pub schema: String,
    /// The fabric.
    pub fabric: String,
    /// Node name.
    pub host: String,
    /// What every RoCE NIC of the host must have: QoS is the fabric's (and on most NICs a
    /// property of the PF, shared by its VFs), not a per-NIC choice.
    pub qos: QosProfile,
    /// Its RoCE NICs.
    pub nics: Vec<NicProfile>,
    /// Kernel settings (`sysctl -w` names and values).
    pub sysctl: BTreeMap<String, String>,
    /// Environment for NCCL jobs.
    pub nccl_env: BTreeMap<String, String>,
}

/// The QoS every RoCE NIC of a host must have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosProfile {
    /// MTU.
    pub mtu: u16,
    /// PFC priorities.
    pub pfc: Vec<u8>,
    /// Trust: always `dscp` (the fabric is routed, untagged).
    pub trust: String,
    /// DSCP → priority entries the APP table must hold.
    pub dscp_priority: Vec<(u8, u8)>,
    /// ToS byte for RoCE.
    pub roce_tos: u8,
    /// Priorities with DCQCN ECN enabled.
    pub ecn: Vec<u8>,
}

/// One NIC: where it is cabled and its rail network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicProfile {
    /// Interface name.
    pub nic: String,
    /// The leaf it is cabled to.
    pub switch: String,
    /// The leaf's port.
    pub port: String,
    /// Its rail, when the leaf has a network for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rail: Option<String>,
    /// Subnet of the rail network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
    /// Gateway on the leaf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
}

/// The QoS every host NIC of the fabric must have.
pub fn qos_profile(plan: &FabricPlan<'_>) -> QosProfile {
    let q = &plan.qos;
    let mut dscp_priority: Vec<(u8, u8)> =
        q.data.dscp.iter().map(|d| (*d, q.data.priority)).collect();
    dscp_priority.extend(q.cnp.dscp.iter().map(|d| (*d, q.cnp.priority)));
    dscp_priority.sort_unstable();
    QosProfile {
        mtu: plan.intent.roce.mtu.host,
        pfc: q.pfc.clone(),
        trust: "dscp".into(),
        dscp_priority,
        roce_tos: q.roce_tos,
        ecn: if q.host_ecn {
            vec![q.data.priority]
        } else {
            Vec::new()
        },
    }
}

/// The profile of `host`, when the intent cables it.
pub fn profile(plan: &FabricPlan<'_>, host: &str) -> Option<HostProfile> {
    let nics = plan.hosts.get(host)?;
    let mut sysctl = BTreeMap::new();
    let entries = host_neighbor_entries(plan, nics);
    // Raise the kernel's neighbour thresholds only above its defaults (128/512/1024): with
    // every pod of every host on the rail reachable directly, 1024 entries run out early.
    if entries > 512 {
        let gc3 = (entries * 2).next_multiple_of(1024);
        sysctl.insert(
            "net.ipv4.neigh.default.gc_thresh1".into(),
            (gc3 / 4).to_string(),
        );
        sysctl.insert(
            "net.ipv4.neigh.default.gc_thresh2".into(),
            (gc3 / 2).to_string(),
        );
        sysctl.insert("net.ipv4.neigh.default.gc_thresh3".into(), gc3.to_string());
    }
    let mut nccl_env = BTreeMap::new();
    nccl_env.insert("NCCL_IB_TC".into(), plan.qos.roce_tos.to_string());
    Some(HostProfile {
        schema: PROFILE_SCHEMA.into(),
        fabric: plan.intent.fabric.clone(),
        host: host.to_owned(),
        qos: qos_profile(plan),
        nics: nics.iter().map(nic_profile).collect(),
        sysctl,
        nccl_env,
    })
}

fn nic_profile(n: &NicPlan<'_>) -> NicProfile {
    NicProfile {
        nic: n.nic.to_owned(),
        switch: n.switch.to_owned(),
        port: n.port.to_owned(),
        rail: n.network.map(|net| net.rail.clone()),
        subnet: n.network.map(|net| net.subnet.to_string()),
        gateway: n.network.map(|net| net.gateway.to_string()),
    }
}

/// Neighbours a host may hold: everything on each of its rail networks.
fn host_neighbor_entries(plan: &FabricPlan<'_>, nics: &[NicPlan<'_>]) -> u64 {
    nics.iter()
        .filter_map(|n| {
            let leaf = plan.switch(n.switch)?;
            let rail = &n.network?.rail;
            Some(leaf.network_entries(plan.intent, rail))
        })
        .sum()
}
