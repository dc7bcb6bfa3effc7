//! The `spinel` CNI's node settings (`/etc/spinel/cni.json`) as the agent reads them: to
//! validate the ConfigMap the installer copies to the node ([`crate::cni_install`]) and to find
//! the CNI's journal for the VF and IPAM metrics ([`crate::metrics`]).
//!
//! The agent cannot link the CNI's own parser (`spinel-cni` is a binary crate), so this is its
//! schema, key for key: the same keys, types and checks as `cni/src/settings.rs`.
//! `tests/netns/tests/deploy_install_cni.rs` proves the key sets equal and the real `spinel`
//! loading every file this accepts.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Where the CNI reads its settings unless [`PATH_ENV`] says otherwise.
pub const DEFAULT_PATH: &str = "/etc/spinel/cni.json";

/// The CNI's (and the agent's) variable naming another settings file.
pub const PATH_ENV: &str = "SPINEL_CNI_SETTINGS";

/// The CNI's default journal directory.
pub const DEFAULT_STATE_DIR: &str = "/run/spinel/cni";

/// The keys of the settings file, in the CNI's order.
pub const KEYS: [&str; 9] = [
    "stateDir",
    "sysfsRoot",
    "deviceInfoDir",
    "lockTimeoutMs",
    "ipamTimeoutMs",
    "logFile",
    "logLevel",
    "roceInfoDir",
    "recordVfRequestsTo",
];

/// A log level the CNI knows.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `error` (sriov-cni's `panic` too).
    #[serde(alias = "panic")]
    Error,
    /// `warn` (sriov-cni's `warning` too).
    #[serde(alias = "warning")]
    Warn,
    /// `info`.
    Info,
    /// `debug`.
    Debug,
}

/// The settings file; every key optional, unknown keys refused, as the CNI reads it. `None`
/// is a key left out: only `logFile` and `recordVfRequestsTo` may also be `null`, as for the
/// CNI, whose other fields are not optional.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct CniSettings {
    /// Journal, claims and locks.
    #[serde(deserialize_with = "present")]
    pub state_dir: Option<PathBuf>,
    /// Root of the sysfs tree.
    #[serde(deserialize_with = "present")]
    pub sysfs_root: Option<PathBuf>,
    /// Directory device-info files must live under.
    #[serde(deserialize_with = "present")]
    pub device_info_dir: Option<PathBuf>,
    /// VF lock timeout.
    #[serde(deserialize_with = "present")]
    pub lock_timeout_ms: Option<u64>,
    /// IPAM delegate timeout.
    #[serde(deserialize_with = "present")]
    pub ipam_timeout_ms: Option<u64>,
    /// Log file.
    pub log_file: Option<PathBuf>,
    /// Default log level.
    #[serde(deserialize_with = "present")]
    pub log_level: Option<LogLevel>,
    /// Where RoCE details are published.
    #[serde(deserialize_with = "present")]
    pub roce_info_dir: Option<PathBuf>,
    /// Dry run: record VF attribute requests here.
    pub record_vf_requests_to: Option<PathBuf>,
}

/// A key that is there must hold a value (`null` is refused, as the CNI refuses it).
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// Settings the CNI would refuse.
#[derive(Debug, thiserror::Error)]
pub enum CniSettingsError {
    /// Unreadable.
    #[error("cannot read the CNI settings {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Not JSON, an unknown key, a wrong type.
    #[error("the CNI settings {path} are invalid: {reason} (keys: {keys})", keys = KEYS.join(", "))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl CniSettings {
    /// Parses and checks `bytes` (read from `path`, for messages) as the CNI would.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, CniSettingsError> {
        let invalid = |reason: String| CniSettingsError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let settings: Self = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
        for (name, dir) in [
            ("stateDir", &settings.state_dir),
            ("sysfsRoot", &settings.sysfs_root),
            ("deviceInfoDir", &settings.device_info_dir),
            ("roceInfoDir", &settings.roce_info_dir),
            ("recordVfRequestsTo", &settings.record_vf_requests_to),
        ] {
            if dir.as_ref().is_some_and(|d| !d.is_absolute()) {
                return Err(invalid(format!("{name} must be an absolute path")));
            }
        }
        Ok(settings)
    }

    /// Reads the file at `path`; a missing file means the CNI's defaults, as for the CNI.
    pub fn load(path: &Path) -> Result<Self, CniSettingsError> {
        match std::fs::read(path) {
            Ok(bytes) => Self::parse(path, &bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(CniSettingsError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// The file the CNI reads: `$SPINEL_CNI_SETTINGS` or the default.
    pub fn path_from_env() -> PathBuf {
        std::env::var_os(PATH_ENV)
            .filter(|p| !p.is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_PATH), PathBuf::from)
    }

    /// The journal directory the CNI uses with these settings.
    pub fn state_dir(&self) -> PathBuf {
        self.state_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_parses_and_a_bad_one_is_named() {
        let p = Path::new("cni.json");
        let s = CniSettings::parse(
            p,
            br#"{"stateDir":"/run/x","sysfsRoot":"/sys","deviceInfoDir":"/d","lockTimeoutMs":5,
                "ipamTimeoutMs":6,"logFile":"/l","logLevel":"debug","roceInfoDir":"/r",
                "recordVfRequestsTo":"/v"}"#,
        )
        .unwrap();
        assert_eq!(s.state_dir(), PathBuf::from("/run/x"));
        assert_eq!(s.log_level, Some(LogLevel::Debug));
        let err = CniSettings::parse(p, br#"{"stateDri":"/x"}"#).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("stateDri") && msg.contains("stateDir"),
            "{msg}"
        );
        assert!(CniSettings::parse(p, br#"{"stateDir":"rel"}"#).is_err());
        assert!(CniSettings::parse(p, br#"{"logLevel":"loud"}"#).is_err());
        assert!(CniSettings::parse(p, br#"{"stateDir":null}"#).is_err());
        assert!(CniSettings::parse(p, br#"{"logFile":null,"logLevel":"warning"}"#).is_ok());
        assert!(CniSettings::parse(p, b"[]").is_err());
        assert_eq!(
            CniSettings::parse(p, b"{}").unwrap().state_dir(),
            PathBuf::from(DEFAULT_STATE_DIR)
        );
    }
}
