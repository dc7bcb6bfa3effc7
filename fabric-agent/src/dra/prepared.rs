//! Prepared claims, journaled like the CNI's attachments: what `NodePrepareResources` handed
//! the kubelet for a claim is recorded (schema-versioned, written to a temporary name and
//! renamed) before the claim's CDI spec is written, and the record is removed only after the
//! spec is. So `kill -9` at any point leaves either nothing, or a record that the next
//! `NodeUnprepareResources` (or the next prepare of the same claim) finishes from; a CDI spec
//! with no record (a crash of an older writer) is swept at start.
//!
//! CDI (Container Device Interface) specs give the container the RDMA character devices of
//! its devices: the `uverbsN` node of each device's RDMA device (the VF's in exclusive mode,
//! the PF's in shared mode) and `rdma_cm`. The runtime reads device numbers from the host.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use spinel_api::dra;

/// The journal's schema.
pub const SCHEMA: u32 = 1;

/// The CDI kind of Spinel's devices (`roce.spinel.dev/rdma=<name>`).
pub fn cdi_kind() -> String {
    format!("{}/rdma", dra::DRIVER)
}

/// Why a journal or CDI operation failed.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A claim UID that cannot name a file.
    #[error("claim UID {0:?} is not a UID (hex digits and dashes, at most 64)")]
    BadUid(String),
    /// File I/O.
    #[error("cannot {what} {path}")]
    Io {
        /// What was attempted.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A record that does not parse.
    #[error(
        "the prepared-claim record {path} is unreadable (remove it after checking the node's CDI specs)"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// One prepared device of a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedDevice {
    /// The claim's requests it answers.
    pub requests: Vec<String>,
    /// Its pool (the node).
    pub pool: String,
    /// The device's name in the pool.
    pub device: String,
    /// Its PCI address.
    pub pci: Option<String>,
    /// Its RDMA device.
    pub rdma_device: Option<String>,
    /// The RDMA character devices the container gets.
    pub device_nodes: Vec<String>,
    /// Its CDI device ID, when it has character devices.
    pub cdi_id: Option<String>,
}

/// The record of a prepared claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedClaim {
    /// [`SCHEMA`].
    pub schema: u32,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// Its devices.
    pub devices: Vec<PreparedDevice>,
}

/// The journal and the CDI directory.
#[derive(Debug, Clone)]
pub struct Journal {
    /// Records, one file per claim UID.
    pub state_dir: PathBuf,
    /// CDI specs.
    pub cdi_dir: PathBuf,
}

fn check_uid(uid: &str) -> Result<(), JournalError> {
    if uid.is_empty() || uid.len() > 64 || !uid.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
    {
        return Err(JournalError::BadUid(uid.chars().take(80).collect()));
    }
    Ok(())
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> JournalError {
    let path = path.to_owned();
    move |source| JournalError::Io { what, path, source }
}

/// Writes `bytes` to `path` whole or not at all (temporary name in the same directory, then
/// rename).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    fs::write(&tmp, bytes).map_err(io_err("write", &tmp))?;
    fs::rename(&tmp, path).map_err(io_err("rename into place", path))
}

fn remove(path: &Path) -> Result<(), JournalError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err("remove", path)(e)),
        _ => Ok(()),
    }
}

impl Journal {
    fn record_path(&self, uid: &str) -> PathBuf {
        self.state_dir.join("claims").join(format!("{uid}.json"))
    }

    /// The CDI spec file of claim `uid`.
    pub fn cdi_path(&self, uid: &str) -> PathBuf {
        self.cdi_dir.join(format!("{}-{uid}.json", dra::DRIVER))
    }

    /// The record of claim `uid`, if it was prepared.
    pub fn get(&self, uid: &str) -> Result<Option<PreparedClaim>, JournalError> {
        check_uid(uid)?;
        let path = self.record_path(uid);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| JournalError::Corrupt { path, source }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err("read", &path)(e)),
        }
    }

    /// Every prepared claim, in UID order. A record that cannot be read is an error naming it
    /// (the claim's status would otherwise silently go unreported).
    pub fn list(&self) -> Result<Vec<PreparedClaim>, JournalError> {
        let dir = self.state_dir.join("claims");
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("list", &dir)(e)),
        };
        let mut uids: Vec<String> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let uid = name.strip_suffix(".json")?;
                check_uid(uid).is_ok().then(|| uid.to_owned())
            })
            .collect();
        uids.sort();
        let mut claims = Vec::new();
        for uid in uids {
            claims.extend(self.get(&uid)?);
        }
        Ok(claims)
    }

    /// Records `claim`, then writes its CDI spec (both replaced if present).
    pub fn prepare(&self, claim: &PreparedClaim) -> Result<(), JournalError> {
        check_uid(&claim.uid)?;
        let record = serde_json::to_vec_pretty(claim).unwrap_or_default();
        write_atomic(&self.record_path(&claim.uid), &record)?;
        self.write_cdi(claim)
    }

    /// Writes the CDI spec of a recorded claim (nothing when no device has character devices).
    pub fn write_cdi(&self, claim: &PreparedClaim) -> Result<(), JournalError> {
        let devices: Vec<serde_json::Value> = claim
            .devices
            .iter()
            .filter_map(|d| {
                let id = d.cdi_id.as_ref()?;
                let name = id.rsplit('=').next().unwrap_or(id);
                let nodes: Vec<serde_json::Value> = d
                    .device_nodes
                    .iter()
                    .map(|p| serde_json::json!({"path": p}))
                    .collect();
                Some(serde_json::json!({"name": name, "containerEdits": {"deviceNodes": nodes}}))
            })
            .collect();
        let path = self.cdi_path(&claim.uid);
        if devices.is_empty() {
            return remove(&path);
        }
        let spec =
            serde_json::json!({"cdiVersion": "0.6.0", "kind": cdi_kind(), "devices": devices});
        write_atomic(&path, &serde_json::to_vec_pretty(&spec).unwrap_or_default())
    }

    /// Undoes claim `uid`'s preparation: its CDI spec first, then its record. A claim never
    /// prepared (or already unprepared) is done.
    pub fn unprepare(&self, uid: &str) -> Result<(), JournalError> {
        check_uid(uid)?;
        remove(&self.cdi_path(uid))?;
        remove(&self.record_path(uid))
    }

    /// Removes Spinel's CDI specs that no record explains, and writers' leftover temporaries.
    /// Returns what was removed.
    pub fn sweep(&self) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        let prefix = format!("{}-", dra::DRIVER);
        for dir in [self.cdi_dir.clone(), self.state_dir.join("claims")] {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let orphan = if name.contains(".tmp.") {
                    name.starts_with(&prefix) || dir != self.cdi_dir
                } else if dir == self.cdi_dir {
                    name.strip_prefix(&prefix)
                        .and_then(|r| r.strip_suffix(".json"))
                        .is_some_and(|uid| !self.record_path(uid).exists())
                } else {
                    false
                };
                if orphan && fs::remove_file(e.path()).is_ok() {
                    removed.push(e.path());
                }
            }
        }
        removed
    }
}

