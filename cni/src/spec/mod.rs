//! The CNI protocol (spec 1.1.0, also 1.0.0, 0.4.0 and 0.3.x): environment, errors, results.

pub mod args;
pub mod env;
pub mod error;
pub mod result;
pub mod version;

pub use error::{CniError, ErrorCode};
pub use version::Version;
