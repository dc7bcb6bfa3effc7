//! The lab's one directory: everything a lab makes lives under it (namespace pins, node trees,
//! the control plane's data, logs, kubeconfigs), so a lab that crashed is swept by the next
//! `up` or by `down` without guessing.
//!
//! One lab at a time: its supervisor holds an exclusive `flock` on `lab.lock` for its whole
//! life. Processes are found by session: the supervisor starts a new session before it starts
//! anything, every process it starts stays in it, and the session ID is recorded in `lab.json`
//! first; a sweep kills what is left of that session.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::layout::Plan;

/// Default state directory: on tmpfs, so a reboot (which also drops the namespaces) clears it.
pub const DEFAULT_DIR: &str = "/run/spinel-lab";

/// The entries a lab makes under its directory; a sweep removes exactly these.
const ENTRIES: [&str; 10] = [
    "netns",
    "pods",
    "fabric.svg",
    "nodes",
    "k8s",
    "logs",
    "kubeconfigs",
    "switches",
    "lab.json",
    "status.json",
];

/// What `lab.json` records: enough to find everything a lab started.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabRecord {
    /// Always `spinel-lab`: a directory without it is not swept.
    pub kind: String,
    /// The supervisor's PID, which is also its session ID.
    pub session: i32,
    /// The fabric.
    pub plan: Plan,
}

/// The lab's directory.
#[derive(Clone, Debug)]
pub struct StateDir {
    root: PathBuf,
}

/// The lock of a lab: held by its supervisor, or by `down` while it sweeps.
pub struct LabLock {
    _lock: Flock<File>,
}

impl StateDir {
    /// The directory at `root`, which must be absolute and not a system directory.
    pub fn new(root: impl Into<PathBuf>) -> anyhow::Result<Self> {
        let root: PathBuf = root.into();
        if !root.is_absolute() || root.components().count() < 3 {
            bail!(
                "state directory {} must be an absolute path at least two levels deep \
                 (the lab removes what it made there)",
                root.display()
            );
        }
        Ok(Self { root })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// Namespace pins.
    pub fn netns(&self) -> PathBuf {
        self.root.join("netns")
    }
    /// Per-node trees (sysfs, CNI state, leases).
    pub fn nodes(&self) -> PathBuf {
        self.root.join("nodes")
    }
    /// Per-pod files of the main job (CNI configurations and results).
    pub fn pods(&self) -> PathBuf {
        self.root.join("pods")
    }
    /// The fabric's picture, as `lab status` last drew it.
    pub fn svg_file(&self) -> PathBuf {
        self.root.join("fabric.svg")
    }
    /// Per-switch files (neighbour tables).
    pub fn switches(&self) -> PathBuf {
        self.root.join("switches")
    }
    /// The control plane's data.
    pub fn k8s(&self) -> PathBuf {
        self.root.join("k8s")
    }
    /// Every process's log.
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// Credentials of each component.
    pub fn kubeconfigs(&self) -> PathBuf {
        self.root.join("kubeconfigs")
    }
    /// The admin kubeconfig (what `kubectl --kubeconfig` takes to look around).
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.k8s().join("admin.kubeconfig")
    }
    /// The supervisor's progress and the components' states.
    pub fn status_file(&self) -> PathBuf {
        self.root.join("status.json")
    }
    fn record_file(&self) -> PathBuf {
        self.root.join("lab.json")
    }
    fn lock_file(&self) -> PathBuf {
        self.root.join("lab.lock")
    }

