//! Spinel's cluster-facing contract: what one component writes and another reads.
//!
//! - [`labels`]: node label keys (prefix, tier keys, rail keys) and their validation.

pub mod labels;
