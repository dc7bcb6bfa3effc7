//! One node's report (`NodeFabric.spec`) as inference reads it: the NICs its agent found and
//! the neighbours it sees. The table is parsed strictly once per change of the report and
//! kept compact (only what inference reads), so 100k nodes' tables fit in a few hundred MiB.

use std::sync::Arc;

use serde::Deserialize as _;
use spinel_api::crd::NodeFabric;
use spinel_wire::neighbor::{NeighborTable, Role, SCHEMA};
use topo_discovery::fabric::{CompactTable, FabricBuilder};

/// Most RoCE NICs one report may list: the NodeFabric schema's bound.
pub const MAX_NICS: usize = spinel_api::crd::MAX_NICS;
/// Most neighbours one NIC may report: the NodeFabric schema's bound (a cable has one, a hub
/// a few; the agent and lldpd keep 32).
pub const MAX_NEIGHBORS_PER_NIC: usize = spinel_api::crd::MAX_NEIGHBORS_PER_PORT;

/// What one node reported, as far as inference is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    /// The object's uid: a deleted and recreated report is a new one even at generation 1.
    pub uid: String,
    /// `metadata.generation` of the spec read.
    pub generation: i64,
    /// The RoCE NICs the agent found (the node's fabric NICs).
    pub nics: Vec<String>,
    /// The neighbour table, or why it cannot be used.
    pub table: Result<HostTable, UnusableReport>,
    /// The agent run that published it (its listening-since annotation), when it says.
    pub run: Option<String>,
    /// Neighbours in the table.
    pub neighbours: usize,
    /// The longest TTL among them, in seconds: how long they would outlive a silent agent.
    pub max_ttl: u16,
}

/// Why a node's report cannot be used as a whole (a finding against its node, never a report
/// cut to something it did not say).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnusableReport {
    /// The object speaks for another node.
    #[error("spec.nodeName {0:?} is not the object's name")]
    NodeName(String),
    /// Not a table this controller reads.
    #[error("spec.lldp: schema {0:?} is not {SCHEMA:?} (agent too old or too new?)")]
    Schema(Option<String>),
    /// The table does not parse (serde's message: its error is neither `Clone` nor `Eq`).
    #[error("spec.lldp: {0}")]
    Table(String),
    /// The table's observer is another box.
    #[error("spec.lldp: the observer is {0:?}, not this node")]
    Observer(String),
    /// The observer claims to be a switch.
    #[error("spec.lldp: the observer says it is a switch")]
    SwitchObserver,
    /// More NICs than a report may list.
    #[error("spec.nics: {0} NICs, more than the {MAX_NICS} a report may list")]
    TooManyNics(usize),
    /// A NIC that is no interface name.
    #[error("spec.nics: {0:?} is not an interface name")]
    NicName(String),
    /// A port that is not one of the node's NICs.
    #[error(
        "spec.lldp: port {0:?} is not one of the node's NICs in spec.nics (a report speaks \
         only for its own NICs)"
    )]
    ForeignPort(String),
    /// More neighbours on one NIC than a NIC may report.
    #[error(
        "spec.lldp: port {port:?} lists {count} neighbours, more than the \
         {MAX_NEIGHBORS_PER_NIC} a NIC may report"
    )]
    TooManyNeighbours {
        /// The NIC.
        port: String,
        /// Neighbours it lists.
        count: usize,
    },
}

/// A host's neighbour table, reduced to what inference reads (topo-discovery's compact form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostTable(pub Arc<CompactTable>);

impl NodeReport {
    /// The report in `nf`, named by the object; `None` for an object without a name.
    pub fn from_object(nf: &NodeFabric) -> Option<(String, Self)> {
        let name = nf.metadata.name.clone()?;
        let nics: Vec<String> = nf.spec.nics.iter().map(|n| n.name.clone()).collect();
        let (neighbours, max_ttl) = neighbour_summary(&nf.spec.lldp);
        let table = if nf.spec.node_name != name {
            Err(UnusableReport::NodeName(nf.spec.node_name.clone()))
        } else {
            HostTable::parse(&name, &nf.spec.lldp).and_then(|t| t.within_bounds(&nics).map(|()| t))
        };
        let report = Self {
            uid: nf.metadata.uid.clone().unwrap_or_default(),
            generation: nf.metadata.generation.unwrap_or(0),
            nics,
            table,
            run: nf
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(spinel_api::crd::LISTENING_SINCE_ANNOTATION))
                .cloned(),
            neighbours,
            max_ttl,
        };
        Some((name, report))
    }

    /// Whether `other` is the same version of the same object (nothing to recompute).
    pub fn same_version(&self, other: &Self) -> bool {
        self.uid == other.uid && self.generation == other.generation
    }
}

/// How many neighbours `lldp` lists, and their longest TTL (0, 0 when it does not parse).
fn neighbour_summary(lldp: &serde_json::Value) -> (usize, u16) {
    NeighborTable::deserialize(lldp).map_or((0, 0), |t| {
        let all = t.ports.iter().flat_map(|p| &p.neighbors);
        (all.clone().count(), all.map(|n| n.ttl).max().unwrap_or(0))
    })
}

impl HostTable {
    /// Parses `spec.lldp` of node `node`: a `spinel.dev/neighbors/v1` table whose observer is
    /// that node (a report cannot speak for another node) and, if it says, a host.
    pub fn parse(node: &str, lldp: &serde_json::Value) -> Result<Self, UnusableReport> {
        let found = lldp.get("schema").and_then(serde_json::Value::as_str);
        if found != Some(SCHEMA) {
            return Err(UnusableReport::Schema(found.map(str::to_owned)));
        }
        let table =
            NeighborTable::deserialize(lldp).map_err(|e| UnusableReport::Table(e.to_string()))?;
        if table.observer.name != node {
            return Err(UnusableReport::Observer(table.observer.name));
        }
        if table.observer.role == Some(Role::Switch) {
            return Err(UnusableReport::SwitchObserver);
        }
        Ok(Self::from_table(&table))
    }

