//! The state journal: what each attachment changed, written before the change is made, so any
//! later DEL, GC or ADD can undo it, even after a crash.
//!
//! Layout under the state directory (root only, 0700):
//! - `attachments/<containerID>/<ifname>.json`: one [`AttachmentRecord`] per attachment;
//! - `vfs/<pci>.json`: which attachment holds a VF ([`Claim`]);
//! - `locks/<pci>.lock`: the VF's lock, held with `flock` for the whole operation (the kernel
//!   drops it if the process dies).
//!
//! Every file is written to a temporary name, synced, renamed into place, and the directory
//! synced. Path components come only from validated container IDs, interface names and PCI
//! addresses.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hostnet::netlink::VfSettings;
use hostnet::netns::NsId;
use hostnet::sriov::{PciAddress, is_valid_ifname};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use spinel_wire::MacAddr;

use crate::spec::env::is_valid_container_id;

/// The record layout version this build writes.
pub const SCHEMA: u32 = 1;

/// Identifies an attachment: the runtime's (container ID, interface name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentKey {
    /// `CNI_CONTAINERID`.
    pub container_id: String,
    /// `CNI_IFNAME`.
    pub ifname: String,
}

impl AttachmentKey {
    /// True when both parts are safe to use in paths.
    pub fn is_valid(&self) -> bool {
        is_valid_container_id(&self.container_id) && is_valid_ifname(&self.ifname)
    }
}

impl std::fmt::Display for AttachmentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.container_id, self.ifname)
    }
}

/// How far an ADD got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The intent is recorded; the system may be partly changed.
    Prepared,
    /// ADD finished and returned its result.
    Attached,
}

/// Everything needed to undo one attachment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachmentRecord {
    /// Layout version ([`SCHEMA`]).
    pub schema: u32,
    /// The attachment.
    pub key: AttachmentKey,
    /// Network name from the configuration.
    pub network: String,
    /// `CNI_NETNS` at ADD.
    pub netns: Option<PathBuf>,
    /// Identity of that namespace at ADD: a path reused by a later pod is not ours.
    pub netns_id: Option<NsId>,
    /// `CNI_ARGS` at ADD, replayed to the IPAM plugin on DEL (whereabouts reads the pod there).
    pub cni_args: Option<String>,
    /// How far ADD got.
    pub phase: Phase,
    /// The network configuration exactly as ADD received it (replayed to IPAM on DEL).
    pub config: Value,
    /// The device and its original state.
    pub device: DeviceRecord,
    /// ADD's result, in ADD's version, once attached.
    pub result: Option<Value>,
}

/// The device an attachment uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum DeviceRecord {
    /// An SR-IOV VF moved into the pod.
    Vf(VfRecord),
    /// A macvlan created on the PF inside the pod (shared RDMA device).
    Macvlan(MacvlanRecord),
}

impl DeviceRecord {
    /// The RDMA devices the attachment uses and whether they moved into the pod.
    pub fn rdma(&self) -> (&[String], bool) {
        match self {
            DeviceRecord::Vf(v) => (&v.rdma_devices, v.rdma_exclusive),
            DeviceRecord::Macvlan(m) => (&m.rdma_devices, false),
        }
    }
}

/// A macvlan attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MacvlanRecord {
    /// The PF netdev it sits on.
    pub master: String,
    /// The PF's RDMA devices (shared by every pod on the PF).
    #[serde(default)]
    pub rdma_devices: Vec<String>,
}

