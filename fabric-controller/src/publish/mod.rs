//! From the desired state to the API server: [`changes`] finds what differs from what the server
//! holds, [`apply`] writes it while this replica leads.

pub mod apply;
pub mod changes;

pub use apply::{FIELD_MANAGER, Outcome, Writer};
pub use changes::{Observed, Write, plan, plan_changes};
