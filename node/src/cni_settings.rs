//! The `spinel` CNI's node settings (`/etc/spinel/cni.json`): where state lives, where sysfs
//! is, how long to wait. These are the operator's (root's) knobs, read from a root-owned file;
//! no network configuration, `args` or `CNI_ARGS` can reach them, which keeps test-only knobs
//! (a fake sysfs root, a private state directory) out of reach of pod configurations.
//!
//! One schema for every reader: the CNI loads it on each call, the agent's `install-cni`
//! validates the ConfigMap with it before anything reaches the node, and the agent's metrics
//! find the CNI's journal through it.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hostnet::sriov::pf_control::PfControl;
use serde::Deserialize;

/// Where the settings file is, unless `SPINEL_CNI_SETTINGS` (set by the runtime's
/// environment, never by a pod) says otherwise.
pub const DEFAULT_PATH: &str = "/etc/spinel/cni.json";

/// Environment variable naming another settings file.
pub const PATH_ENV: &str = "SPINEL_CNI_SETTINGS";

/// Log verbosity (the settings' default, and a network configuration's `logLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Errors only (sriov-cni's `panic` too).
    #[serde(alias = "panic")]
    Error,
    /// Warnings and errors (sriov-cni's `warning` too).
    #[serde(alias = "warning")]
    Warn,
    /// Progress of each attachment.
    Info,
    /// Every kernel operation.
    Debug,
}

/// Node settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Settings {
    /// Journal, claims and locks.
    pub state_dir: PathBuf,
    /// Root of the sysfs tree with the SR-IOV layout.
    pub sysfs_root: PathBuf,
    /// Directory device-info files must live under.
    pub device_info_dir: PathBuf,
    /// How long ADD/DEL wait for a VF lock before answering "try again later".
    pub lock_timeout_ms: u64,
    /// How long an IPAM delegate may run before it is killed (a hung plugin must not hold a VF).
    pub ipam_timeout_ms: u64,
    /// Log file; stderr when unset.
    pub log_file: Option<PathBuf>,
    /// Default log level.
    pub log_level: LogLevel,
    /// Where each attachment's RoCE details (RDMA device, GID index, NCCL hints) are
    /// published for workloads: `<dir>/<containerID>/<ifname>.json` and `.env`.
    pub roce_info_dir: PathBuf,
    /// Dry run for nodes whose kernel has no SR-IOV (labs, CI): record VF attribute requests
    /// in this directory instead of sending them to the kernel. Unset in production.
    pub record_vf_requests_to: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            state_dir: PathBuf::from("/run/spinel/cni"),
            sysfs_root: PathBuf::from("/sys"),
            device_info_dir: PathBuf::from("/var/run/k8s.cni.cncf.io/devinfo"),
            lock_timeout_ms: 10_000,
            ipam_timeout_ms: 30_000,
            log_file: None,
            log_level: LogLevel::Warn,
            roce_info_dir: PathBuf::from("/run/spinel/roce"),
            record_vf_requests_to: None,
        }
    }
}

/// The settings file is unusable. Each message is whole (the CNI answers it as one string).
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The path of the file is relative.
    #[error("cannot use settings file {path}: the path must be absolute")]
    RelativePath {
        /// The path given.
        path: PathBuf,
    },
    /// Not owned by root, or writable by others: refusing to trust it.
    #[error("settings file {path} must be owned by root and not writable by group or others")]
    Untrusted {
        /// The file.
        path: PathBuf,
    },
    /// Unreadable.
    #[error("cannot use settings file {path}: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
    /// Not JSON, an unknown key (named, with the known ones), a wrong type.
    #[error("cannot use settings file {path}: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What serde_json found.
        reason: serde_json::Error,
    },
    /// A directory setting that is not an absolute path.
    #[error("cannot use settings file {path}: {key} must be an absolute path")]
    RelativeSetting {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
    },
}

impl Settings {
    /// The file the CNI reads: `env_path` (the value of [`PATH_ENV`]) unless empty, else
    /// [`DEFAULT_PATH`].
    pub fn path(env_path: Option<&str>) -> &Path {
        Path::new(env_path.filter(|p| !p.is_empty()).unwrap_or(DEFAULT_PATH))
    }

