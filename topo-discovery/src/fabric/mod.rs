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

mod compact;
mod domains;
mod draft;
mod infer;
mod ingest;
mod model;
mod options;
mod raw;
mod report;

pub mod dot;
pub mod json;
pub mod kueue;
pub mod labels;
pub mod live;
pub mod names;
pub mod slurm;
pub mod synthetic;
pub mod volcano;

pub use compact::CompactTable;
pub use infer::{StandInError, StandInNote, UndecidedStandIn};
pub use ingest::{
    AdvertisedPort, FabricBuilder, NeighborSighting, ObserverFacts, PortHandle, TableHandle,
};
pub use model::{
    Domain, DomainIdx, Fabric, Finding, FindingKind, Host, HostIdx, LinkEnd, LinkKind, Nic,
    NicLink, NicPeer, PortRef, Severity, Switch, SwitchIdx, SwitchLink,
};
pub use options::{FabricNics, InferOptions, NicPattern, RailKey};
pub use report::tier_name;

use spinel_wire::neighbor::NeighborTable;

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
