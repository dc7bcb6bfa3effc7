//! [`Sandbox`]: uniquely named namespaces and processes, cleaned up on drop and after crashes.

use std::fs;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use hostnet::netns::NetNs;
use nix::sched::CloneFlags;

/// Where sandboxes live: one directory per sandbox, on tmpfs-like `/run`.
pub const SANDBOX_ROOT: &str = "/run/spinel-test";

static SEQUENCE: AtomicU32 = AtomicU32::new(0);

/// A private world of namespaces and processes for one test.
pub struct Sandbox {
    dir: PathBuf,
    children: Vec<Child>,
}

impl Sandbox {
    /// Creates a sandbox named after the test; sweeps leftovers of dead test runs first.
    pub fn new(test: &str) -> Self {
        crate::require_root();
        sweep_leftovers();
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let slug: String = test
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .take(40)
            .collect();
        let dir = Path::new(SANDBOX_ROOT).join(format!("{slug}.{}.{seq}", std::process::id()));
        // Build the directory under a hidden name and rename it into place, so a concurrent
        // sweep never sees a sandbox without its owner record.
        let staging =
            Path::new(SANDBOX_ROOT).join(format!(".staging.{}.{seq}", std::process::id()));
        fs::create_dir_all(staging.join("ns")).expect("create sandbox directory");
        fs::write(
            staging.join("owner"),
            process_identity(std::process::id()).unwrap_or_default(),
        )
        .expect("write sandbox owner");
        fs::rename(&staging, &dir).expect("publish sandbox directory");
        Self {
            dir,
            children: Vec::new(),
        }
    }

    /// The sandbox's scratch directory (state dirs, configs, logs go here).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of the namespace called `name` (whether or not it exists yet).
    pub fn netns_path(&self, name: &str) -> PathBuf {
        self.dir.join("ns").join(name)
    }

    /// Creates the namespace `name` with its loopback up, and returns its path.
    pub fn netns(&self, name: &str) -> PathBuf {
        let path = self.netns_path(name);
        NetNs::create_at(&path).unwrap_or_else(|e| panic!("create netns {name}: {e}"));
        self.run_in(name, "ip", &["link", "set", "lo", "up"]);
        path
    }

    /// Deletes the namespace `name` (its virtual links die with it).
    pub fn delete_netns(&self, name: &str) {
        NetNs::remove_at(self.netns_path(name))
            .unwrap_or_else(|e| panic!("delete netns {name}: {e}"));
    }

