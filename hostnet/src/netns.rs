//! Network namespace handles and scoped entry.
//!
//! A [`NetNs`] is an open file descriptor on a namespace (`/proc/<pid>/ns/net`, a bind mount
//! under `/run/netns`, ...). Holding it keeps the namespace alive and lets us compare identities
//! by (device, inode) rather than by path, because paths get reused.
//!
//! [`NetNs::enter`] switches only the calling thread and returns a guard that switches back on
//! drop, also on early return and panic. The guard is `!Send`: it cannot be carried across an
//! `.await` into another worker thread.

use std::fs::{File, OpenOptions};
use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::sched::{CloneFlags, setns};
use serde::{Deserialize, Serialize};

/// `NSFS_MAGIC` from `linux/magic.h`: the filesystem type of namespace files.
const NSFS_MAGIC: i64 = 0x6e73_6673;

/// Mount points of nsfs mounts in our mount namespace (`ip netns add` and runtimes pin network
/// namespaces this way), from `/proc/self/mountinfo`.
fn nsfs_mounts() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            (right.split(' ').next() == Some("nsfs"))
                .then(|| left.split(' ').nth(4))
                .flatten()
                .map(|p| PathBuf::from(unescape_mountinfo(p)))
        })
        .collect()
}

/// Every path through which a network namespace is held alive and reachable from here, each
/// namespace once, cheapest first: `/run/netns`, any nsfs mount, a process or thread living in
/// it, an open descriptor. Lazy: a caller that stops early skips the walks of `/proc`.
pub(crate) fn held_namespace_paths() -> impl Iterator<Item = PathBuf> {
    let named = ["/run/netns", "/var/run/netns"]
        .into_iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
        .map(|e| e.path());
    let pids = || {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            })
    };
    let tasks = pids().flat_map(|pid| {
        let threads = std::fs::read_dir(pid.join("task")).into_iter().flatten();
        std::iter::once(pid.clone())
            .chain(threads.flatten().map(|t| t.path()))
            .map(|t| t.join("ns/net"))
    });
    let descriptors = pids().flat_map(|pid| {
        std::fs::read_dir(pid.join("fd"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|fd| fd.path())
            .filter(|fd| {
                std::fs::read_link(fd).is_ok_and(|l| l.to_string_lossy().starts_with("net:["))
            })
    });
    let mut seen = std::collections::HashSet::new();
    named
        .chain(nsfs_mounts())
        .chain(tasks)
        .chain(descriptors)
        .filter(move |path| {
            std::fs::metadata(path)
                .is_ok_and(|m| m.file_type().is_file() && seen.insert((m.dev(), m.ino())))
        })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mountinfo(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(char::from(c));
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `NS_GET_NSTYPE` from `linux/nsfs.h`: `_IO(0xb7, 0x3)`.
const NS_GET_NSTYPE: libc::c_ulong = 0xb703;

/// The `CLONE_NEW*` type of the namespace `file` refers to (which must be on nsfs).
fn namespace_type(file: &File) -> io::Result<libc::c_int> {
    #[allow(unsafe_code)]
    // SAFETY: NS_GET_NSTYPE takes no argument and only reads the open descriptor, which
    // `file` keeps open for the duration of the call.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), NS_GET_NSTYPE) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// The kernel's short name for a namespace type (as in `/proc/<pid>/ns/`).
fn type_name(kind: libc::c_int) -> &'static str {
    match kind {
        libc::CLONE_NEWNS => "mnt",
        libc::CLONE_NEWUSER => "user",
        libc::CLONE_NEWPID => "pid",
        libc::CLONE_NEWUTS => "uts",
        libc::CLONE_NEWIPC => "ipc",
        libc::CLONE_NEWCGROUP => "cgroup",
        libc::CLONE_NEWNET => "net",
        0x80 => "time",
        _ => "unknown",
    }
}

/// Identity of a namespace: the (device, inode) pair of its nsfs file, and, when recorded,
/// the kernel's namespace cookie. The inode is unique only while the namespace lives: the
/// kernel hands a dead namespace's number to the next one it creates, so an identity kept
/// over time (in a journal) carries the cookie, which is never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NsId {
    /// Device number of the nsfs mount.
    pub dev: u64,
    /// Inode number; unique per namespace while it lives.
    pub ino: u64,
    /// `SO_NETNS_COOKIE`: unique for the life of the system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<u64>,
}

/// `SO_NETNS_COOKIE` from `asm-generic/socket.h` (Linux 5.14).
const SO_NETNS_COOKIE: libc::c_int = 71;

/// The cookie of the calling thread's network namespace, read from a throwaway socket.
fn current_cookie() -> io::Result<u64> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};
    let sock = socket(
        AddressFamily::Unix,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    let mut cookie: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    #[allow(unsafe_code)]
    // SAFETY: `cookie` and `len` are valid for writes, `len` holds the size of `cookie`, and
    // the socket stays open for the call.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(cookie)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Errors from opening, entering or creating namespaces.
#[derive(Debug, thiserror::Error)]
pub enum NetNsError {
    /// The path does not exist.
    #[error("network namespace {path} does not exist")]
    NotFound {
        /// The path that was opened.
        path: PathBuf,
    },
    /// The path exists but is not a namespace (for example an unmounted bind-mount target,
    /// a regular file, a FIFO).
    #[error("{path} is not a network namespace")]
    NotANamespace {
        /// The path that was opened.
        path: PathBuf,
    },
    /// The path is a namespace of another type (mount, user, pid, ...).
    #[error("{path} is a {kind} namespace, not a network namespace")]
    WrongType {
        /// The path that was opened.
        path: PathBuf,
        /// Its type as the kernel names it (`mnt`, `user`, ...).
        kind: String,
    },
    /// Any other failure to open or inspect the path.
    #[error("cannot open network namespace {path}")]
    Open {
        /// The path that was opened.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// `setns(2)` failed.
    #[error("cannot enter network namespace {path}")]
    Enter {
        /// The namespace that could not be entered.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: nix::Error,
    },
    /// Creating or removing a persistent namespace failed.
    #[error("cannot {action} network namespace at {path}")]
    Persist {
        /// What was being done.
        action: &'static str,
        /// The bind-mount path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl NetNsError {
    /// True when the namespace is gone or the path never was one: the cases where a teardown
    /// should carry on with host-side cleanup because the kernel has already reclaimed the pod
    /// side.
    pub fn is_gone(&self) -> bool {
        matches!(
            self,
            Self::NotFound { .. } | Self::NotANamespace { .. } | Self::WrongType { .. }
        )
    }
}

/// An open network namespace.
#[derive(Debug)]
pub struct NetNs {
    file: File,
    id: NsId,
    path: PathBuf,
}

impl NetNs {
    /// Opens the namespace at `path`, checking that it really is a network namespace, without
    /// ever blocking: a FIFO or a device is refused, not waited on, and a namespace file of
    /// another type (`/proc/<pid>/ns/mnt`, `.../user`) is refused before anyone uses it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, NetNsError> {
        let path = path.as_ref();
        let open_err = |source: io::Error| NetNsError::Open {
            path: path.to_owned(),
            source,
        };
        let not_a_namespace = || NetNsError::NotANamespace {
            path: path.to_owned(),
        };
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|source| match source.kind() {
                io::ErrorKind::NotFound => NetNsError::NotFound {
                    path: path.to_owned(),
                },
                _ => open_err(source),
            })?;
        let fs = nix::sys::statfs::fstatfs(&file).map_err(|e| open_err(e.into()))?;
        if fs.filesystem_type().0 as i64 != NSFS_MAGIC {
            return Err(not_a_namespace());
        }
        // Every namespace type lives on nsfs; the kernel tells which one this is.
        let kind = namespace_type(&file).map_err(open_err)?;
        if kind != libc::CLONE_NEWNET {
            return Err(NetNsError::WrongType {
                path: path.to_owned(),
                kind: type_name(kind).to_owned(),
            });
        }
        let meta = file.metadata().map_err(open_err)?;
        Ok(Self {
            file,
            id: NsId {
                dev: meta.dev(),
                ino: meta.ino(),
                cookie: None,
            },
            path: path.to_owned(),
        })
    }

    /// The namespace of the calling thread (not of the process: those can differ).
    pub fn current() -> Result<Self, NetNsError> {
        Self::open("/proc/thread-self/ns/net")
    }

    /// The namespace of process `pid`.
    pub fn from_pid(pid: u32) -> Result<Self, NetNsError> {
        Self::open(format!("/proc/{pid}/ns/net"))
    }

    /// Finds the namespace with identity `id` wherever something keeps it alive: a bind mount
    /// (`/run/netns`, any nsfs mount), a process or thread living in it, or an open descriptor.
    /// `None` means no such namespace is reachable from here; it is gone, or held only from a
    /// mount namespace we cannot see. Costs a walk of `/proc`: for the rare case where the path
    /// a namespace was known by no longer leads to it.
    pub fn find(id: NsId) -> Option<Self> {
        held_namespace_paths()
            .filter(|path| {
                std::fs::metadata(path).is_ok_and(|m| m.dev() == id.dev && m.ino() == id.ino)
            })
            .find_map(|path| Self::open(&path).ok().filter(|ns| ns.is(&id)))
    }

    /// The namespace's cookie (`SO_NETNS_COOKIE`), never reused while the system runs.
    pub fn cookie(&self) -> Result<u64, NetNsError> {
        self.run(current_cookie)?
            .map_err(|source| NetNsError::Open {
                path: self.path.clone(),
                source,
            })
    }

    /// The identity to keep over time: device, inode and cookie.
    pub fn lasting_id(&self) -> Result<NsId, NetNsError> {
        Ok(NsId {
            cookie: Some(self.cookie()?),
            ..self.id
        })
    }

    /// Whether this is the namespace `recorded` identifies: same inode, and the same cookie
    /// when one was recorded (an inode alone may have been handed to a newer namespace).
    pub fn is(&self, recorded: &NsId) -> bool {
        self.id.dev == recorded.dev
            && self.id.ino == recorded.ino
            && recorded
                .cookie
                .is_none_or(|c| self.cookie().is_ok_and(|mine| mine == c))
    }

    /// Identity of this namespace, without its cookie: compare it only with namespaces open
    /// at the same time (see [`NetNs::is`] for identities kept over time).
    pub fn id(&self) -> NsId {
        self.id
    }

    /// The path this handle was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Switches the calling thread into this namespace until the guard is dropped.
    pub fn enter(&self) -> Result<NetNsGuard, NetNsError> {
        let previous = Self::current()?;
        if previous.id == self.id {
            return Ok(NetNsGuard {
                previous: None,
                _not_send: PhantomData,
            });
        }
        setns(self.file.as_fd(), CloneFlags::CLONE_NEWNET).map_err(|source| NetNsError::Enter {
            path: self.path.clone(),
            source,
        })?;
        Ok(NetNsGuard {
            previous: Some(previous),
            _not_send: PhantomData,
        })
    }

    /// Runs `f` with the calling thread inside this namespace, restoring it afterwards.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> Result<T, NetNsError> {
        let _guard = self.enter()?;
        Ok(f())
    }

    /// Runs `f` with a sysfs that describes this namespace, mounted at a private directory it
    /// is given (`/sys/class/net`, the RDMA devices moved here, their GID tables). sysfs shows
    /// the namespace of whoever mounted it, so this mounts a fresh one, as `ip netns exec` does,
    /// from a short-lived thread in its own mount namespace; nothing is visible outside it and
    /// the mount disappears with the thread.
    pub fn with_sysfs<T: Send>(&self, f: impl FnOnce(&Path) -> T + Send) -> Result<T, NetNsError> {
        let dir = std::env::temp_dir().join(format!(
            ".spinel-sysfs.{}.{}",
            std::process::id(),
            self.id.ino
        ));
        let err = |source: io::Error| NetNsError::Persist {
            action: "mount sysfs of",
            path: self.path.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(err)?;
        let ns = &self.file;
        let path = &self.path;
        let result = std::thread::scope(|s| {
            s.spawn(|| -> Result<T, NetNsError> {
                use nix::mount::{MsFlags, mount};
                nix::sched::unshare(CloneFlags::CLONE_NEWNS).map_err(|e| err(e.into()))?;
                // Keep our mounts from propagating back to the host's mount namespace.
                mount(
                    None::<&str>,
                    "/",
                    None::<&str>,
                    MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                    None::<&str>,
                )
                .map_err(|e| err(e.into()))?;
                setns(ns.as_fd(), CloneFlags::CLONE_NEWNET).map_err(|source| {
                    NetNsError::Enter {
                        path: path.clone(),
                        source,
                    }
                })?;
                mount(
                    Some("sysfs"),
                    &dir,
                    Some("sysfs"),
                    MsFlags::empty(),
                    None::<&str>,
                )
                .map_err(|e| err(e.into()))?;
                Ok(f(&dir))
            })
            .join()
            .unwrap_or_else(|_| Err(err(io::Error::other("sysfs thread panicked"))))
        });
        let _ = std::fs::remove_dir(&dir);
        result
    }

    /// Creates a new namespace and pins it with a bind mount at `path` (like `ip netns add`).
    ///
    /// The work happens on a short-lived thread so the caller's namespace never changes.
    pub fn create_at(path: impl AsRef<Path>) -> Result<Self, NetNsError> {
        let path = path.as_ref().to_owned();
        let err = |source: io::Error| NetNsError::Persist {
            action: "create",
            path: path.clone(),
            source,
        };
        File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(err)?;
        let target = path.clone();
        let pinned = std::thread::spawn(move || -> io::Result<()> {
            nix::sched::unshare(CloneFlags::CLONE_NEWNET)?;
            nix::mount::mount(
                Some("/proc/thread-self/ns/net"),
                &target,
                None::<&str>,
                nix::mount::MsFlags::MS_BIND,
                None::<&str>,
            )?;
            Ok(())
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("namespace creation thread panicked")));
        if let Err(e) = pinned {
            let _ = std::fs::remove_file(&path);
            return Err(err(e));
        }
        Self::open(&path)
    }

    /// Unpins a namespace created with [`NetNs::create_at`] and removes the mount point.
    ///
    /// The namespace itself dies once no process or descriptor holds it.
    pub fn remove_at(path: impl AsRef<Path>) -> Result<(), NetNsError> {
        let path = path.as_ref();
        let err = |source: io::Error| NetNsError::Persist {
            action: "remove",
            path: path.to_owned(),
            source,
        };
        match nix::mount::umount2(path, nix::mount::MntFlags::MNT_DETACH) {
            Ok(()) | Err(nix::Error::EINVAL) | Err(nix::Error::ENOENT) => {}
            Err(e) => return Err(err(e.into())),
        }
        match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(err(e)),
        }
    }
}