    /// Takes the lab's lock, creating the directory (mode 0700); `Ok(None)` when a supervisor
    /// holds it.
    pub fn try_lock(&self) -> anyhow::Result<Option<LabLock>> {
        fs::create_dir_all(&self.root)
            .with_context(|| format!("create {}", self.root.display()))?;
        fs::set_permissions(
            &self.root,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )?;
        loop {
            let file = File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(self.lock_file())
                .with_context(|| format!("open {}", self.lock_file().display()))?;
            let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => lock,
                Err((_, nix::Error::EWOULDBLOCK)) => return Ok(None),
                Err((_, e)) => return Err(e).context("lock the lab"),
            };
            // A sweep unlinks the lock file while holding it: locking a file that is no longer
            // the one at the path locks nothing, so try again.
            let same = fs::metadata(self.lock_file())
                .is_ok_and(|m| lock.metadata().is_ok_and(|l| l.ino() == m.ino()));
            if same {
                return Ok(Some(LabLock { _lock: lock }));
            }
        }
    }

    /// Waits up to `timeout` for the lock (a supervisor shutting down).
    pub fn lock_within(&self, timeout: Duration) -> anyhow::Result<Option<LabLock>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(lock) = self.try_lock()? {
                return Ok(Some(lock));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The record of the lab in this directory, if any.
    pub fn record(&self) -> anyhow::Result<Option<LabRecord>> {
        match fs::read(self.record_file()) {
            Ok(bytes) => {
                let record: LabRecord = serde_json::from_slice(&bytes)
                    .with_context(|| format!("{} is damaged", self.record_file().display()))?;
                if record.kind != "spinel-lab" {
                    bail!(
                        "{} is not a Spinel lab's record",
                        self.record_file().display()
                    );
                }
                Ok(Some(record))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("read {}", self.record_file().display())),
        }
    }

    /// Writes the record (before the lab starts anything).
    pub fn write_record(&self, _lock: &LabLock, record: &LabRecord) -> anyhow::Result<()> {
        write_atomically(&self.record_file(), &serde_json::to_vec_pretty(record)?)
    }

    /// Writes `status.json`.
    pub fn write_status(&self, status: &impl Serialize) -> anyhow::Result<()> {
        write_atomically(&self.status_file(), &serde_json::to_vec_pretty(status)?)
    }

    /// Removes everything a previous lab left: its processes (by session), its namespaces, its
    /// files. Only the entries a lab makes are removed; the directory itself goes when empty.
    pub fn sweep(&self, _lock: &LabLock) -> anyhow::Result<Swept> {
        let mut swept = Swept::default();
        if let Some(record) = self.record()? {
            swept.processes = kill_session(record.session)?;
        }
        swept.namespaces = crate::namespaces::sweep_namespaces(&self.netns())?;
        for entry in ENTRIES {
            let path = self.root.join(entry);
            let removed = match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => fs::remove_dir_all(&path),
                Ok(_) => fs::remove_file(&path),
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => Err(e),
            };
            removed.with_context(|| format!("remove {}", path.display()))?;
            swept.files += 1;
        }
        Ok(swept)
    }

    /// Removes the lock file and the directory, once swept (the lock is given up with it).
    pub fn remove(&self, lock: LabLock) -> anyhow::Result<()> {
        fs::remove_file(self.lock_file()).ok();
        drop(lock);
        match fs::remove_dir(&self.root) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| {
                format!(
                    "{} is not empty after the sweep: something else was put there",
                    self.root.display()
                )
            }),
        }
    }
}

/// What a sweep removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Swept {
    /// Processes killed.
    pub processes: usize,
    /// Namespaces unpinned.
    pub namespaces: usize,
    /// Top-level entries removed.
    pub files: usize,
}

/// Kills every process of session `session` but the caller, and waits until they are gone.
fn kill_session(session: i32) -> anyhow::Result<usize> {
    let me = std::process::id() as i32;
    let members: Vec<i32> = session_members(session)?
        .into_iter()
        .filter(|&pid| pid != me)
        .collect();
    for &pid in &members {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while session_members(session)?.iter().any(|&p| p != me) {
        if Instant::now() >= deadline {
            bail!("processes of the lab's session {session} survive SIGKILL");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(members.len())
}

/// PIDs whose session ID is `session`, zombies excluded.
pub fn session_members(session: i32) -> anyhow::Result<Vec<i32>> {
    let mut members = Vec::new();
    for entry in fs::read_dir("/proc").context("read /proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some((state, sid)) = process_stat(pid)
            && state != 'Z'
            && sid == session
        {
            members.push(pid);
        }
    }
    Ok(members)
}

/// A process's state letter and session ID (fields 3 and 6 of `/proc/PID/stat`), while it
/// exists.
pub fn process_stat(pid: i32) -> Option<(char, i32)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    // rest = state ppid pgrp session ...
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    Some((state, fields.get(3)?.parse().ok()?))
}

/// Writes `path` through a temporary file and a rename, so readers never see half of it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_with_mode(path, bytes, 0o644)
}

/// Writes `path` atomically, readable by its owner only (credentials).
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_with_mode(path, bytes, 0o600)
}

fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut file = File::options()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .with_context(|| format!("create {}", tmp.display()))?;
    file.write_all(bytes)?;
    drop(file);
    fs::rename(&tmp, path).with_context(|| format!("write {}", path.display()))
}