/// A VF and the state it had in the host before the attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VfRecord {
    /// VF PCI address.
    pub pci: PciAddress,
    /// PF netdev name.
    pub pf: String,
    /// VF index on the PF.
    pub index: u32,
    /// Host netdev name before ADD.
    pub host_name: String,
    /// MAC before ADD.
    pub host_mac: Option<MacAddr>,
    /// MTU before ADD.
    pub host_mtu: u32,
    /// Alias before ADD (ADD replaces it with a marker naming the VF).
    pub host_alias: Option<String>,
    /// Administrative state before ADD.
    pub host_up: bool,
    /// PF-side attributes before ADD (VLAN, admin MAC, trust, ...), restored on DEL.
    pub pf_before: Option<VfSettings>,
    /// The VF's RDMA devices.
    #[serde(default)]
    pub rdma_devices: Vec<String>,
    /// Whether they move into the pod (the node runs the RDMA subsystem in exclusive mode).
    #[serde(default)]
    pub rdma_exclusive: bool,
}

/// Which attachment holds a VF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Claim {
    /// Layout version.
    pub schema: u32,
    /// The holder.
    pub holder: AttachmentKey,
}

/// The journal failed.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// File system error.
    #[error("state journal: cannot {action} {path}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A record that cannot be read.
    #[error("state journal: {path} is corrupt or from an unknown version: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The lock was not granted in time.
    #[error("{what} is busy: another spinel operation held its lock for more than {waited:?}")]
    LockTimeout {
        /// What is locked (`VF 0000:3b:00.2`, `attachment c1/net1`).
        what: String,
        /// How long we waited.
        waited: Duration,
    },
}

/// A held lock; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// The journal in a state directory.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

impl Journal {
    /// Opens the journal, creating its directories (mode 0700) if needed.
    pub fn open(dir: &Path) -> Result<Self, JournalError> {
        for sub in ["attachments", "vfs", "locks"] {
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
            .join(&key.container_id)
            .join(format!("{}.json", key.ifname))
    }

    fn claim_path(&self, pci: &PciAddress) -> PathBuf {
        self.dir.join("vfs").join(format!("{pci}.json"))
    }

    /// Takes the VF's lock, waiting up to `timeout`.
    pub fn lock_vf(&self, pci: &PciAddress, timeout: Duration) -> Result<Lock, JournalError> {
        self.lock(&format!("{pci}.lock"), format!("VF {pci}"), timeout)
    }

    /// Takes an attachment's own lock (devices that are not shared between attachments, like
    /// a macvlan, need no other).
    pub fn lock_attachment(
        &self,
        key: &AttachmentKey,
        timeout: Duration,
    ) -> Result<Lock, JournalError> {
        self.lock(
            &format!("att.{}.{}.lock", key.container_id, key.ifname),
            format!("attachment {key}"),
            timeout,
        )
    }

    /// Takes the lock that guards `record`'s device.
    pub fn lock_device(
        &self,
        record: &AttachmentRecord,
        timeout: Duration,
    ) -> Result<Lock, JournalError> {
        match &record.device {
            DeviceRecord::Vf(v) => self.lock_vf(&v.pci, timeout),
            DeviceRecord::Macvlan(_) => self.lock_attachment(&record.key, timeout),
        }
    }

    fn lock(&self, file: &str, what: String, timeout: Duration) -> Result<Lock, JournalError> {
        let path = self.dir.join("locks").join(file);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err("open lock", &path))?;
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Lock { _file: file }),
                Err(fs::TryLockError::WouldBlock) if start.elapsed() < timeout => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(JournalError::LockTimeout {
                        what,
                        waited: start.elapsed(),
                    });
                }
                Err(fs::TryLockError::Error(e)) => return Err(io_err("lock", &path)(e)),
            }
        }
    }

    /// The record of `key`, if any.
    pub fn load(&self, key: &AttachmentKey) -> Result<Option<AttachmentRecord>, JournalError> {
        read_json(&self.record_path(key))
    }

    /// Writes `record` atomically and durably.
    pub fn save(&self, record: &AttachmentRecord) -> Result<(), JournalError> {
        let path = self.record_path(&record.key);
        if let Some(parent) = path.parent() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(io_err("create", parent))?;
        }
        write_json(&path, record)
    }

    /// Deletes the record of `key` (and its container directory when empty).
    pub fn remove(&self, key: &AttachmentKey) -> Result<(), JournalError> {
        let path = self.record_path(key);
        remove_file(&path)?;
        remove_dead_temporaries(&path);
        if let Some(parent) = path.parent() {
            // Fails harmlessly while other interfaces of the container remain.
            let _ = fs::remove_dir(parent);
            sync_dir(parent.parent().unwrap_or(parent));
        }
        Ok(())
    }

    /// Deletes temporaries of `key`'s record left by a writer that died mid-write.
    pub fn remove_dead_temporaries(&self, key: &AttachmentKey) {
        remove_dead_temporaries(&self.record_path(key));
    }

    /// Who holds `pci`, if anyone.
    pub fn claim(&self, pci: &PciAddress) -> Result<Option<AttachmentKey>, JournalError> {
        Ok(read_json::<Claim>(&self.claim_path(pci))?.map(|c| c.holder))
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
        let path = self.claim_path(pci);
        if self.claim(pci)?.as_ref() == Some(holder) {
            remove_file(&path)?;
        }
        remove_dead_temporaries(&path);
        Ok(())
    }

    /// Every attachment record (for GC), skipping files that are not records.
    pub fn records(&self) -> Result<Vec<AttachmentRecord>, JournalError> {
        let root = self.dir.join("attachments");
        let mut out = Vec::new();
        for container in fs::read_dir(&root)
            .map_err(io_err("list", &root))?
            .flatten()
        {
            let Ok(entries) = fs::read_dir(container.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "json")
                    && let Some(record) = read_json::<AttachmentRecord>(&path)?
                    && record.key.is_valid()
                {
                    out.push(record);
                }
            }
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
            if let Some(claim) = read_json::<Claim>(&entry.path())? {
                out.push((pci, claim.holder));
            }
        }
        Ok(out)
    }

    /// Deletes temporary files left by writers that were killed mid-write.
    pub fn sweep_temporaries(&self) {
        for sub in ["vfs", "attachments"] {
            let mut dirs = vec![self.dir.join(sub)];
            while let Some(dir) = dirs.pop() {
                let Ok(entries) = fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let path = entry.path();
                    if path.is_dir() {
                        dirs.push(path);
                    } else if let Some(pid) = temp_owner(&path)
                        && !Path::new(&format!("/proc/{pid}")).exists()
                    {
                        let _ = fs::remove_file(&path);
                    }
                }
            }
        }
    }
}

