//! Node settings: where state lives, where sysfs is, how long to wait. These are the operator's
//! (root's) knobs, read from a root-owned file; no network configuration, `args` or `CNI_ARGS`
//! can reach them, which keeps test-only knobs (a fake sysfs root, a private state directory)
//! out of reach of pod configurations.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hostnet::sriov::pf_control::PfControl;
use serde::Deserialize;

use crate::config::LogLevel;

/// Where the settings file is, unless `SPINEL_CNI_SETTINGS` (set by the runtime's
/// environment, never by a pod) says otherwise.
pub const DEFAULT_PATH: &str = "/etc/spinel/cni.json";

/// Environment variable naming another settings file.
pub const PATH_ENV: &str = "SPINEL_CNI_SETTINGS";

/// Node settings.
#[derive(Debug, Clone, Deserialize)]
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

/// The settings file is unusable.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Not owned by root, or writable by others: refusing to trust it.
    #[error("settings file {path} must be owned by root and not writable by group or others")]
    Untrusted {
        /// The file.
        path: PathBuf,
    },
    /// Unreadable or malformed.
    #[error("cannot use settings file {path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl Settings {
    /// Loads the settings named by `env_path` (or the default path); a missing file means
    /// defaults.
    pub fn load(env_path: Option<&str>) -> Result<Self, SettingsError> {
        let path = Path::new(env_path.filter(|p| !p.is_empty()).unwrap_or(DEFAULT_PATH));
        let invalid = |reason: String| SettingsError::Invalid {
            path: path.to_owned(),
            reason,
        };
        if !path.is_absolute() {
            return Err(invalid("the path must be absolute".into()));
        }
        let meta = match fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(invalid(e.to_string())),
        };
        if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
            return Err(SettingsError::Untrusted {
                path: path.to_owned(),
            });
        }
        let bytes = fs::read(path).map_err(|e| invalid(e.to_string()))?;
        let settings: Settings =
            serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
        for (name, p) in [
            ("stateDir", &settings.state_dir),
            ("sysfsRoot", &settings.sysfs_root),
            ("deviceInfoDir", &settings.device_info_dir),
            ("roceInfoDir", &settings.roce_info_dir),
            (
                "recordVfRequestsTo",
                settings
                    .record_vf_requests_to
                    .as_ref()
                    .unwrap_or(&settings.state_dir),
            ),
        ] {
            if !p.is_absolute() {
                return Err(invalid(format!("{name} must be an absolute path")));
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
        assert_eq!(s.state_dir, PathBuf::from("/run/spinel/cni"));
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
        assert!(Settings::load(path.to_str()).is_err());
        fs::write(&path, r#"{"bogus":1}"#).unwrap();
        assert!(
            Settings::load(path.to_str())
                .unwrap_err()
                .to_string()
                .contains("bogus")
        );
        assert!(Settings::load(Some("relative.json")).is_err());
    }
}
