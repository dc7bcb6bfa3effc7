//! The fabric model: from neighbour tables to tiers, rail groups, miswiring and every output.
//!
//! Feed tables into a [`FabricBuilder`] (order never matters), call [`FabricBuilder::infer`],
//! and derive outputs from the one [`Fabric`]:
//!
//! - [`labels::node_labels`]: Kubernetes node labels (`fabric.spinel.dev/tier-1`, ...),
//! - [`volcano::hypernodes`]: Volcano `HyperNode` objects, a strict tree,
//! - [`kueue::topology`]: a Kueue `Topology`,
//! - [`slurm::topology_conf`]: Slurm `topology.conf` (tree plugin),
//! - [`dot::render`]: Graphviz DOT,
//! - [`json::document`]: the whole model as JSON, with the miswiring report.
//!
//! The rules (tiers, leaf groups, rails, ids) are explained in `docs/fabric-model.md`.

mod domains;
mod infer;
mod ingest;
mod model;
mod report;

pub mod dot;
pub mod json;
pub mod kueue;
pub mod labels;
pub mod names;
pub mod slurm;
pub mod synthetic;
pub mod volcano;
pub mod yaml;

pub use ingest::{AdvertisedPort, FabricBuilder};
pub use model::{
    Domain, DomainIdx, Fabric, Finding, FindingKind, Host, HostIdx, LinkEnd, LinkKind, Nic,
    NicLink, PortRef, Severity, Switch, SwitchIdx, SwitchLink,
};
pub use report::tier_name;

use spinel_wire::neighbor::NeighborTable;

/// How NICs are assigned to rails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RailKey {
    /// Rail = NIC name: `ens1f0np0` is the same rail on every host. Right when hosts share a
    /// hardware layout (the usual case), and robust to a host missing a NIC.
    #[default]
    NicName,
    /// Rail = position of the NIC in the host's NIC list (natural name order): for fleets whose
    /// NIC names differ between hosts.
    NicOrder,
}

/// Inference settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InferOptions {
    /// How NICs map to rails.
    pub rail_key: RailKey,
}

/// Infers the fabric from a set of tables (a convenience over [`FabricBuilder`]).
pub fn infer<'a>(
    tables: impl IntoIterator<Item = &'a NeighborTable>,
    options: &InferOptions,
) -> Fabric {
    let mut builder = FabricBuilder::new();
    for t in tables {
        builder.add_table(t);
    }
    builder.infer(options)
}