/// Deletes `<target>.tmp.<pid>` files of `target` left by writers that died mid-write.
fn remove_dead_temporaries(target: &Path) {
    let (Some(dir), Some(stem)) = (target.parent(), target.file_stem().and_then(|s| s.to_str()))
    else {
        return;
    };
    let prefix = format!("{stem}.tmp.");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&prefix))
            && let Some(pid) = temp_owner(&path)
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = fs::remove_file(&path);
        }
    }
}

/// The pid in a `name.tmp.<pid>` file name.
fn temp_owner(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let (_, pid) = name.rsplit_once(".tmp.")?;
    pid.parse().ok()
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, JournalError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("read", path)(e)),
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| JournalError::Corrupt {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let schema = value.get("schema").and_then(Value::as_u64);
    if schema != Some(u64::from(SCHEMA)) {
        return Err(JournalError::Corrupt {
            path: path.to_owned(),
            reason: format!("schema {schema:?}, this build reads {SCHEMA}"),
        });
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| JournalError::Corrupt {
            path: path.to_owned(),
            reason: e.to_string(),
        })
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), JournalError> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| io_err("encode", path)(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    let _ = fs::remove_file(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io_err("create", &tmp))?;
    file.write_all(&bytes).map_err(io_err("write", &tmp))?;
    file.sync_all().map_err(io_err("sync", &tmp))?;
    fs::rename(&tmp, path).map_err(io_err("rename into", path))?;
    if let Some(parent) = path.parent() {
        sync_dir(parent);
    }
    Ok(())
}