impl AsFd for NetNs {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

impl AsRawFd for NetNs {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

/// Keeps the calling thread in a namespace; switches it back when dropped.
#[must_use = "the thread leaves the namespace as soon as the guard is dropped"]
pub struct NetNsGuard {
    previous: Option<NetNs>,
    /// Namespaces are per thread: the guard must not move to another one.
    _not_send: PhantomData<*const ()>,
}

impl Drop for NetNsGuard {
    fn drop(&mut self) {
        if let Some(previous) = &self.previous
            && let Err(e) = setns(previous.file.as_fd(), CloneFlags::CLONE_NEWNET)
        {
            // A thread stranded in a pod's namespace would do host work there; stopping the
            // process is the only safe answer.
            eprintln!(
                "fatal: cannot return to network namespace {}: {e}",
                previous.path.display()
            );
            std::process::abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn require_root() {
        assert!(
            nix::unistd::geteuid().is_root(),
            "this test needs root (CAP_SYS_ADMIN) to create namespaces"
        );
    }

    #[test]
    fn missing_path_is_gone() {
        let err = NetNs::open("/nonexistent/spinel/ns").unwrap_err();
        assert!(err.is_gone(), "{err}");
    }

    #[test]
    fn regular_file_is_not_a_namespace() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let err = NetNs::open(f.path()).unwrap_err();
        assert!(matches!(err, NetNsError::NotANamespace { .. }), "{err}");
        assert!(err.is_gone());
    }

    #[test]
    fn a_namespace_is_found_by_identity_after_its_path_is_gone() {
        require_root();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ns");
        let ns = NetNs::create_at(&path).unwrap();
        let id = ns.lasting_id().unwrap();
        // Held by a process living in it, under no path we recorded.
        let holder = ns
            .run(|| std::process::Command::new("sleep").arg("30").spawn())
            .unwrap()
            .unwrap();
        drop(ns);
        NetNs::remove_at(&path).unwrap();
        assert!(NetNs::open(&path).is_err());
        let found = NetNs::find(id).expect("found through the process");
        assert!(found.is(&id));
        // Held only by an open descriptor (ours, just found).
        let mut holder = holder;
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert!(
            NetNs::find(id).is_some_and(|n| n.is(&id)),
            "found through the descriptor"
        );
        drop(found);
        assert!(NetNs::find(id).is_none(), "gone once nothing holds it");
        // A newer namespace may be handed the dead one's inode; the cookie tells them apart.
        let p = dir.path().join("newer");
        let newer = NetNs::create_at(&p).unwrap();
        let same_inode_old_cookie = NsId {
            cookie: id.cookie,
            ..newer.id()
        };
        assert!(!newer.is(&same_inode_old_cookie));
        assert!(newer.is(&newer.lasting_id().unwrap()));
        assert!(
            newer.is(&newer.id()),
            "an identity without cookie compares inodes only"
        );
        drop(newer);
        NetNs::remove_at(&p).unwrap();
        assert_eq!(unescape_mountinfo("/run/a\\040b"), "/run/a b");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // Opening it for reading would wait for a writer forever; open must not.
        let err = NetNs::open(&fifo).unwrap_err();
        assert!(matches!(err, NetNsError::NotANamespace { .. }), "{err}");
    }

    #[test]
    fn namespaces_of_other_types_are_refused() {
        for (path, kind) in [("/proc/self/ns/mnt", "mnt"), ("/proc/self/ns/user", "user")] {
            let err = NetNs::open(path).unwrap_err();
            match &err {
                NetNsError::WrongType { kind: k, .. } => assert_eq!(k, kind, "{err}"),
                other => panic!("{path}: {other}"),
            }
            assert!(err.to_string().contains("not a network namespace"), "{err}");
        }
        NetNs::open("/proc/self/ns/net").unwrap();
    }

    #[test]
    fn enter_restores_thread_on_drop_and_on_panic() {
        require_root();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ns");
        let ns = NetNs::create_at(&path).unwrap();
        let host = NetNs::current().unwrap();
        assert_ne!(ns.id(), host.id());
        {
            let _g = ns.enter().unwrap();
            assert_eq!(NetNs::current().unwrap().id(), ns.id());
        }
        assert_eq!(NetNs::current().unwrap().id(), host.id());

        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = ns.enter().unwrap();
            panic!("boom");
        }));
        assert!(result.is_err());
        assert_eq!(
            NetNs::current().unwrap().id(),
            host.id(),
            "panic must not strand the thread"
        );

