//! Helpers for the programs that run inside the VM (`src/bin/vm-*.rs`).

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Runs `script` with `/bin/sh -c`; its stdout, or an error with its stderr.
pub fn sh(script: &str) -> anyhow::Result<String> {
    let out = Command::new("/bin/sh")
        .args(["-c", script])
        .output()
        .with_context(|| format!("run {script:?}"))?;
    if !out.status.success() {
        bail!(
            "{script:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Calls `f` every `interval` until it returns `Some`, for at most `timeout`; returns the
/// value and how long it took.
pub fn poll<T>(
    timeout: Duration,
    interval: Duration,
    mut f: impl FnMut() -> anyhow::Result<Option<T>>,
) -> anyhow::Result<(T, Duration)> {
    let start = Instant::now();
    loop {
        if let Some(v) = f()? {
            return Ok((v, start.elapsed()));
        }
        if start.elapsed() > timeout {
            bail!("condition not met within {timeout:?}");
        }
        std::thread::sleep(interval);
    }
}

/// Prints a step's marker for the host-side test to check.
pub fn ok(step: &str) {
    println!("ok {step}");
}