fn remove_file(path: &Path) -> Result<(), JournalError> {
    match fs::remove_file(path) {
        Ok(()) => {
            if let Some(parent) = path.parent() {
                sync_dir(parent);
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("remove", path)(e)),
    }
}

/// Makes a rename or unlink durable. Failure only weakens durability, never correctness.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cid: &str, ifname: &str) -> AttachmentRecord {
        AttachmentRecord {
            schema: SCHEMA,
            key: AttachmentKey {
                container_id: cid.into(),
                ifname: ifname.into(),
            },
            network: "rail0".into(),
            netns: Some("/var/run/netns/p".into()),
            netns_id: Some(NsId {
                dev: 4,
                ino: 4026532000,
            }),
            cni_args: Some("K8S_POD_NAME=p".into()),
            phase: Phase::Prepared,
            config: serde_json::json!({"cniVersion": "1.0.0"}),
            device: DeviceRecord::Vf(VfRecord {
                pci: "0000:3b:00.2".parse().unwrap(),
                pf: "ens1f0".into(),
                index: 0,
                host_name: "ens1f0v0".into(),
                host_mac: Some("02:00:00:00:00:01".parse().unwrap()),
                host_mtu: 1500,
                host_alias: None,
                host_up: false,
                pf_before: None,
                rdma_devices: Vec::new(),
                rdma_exclusive: false,
            }),
            result: None,
        }
    }

    #[test]
    fn records_and_claims_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let r = record("abc", "net1");
        j.save(&r).unwrap();
        assert_eq!(j.load(&r.key).unwrap(), Some(r.clone()));
        assert_eq!(j.records().unwrap(), vec![r.clone()]);
        let pci: PciAddress = "0000:3b:00.2".parse().unwrap();
        j.set_claim(&pci, &r.key).unwrap();
        assert_eq!(j.claim(&pci).unwrap(), Some(r.key.clone()));
        let other = AttachmentKey {
            container_id: "zzz".into(),
            ifname: "net1".into(),
        };
        j.release_claim(&pci, &other).unwrap();
        assert!(j.claim(&pci).unwrap().is_some(), "only the holder releases");
        j.release_claim(&pci, &r.key).unwrap();
        assert!(j.claim(&pci).unwrap().is_none());
        j.remove(&r.key).unwrap();
        j.remove(&r.key).unwrap();
        assert!(j.load(&r.key).unwrap().is_none());
        assert!(!dir.path().join("attachments/abc").exists());
    }

    #[test]
    fn unknown_schema_is_refused_not_guessed() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let r = record("abc", "net1");
        j.save(&r).unwrap();
        let path = dir.path().join("attachments/abc/net1.json");
        let text = fs::read_to_string(&path)
            .unwrap()
            .replace("\"schema\": 1", "\"schema\": 2");
        fs::write(&path, text).unwrap();
        assert!(matches!(j.load(&r.key), Err(JournalError::Corrupt { .. })));
        fs::write(&path, "{ not json").unwrap();
        assert!(matches!(j.load(&r.key), Err(JournalError::Corrupt { .. })));
    }

    #[test]
    fn lock_times_out_then_frees_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let pci: PciAddress = "0000:3b:00.2".parse().unwrap();
        let held = j.lock_vf(&pci, Duration::from_millis(10)).unwrap();
        let err = j.lock_vf(&pci, Duration::from_millis(30)).unwrap_err();
        assert!(matches!(err, JournalError::LockTimeout { .. }), "{err}");
        drop(held);
        j.lock_vf(&pci, Duration::from_millis(10)).unwrap();
    }

    #[test]
    fn dead_writers_temporaries_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let stale = dir.path().join("vfs/0000:3b:00.2.tmp.999999999");
        let live = dir
            .path()
            .join(format!("vfs/0000:3b:00.3.tmp.{}", std::process::id()));
        fs::write(&stale, "x").unwrap();
        fs::write(&live, "x").unwrap();
        j.sweep_temporaries();
        assert!(!stale.exists());
        assert!(live.exists());
    }
}