    /// Loads the settings named by `env_path` (or the default path); a missing file means
    /// defaults. The file must be root's and not writable by group or others.
    pub fn load(env_path: Option<&str>) -> Result<Self, SettingsError> {
        let path = Self::path(env_path);
        if !path.is_absolute() {
            return Err(SettingsError::RelativePath {
                path: path.to_owned(),
            });
        }
        let unreadable = |reason| SettingsError::Unreadable {
            path: path.to_owned(),
            reason,
        };
        let meta = match fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(unreadable(e)),
        };
        if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
            return Err(SettingsError::Untrusted {
                path: path.to_owned(),
            });
        }
        Self::parse(path, &fs::read(path).map_err(unreadable)?)
    }

    /// Parses and checks the contents of a settings file (`path` is for messages): unknown
    /// keys, wrong types and relative directories are refused. Ownership is [`Settings::load`]'s
    /// concern: the installer checks a ConfigMap's bytes before they become a root-owned file.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, SettingsError> {
        let malformed = |reason| SettingsError::Malformed {
            path: path.to_owned(),
            reason,
        };
        // An object and nothing else: serde would also take `[]` as a struct of defaults.
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(malformed)?;
        if !value.is_object() {
            return Err(malformed(serde::de::Error::custom(
                "the settings are not a JSON object",
            )));
        }
        let settings: Settings = serde_json::from_value(value).map_err(malformed)?;
        for (key, dir) in [
            ("stateDir", Some(&settings.state_dir)),
            ("sysfsRoot", Some(&settings.sysfs_root)),
            ("deviceInfoDir", Some(&settings.device_info_dir)),
            ("roceInfoDir", Some(&settings.roce_info_dir)),
            (
                "recordVfRequestsTo",
                settings.record_vf_requests_to.as_ref(),
            ),
        ] {
            if dir.is_some_and(|d| !d.is_absolute()) {
                return Err(SettingsError::RelativeSetting {
                    path: path.to_owned(),
                    key,
                });
            }
        }
        Ok(settings)
    }

    /// How VF attributes reach the PF: the kernel, or (dry run on a node without SR-IOV) a
    /// recording.
    pub fn pf_control(&self) -> PfControl {
        match &self.record_vf_requests_to {
            Some(dir) => PfControl::Recorded(dir.clone()),
            None => PfControl::Kernel,
        }
    }

    /// The IPAM delegate timeout.
    pub fn ipam_timeout(&self) -> Duration {
        Duration::from_millis(self.ipam_timeout_ms)
    }

    /// The VF lock timeout.
    pub fn lock_timeout(&self) -> Duration {
        Duration::from_millis(self.lock_timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn missing_file_means_defaults() {
        let s = Settings::load(Some("/nonexistent/spinel.json")).unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.state_dir, PathBuf::from("/run/spinel/cni"));
        assert_eq!(Settings::path(Some("")), Path::new(DEFAULT_PATH));
        assert_eq!(Settings::path(None), Path::new(DEFAULT_PATH));
    }

    #[test]
    fn loads_and_refuses_untrusted_or_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni.json");
        fs::write(
            &path,
            r#"{"stateDir":"/run/x","sysfsRoot":"/tmp/sys","lockTimeoutMs":50}"#,
        )
        .unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let s = Settings::load(path.to_str()).unwrap();
        assert_eq!(s.sysfs_root, PathBuf::from("/tmp/sys"));
        assert_eq!(s.lock_timeout(), Duration::from_millis(50));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(
            Settings::load(path.to_str()),
            Err(SettingsError::Untrusted { .. })
        ));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        fs::write(&path, r#"{"stateDir":"relative"}"#).unwrap();
        assert!(matches!(
            Settings::load(path.to_str()),
            Err(SettingsError::RelativeSetting {
                key: "stateDir",
                ..
            })
        ));
        fs::write(&path, r#"{"bogus":1}"#).unwrap();
        assert!(
            Settings::load(path.to_str())
                .unwrap_err()
                .to_string()
                .contains("bogus")
        );
        assert!(matches!(
            Settings::load(Some("relative.json")),
            Err(SettingsError::RelativePath { .. })
        ));
    }

    #[test]
    fn every_key_parses_and_a_bad_one_is_named_with_the_known_ones() {
        let p = Path::new("cni.json");
        let s = Settings::parse(
            p,
            br#"{"stateDir":"/run/x","sysfsRoot":"/sys","deviceInfoDir":"/d","lockTimeoutMs":5,
                "ipamTimeoutMs":6,"logFile":"/l","logLevel":"debug","roceInfoDir":"/r",
                "recordVfRequestsTo":"/v"}"#,
        )
        .unwrap();
        assert_eq!(s.state_dir, PathBuf::from("/run/x"));
        assert_eq!(s.log_level, LogLevel::Debug);
        assert_eq!(s.pf_control(), PfControl::Recorded("/v".into()));
        let msg = Settings::parse(p, br#"{"stateDri":"/x"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("stateDri") && msg.contains("stateDir") && msg.contains("cni.json"),
            "{msg}"
        );
        for bad in [
            &br#"{"recordVfRequestsTo":"rel"}"#[..],
            br#"{"logLevel":"loud"}"#,
            br#"{"stateDir":null}"#,
            br#"{"lockTimeoutMs":-1}"#,
            b"[]",
            b"{",
        ] {
            assert!(
                Settings::parse(p, bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let s = Settings::parse(p, br#"{"logFile":null,"logLevel":"warning"}"#).unwrap();
        assert_eq!((s.log_file, s.log_level), (None, LogLevel::Warn));
    }
}
