//! Spinel's cluster-facing contract: what one component writes and another reads.
//!
//! - [`labels`]: node label keys (prefix, tier keys, rail keys) and their validation.
//! - [`scheduling`]: a job's scheduling annotations, what the scheduler publishes on its pods,
//!   and the taint the fabric agent sets on degraded nodes.

pub mod labels;
pub mod scheduling;
