//! What the journal stores: one record per attachment, written before anything changes, and
//! the typed decisions ADD took, so undoing never re-derives them from raw JSON.

use std::path::PathBuf;

use hostnet::netlink::VfSettings;
use hostnet::netns::NsId;
use hostnet::sriov::{PciAddress, is_valid_ifname};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use spinel_wire::MacAddr;

use crate::spec::Version;
use crate::spec::env::is_valid_container_id;

/// The record layout version this build writes. Version 1 records (file per container
/// directory, decisions re-derived from the configuration) are still read.
pub const SCHEMA: u32 = 2;

/// Identifies an attachment: the runtime's (container ID, interface name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentKey {
    /// `CNI_CONTAINERID`.
    pub container_id: String,
    /// `CNI_IFNAME`.
    pub ifname: String,
}

impl AttachmentKey {
    /// True when both parts are what the CNI spec allows.
    pub fn is_valid(&self) -> bool {
        is_valid_container_id(&self.container_id) && is_valid_ifname(&self.ifname)
    }
}

impl std::fmt::Display for AttachmentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.container_id, self.ifname)
    }
}

/// How far an ADD got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The intent is recorded; the system may be partly changed.
    Prepared,
    /// ADD finished and returned its result.
    Attached,
}

/// Everything needed to undo one attachment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachmentRecord {
    /// Layout version ([`SCHEMA`]).
    pub schema: u32,
    /// The attachment.
    pub key: AttachmentKey,
    /// Network name from the configuration.
    pub network: String,
    /// `CNI_NETNS` at ADD (where to look first; the identity below decides).
    pub netns: Option<PathBuf>,
    /// Identity of that namespace at ADD: a path reused by a later pod is not ours.
    pub netns_id: Option<NsId>,
    /// The host's id for that namespace (`RTM_GETNSID`) at ADD: while the namespace lives the
    /// kernel keeps it, so DEL can prove the namespace dead where no path reaches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns_nsid: Option<i32>,
    /// `CNI_ARGS` at ADD, replayed to the IPAM plugin on DEL (whereabouts reads the pod there).
    pub cni_args: Option<String>,
    /// How far ADD got.
    pub phase: Phase,
    /// The network configuration exactly as ADD received it (the IPAM plugin gets it again).
    pub config: Value,
    /// The configuration's `cniVersion`.
    pub cni_version: Version,
    /// The IPAM plugin ADD delegated to, if any.
    pub ipam: Option<String>,
    /// The policy-routing table ADD installed rules for, if it did.
    pub routing_table: Option<u32>,
    /// The device and its original state.
    pub device: DeviceRecord,
    /// ADD's result, in ADD's version, once attached.
    pub result: Option<Value>,
}

/// The device an attachment uses. Behaviour per kind lives in `crate::attachment`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum DeviceRecord {
    /// An SR-IOV VF moved into the pod.
    Vf(VfRecord),
    /// A macvlan created on the PF inside the pod (shared RDMA device).
    Macvlan(MacvlanRecord),
}

/// A macvlan attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MacvlanRecord {
    /// The PF netdev it sits on.
    pub master: String,
    /// The PF's RDMA devices (shared by every pod on the PF).
    #[serde(default)]
    pub rdma_devices: Vec<String>,
}

/// A VF and the state it had in the host before the attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VfRecord {
    /// VF PCI address.
    pub pci: PciAddress,
    /// PF netdev name.
    pub pf: String,
    /// VF index on the PF.
    pub index: u32,
    /// Host netdev name before ADD.
    pub host_name: String,
    /// MAC before ADD.
    pub host_mac: Option<MacAddr>,
    /// MTU before ADD.
    pub host_mtu: u32,
    /// Alias before ADD (ADD replaces it with a marker naming the VF).
    pub host_alias: Option<String>,
    /// Administrative state before ADD.
    pub host_up: bool,
    /// PF-side attributes before ADD (VLAN, admin MAC, trust, ...), restored on DEL.
    pub pf_before: Option<VfSettings>,
    /// PF-side attributes ADD sets (what the configuration asked for, defaults for the rest).
    #[serde(default)]
    pub pf_wanted: Option<VfSettings>,
    /// The VF's RDMA devices.
    #[serde(default)]
    pub rdma_devices: Vec<String>,
    /// Whether they move into the pod (the node runs the RDMA subsystem in exclusive mode).
    #[serde(default)]
    pub rdma_exclusive: bool,
}

/// Which attachment holds a VF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Claim {
    /// Layout version.
    pub schema: u32,
    /// The holder.
    pub holder: AttachmentKey,
}

/// A schema 1 record: the same, without the typed decisions.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct RecordV1 {
    schema: u32,
    key: AttachmentKey,
    network: String,
    netns: Option<PathBuf>,
    netns_id: Option<NsId>,
    cni_args: Option<String>,
    phase: Phase,
    config: Value,
    device: DeviceRecord,
    result: Option<Value>,
}

impl RecordV1 {
    /// The decisions version 1 left in the raw configuration, made typed.
    pub(super) fn upgrade(self) -> AttachmentRecord {
        let config = &self.config;
        let ipam = config
            .get("ipam")
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let cni_version = config
            .get("cniVersion")
            .and_then(Value::as_str)
            .and_then(Version::parse)
            .unwrap_or(Version::V1_0_0);
        let routing = config.get("routing");
        let routing_table = if routing
            .and_then(|r| r.get("enabled"))
            .and_then(Value::as_bool)
            == Some(false)
        {
            None
        } else {
            let explicit = routing
                .and_then(|r| r.get("table"))
                .and_then(Value::as_u64)
                .and_then(|t| u32::try_from(t).ok());
            Some(explicit.unwrap_or_else(|| crate::config::table_for(&self.key.ifname)))
        };
        debug_assert_eq!(self.schema, 1);
        AttachmentRecord {
            schema: SCHEMA,
            key: self.key,
            network: self.network,
            netns: self.netns,
            netns_id: self.netns_id,
            netns_nsid: None,
            cni_args: self.cni_args,
            phase: self.phase,
            config: self.config,
            cni_version,
            ipam,
            routing_table,
            device: self.device,
            result: self.result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_record_gets_the_decisions_add_took() {
        let v1 = serde_json::json!({
            "schema": 1,
            "key": {"containerId": "c1", "ifname": "net3"},
            "network": "rail0",
            "netns": "/var/run/netns/p",
            "netnsId": {"dev": 4, "ino": 4026532000u64},
            "cniArgs": null,
            "phase": "attached",
            "config": {"cniVersion": "0.4.0", "ipam": {"type": "host-local"}},
            "device": {"kind": "macvlan", "master": "pf0"},
            "result": null
        });
        let r: RecordV1 = serde_json::from_value(v1.clone()).unwrap();
        let r = r.upgrade();
        assert_eq!(r.schema, SCHEMA);
        assert_eq!(r.ipam.as_deref(), Some("host-local"));
        assert_eq!(r.cni_version, Version::V0_4_0);
        assert_eq!(
            r.routing_table,
            Some(103),
            "the table ADD derived from net3"
        );
        let mut off = v1;
        off["config"]["routing"] = serde_json::json!({"enabled": false});
        let r: RecordV1 = serde_json::from_value(off).unwrap();
        assert_eq!(r.upgrade().routing_table, None);
    }
}