/// The `uverbsN` character device of RDMA device `rdma`, from
/// `<sysfs>/class/infiniband_verbs/uverbsN/ibdev`.
pub fn uverbs_of(sysfs_root: &Path, rdma: &str) -> Option<String> {
    let dir = sysfs_root.join("class/infiniband_verbs");
    fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let ibdev = fs::read_to_string(e.path().join("ibdev")).ok()?;
        (name.starts_with("uverbs") && ibdev.trim() == rdma)
            .then(|| format!("/dev/infiniband/{name}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(uid: &str) -> PreparedClaim {
        PreparedClaim {
            schema: SCHEMA,
            namespace: "ns".into(),
            name: "c".into(),
            uid: uid.into(),
            devices: vec![PreparedDevice {
                requests: vec!["rail0".into()],
                pool: "n1".into(),
                device: "vf-0000-3b-00-2".into(),
                pci: Some("0000:3b:00.2".into()),
                rdma_device: Some("mlx5_2".into()),
                device_nodes: vec![
                    "/dev/infiniband/uverbs2".into(),
                    "/dev/infiniband/rdma_cm".into(),
                ],
                cdi_id: Some(format!("{}={uid}-vf-0000-3b-00-2", cdi_kind())),
            }],
        }
    }

    #[test]
    fn prepare_records_then_writes_cdi_and_unprepare_undoes_both_idempotently() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal {
            state_dir: dir.path().join("state"),
            cdi_dir: dir.path().join("cdi"),
        };
        let uid = "0b7c6b7e-1111-2222-3333-444455556666";
        assert_eq!(j.get(uid).unwrap(), None);
        j.prepare(&claim(uid)).unwrap();
        j.prepare(&claim(uid)).unwrap();
        assert_eq!(j.get(uid).unwrap(), Some(claim(uid)));
        let spec: serde_json::Value =
            serde_json::from_slice(&fs::read(j.cdi_path(uid)).unwrap()).unwrap();
        assert_eq!(spec["kind"], "roce.spinel.dev/rdma");
        assert_eq!(spec["devices"][0]["name"], format!("{uid}-vf-0000-3b-00-2"));
        assert_eq!(
            spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"],
            "/dev/infiniband/uverbs2"
        );
        assert_eq!(j.list().unwrap(), vec![claim(uid)]);
        j.unprepare(uid).unwrap();
        j.unprepare(uid).unwrap();
        assert_eq!(j.list().unwrap(), vec![]);
        assert!(!j.cdi_path(uid).exists() && j.get(uid).unwrap().is_none());
        assert!(j.get("../etc/passwd").is_err() && j.unprepare("a/b").is_err());
        // A spec no record explains (and a dead writer's temporary) are swept; others stay.
        fs::write(j.cdi_path("deadbeef"), "{}").unwrap();
        fs::write(j.cdi_dir.join("other-vendor.json"), "{}").unwrap();
        j.prepare(&claim(uid)).unwrap();
        assert_eq!(j.sweep(), vec![j.cdi_path("deadbeef")]);
        assert!(j.cdi_path(uid).exists() && j.cdi_dir.join("other-vendor.json").exists());
    }

    #[test]
    fn uverbs_nodes_are_found_by_their_rdma_device() {
        let dir = tempfile::tempdir().unwrap();
        for (n, dev) in [(0, "mlx5_0"), (7, "mlx5_7")] {
            let d = dir.path().join(format!("class/infiniband_verbs/uverbs{n}"));
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("ibdev"), format!("{dev}\n")).unwrap();
        }
        assert_eq!(
            uverbs_of(dir.path(), "mlx5_7").as_deref(),
            Some("/dev/infiniband/uverbs7")
        );
        assert_eq!(uverbs_of(dir.path(), "mlx5_9"), None);
    }
}