    fn from_table(table: &NeighborTable) -> Self {
        Self(Arc::new(CompactTable::from_table(table)))
    }

    /// Adds the table to `builder` as host `node`'s.
    pub fn add_to(&self, node: &str, builder: &mut FabricBuilder) {
        self.0.add_to(node, builder);
    }

    /// Checks what one report may contain: at most [`MAX_NICS`] NICs, each a valid interface
    /// name, a table that speaks only for those NICs (every port is one of them), and at most
    /// [`MAX_NEIGHBORS_PER_NIC`] neighbours per NIC. A report beyond that is unusable as a
    /// whole (a finding against its node), rather than cut to something it did not say.
    pub fn within_bounds(&self, nics: &[String]) -> Result<(), UnusableReport> {
        if nics.len() > MAX_NICS {
            return Err(UnusableReport::TooManyNics(nics.len()));
        }
        if let Some(bad) = nics
            .iter()
            .find(|n| !spinel_wire::ifname::is_valid_ifname(n))
        {
            return Err(UnusableReport::NicName(bad.clone()));
        }
        for (port, neighbors) in self.0.ports() {
            if !nics.iter().any(|n| n == port) {
                return Err(UnusableReport::ForeignPort(port.to_owned()));
            }
            if neighbors > MAX_NEIGHBORS_PER_NIC {
                return Err(UnusableReport::TooManyNeighbours {
                    port: port.to_owned(),
                    count: neighbors,
                });
            }
        }
        Ok(())
    }

    /// Neighbours in the table.
    pub fn neighbor_count(&self) -> usize {
        self.0.neighbor_count()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn table(observer: &str) -> serde_json::Value {
        json!({
            "schema": SCHEMA,
            "observer": {"name": observer, "role": "host"},
            "ports": [{"port": "ens1f0np0", "neighbors": [{
                "chassis_id": {"subtype": "mac_address", "value": "0c:42:a1:00:00:01"},
                "port_id": {"subtype": "interface_name", "value": "swp1"},
                "ttl": 120,
                "system_name": "leaf1",
                "capabilities": {"supported": ["bridge", "router"], "enabled": ["bridge", "router"]},
            }]}],
        })
    }

    #[test]
    fn a_report_speaks_only_for_its_own_node() {
        let t = HostTable::parse("h1", &table("h1")).unwrap();
        assert_eq!(t.neighbor_count(), 1);
        let err = HostTable::parse("h1", &table("h2"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"h2\""), "{err}");
        let mut switch = table("h1");
        switch["observer"]["role"] = json!("switch");
        assert!(HostTable::parse("h1", &switch).is_err());
    }

    #[test]
    fn a_report_is_bounded_and_speaks_only_for_its_nics() {
        let t = HostTable::parse("h1", &table("h1")).unwrap();
        assert_eq!(t.within_bounds(&["ens1f0np0".into()]), Ok(()));
        let err = t
            .within_bounds(&["ens2f0np0".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("not one of the node's NICs"), "{err}");
        let many: Vec<String> = (0..=MAX_NICS).map(|i| format!("ens{i}")).collect();
        assert!(
            t.within_bounds(&many)
                .unwrap_err()
                .to_string()
                .contains("65 NICs")
        );
        let bad = ["ens1f0np0".to_owned(), "../x".to_owned()];
        assert!(
            t.within_bounds(&bad)
                .unwrap_err()
                .to_string()
                .contains("interface name")
        );
        let mut flood = table("h1");
        let one = flood["ports"][0]["neighbors"][0].clone();
        let junk: Vec<serde_json::Value> = (0..=MAX_NEIGHBORS_PER_NIC)
            .map(|i| {
                let mut n = one.clone();
                n["chassis_id"]["value"] =
                    json!(format!("0e:00:00:00:{:02x}:{:02x}", i / 256, i % 256));
                n
            })
            .collect();
        flood["ports"][0]["neighbors"] = json!(junk);
        let t = HostTable::parse("h1", &flood).unwrap();
        let err = t
            .within_bounds(&["ens1f0np0".into()])
            .unwrap_err()
            .to_string();
        let over = format!("{} neighbours", MAX_NEIGHBORS_PER_NIC + 1);
        assert!(err.contains(&over), "{err}");
    }

    #[test]
    fn tables_of_another_schema_or_shape_are_named_unusable() {
        let mut old = table("h1");
        old["schema"] = json!("spinel.dev/neighbors/v0");
        assert!(
            HostTable::parse("h1", &old)
                .unwrap_err()
                .to_string()
                .contains("v0")
        );
        let mut extra = table("h1");
        extra["ports"][0]["bogus"] = json!(1);
        assert!(
            HostTable::parse("h1", &extra)
                .unwrap_err()
                .to_string()
                .contains("bogus")
        );
        assert!(HostTable::parse("h1", &json!({})).is_err());
    }

    #[test]
    fn the_compact_table_feeds_inference_like_the_full_one() {
        let value = table("h1");
        let full: NeighborTable = serde_json::from_value(value.clone()).unwrap();
        let mut a = FabricBuilder::new();
        a.add_table(&full);
        let mut b = FabricBuilder::new();
        HostTable::parse("h1", &value).unwrap().add_to("h1", &mut b);
        let options = topo_discovery::fabric::InferOptions {
            hosts: vec!["h1".into()],
            ..Default::default()
        };
        assert_eq!(a.infer(&options), b.infer(&options));
    }
}
