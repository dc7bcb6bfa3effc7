//! `lab up` and `lab down` from the operator's side: start the supervisor in its own session
//! and follow its progress; stop it and sweep whatever is left, also after it crashed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::layout::LabSize;
use crate::state::{StateDir, Swept};
use crate::supervisor::{Phase, Status, Step, read_status};

/// How long `down` waits for the supervisor to stop its processes before killing them.
const DOWN_GRACE: Duration = Duration::from_secs(45);

/// Starts a lab of `size` in `state` and waits until it is ready (or failed, or `timeout`),
/// calling `progress` with each new status.
pub fn up(
    state: &StateDir,
    size: &LabSize,
    timeout: Duration,
    mut progress: impl FnMut(&Step),
) -> anyhow::Result<Status> {
    require_root()?;
    size.validate()?;
    let Some(lock) = state.try_lock()? else {
        let pid = read_status(state).ok().flatten().map(|s| s.pid);
        bail!(
            "a lab already runs in {} (supervisor pid {}); `spinelctl lab down` first",
            state.root().display(),
            pid.map_or("unknown".into(), |p| p.to_string())
        );
    };
    let swept = state.sweep(&lock)?;
    if swept != Swept::default() {
        eprintln!(
            "swept a previous lab: {} process(es), {} namespace(s), {} entr(ies)",
            swept.processes, swept.namespaces, swept.files
        );
    }
    std::fs::create_dir_all(state.logs())?;
    let log = std::fs::File::create(state.logs().join("supervisor.log"))?;
    drop(lock);
    let exe = std::env::current_exe().context("where is spinelctl")?;
    // setsid(1) makes the supervisor a session leader without unsafe code here: everything it
    // starts stays in that session, which is how a later sweep finds it after a crash.
    let child = Command::new("setsid")
        .arg(&exe)
        .args(["lab", "supervise", "--state-dir"])
        .arg(state.root())
        .arg("--size")
        .arg(serde_json::to_string(size)?)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("start the lab supervisor (setsid from util-linux)")?;
    wait_ready(state, child.id(), timeout, &mut progress)
}

fn wait_ready(
    state: &StateDir,
    pid: u32,
    timeout: Duration,
    progress: &mut impl FnMut(&Step),
) -> anyhow::Result<Status> {
    let deadline = Instant::now() + timeout;
    let mut shown = 0usize;
    loop {
        if let Some(status) = read_status(state)? {
            for step in status.steps.iter().skip(shown) {
                progress(step);
            }
            shown = shown.max(status.steps.len());
            match status.phase {
                Phase::Ready => return Ok(status),
                Phase::Failed | Phase::Stopping => bail!(
                    "the lab failed: {}; logs in {}",
                    status.error.as_deref().unwrap_or("no reason given"),
                    state.logs().display()
                ),
                Phase::Starting => {}
            }
        }
        if !alive(pid) {
            bail!(
                "the lab supervisor exited while starting; see {}",
                state.logs().join("supervisor.log").display()
            );
        }
        if Instant::now() >= deadline {
            bail!(
                "the lab was not ready within {} s; it keeps starting (`spinelctl lab status`, \
                 `spinelctl lab down`)",
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Stops the lab in `state` and removes everything it made. Works whether the supervisor runs,
/// hangs or crashed; `Ok(None)` when there was no lab.
pub fn down(state: &StateDir) -> anyhow::Result<Option<Swept>> {
    require_root()?;
    if !state.root().exists() {
        return Ok(None);
    }
    let record = state.record()?;
    if let Some(r) = &record
        && alive(r.session as u32)
    {
        let _ = kill(Pid::from_raw(r.session), Signal::SIGTERM);
    }
    // The supervisor stops its processes and deletes the namespaces, then gives up the lock;
    // one that does not within the grace period is killed with its whole session by the sweep.
    let lock = match state.lock_within(DOWN_GRACE)? {
        Some(lock) => lock,
        None => {
            let r = record.context("the lab's lock is held but it has no record")?;
            let _ = kill(Pid::from_raw(r.session), Signal::SIGKILL);
            state
                .lock_within(Duration::from_secs(10))?
                .context("the lab's lock is still held after its supervisor was killed")?
        }
    };
    let swept = state.sweep(&lock)?;
    state.remove(lock)?;
    Ok(Some(swept))
}

/// Whether `pid` runs (a zombie does not).
fn alive(pid: u32) -> bool {
    i32::try_from(pid)
        .ok()
        .and_then(crate::state::process_stat)
        .is_some_and(|(state, _)| state != 'Z')
}

/// The lab makes namespaces and moves links: it needs root.
pub fn require_root() -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("the lab creates network namespaces: run it as root");
    }
    Ok(())
}
