//! The processes a lab runs, supervised: each logs to `logs/<name>.log`, is restarted with a
//! growing back-off when it exits unasked, and is stopped with SIGTERM (then SIGKILL after a
//! grace period) in the reverse order of starting.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Shortest and longest wait before a restart.
const BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(30));

/// How to start one process.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Name (the log file's too): lowercase letters, digits and `-`.
    pub name: String,
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Keep stdin and stdout as pipes for the caller (a process that reports readiness on
    /// stdout and exits when stdin closes); otherwise stdin is empty and stdout goes to the log.
    pub piped: bool,
}

impl Spec {
    /// `program args...` named `name`.
    pub fn new(
        name: &str,
        program: &Path,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        Self {
            name: name.to_owned(),
            program: program.to_owned(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            piped: false,
        }
    }
}

/// One process's state, as `lab status` shows it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessState {
    /// Name.
    pub name: String,
    /// PID, while running.
    pub pid: Option<u32>,
    /// Restarts after unasked exits.
    pub restarts: u32,
    /// How the last run ended, if one did.
    pub last_exit: Option<String>,
    /// The log.
    pub log: PathBuf,
}

struct Supervised {
    spec: Spec,
    child: Option<Child>,
    restarts: u32,
    last_exit: Option<String>,
    restart_at: Option<Instant>,
    started: Instant,
}

/// The lab's processes.
pub struct Processes {
    logs: PathBuf,
    list: Vec<Supervised>,
}

/// Pipes of a process started with [`Spec::piped`].
pub struct Pipes {
    /// Its stdin: dropping it closes it.
    pub stdin: ChildStdin,
    /// Its stdout.
    pub stdout: ChildStdout,
}

impl Processes {
    /// No processes yet; logs go to `logs`.
    pub fn new(logs: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(logs).with_context(|| format!("create {}", logs.display()))?;
        Ok(Self {
            logs: logs.to_owned(),
            list: Vec::new(),
        })
    }

    fn log_of(&self, name: &str) -> PathBuf {
        self.logs.join(format!("{name}.log"))
    }

    /// Starts `spec` and supervises it; returns its pipes when it asked for them.
    pub fn start(&mut self, spec: Spec) -> anyhow::Result<Option<Pipes>> {
        let valid = !spec.name.is_empty()
            && spec
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !valid || self.list.iter().any(|s| s.spec.name == spec.name) {
            bail!("process name {:?} is invalid or taken", spec.name);
        }
        let (child, pipes) = self.spawn(&spec)?;
        self.list.push(Supervised {
            spec,
            child: Some(child),
            restarts: 0,
            last_exit: None,
            restart_at: None,
            started: Instant::now(),
        });
        Ok(pipes)
    }

    fn spawn(&self, spec: &Spec) -> anyhow::Result<(Child, Option<Pipes>)> {
        let log = self.log_of(&spec.name);
        let file = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("open {}", log.display()))?;
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stderr(file.try_clone()?);
        if spec.piped {
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        } else {
            cmd.stdin(Stdio::null()).stdout(file);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("start {} ({})", spec.name, spec.program.display()))?;
        let pipes = match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => Some(Pipes { stdin, stdout }),
            _ => None,
        };
        Ok((child, pipes))
    }

    /// Reaps processes that exited and restarts them when their back-off has passed. A piped
    /// process is not restarted (its reader is gone): its exit is returned as an error.
    pub fn poll(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        for i in 0..self.list.len() {
            let exited = match self.list[i].child.as_mut() {
                Some(child) => child.try_wait()?,
                None => None,
            };
            if let Some(status) = exited {
                let log = self.log_of(&self.list[i].spec.name);
                let s = &mut self.list[i];
                s.child = None;
                s.last_exit = Some(status.to_string());
                if s.spec.piped {
                    bail!("{} exited ({status}); see {}", s.spec.name, log.display());
                }
                // A process that ran for a while starts again at the shortest back-off.
                let ran = now.duration_since(s.started);
                let wait = if ran > BACKOFF.1 {
                    BACKOFF.0
                } else {
                    (BACKOFF.0 * 2u32.saturating_pow(s.restarts.min(5))).min(BACKOFF.1)
                };
                s.restart_at = Some(now + wait);
            }
            let due = self.list[i].restart_at.is_some_and(|t| t <= now);
            if due {
                let (child, _) = self.spawn(&self.list[i].spec)?;
                let s = &mut self.list[i];
                s.child = Some(child);
                s.restarts += 1;
                s.restart_at = None;
                s.started = now;
            }
        }
        Ok(())
    }

    /// Every process's state.
    pub fn states(&self) -> Vec<ProcessState> {
        self.list
            .iter()
            .map(|s| ProcessState {
                name: s.spec.name.clone(),
                pid: s.child.as_ref().and_then(Child::id),
                restarts: s.restarts,
                last_exit: s.last_exit.clone(),
                log: self.log_of(&s.spec.name),
            })
            .collect()
    }

    /// Stops the process named `name` (SIGTERM, SIGKILL after `grace`) and forgets it.
    pub async fn stop(&mut self, name: &str, grace: Duration) {
        if let Some(i) = self.list.iter().position(|s| s.spec.name == name) {
            let mut s = self.list.remove(i);
            if let Some(child) = s.child.as_mut() {
                terminate(child, grace).await;
            }
        }
    }

    /// Stops everything: the ordinary processes together, then the piped ones (the control
    /// plane outlives its clients, so they shut down cleanly).
    pub async fn stop_all(&mut self, grace: Duration) {
        let (piped, ordinary): (Vec<_>, Vec<_>) = std::mem::take(&mut self.list)
            .into_iter()
            .partition(|s| s.spec.piped);
        for mut group in [ordinary, piped] {
            for s in &group {
                if let Some(pid) = s.child.as_ref().and_then(Child::id) {
                    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
                }
            }
            let deadline = tokio::time::Instant::now() + grace;
            for s in &mut group {
                if let Some(child) = s.child.as_mut()
                    && tokio::time::timeout_at(deadline, child.wait())
                        .await
                        .is_err()
                {
                    let _ = child.kill().await;
                }
            }
        }
    }
}

async fn terminate(child: &mut Child, grace: Duration) {
    if let Some(pid) = child.id() {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.kill().await;
}
