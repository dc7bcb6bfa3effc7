//! Topology-aware gang placement for RoCE spine/leaf GPU clusters, without I/O.
//!
//! - [`request`]: a gang's request (nested levels of rank blocks, each confined to a tier),
//!   read from pod annotations by [`annotations`] (Spinel, Kueue TAS and Volcano dialects).
//! - [`cluster`]: nodes in a tree of fabric domains built from tier labels, with free capacity
//!   per domain kept incrementally.
//! - [`plan`]: the planner: smallest domain that fits, best-fit, contiguous groups, soft levels
//!   widened one tier at a time and recorded; [`explain`] says why a gang waits.
//! - [`engine`]: reservations with timeouts, rank assignment, re-planning when a node goes
//!   away or degrades.
//! - [`spread`]: placement quality; [`floor`]: a proven floor under the best spread;
//!   [`sim`]: the simulator comparing policies.

pub mod annotations;
mod capacity;
pub mod cluster;
pub mod engine;
pub mod explain;
pub mod floor;
mod placer;
pub mod plan;
pub mod publish;
mod repair;
pub mod request;
pub mod sim;
pub mod spread;
pub mod tier;

pub use cluster::{Cluster, ClusterOptions, DomainId, NodeId, NodeSpec};
pub use engine::{
    AssignError, Assignment, Engine, EngineOptions, EngineStats, Feasible, GangView, HoldLimits,
    RankState, Released,
};
pub use plan::{Fallback, Plan, PlanError, PlanOptions, plan};
pub use request::{Dialect, GangId, GangRequest, Level, Mode, RequestError};
pub use spread::Spread;
pub use tier::Tier;
