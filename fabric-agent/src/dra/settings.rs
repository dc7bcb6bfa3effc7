//! The `dra:` section of the agent's file: whether the agent is a DRA driver and what it
//! publishes.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config_error::{ConfigError, invalid};

/// Health reasons that can taint a NIC's devices (the blocking reasons of
/// [`crate::roce_health`]).
pub const TAINT_REASONS: [&str; 7] = [
    "LinkDown",
    "SpeedBelowExpected",
    "MtuBelowExpected",
    "NoNeighbor",
    "WrongLeafGroup",
    "PfcMismatch",
    "NoRoceV2Gid",
];

/// `dra:` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct DraFile {
    enabled: Option<bool>,
    vfs: Option<bool>,
    pfs: Option<bool>,
    inventory_seconds: Option<u64>,
    resync_seconds: Option<u64>,
    evict_on: Option<Vec<String>>,
    kubelet_plugin: Option<bool>,
    plugin_registry: Option<PathBuf>,
    plugin_dir: Option<PathBuf>,
    cdi_dir: Option<PathBuf>,
    state_dir: Option<PathBuf>,
}

/// Where the kubelet plugin lives on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletPlugin {
    /// The kubelet's plugin registration directory (its plugin watcher looks there).
    pub registry: PathBuf,
    /// The plugin's own directory (its gRPC socket, `dra.sock`).
    pub dir: PathBuf,
    /// Where CDI specs are written for the container runtime.
    pub cdi_dir: PathBuf,
    /// The journal of prepared claims.
    pub state_dir: PathBuf,
}

/// What the DRA driver publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dra {
    /// One device per VF with a kernel driver (exclusive use).
    pub vfs: bool,
    /// One device per PF (shared-RDMA setups: pods share the PF's RDMA device).
    pub pfs: bool,
    /// How often sysfs is read again for VFs (`sriov_numvfs` changes, rebinding).
    pub inventory_period: Duration,
    /// The slices are compared with the API server's at least this often.
    pub resync: Duration,
    /// Reasons whose device taint is `NoExecute` (pods using the NIC are evicted) instead of
    /// `NoSchedule`; empty by default.
    pub evict_on: BTreeSet<String>,
    /// The kubelet plugin (registration, NodePrepareResources); `None`: not served.
    pub kubelet_plugin: Option<KubeletPlugin>,
}

impl DraFile {
    /// The settings when enabled (by the file or `--dra`), else `None`.
    pub fn resolve(self, flag: bool) -> Result<Option<Dra>, ConfigError> {
        if !(flag || self.enabled == Some(true)) {
            return Ok(None);
        }
        let evict_on: BTreeSet<String> = self.evict_on.unwrap_or_default().into_iter().collect();
        if let Some(bad) = evict_on
            .iter()
            .find(|r| !TAINT_REASONS.contains(&r.as_str()))
        {
            invalid!(
                "dra.evictOn: {bad:?} is not a health reason (one of {})",
                TAINT_REASONS.join(", ")
            );
        }
        let dra = Dra {
            vfs: self.vfs.unwrap_or(true),
            pfs: self.pfs.unwrap_or(false),
            inventory_period: Duration::from_secs(
                self.inventory_seconds.unwrap_or(5).clamp(1, 600),
            ),
            resync: Duration::from_secs(self.resync_seconds.unwrap_or(300).clamp(10, 86_400)),
            evict_on,
            kubelet_plugin: self.kubelet_plugin.unwrap_or(true).then(|| KubeletPlugin {
                registry: self
                    .plugin_registry
                    .unwrap_or_else(|| PathBuf::from(crate::kubelet_plugin::PLUGINS_REGISTRY)),
                dir: self.plugin_dir.unwrap_or_else(|| {
                    PathBuf::from("/var/lib/kubelet/plugins").join(spinel_api::dra::DRIVER)
                }),
                cdi_dir: self
                    .cdi_dir
                    .unwrap_or_else(|| PathBuf::from("/var/run/cdi")),
                state_dir: self
                    .state_dir
                    .unwrap_or_else(|| PathBuf::from("/run/spinel/dra")),
            }),
        };
        if let Some(p) = &dra.kubelet_plugin {
            for (what, dir) in [
                ("pluginRegistry", &p.registry),
                ("pluginDir", &p.dir),
                ("cdiDir", &p.cdi_dir),
                ("stateDir", &p.state_dir),
            ] {
                if !dir.is_absolute() {
                    invalid!("dra.{what}: {} is not an absolute path", dir.display());
                }
            }
        }
        if !dra.vfs && !dra.pfs {
            invalid!("dra: vfs and pfs are both off: the driver would publish nothing");
        }
        Ok(Some(dra))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_unless_asked_and_bad_values_refused() {
        assert_eq!(DraFile::default().resolve(false).unwrap(), None);
        let d = DraFile::default().resolve(true).unwrap().unwrap();
        assert!(d.vfs && !d.pfs && d.evict_on.is_empty());
        let f = DraFile {
            evict_on: Some(vec!["Bogus".into()]),
            ..DraFile::default()
        };
        assert!(f.resolve(true).is_err());
        let f = DraFile {
            vfs: Some(false),
            ..DraFile::default()
        };
        assert!(f.resolve(true).is_err());
        let f = DraFile {
            enabled: Some(true),
            evict_on: Some(vec!["LinkDown".into()]),
            ..DraFile::default()
        };
        assert!(
            f.resolve(false)
                .unwrap()
                .unwrap()
                .evict_on
                .contains("LinkDown")
        );
    }
}
