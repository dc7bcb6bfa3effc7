//! Atomic JSON files and advisory locks, the journal's two primitives.
//!
//! A file is written to `<name>.tmp.<pid>`, which the writer holds locked (`flock`) while it
//! writes and renames; the rename makes the new content appear whole or not at all, which is
//! what `kill -9` at any step needs. Nothing is fsynced: the state directory lives on tmpfs by
//! default, whose content and the kernel's (every VF home, no pod namespaces) both start empty
//! after a reboot (see the README's "State and durability").
//!
//! A temporary whose lock can be taken belongs to a writer that died: its lock went with its
//! descriptors, whatever happened to its pid (a zombie keeps `/proc/<pid>`; a reused pid is
//! someone else). Sweepers decide from the lock, never from the pid.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

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

pub(super) fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// A held lock; released when dropped (or when the process dies), unless a child inherited it.
#[derive(Debug)]
pub struct Lock {
    file: File,
}

impl Lock {
    /// The lock file's descriptor, for a child that must hold the lock until it exits.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }
}

/// Takes the lock file `path`, waiting up to `timeout`; `what` names the resource in errors.
pub(super) fn lock(path: &Path, what: String, timeout: Duration) -> Result<Lock, JournalError> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(io_err("open lock", path))?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Lock { file }),
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
            Err(fs::TryLockError::Error(e)) => return Err(io_err("lock", path)(e)),
        }
    }
}

/// The raw JSON of `path` and its `schema`, if the file exists.
pub(super) fn read_versioned(path: &Path) -> Result<Option<(u64, Value)>, JournalError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("read", path)(e)),
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| corrupt(path, e))?;
    let schema = value
        .get("schema")
        .and_then(Value::as_u64)
        .ok_or_else(|| corrupt(path, "no schema"))?;
    Ok(Some((schema, value)))
}

pub(super) fn corrupt(path: &Path, reason: impl ToString) -> JournalError {
    JournalError::Corrupt {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

/// Reads a file written with `schema`; any other version is refused, not guessed.
pub(crate) fn read_json<T: DeserializeOwned>(
    path: &Path,
    schema: u32,
) -> Result<Option<T>, JournalError> {
    match read_versioned(path)? {
        None => Ok(None),
        Some((found, value)) if found == u64::from(schema) => serde_json::from_value(value)
            .map(Some)
            .map_err(|e| corrupt(path, e)),
        Some((found, _)) => Err(corrupt(
            path,
            format!("schema {found}, this build reads {schema}"),
        )),
    }
}

/// Writes `value` to `path` atomically (see the module documentation).
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), JournalError> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| io_err("encode", path)(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    match write_once(path, &bytes) {
        // A sweeper took our temporary in the instant between its creation and our lock
        // (it cannot tell that moment from a dead writer's file): write it again.
        Err(JournalError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            write_once(path, &bytes)
        }
        other => other,
    }
}

fn write_once(path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    let tmp = temporary(path);
    // A dead writer of ours with the same pid cannot exist while we run; its leftover is stale.
    let _ = fs::remove_file(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io_err("create", &tmp))?;
    file.lock().map_err(io_err("lock", &tmp))?;
    file.write_all(bytes).map_err(io_err("write", &tmp))?;
    fs::rename(&tmp, path).map_err(io_err("rename into", path))
}

fn temporary(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(".tmp.{}", std::process::id()));
    path.with_file_name(name)
}

/// Removes `path`; a missing file is fine.
pub(super) fn remove_file(path: &Path) -> Result<(), JournalError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("remove", path)(e)),
    }
}

/// True for a temporary file name (`<target>.tmp.<pid>`).
pub(super) fn is_temporary(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.rsplit_once(".tmp."))
        .is_some_and(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Deletes the temporary `path` if its writer is gone: its lock can be taken, and the file
/// under that name is still the one we locked. (A writer caught between creating and locking
/// its file finds it gone at its rename and writes again.)
pub(super) fn remove_if_abandoned(path: &Path) {
    let Ok(file) = File::open(path) else { return };
    if file.try_lock().is_err() {
        return;
    }
    let same = match (file.metadata(), fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    };
    if same {
        let _ = fs::remove_file(path);
    }
}

/// Deletes abandoned temporaries in `dir` whose names start with `prefix` (all with "").
pub(super) fn sweep_dir(dir: &Path, prefix: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if is_temporary(&path)
            && entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(prefix))
        {
            remove_if_abandoned(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abandoned_temporaries_are_told_apart_by_their_lock() {
        let dir = tempfile::tempdir().unwrap();
        // A writer that died (here: the file was never locked, as after the process exits).
        let dead = dir.path().join("0000:3b:00.2.json.tmp.999999999");
        fs::write(&dead, "x").unwrap();
        // A writer that is still writing holds its lock, whatever its pid looks like.
        let live = dir.path().join("0000:3b:00.3.json.tmp.1");
        fs::write(&live, "x").unwrap();
        let holder = File::open(&live).unwrap();
        holder.lock().unwrap();
        // A zombie's temporary: its pid exists (ours), but its descriptors, and lock, are gone.
        let zombie = temporary(&dir.path().join("0000:3b:00.4.json"));
        fs::write(&zombie, "x").unwrap();
        sweep_dir(dir.path(), "");
        assert!(!dead.exists());
        assert!(
            !zombie.exists(),
            "a live pid does not keep a dead writer's file"
        );
        assert!(live.exists(), "a locked temporary is a live writer's");
        drop(holder);
        sweep_dir(dir.path(), "");
        assert!(!live.exists());
    }

    #[test]
    fn a_writer_whose_temporary_was_swept_writes_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        // The sweeper's view of the instant between create and lock: an unlocked temporary.
        fs::write(temporary(&path), "").unwrap();
        write_json(&path, &serde_json::json!({"schema": 2})).unwrap();
        assert!(path.exists());
    }

    #[test]
    fn writes_are_whole_and_versions_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_json(&path, &serde_json::json!({"schema": 2, "x": 1})).unwrap();
        let v: Value = read_json(&path, 2).unwrap().unwrap();
        assert_eq!(v["x"], 1);
        assert!(matches!(
            read_json::<Value>(&path, 3),
            Err(JournalError::Corrupt { .. })
        ));
        assert!(!temporary(&path).exists());
        fs::write(&path, "{ not json").unwrap();
        assert!(matches!(
            read_json::<Value>(&path, 2),
            Err(JournalError::Corrupt { .. })
        ));
        assert!(
            read_json::<Value>(&dir.path().join("none"), 2)
                .unwrap()
                .is_none()
        );
    }
}
