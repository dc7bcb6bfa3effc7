//! From the desired state to the API server: [`plan`] finds what differs from what the server
//! holds, [`apply`] writes it while this replica leads.

pub mod apply;
pub mod plan;

pub use apply::{FIELD_MANAGER, Outcome, Writer};
pub use plan::{Observed, Write, plan, plan_changes};