    /// A command that will run inside namespace `ns`.
    pub fn command_in(&self, ns: &str, program: &str) -> Command {
        let netns =
            NetNs::open(self.netns_path(ns)).unwrap_or_else(|e| panic!("open netns {ns}: {e}"));
        let mut cmd = Command::new(program);
        // The closure owns the namespace handle, so its fd stays open as long as the command.
        #[allow(unsafe_code)]
        // SAFETY: the closure runs between fork and exec and only calls setns(2), which is
        // async-signal-safe, and allocates nothing (the error is a plain errno).
        unsafe {
            cmd.pre_exec(move || {
                nix::sched::setns(&netns, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
            });
        }
        cmd
    }

    /// Runs `program args` inside `ns` and panics with its output unless it succeeds.
    pub fn run_in(&self, ns: &str, program: &str, args: &[&str]) -> String {
        let out = self.output_in(ns, program, args);
        assert!(
            out.status.success(),
            "`{program} {}` in netns {ns} failed: {}\nstdout: {}\nstderr: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `program args` inside `ns` and returns its output whatever the exit status.
    pub fn output_in(&self, ns: &str, program: &str, args: &[&str]) -> Output {
        self.command_in(ns, program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("spawn {program}: {e}"))
    }

    /// Starts a long-running process that the sandbox kills on drop (and a sweep kills after
    /// a crash).
    pub fn spawn(&mut self, mut cmd: Command) -> u32 {
        let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        let pid = child.id();
        self.record_pid(pid);
        self.children.push(child);
        pid
    }

    /// Records `pid` (with its start time, so a reused pid is never taken for it) as this
    /// sandbox's: it is killed when the sandbox is dropped, also while unwinding from a panic,
    /// and by the sweep after a killed run. For processes whose handle the caller keeps
    /// ([`Sandbox::spawn`] records its own).
    pub fn record_pid(&self, pid: u32) {
        self.record_line(
            "pids",
            &match process_identity(pid) {
                Some(identity) => identity,
                None => return, // Already gone.
            },
        );
    }

    /// Records the cgroup `name` (a directory directly under every cgroup v1 hierarchy and
    /// the unified one, e.g. a node's kubelet root): every process in it or below is killed
    /// with the sandbox's and its directories are removed, on drop and by the sweep after a
    /// killed run.
    pub fn record_cgroup(&self, name: &str) {
        assert!(
            !name.is_empty() && !name.contains('/') && name != "." && name != "..",
            "a cgroup directly under the hierarchies' roots: {name:?}"
        );
        self.record_line("cgroups", name);
    }

    fn record_line(&self, file: &str, line: &str) {
        let mut lines = fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        lines.push_str(&format!("{line}\n"));
        fs::write(self.dir.join(file), lines).expect("record in the sandbox");
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        kill_everything_of(&self.dir);
        clean_dir(&self.dir);
    }
}

/// Kills every process recorded in `dir` that is still the one recorded, every process left
/// in one of its network or mount namespaces (helpers the recorded ones started: an LLDP
/// sender, a plugin's announcement helper, a node's container shims) and every process in its
/// recorded cgroups (a node's containers, which live in namespaces of their own), then waits
/// until they are gone.
fn kill_everything_of(dir: &Path) {
    let cgroups: Vec<String> = fs::read_to_string(dir.join("cgroups"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    // Members first and until none is left: a member may fork while it is being killed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let members: Vec<i32> = cgroups
            .iter()
            .flat_map(|c| cgroup_members(c))
            .filter(|pid| !is_zombie(*pid))
            .collect();
        if members.is_empty() || std::time::Instant::now() > deadline {
            break;
        }
        for pid in members {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let recorded = fs::read_to_string(dir.join("pids")).unwrap_or_default();
    let mut victims: Vec<i32> = recorded
        .lines()
        .filter(|line| {
            line.split_whitespace()
                .next()
                .and_then(|pid| pid.parse::<u32>().ok())
                .and_then(process_identity)
                .is_some_and(|now| now == line.trim())
        })
        .filter_map(|line| line.split_whitespace().next()?.parse().ok())
        .collect();
    victims.extend(holders_of_namespaces(&dir.join("ns")));
    for pid in &victims {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    // SIGKILL is asynchronous: a namespace stays alive until its last process has exited.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while victims
        .iter()
        .any(|pid| Path::new(&format!("/proc/{pid}/ns")).exists() && !is_zombie(*pid))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn is_zombie(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rfind(')').map(|i| s[i + 2..].starts_with('Z')))
        .unwrap_or(true)
}

/// Processes (other than this one) whose network or mount namespace is one of the namespaces
/// bound under `ns_dir`.
pub fn holders_of_namespaces(ns_dir: &Path) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt as _;
    let ours: Vec<(u64, u64)> = fs::read_dir(ns_dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| fs::metadata(e.path()).ok())
                .map(|m| (m.dev(), m.ino()))
                .collect()
        })
        .unwrap_or_default();
    if ours.is_empty() {
        return Vec::new();
    }
    let me = std::process::id() as i32;
    fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| *pid != me)
                .filter(|pid| {
                    ["net", "mnt"].iter().any(|kind| {
                        fs::metadata(format!("/proc/{pid}/ns/{kind}"))
                            .is_ok_and(|m| ours.contains(&(m.dev(), m.ino())))
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Removes sandboxes whose owning test process is gone.
fn sweep_leftovers() {
    let Ok(entries) = fs::read_dir(SANDBOX_ROOT) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        if entry.file_name().to_string_lossy().starts_with(".staging.") {
            continue;
        }
        let owner = fs::read_to_string(dir.join("owner")).unwrap_or_default();
        let alive = owner
            .split_whitespace()
            .next()
            .and_then(|pid| pid.parse::<u32>().ok())
            .and_then(process_identity)
            .is_some_and(|now| now == owner);
        if !alive {
            kill_everything_of(&dir);
            clean_dir(&dir);
        }
    }
}

/// "pid start-time": identifies a process even after its pid is reused.
fn process_identity(pid: u32) -> Option<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22 (start time) counted after the parenthesised command name, which may hold spaces.
    let after_comm = &stat[stat.rfind(')')? + 2..];
    let start = after_comm.split_whitespace().nth(19)?;
    Some(format!("{pid} {start}"))
}

fn clean_dir(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir.join("ns")) {
        for entry in entries.flatten() {
            // Network and mount namespaces alike: unmount the pin, remove the file.
            let _ = NetNs::remove_at(entry.path());
        }
    }
    for cgroup in fs::read_to_string(dir.join("cgroups"))
        .unwrap_or_default()
        .lines()
    {
        remove_cgroup(cgroup);
    }
    let _ = fs::remove_dir_all(dir);
}

/// The cgroup hierarchies mounted under `/sys/fs/cgroup`: every v1 controller's and the unified
/// one on a hybrid host such as this project's machines, or `/sys/fs/cgroup` itself on a
/// unified-only host.
pub fn cgroup_hierarchies() -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.procs").exists() {
        return vec![root.to_owned()];
    }
    let mut found: Vec<PathBuf> = fs::read_dir(root)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.join("cgroup.procs").exists())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Every process in cgroup `name` or below it, in any hierarchy.
pub fn cgroup_members(name: &str) -> Vec<i32> {
    fn walk(dir: &Path, out: &mut Vec<i32>) {
        out.extend(
            fs::read_to_string(dir.join("cgroup.procs"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse::<i32>().ok()),
        );
        if let Ok(entries) = fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    walk(&entry.path(), out);
                }
            }
        }
    }
    let mut pids = Vec::new();
    for hierarchy in cgroup_hierarchies() {
        walk(&hierarchy.join(name), &mut pids);
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Removes cgroup `name` and everything below it from every hierarchy (its processes must be
/// gone: a cgroup with members cannot be removed).
pub fn remove_cgroup(name: &str) {
    fn remove(dir: &Path) {
        if let Ok(entries) = fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    remove(&entry.path());
                }
            }
        }
        let _ = fs::remove_dir(dir);
    }
    for hierarchy in cgroup_hierarchies() {
        remove(&hierarchy.join(name));
    }
}
