//! Spinel's cluster-facing contract: what one component writes and another reads.
//!
//! - [`labels`]: node label keys (prefix, tier keys, rail keys) and their validation.
//! - [`dra`]: what Spinel's DRA driver publishes (driver, device classes, attribute and taint
//!   names) and what claims and Multus read.
//! - [`crd`]: Spinel's custom resources, `NodeFabric` (a node's report and what the controller
//!   derived for it) and `Fabric` (the controller's summary).
//! - [`scheduling`]: a job's scheduling annotations, what the scheduler publishes on its pods,
//!   and the taint the fabric agent sets on degraded nodes.
//! - [`volcano`]: Volcano's `HyperNode` custom resource.
//! - [`kueue`]: Kueue's `Topology` custom resource.
//!
//! Built-in kinds (the partial `Node` objects carrying labels) are `k8s-openapi`'s.

pub mod crd;
pub mod dra;
pub mod kueue;
pub mod labels;
pub mod scheduling;
pub mod volcano;
