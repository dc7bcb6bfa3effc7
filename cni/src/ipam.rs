//! Delegation to an IPAM plugin (host-local, static, whereabouts, ...) found on `CNI_PATH`.
//!
//! The delegate gets the complete network configuration on stdin, as the spec requires. When
//! it does not speak the configuration's version (Debian's plugins stop at 1.0.0), the newest
//! version both sides speak is used instead; the delegate's `VERSION` answer is cached per
//! binary (path, inode, size, mtime) in the state directory, so the extra exec happens once.
//!
//! A call can be started and collected later ([`Ipam::start`], [`Pending::wait`]) so the
//! delegate runs while the kernel moves the VF: both are mostly waiting.
//!
//! A delegate is never killed because spinel was: it inherits the lock of the device its call
//! is about ([`Target::held`]) and holds it until it exits, so whoever recovers after spinel's
//! death (DEL, GC, the next ADD) waits for the delegate to finish before asking it to undo
//! what it did. Killing it instead could cut a plugin's own bookkeeping in half: host-local
//! creates a lease file before it writes whose lease it is, and a lease nobody owns is never
//! released.

use std::fs;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::journal::{Lock, read_json, write_json};
use crate::spec::result::CniResult;
use crate::spec::version::negotiate;
use crate::spec::{CniError, ErrorCode, Version};

/// Which attachment a delegated call is about (not always the invocation's: GC and self-healing
/// release addresses of other attachments).
#[derive(Debug, Clone)]
pub struct Target<'a> {
    /// `CNI_CONTAINERID` for the delegate.
    pub container_id: &'a str,
    /// `CNI_IFNAME` for the delegate.
    pub ifname: &'a str,
    /// `CNI_NETNS` for the delegate.
    pub netns: Option<&'a Path>,
    /// `CNI_ARGS` for the delegate (passed through verbatim).
    pub cni_args: Option<&'a str>,
    /// The lock of the device the call is about, which the delegate inherits and holds until
    /// it exits.
    pub held: Option<&'a Lock>,
}

impl Target<'_> {
    /// A target for node-wide calls (VERSION, STATUS, GC).
    pub const NODE: Target<'static> = Target {
        container_id: "",
        ifname: "",
        netns: None,
        cni_args: None,
        held: None,
    };
}

/// Set in every delegate's environment: a `spinel` that sees it was named as its own IPAM
/// plugin (directly or through a link) and refuses at once instead of recursing.
pub const DELEGATE_ENV: &str = "SPINEL_IPAM_DELEGATE";

/// How long a delegate may run before it is killed, unless the node settings say otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// An IPAM plugin binary and the versions it speaks.
#[derive(Debug, Clone)]
pub struct Ipam {
    kind: String,
    binary: PathBuf,
    cni_path: Vec<PathBuf>,
    versions: Vec<String>,
    timeout: Duration,
}

/// A delegated call in flight.
#[must_use = "a started delegate must be waited for"]
pub struct Pending<'a> {
    ipam: &'a Ipam,
    command: &'static str,
    child: Child,
    deadline: Instant,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VersionCache {
    schema: u32,
    binary: PathBuf,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    versions: Vec<String>,
}

fn failed(kind: &str, what: impl std::fmt::Display) -> CniError {
    CniError::new(ErrorCode::Ipam, format!("IPAM plugin {kind}: {what}"))
}

