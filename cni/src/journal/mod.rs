//! The state journal: what each attachment changed, written before the change is made, so any
//! later DEL, GC or ADD can undo it, even after a crash.
//!
//! Layout under the state directory (root only, 0700):
//! - `attachments/<digest>.json`: one [`AttachmentRecord`] per attachment, where `<digest>` is
//!   32 hex digits of SHA-256 over the container ID and interface name, so no file name
//!   depends on the length of its input (a container ID may be 256 characters);
//! - `vfs/<pci>.json`: which attachment holds a VF ([`Claim`]);
//! - `releases/<digest>.json`: IPAM releases that failed and are retried ([`PendingRelease`]);
//! - `counters.json`: totals for monitoring ([`Counters`]);
//! - `locks/<pci>.lock`, `locks/att.<digest>.lock`: locks held with `flock` for a whole
//!   operation (the kernel drops them if the process dies).
//!
//! Version 1 kept records at `attachments/<containerID>/<ifname>.json`; they are still read
//! and are moved to the new name the next time they are written.

mod files;
mod record;
mod releases;

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hostnet::sriov::PciAddress;
use sha2::{Digest, Sha256};

pub use files::{JournalError, Lock};
pub(crate) use files::{read_json, write_json};
pub use record::{
    AttachmentKey, AttachmentRecord, Claim, DeviceRecord, MacvlanRecord, Phase, SCHEMA, VfRecord,
};
pub use releases::{Counters, PendingRelease};

use files::{corrupt, io_err, remove_file};

/// The journal in a state directory.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
}

