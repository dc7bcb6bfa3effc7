//! Spinel's custom resources (group `fabric.spinel.dev`, version `v1alpha1`, both
//! cluster-scoped):
//!
//! - [`NodeFabric`], one per node, named after it. Its **spec** is the node's own report,
//!   written only by that node's agent (RBAC plus an admission policy on the pod-bound token's
//!   node-name claim): the RoCE NICs, the LLDP neighbour table, health findings. Its **status**
//!   is what the fabric controller derived for that node from every node's report: the labels
//!   the agent then applies to its own Node, and the findings about its cabling.
//! - [`Fabric`], one object named `default`, whose status the controller keeps: a summary of
//!   the inferred fabric and its miswiring report.
//!
//! The agent never writes status; the controller never writes spec or any Node.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group.
pub const GROUP: &str = "fabric.spinel.dev";
/// The API version.
pub const VERSION: &str = "v1alpha1";
/// The name of the one [`Fabric`] object.
pub const FABRIC_NAME: &str = "default";

/// The annotation naming the agent run that published a report (when it began listening for
/// LLDP, RFC 3339). An annotation, not a spec field: a restart that reports the same cabling
/// must not change the report's generation, or the controller would write a status for it.
/// The controller holds a new run's report that shows fewer neighbours than the last one
/// until the last one's neighbours would have aged out, so a restart never strips its node.
pub const LISTENING_SINCE_ANNOTATION: &str = "fabric.spinel.dev/listening-since";

/// The longest a previous agent run's neighbours are believed after a restart (by the new
/// agent, which carries them over, and by the controller, which holds a thinner report):
/// lldpd's own TTL, 30 s between LLDPDUs times four. A longer TTL claimed in a report (a lie
/// costs nothing) is held no longer; a report that no agent run published is not carried.
pub const MAX_CARRY_OVER: std::time::Duration = std::time::Duration::from_secs(120);

/// Most RoCE NICs one report may name (GPU nodes have 8 to 16).
pub const MAX_NICS: usize = 64;
/// Most neighbours one NIC's port may list: lldpd's default table size, the agent's too.
pub const MAX_NEIGHBORS_PER_PORT: usize = 32;
/// Most health findings one report may carry.
pub const MAX_HEALTH_FINDINGS: usize = 256;

/// What one node reports about itself (written by its agent). The schema bounds what one
/// report may hold, and a port in its LLDP table must be one of its NICs, so one node's
/// report can only speak for that node's own cables.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "fabric.spinel.dev",
    version = "v1alpha1",
    kind = "NodeFabric",
    plural = "nodefabrics",
    shortname = "nf",
    status = "NodeFabricStatus",
    printcolumn = r#"{"name":"Tier-1","type":"string","jsonPath":".status.tier1"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.lldp.ports) || self.lldp.ports.all(p, self.nics.exists(n, n.name == p.port))",
    "message": "every port of the LLDP table must be one of the node's RoCE NICs"
}]))]
pub struct NodeFabricSpec {
    /// The node; equal to `metadata.name`.
    #[schemars(length(max = 253))]
    pub node_name: String,
    /// The agent's version.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub agent_version: String,
    /// The node's RoCE NICs.
    #[serde(default)]
    #[schemars(length(max = MAX_NICS))]
    pub nics: Vec<NicReport>,
    /// The node's LLDP neighbour table in the stable `spinel.dev/neighbors/v1` schema (the
    /// one `spinelctl lldp listen --json` prints and `spinelctl topo infer` reads), without
    /// ages and counters, so it changes only when the cabling does. The controller parses it
    /// strictly and reports a node whose table does not parse.
    #[schemars(schema_with = "neighbor_table")]
    pub lldp: serde_json::Value,
    /// LLDP frames ignored since the agent started because they came from one of the node's
    /// own MACs (a pod cannot tell the node where it is cabled).
    #[serde(default)]
    pub lldp_frames_ignored: u64,
    /// Health findings, one per NIC and problem (empty when healthy).
    #[serde(default)]
    #[schemars(length(max = MAX_HEALTH_FINDINGS))]
    pub health: Vec<HealthFinding>,
}

/// One RoCE NIC as the node sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NicReport {
    /// The netdev.
    #[schemars(length(max = 15))]
    pub name: String,
    /// Its PCI address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci: Option<String>,
    /// Its RDMA device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_device: Option<String>,
    /// Its MAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// Its MTU.
    pub mtu: u32,
    /// Link speed in Mbit/s, when the driver reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u32>,
    /// Whether the link has carrier.
    pub carrier: bool,
    /// Its addresses (CIDR).
    #[serde(default)]
    pub addresses: Vec<String>,
    /// Priorities with PFC enabled on the host side, when the driver reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_pfc: Option<Vec<u8>>,
}

/// One health problem of a node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthFinding {
    /// The NIC concerned, if the finding is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<String>,
    /// A stable reason (`LinkDown`, `NoNeighbor`, `PfcMismatch`, ...).
    pub reason: String,
    /// What is wrong, and what to do.
    pub message: String,
}