impl Ipam {
    /// Finds the plugin `kind` on `cni_path` and learns its versions (cached in `state_dir`).
    pub fn find(kind: &str, cni_path: &[PathBuf], state_dir: &Path) -> Result<Self, CniError> {
        let binary = cni_path
            .iter()
            .map(|dir| dir.join(kind))
            .find(|p| fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0))
            .ok_or_else(|| {
                failed(
                    kind,
                    format!("not found on CNI_PATH ({})", join_paths(cni_path)),
                )
                .with_detail("install it next to spinel or fix ipam.type")
            })?;
        let mut ipam = Self {
            kind: kind.to_owned(),
            binary,
            cni_path: cni_path.to_vec(),
            versions: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        };
        ipam.versions = ipam.cached_versions(state_dir)?;
        Ok(ipam)
    }

    /// Kills the delegate if it runs longer than `timeout` (a hung plugin must not hold a VF).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The plugin's name (`ipam.type`).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// True if the plugin speaks `version` (STATUS and GC exist only from 1.1.0).
    pub fn speaks(&self, version: Version) -> bool {
        self.versions.iter().any(|v| v == version.as_str())
    }

    fn cached_versions(&self, state_dir: &Path) -> Result<Vec<String>, CniError> {
        let meta = fs::metadata(&self.binary).map_err(|e| failed(&self.kind, e))?;
        let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        let cache_path = state_dir
            .join("delegates")
            .join(format!("{}.json", self.kind));
        if let Ok(Some(c)) = read_json::<VersionCache>(&cache_path, crate::journal::SCHEMA)
            && c.binary == self.binary
            && c.ino == meta.ino()
            && c.size == meta.size()
            && c.mtime_ns == mtime_ns
        {
            return Ok(c.versions);
        }
        let query = serde_json::json!({"cniVersion": Version::CURRENT.as_str()});
        let answer = self
            .spawn("VERSION", &query, &Target::NODE)?
            .wait()?
            .ok_or_else(|| failed(&self.kind, "VERSION printed nothing"))?;
        let versions: Vec<String> = answer
            .get("supportedVersions")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .ok_or_else(|| failed(&self.kind, "VERSION answer has no supportedVersions"))?;
        let _ = fs::create_dir_all(cache_path.parent().unwrap_or(state_dir));
        let cache = VersionCache {
            schema: crate::journal::SCHEMA,
            binary: self.binary.clone(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns,
            versions: versions.clone(),
        };
        // A failed cache write costs one more VERSION call next time, nothing else.
        let _ = write_json(&cache_path, &cache);
        Ok(versions)
    }

    /// The configuration to hand the delegate: ours, with `cniVersion` lowered if it must be.
    fn config_for(&self, config: &Value, ours: Version) -> Result<Value, CniError> {
        let version = negotiate(ours, &self.versions).ok_or_else(|| {
            CniError::new(
                ErrorCode::IncompatibleVersion,
                format!(
                    "IPAM plugin {} speaks {:?}; none of them is {ours} or older and supported by spinel",
                    self.kind, self.versions
                ),
            )
        })?;
        let mut config = config.clone();
        if version != ours
            && let Some(obj) = config.as_object_mut()
        {
            obj.insert("cniVersion".into(), Value::String(version.as_str().into()));
            // The delegate reads prevResult in its own version's format (Debian's static
            // refuses CHECK without one); one that does not convert is left out.
            if let Some(prev) = obj.remove("prevResult")
                && let Ok(result) = crate::spec::result::CniResult::from_json(&prev)
            {
                obj.insert("prevResult".into(), result.to_json(version));
            }
        }
        Ok(config)
    }

    /// Starts `command` (ADD, DEL, CHECK) for `target`; collect it with [`Pending::wait`].
    pub fn start(
        &self,
        command: &'static str,
        config: &Value,
        ours: Version,
        target: &Target<'_>,
    ) -> Result<Pending<'_>, CniError> {
        let config = self.config_for(config, ours)?;
        self.spawn(command, &config, target)
    }

    /// [`Ipam::start`] on a thread of its own while `work` runs on this one: starting a process
    /// waits until it has executed its program (milliseconds on a busy node), which would
    /// otherwise delay `work`, the device's move. Returns both outcomes.
    pub fn start_beside<'i, T>(
        ipam: Option<&'i Ipam>,
        command: &'static str,
        config: &Value,
        ours: Version,
        target: &Target<'_>,
        work: impl FnOnce() -> T,
    ) -> (Option<Result<Pending<'i>, CniError>>, T) {
        std::thread::scope(|s| {
            let started = ipam.map(|i| s.spawn(move || i.start(command, config, ours, target)));
            let done = work();
            let started = started.map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(CniError::new(
                        ErrorCode::Ipam,
                        "the thread starting the IPAM plugin panicked",
                    ))
                })
            });
            (started, done)
        })
    }

    /// ADD: allocates addresses.
    pub fn add(
        &self,
        config: &Value,
        ours: Version,
        target: &Target<'_>,
    ) -> Result<CniResult, CniError> {
        self.start("ADD", config, ours, target)?.result()
    }

    /// DEL: releases addresses (idempotent in every IPAM plugin).
    pub fn del(&self, config: &Value, ours: Version, target: &Target<'_>) -> Result<(), CniError> {
        self.start("DEL", config, ours, target)?.wait().map(drop)
    }

    /// CHECK: verifies the allocation.
    pub fn check(
        &self,
        config: &Value,
        ours: Version,
        target: &Target<'_>,
    ) -> Result<(), CniError> {
        self.start("CHECK", config, ours, target)?.wait().map(drop)
    }

    /// STATUS or GC, forwarded only when the plugin speaks 1.1.0 (older ones do not have them).
    pub fn forward_if_supported(
        &self,
        command: &'static str,
        config: &Value,
    ) -> Result<bool, CniError> {
        if !self.speaks(Version::V1_1_0) {
            return Ok(false);
        }
        self.spawn(command, config, &Target::NODE)?
            .wait()
            .map(|_| true)
    }

    fn spawn(
        &self,
        command: &'static str,
        config: &Value,
        target: &Target<'_>,
    ) -> Result<Pending<'_>, CniError> {
        let stdin = serde_json::to_vec(config).map_err(|e| failed(&self.kind, e))?;
        let mut cmd = Command::new(&self.binary);
        cmd.env(DELEGATE_ENV, "1")
            .env("CNI_COMMAND", command)
            .env("CNI_CONTAINERID", target.container_id)
            .env("CNI_IFNAME", target.ifname)
            .env(
                "CNI_NETNS",
                target
                    .netns
                    .map(|p| p.as_os_str().to_owned())
                    .unwrap_or_default(),
            )
            .env("CNI_PATH", join_paths(&self.cni_path))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match target.cni_args {
            Some(args) => cmd.env("CNI_ARGS", args),
            None => cmd.env_remove("CNI_ARGS"),
        };
        if let Some(lock) = target.held {
            inherit(&mut cmd, lock.raw_fd());
        }
        let mut child = cmd.spawn().map_err(|e| {
            failed(
                &self.kind,
                format!("cannot run {}: {e}", self.binary.display()),
            )
        })?;
        if let Some(mut pipe) = child.stdin.take() {
            // A delegate that exits without reading stdin closes the pipe; its exit status
            // and output say why.
            let _ = pipe.write_all(&stdin);
        }
        Ok(Pending {
            ipam: self,
            command,
            child,
            deadline: Instant::now() + self.timeout,
        })
    }
}