        let inside = ns.run(|| NetNs::current().unwrap().id()).unwrap();
        assert_eq!(inside, ns.id());
        drop(ns);
        NetNs::remove_at(&path).unwrap();
        assert!(!path.exists());
        assert!(NetNs::open(&path).unwrap_err().is_gone());
    }

    #[test]
    fn sysfs_as_the_namespace_sees_it() {
        require_root();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ns");
        let ns = NetNs::create_at(&path).unwrap();
        ns.run(|| {
            std::process::Command::new("ip")
                .args([
                    "link", "add", "only0", "type", "veth", "peer", "name", "only1",
                ])
                .status()
        })
        .unwrap()
        .unwrap();
        let inside = ns
            .with_sysfs(|root| root.join("class/net/only0").exists())
            .unwrap();
        assert!(inside, "the namespace's own sysfs lists its links");
        assert!(
            !Path::new("/sys/class/net/only0").exists(),
            "the host's sysfs does not"
        );
        assert_eq!(
            NetNs::current().unwrap().id(),
            NetNs::open("/proc/self/ns/net").unwrap().id()
        );
        drop(ns);
        NetNs::remove_at(&path).unwrap();
    }

    #[test]
    fn from_pid_matches_current_for_main_thread_namespace() {
        let me = NetNs::from_pid(std::process::id()).unwrap();
        let cur = NetNs::current().unwrap();
        assert_eq!(me.id(), cur.id());
    }
}
