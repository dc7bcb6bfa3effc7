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

/// A custom resource document of another apiVersion or kind than the type it was read into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected apiVersion {expected_api_version:?} kind {expected_kind:?}, found apiVersion \
     {api_version:?} kind {kind:?}: read the document into the type of its kind"
)]
pub struct TypeMismatch {
    /// The document's apiVersion.
    pub api_version: String,
    /// The document's kind.
    pub kind: String,
    /// What the type holds.
    pub expected_api_version: &'static str,
    /// What the type holds.
    pub expected_kind: &'static str,
}

impl TypeMismatch {
    fn check(
        api_version: &str,
        kind: &str,
        expected_api_version: &'static str,
        expected_kind: &'static str,
    ) -> Result<(), Self> {
        if api_version == expected_api_version && kind == expected_kind {
            return Ok(());
        }
        Err(Self {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            expected_api_version,
            expected_kind,
        })
    }
}