impl Pending<'_> {
    /// Waits for the delegate and returns what it printed, or its error. A delegate still
    /// running at the deadline is killed and reported.
    pub fn wait(mut self) -> Result<Option<Value>, CniError> {
        let kind = self.ipam.kind.clone();
        let command = self.command;
        let (status, stdout, stderr) = match self.collect() {
            Ok(out) => out,
            Err(e) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(failed(&kind, format!("{command}: {e}")));
            }
        };
        let stderr = String::from_utf8_lossy(&stderr);
        if !stderr.trim().is_empty() {
            tracing::debug!(plugin = %kind, command, stderr = %stderr.trim(), "delegate stderr");
        }
        let answer: Option<Value> = serde_json::from_slice(&stdout).ok();
        if status.success() {
            return Ok(answer);
        }
        // Delegates report errors as CNI error JSON on stdout.
        let code = answer
            .as_ref()
            .and_then(|a| a.get("code"))
            .and_then(Value::as_u64);
        let msg = answer
            .as_ref()
            .and_then(|a| a.get("msg"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("exited with {status}; stderr: {}", stderr.trim()));
        let code = if code == Some(11) {
            ErrorCode::TryAgainLater
        } else {
            ErrorCode::Ipam
        };
        Err(CniError::new(
            code,
            format!("IPAM plugin {kind} {command} failed: {msg}"),
        ))
    }

    /// Reads stdout and stderr to their end and reaps the delegate, all before the deadline.
    fn collect(&mut self) -> Result<(ExitStatus, Vec<u8>, Vec<u8>), String> {
        let timeout = self.ipam.timeout;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let as_file = |fd: Option<std::os::fd::OwnedFd>| fd.map(fs::File::from);
        let mut pipes = [
            as_file(self.child.stdout.take().map(Into::into)),
            as_file(self.child.stderr.take().map(Into::into)),
        ];
        while pipes.iter().any(Option::is_some) {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("still running after {timeout:?}; killed"));
            }
            let mut fds: Vec<PollFd<'_>> = pipes
                .iter()
                .flatten()
                .map(|p| PollFd::new(p.as_fd(), PollFlags::POLLIN))
                .collect();
            let wait = PollTimeout::try_from(left.as_millis().saturating_add(1))
                .unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, wait) {
                Ok(_) | Err(nix::Error::EINTR) => {}
                Err(e) => return Err(format!("poll: {e}")),
            }
            // Only pipes with something to say (data, or its end) are read: a read on a quiet
            // pipe would wait for the delegate, past the deadline.
            let ready: Vec<bool> = fds
                .iter()
                .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                .collect();
            drop(fds);
            let mut ready = ready.into_iter();
            for (slot, buf) in pipes.iter_mut().zip([&mut out, &mut err]) {
                let Some(pipe) = slot else { continue };
                if !ready.next().unwrap_or(false) {
                    continue;
                }
                let mut chunk = [0u8; 8192];
                match pipe.read(&mut chunk) {
                    Ok(0) => *slot = None,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(format!("read its output: {e}")),
                }
            }
        }
        // Both pipes are closed: it has exited, or is about to.
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok((status, out, err)),
                Ok(None) if Instant::now() < self.deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(None) => return Err(format!("still running after {timeout:?}; killed")),
                Err(e) => return Err(format!("wait: {e}")),
            }
        }
    }

    /// Waits for an ADD and decodes its result.
    pub fn result(self) -> Result<CniResult, CniError> {
        let kind = self.ipam.kind.clone();
        let answer = self
            .wait()?
            .ok_or_else(|| failed(&kind, "ADD printed no result"))?;
        CniResult::from_json(&answer)
            .map_err(|e| failed(&kind, format!("ADD result does not decode: {e}")))
    }
}