/// The fixed-length name of an attachment's files.
fn digest(key: &AttachmentKey) -> String {
    let mut h = Sha256::new();
    h.update(key.container_id.as_bytes());
    h.update([0]);
    h.update(key.ifname.as_bytes());
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Journal {
    /// Opens the journal, creating its directories (mode 0700) if needed.
    pub fn open(dir: &Path) -> Result<Self, JournalError> {
        for sub in ["attachments", "vfs", "locks", "releases"] {
            let path = dir.join(sub);
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&path)
                .map_err(io_err("create", &path))?;
        }
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn record_path(&self, key: &AttachmentKey) -> PathBuf {
        self.dir
            .join("attachments")
            .join(format!("{}.json", digest(key)))
    }

    /// Where version 1 kept the record; only for keys that are valid path components short
    /// enough for a file name (version 1 could not write a longer one).
    fn legacy_record_path(&self, key: &AttachmentKey) -> Option<PathBuf> {
        (key.is_valid() && key.container_id.len() <= 255).then(|| {
            self.dir
                .join("attachments")
                .join(&key.container_id)
                .join(format!("{}.json", key.ifname))
        })
    }

    fn claim_path(&self, pci: &PciAddress) -> PathBuf {
        self.dir.join("vfs").join(format!("{pci}.json"))
    }

    fn release_path(&self, key: &AttachmentKey) -> PathBuf {
        self.dir
            .join("releases")
            .join(format!("{}.json", digest(key)))
    }

    /// Takes the VF's lock, waiting up to `timeout`.
    pub fn lock_vf(&self, pci: &PciAddress, timeout: Duration) -> Result<Lock, JournalError> {
        let path = self.dir.join("locks").join(format!("{pci}.lock"));
        files::lock(&path, format!("VF {pci}"), timeout)
    }

    /// Takes an attachment's own lock: all a device that no other attachment can take (a
    /// macvlan) needs, and what guards the attachment's pending IPAM release.
    pub fn lock_attachment(
        &self,
        key: &AttachmentKey,
        timeout: Duration,
    ) -> Result<Lock, JournalError> {
        let path = self
            .dir
            .join("locks")
            .join(format!("att.{}.lock", digest(key)));
        files::lock(&path, format!("attachment {key}"), timeout)
    }

    /// The record of `key`, if any.
    pub fn load(&self, key: &AttachmentKey) -> Result<Option<AttachmentRecord>, JournalError> {
        let path = self.record_path(key);
        if let Some(record) = self.read_record(&path)? {
            if record.key != *key {
                return Err(corrupt(&path, format!("holds {} not {key}", record.key)));
            }
            return Ok(Some(record));
        }
        match self.legacy_record_path(key) {
            Some(legacy) => self.read_record(&legacy),
            None => Ok(None),
        }
    }

    /// Reads a record of either version.
    fn read_record(&self, path: &Path) -> Result<Option<AttachmentRecord>, JournalError> {
        match files::read_versioned(path)? {
            None => Ok(None),
            Some((2, value)) => serde_json::from_value(value)
                .map(Some)
                .map_err(|e| corrupt(path, e)),
            Some((1, value)) => serde_json::from_value::<record::RecordV1>(value)
                .map(|v1| Some(v1.upgrade()))
                .map_err(|e| corrupt(path, e)),
            Some((other, _)) => Err(corrupt(
                path,
                format!("schema {other}, this build reads 1 and {SCHEMA}"),
            )),
        }
    }

    /// Writes `record` atomically (and retires its version 1 file, if any).
    pub fn save(&self, record: &AttachmentRecord) -> Result<(), JournalError> {
        write_json(&self.record_path(&record.key), record)?;
        if let Some(legacy) = self.legacy_record_path(&record.key)
            && legacy.exists()
        {
            self.remove_legacy(&legacy)?;
        }
        Ok(())
    }

    fn remove_legacy(&self, legacy: &Path) -> Result<(), JournalError> {
        remove_file(legacy)?;
        if let Some(parent) = legacy.parent() {
            // Fails harmlessly while other interfaces of the container remain.
            let _ = fs::remove_dir(parent);
        }
        Ok(())
    }

    /// Deletes the record of `key`, in either layout.
    pub fn remove(&self, key: &AttachmentKey) -> Result<(), JournalError> {
        let path = self.record_path(key);
        remove_file(&path)?;
        self.remove_dead_temporaries(key);
        if let Some(legacy) = self.legacy_record_path(key) {
            self.remove_legacy(&legacy)?;
        }
        Ok(())
    }

    /// Deletes temporaries of `key`'s record left by a writer that died mid-write.
    pub fn remove_dead_temporaries(&self, key: &AttachmentKey) {
        files::sweep_dir(&self.dir.join("attachments"), &digest(key));
    }

    /// Who holds `pci`, if anyone.
    pub fn claim(&self, pci: &PciAddress) -> Result<Option<AttachmentKey>, JournalError> {
        Ok(read_json::<Claim>(&self.claim_path(pci), SCHEMA)?.map(|c| c.holder))
    }

    /// Records that `holder` holds `pci`.
    pub fn set_claim(&self, pci: &PciAddress, holder: &AttachmentKey) -> Result<(), JournalError> {
        write_json(
            &self.claim_path(pci),
            &Claim {
                schema: SCHEMA,
                holder: holder.clone(),
            },
        )
    }

    /// Drops the claim on `pci` if `holder` holds it.
    pub fn release_claim(
        &self,
        pci: &PciAddress,
        holder: &AttachmentKey,
    ) -> Result<(), JournalError> {
        if self.claim(pci)?.as_ref() == Some(holder) {
            remove_file(&self.claim_path(pci))?;
        }
        files::sweep_dir(&self.dir.join("vfs"), pci.as_str());
        Ok(())
    }

    /// The files of every attachment record, in either layout, sorted (cheap: nothing is read).
    pub fn record_files(&self) -> Result<Vec<PathBuf>, JournalError> {
        let root = self.dir.join("attachments");
        let mut out = Vec::new();
        for entry in fs::read_dir(&root)
            .map_err(io_err("list", &root))?
            .flatten()
        {
            let path = entry.path();
            let files: Vec<PathBuf> = if path.is_dir() {
                fs::read_dir(&path)
                    .map(|d| d.flatten().map(|e| e.path()).collect())
                    .unwrap_or_default()
            } else {
                vec![path]
            };
            out.extend(
                files
                    .into_iter()
                    .filter(|f| f.extension().is_some_and(|e| e == "json")),
            );
        }
        out.sort();
        Ok(out)
    }

    /// The record in `file` (one of [`Journal::record_files`]), if it still is one.
    pub fn record_at(&self, file: &Path) -> Result<Option<AttachmentRecord>, JournalError> {
        Ok(self.read_record(file)?.filter(|r| r.key.is_valid()))
    }

    /// Every attachment record (for GC), in either layout, skipping files that are not records.
    pub fn records(&self) -> Result<Vec<AttachmentRecord>, JournalError> {
        let mut out = Vec::new();
        for file in self.record_files()? {
            out.extend(self.record_at(&file)?);
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Every claim, as (VF, holder).
    pub fn claims(&self) -> Result<Vec<(PciAddress, AttachmentKey)>, JournalError> {
        let root = self.dir.join("vfs");
        let mut out = Vec::new();
        for entry in fs::read_dir(&root)
            .map_err(io_err("list", &root))?
            .flatten()
        {
            let name = entry.file_name();
            let Some(pci) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse().ok())
            else {
                continue;
            };
            if let Some(claim) = read_json::<Claim>(&entry.path(), SCHEMA)? {
                out.push((pci, claim.holder));
            }
        }
        Ok(out)
    }

    /// Deletes temporary files left by writers that were killed mid-write.
    pub fn sweep_temporaries(&self) {
        for sub in ["vfs", "attachments", "releases"] {
            let dir = self.dir.join(sub);
            files::sweep_dir(&dir, "");
            // Version 1 container directories.
            if let Ok(entries) = fs::read_dir(&dir) {
                for entry in entries.flatten().filter(|e| e.path().is_dir()) {
                    files::sweep_dir(&entry.path(), "");
                }
            }
        }
        files::sweep_dir(&self.dir, "counters");
    }
}

#[cfg(test)]
mod tests;
