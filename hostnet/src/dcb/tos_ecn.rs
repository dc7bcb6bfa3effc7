//! The RoCE side of a NIC's QoS that dcbnl does not carry: the ToS byte RoCE connections get
//! and DCQCN's ECN switches, where the RDMA stack exposes them.
//!
//! - rdma_cm's default ToS: `<configfs>/rdma_cm/<ibdev>/ports/<port>/default_roce_tos`. The
//!   device's directory exists only once someone created it (`mkdir`, as `cma_roce_tos` does);
//!   reading never creates it, so an absent directory is "cannot read", with the fix.
//! - MLNX_OFED's `<sysfs>/class/infiniband/<ibdev>/tc/<port>/traffic_class` (absent upstream).
//! - DCQCN: `<sysfs>/class/net/<nic>/ecn/roce_{rp,np}/enable/<prio>` (mlx5).
//!
//! Roots are parameters: tests point them at fake trees; `/sys/class/net` shows the mounting
//! namespace's devices, not the calling thread's.

use std::io;
use std::path::{Path, PathBuf};

/// Where a ToS value was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoceTos {
    /// The ToS byte.
    pub tos: u8,
    /// The file it came from.
    pub source: PathBuf,
}

/// Why a RoCE setting could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RoceError {
    /// The netdev has no RDMA device.
    #[error("{netdev} has no RDMA device ({path} is missing or empty)")]
    NoRdmaDevice {
        /// The netdev.
        netdev: String,
        /// Where RDMA devices were looked for.
        path: String,
    },
    /// The stack does not expose the setting here.
    #[error("{what} of {netdev} is not exposed: none of {tried} exists{hint}")]
    NotExposed {
        /// The setting.
        what: &'static str,
        /// The netdev.
        netdev: String,
        /// The files tried.
        tried: String,
        /// What would expose it.
        hint: String,
    },
    /// A file could not be read or parsed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The failure.
        #[source]
        source: io::Error,
    },
}

/// The RDMA devices (`mlx5_0`, ...) whose parent is `netdev`'s device, sorted.
pub fn rdma_devices(sysfs: &Path, netdev: &str) -> Result<Vec<String>, RoceError> {
    let dir = sysfs
        .join("class/net")
        .join(netdev)
        .join("device/infiniband");
    let mut devs: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(source) => {
            return Err(RoceError::Io {
                path: dir.display().to_string(),
                source,
            });
        }
    };
    devs.sort();
    if devs.is_empty() {
        return Err(RoceError::NoRdmaDevice {
            netdev: netdev.to_owned(),
            path: dir.display().to_string(),
        });
    }
    Ok(devs)
}

/// The ToS byte RoCE traffic of `netdev` (port 1 of its first RDMA device) gets.
pub fn roce_tos(sysfs: &Path, configfs: &Path, netdev: &str) -> Result<RoceTos, RoceError> {
    let devs = rdma_devices(sysfs, netdev)?;
    let mut tried = Vec::new();
    for dev in &devs {
        let candidates = [
            configfs
                .join("rdma_cm")
                .join(dev)
                .join("ports/1/default_roce_tos"),
            sysfs
                .join("class/infiniband")
                .join(dev)
                .join("tc/1/traffic_class"),
        ];
        for path in candidates {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let tos = parse_tos(&text).ok_or_else(|| RoceError::Io {
                        path: path.display().to_string(),
                        source: io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{:?} is not a ToS value", text.trim()),
                        ),
                    })?;
                    return Ok(RoceTos { tos, source: path });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    tried.push(path.display().to_string());
                }
                Err(source) => {
                    return Err(RoceError::Io {
                        path: path.display().to_string(),
                        source,
                    });
                }
            }
        }
    }
    Err(RoceError::NotExposed {
        what: "the RoCE ToS",
        netdev: netdev.to_owned(),
        tried: tried.join(", "),
        hint: format!(
            " (mkdir {}/rdma_cm/{} exposes rdma_cm's default_roce_tos)",
            configfs.display(),
            devs.first().map(String::as_str).unwrap_or("<ibdev>")
        ),
    })
}

/// `106`, or OFED's `Global tclass=106`.
fn parse_tos(text: &str) -> Option<u8> {
    let t = text.trim();
    let t = t.rsplit('=').next().unwrap_or(t).trim();
    t.parse().ok()
}

/// Priorities with DCQCN's reaction point and notification point both enabled.
pub fn ecn_priorities(sysfs: &Path, netdev: &str) -> Result<Vec<u8>, RoceError> {
    let base = sysfs.join("class/net").join(netdev).join("ecn");
    let mut enabled = Vec::new();
    for p in 0..8u8 {
        let mut both = true;
        for role in ["roce_rp", "roce_np"] {
            let path = base.join(role).join("enable").join(p.to_string());
            match std::fs::read_to_string(&path) {
                Ok(text) => both &= text.trim() == "1",
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(RoceError::NotExposed {
                        what: "DCQCN ECN",
                        netdev: netdev.to_owned(),
                        tried: path.display().to_string(),
                        hint: String::from(" (mlx5 exposes it; other drivers through devlink)"),
                    });
                }
                Err(source) => {
                    return Err(RoceError::Io {
                        path: path.display().to_string(),
                        source,
                    });
                }
            }
        }
        if both {
            enabled.push(p);
        }
    }
    Ok(enabled)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let ib = t
            .path()
            .join("sys/class/net/ens1f0np0/device/infiniband/mlx5_0");
        std::fs::create_dir_all(ib).unwrap();
        std::fs::create_dir_all(t.path().join("sys/class/net/veth0")).unwrap();
        t
    }

    #[test]
    fn tos_from_rdma_cm_then_ofed_then_cannot_read() {
        let t = tree();
        let (sys, cfg) = (t.path().join("sys"), t.path().join("cfg"));
        let e = roce_tos(&sys, &cfg, "ens1f0np0").unwrap_err().to_string();
        assert!(e.contains("mkdir") && e.contains("rdma_cm/mlx5_0"), "{e}");
        let ofed = sys.join("class/infiniband/mlx5_0/tc/1");
        std::fs::create_dir_all(&ofed).unwrap();
        std::fs::write(ofed.join("traffic_class"), "Global tclass=160\n").unwrap();
        assert_eq!(roce_tos(&sys, &cfg, "ens1f0np0").unwrap().tos, 160);
        let cm = cfg.join("rdma_cm/mlx5_0/ports/1");
        std::fs::create_dir_all(&cm).unwrap();
        std::fs::write(cm.join("default_roce_tos"), "106\n").unwrap();
        let tos = roce_tos(&sys, &cfg, "ens1f0np0").unwrap();
        assert_eq!((tos.tos, tos.source), (106, cm.join("default_roce_tos")));
        let e = roce_tos(&sys, &cfg, "veth0").unwrap_err();
        assert!(matches!(e, RoceError::NoRdmaDevice { .. }), "{e}");
    }

    #[test]
    fn ecn_needs_both_points() {
        let t = tree();
        let sys = t.path().join("sys");
        assert!(ecn_priorities(&sys, "ens1f0np0").is_err());
        for role in ["roce_rp", "roce_np"] {
            let d = sys
                .join("class/net/ens1f0np0/ecn")
                .join(role)
                .join("enable");
            std::fs::create_dir_all(&d).unwrap();
            for p in 0..8 {
                let on = p == 3 || (p == 5 && role == "roce_rp");
                std::fs::write(d.join(p.to_string()), if on { "1\n" } else { "0\n" }).unwrap();
            }
        }
        assert_eq!(ecn_priorities(&sys, "ens1f0np0").unwrap(), vec![3]);
    }
}