/// What the controller derived for one node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeFabricStatus {
    /// The labels the agent applies to its Node (keys under the configured prefix only).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The tier-1 domain (leaf or leaf group) the node is in, for `kubectl get nf`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier1: Option<String>,
    /// Miswiring findings about this node's cabling.
    #[serde(default)]
    pub findings: Vec<CablingFinding>,
    /// The `metadata.generation` of the spec these results come from.
    #[serde(default)]
    pub observed_generation: i64,
}

/// One miswiring finding, as the fabric model reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CablingFinding {
    /// `error` or `warning`.
    pub severity: String,
    /// The finding's kind (`swapped_rail`, `missing_rail`, ...).
    pub kind: String,
    /// The node's NIC it is about, when it is about one (the agent's health check turns a
    /// NIC on the wrong leaf group into a finding for that NIC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<String>,
    /// What is wrong and which cable or port to fix.
    pub message: String,
}

/// The fabric as a whole (the controller's summary; one object, [`FABRIC_NAME`]).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "fabric.spinel.dev",
    version = "v1alpha1",
    kind = "Fabric",
    plural = "fabrics",
    status = "FabricStatus",
    printcolumn = r#"{"name":"Hosts","type":"integer","jsonPath":".status.hosts"}"#,
    printcolumn = r#"{"name":"Switches","type":"integer","jsonPath":".status.switches"}"#,
    printcolumn = r#"{"name":"Errors","type":"integer","jsonPath":".status.errors"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct FabricSpec {}

/// The controller's summary of the inferred fabric.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FabricStatus {
    /// Hosts placed.
    pub hosts: u32,
    /// Switches found.
    pub switches: u32,
    /// Switch tiers above the hosts.
    pub tiers: u32,
    /// Whether leaves serve rails (rail-optimised).
    pub rail_optimized: bool,
    /// Findings with severity error.
    pub errors: u32,
    /// Findings with severity warning.
    pub warnings: u32,
    /// The findings, errors first (at most a few hundred: every node's own are in its
    /// `NodeFabric` status and its Events).
    #[serde(default)]
    pub findings: Vec<CablingFinding>,
    /// Findings left out of `findings` to keep the object small.
    #[serde(default)]
    pub findings_omitted: u32,
    /// Nodes whose report could not be used, with why.
    #[serde(default)]
    pub unusable_reports: BTreeMap<String, String>,
    /// The controller replica that computed this.
    #[serde(default)]
    pub computed_by: String,
}

/// The neighbour table's schema: the fields are kept as they are (the controller parses them
/// strictly), but its size is bounded: at most [`MAX_NICS`] ports, each a NIC name, with at
/// most [`MAX_NEIGHBORS_PER_PORT`] neighbours.
fn neighbor_table(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {
            "ports": {
                "type": "array",
                "maxItems": MAX_NICS,
                "items": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "required": ["port"],
                    "properties": {
                        "port": {"type": "string", "maxLength": 15},
                        "neighbors": {
                            "type": "array",
                            "maxItems": MAX_NEIGHBORS_PER_PORT,
                            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                        }
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;

    use super::*;

    /// `deploy/crds/` holds the definitions this code generates; regenerate them with
    /// `SPINEL_WRITE_CRDS=1 cargo test -p spinel-api`.
    #[test]
    fn the_shipped_definitions_match_the_code() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
        for crd in [NodeFabric::crd(), Fabric::crd()] {
            let name = crd.metadata.name.clone().unwrap();
            let path = dir.join(format!("{name}.yaml"));
            let yaml = format!(
                "# Generated from api/src/crd.rs: SPINEL_WRITE_CRDS=1 cargo test -p spinel-api\n{}",
                serde_saphyr::to_string(&crd).unwrap()
            );
            if std::env::var_os("SPINEL_WRITE_CRDS").is_some() {
                std::fs::write(&path, &yaml).unwrap();
            }
            let shipped = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                shipped == yaml,
                "{} is stale: run SPINEL_WRITE_CRDS=1 cargo test -p spinel-api",
                path.display()
            );
        }
    }

    #[test]
    fn the_custom_resources_are_cluster_scoped_and_served() {
        for crd in [NodeFabric::crd(), Fabric::crd()] {
            assert_eq!(crd.spec.group, GROUP);
            assert_eq!(crd.spec.scope, "Cluster");
            let v = &crd.spec.versions[0];
            assert_eq!(v.name, VERSION);
            assert!(v.served && v.storage);
            assert!(
                v.subresources.as_ref().is_some_and(|s| s.status.is_some()),
                "status is a subresource: the agent's RBAC cannot reach it"
            );
        }
        let schema = serde_json::to_value(NodeFabric::crd()).unwrap();
        let lldp = &schema["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["lldp"];
        assert_eq!(lldp["x-kubernetes-preserve-unknown-fields"], true, "{lldp}");
        assert_eq!(lldp["properties"]["ports"]["maxItems"], MAX_NICS, "{lldp}");
        assert_eq!(
            lldp["properties"]["ports"]["items"]["properties"]["neighbors"]["maxItems"],
            MAX_NEIGHBORS_PER_PORT
        );
    }
}
