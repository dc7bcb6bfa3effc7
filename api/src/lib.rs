//! Spinel's cluster-facing contract: what one component writes and another reads.
//!
//! - [`labels`]: node label keys (prefix, tier keys, rail keys) and their validation.
//! - [`crd`]: Spinel's custom resources, `NodeFabric` (a node's report and what the controller
//!   derived for it) and `Fabric` (the controller's summary).

pub mod crd;
pub mod labels;
