//! What is wrong with the agent's configuration (flags and file), said per field; nothing has
//! started when one is returned.

use std::path::PathBuf;

/// A configuration the agent cannot run with; nothing was started.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `--config` cannot be read.
    #[error("cannot read --config {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `--config` is not the agent's configuration.
    #[error("--config {path}: invalid configuration")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// The label prefix.
    #[error(transparent)]
    Labels(#[from] spinel_api::labels::PrefixError),
    /// The LLDP timers.
    #[error("lldp: invalid timers")]
    Timers(#[source] spinel_wire::lldp::TxTimingError),
    /// Any other field, named in the message.
    #[error("{0}")]
    Invalid(String),
}

/// `Err(ConfigError::Invalid(format!(...)))`.
macro_rules! invalid {
    ($($arg:tt)*) => {
        return Err($crate::config_error::ConfigError::Invalid(format!($($arg)*)))
    };
}
pub(crate) use invalid;