/// Keys runtimes put in `CNI_ARGS` that IPAM plugins may need to find an allocation.
const RUNTIME_ARGS: [&str; 5] = [
    "IgnoreUnknown",
    "K8S_POD_NAMESPACE",
    "K8S_POD_NAME",
    "K8S_POD_INFRA_CONTAINER_ID",
    "K8S_POD_UID",
];

/// The `CNI_ARGS` a release retries with after the recorded ones failed: only well-formed
/// pairs of the keys runtimes set, then none at all. A value the runtime forwarded and the
/// plugin rejects (`K8S_POD_NAME=a=b`, `IP=not-an-ip`) must not keep an address allocated:
/// plugins release by container ID and interface name.
pub fn fallback_arguments(recorded: Option<&str>) -> Vec<Option<String>> {
    let Some(recorded) = recorded else {
        return Vec::new();
    };
    let well_formed = |pair: &&str| {
        let Some((k, v)) = pair.split_once('=') else {
            return false;
        };
        RUNTIME_ARGS.contains(&k)
            && !v.is_empty()
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    };
    let kept: Vec<&str> = recorded.split(';').filter(well_formed).collect();
    let mut out = Vec::new();
    if !kept.is_empty() && kept.join(";") != recorded {
        out.push(Some(kept.join(";")));
    }
    out.push(None);
    out
}

impl Ipam {
    /// Releases `target`'s address with the fallbacks of [`fallback_arguments`], after a DEL
    /// with the recorded arguments failed with `first`. Returns the last failure.
    pub fn release_with_fallbacks(
        &self,
        config: &Value,
        ours: Version,
        target: &Target<'_>,
        first: CniError,
    ) -> Result<(), CniError> {
        let mut last = first;
        for args in fallback_arguments(target.cni_args) {
            let retry = Target {
                cni_args: args.as_deref(),
                ..target.clone()
            };
            match self.del(config, ours, &retry) {
                Ok(()) => {
                    tracing::info!(plugin = %self.kind, args = ?args, "address released after dropping CNI_ARGS the plugin refused");
                    return Ok(());
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// Lets the delegate inherit descriptor `fd` (a held lock): cleared close-on-exec in the child
/// only.
fn inherit(cmd: &mut Command, fd: std::os::fd::RawFd) {
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the child between fork and exec and only makes the
    // async-signal-safe fcntl(2) call on a descriptor the parent holds open.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn join_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_fall_back_to_arguments_that_can_succeed() {
        assert!(fallback_arguments(None).is_empty());
        assert_eq!(
            fallback_arguments(Some(
                "IgnoreUnknown=1;K8S_POD_NAME=a=b;K8S_POD_NAMESPACE=ns"
            )),
            [
                Some("IgnoreUnknown=1;K8S_POD_NAMESPACE=ns".to_owned()),
                None
            ]
        );
        assert_eq!(fallback_arguments(Some("IP=not-an-ip")), [None]);
        // Nothing to drop: only the bare retry is left.
        assert_eq!(fallback_arguments(Some("K8S_POD_NAME=p")), [None]);
    }

    /// Debian's static (1.0.0) refuses CHECK without a prevResult: a 1.1.0 configuration's
    /// prevResult reaches it in its own version's format.
    #[test]
    fn an_older_delegate_gets_the_prev_result_in_its_format() {
        let ipam = Ipam {
            kind: "static".into(),
            binary: PathBuf::from("/usr/lib/cni/static"),
            cni_path: Vec::new(),
            versions: vec!["0.4.0".into(), "1.0.0".into()],
            timeout: Duration::from_secs(1),
        };
        let prev = serde_json::json!({"cniVersion": "1.1.0",
            "ips": [{"address": "10.56.0.9/24", "gateway": "10.56.0.1"}]});
        let conf = serde_json::json!({"cniVersion": "1.1.0", "name": "n", "prevResult": prev});
        let given = ipam.config_for(&conf, Version::V1_1_0).unwrap();
        assert_eq!(given["cniVersion"], "1.0.0");
        assert_eq!(
            given["prevResult"]["ips"][0]["address"], "10.56.0.9/24",
            "{given}"
        );
    }
}
