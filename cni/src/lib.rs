//! The `spinel` CNI plugin: puts an SR-IOV VF into a pod and gives it back intact.
//!
//! [`run`] is the whole plugin: it reads the invocation, dispatches to one of the
//! [`commands`], and returns what goes to stdout. Everything that changes the system is
//! recorded first in the [`journal`] so DEL, GC or a later ADD can undo it after any failure.

pub mod announce;
pub mod attachment;
pub mod commands;
pub mod config;
pub mod device;
pub mod ipam;
pub mod ipconfig;
pub mod journal;
pub mod node;
pub mod pf;
pub mod roce;
pub mod settings;
pub mod spec;
pub mod step;
pub mod sysctls;
pub mod teardown;

use serde_json::Value;

use crate::config::{Config, LogLevel};
use crate::settings::Settings;
use crate::spec::env::{Command, Invocation};
use crate::spec::version::version_info;
use crate::spec::{CniError, ErrorCode, Version};

/// What the plugin prints and how it exits.
#[derive(Debug)]
pub struct Outcome {
    /// JSON for stdout (a result, a version answer, or an error), if any.
    pub stdout: Option<Value>,
    /// Whether the command succeeded.
    pub success: bool,
}

/// Runs one invocation. `stdin` is the network configuration; `settings` come from the node.
pub fn run(
    inv: Result<Invocation, CniError>,
    stdin: &[u8],
    settings: Result<Settings, CniError>,
) -> Outcome {
    let fail = |err: CniError, version: Version| {
        tracing::error!(code = err.code.code(), "{err}");
        Outcome {
            stdout: Some(err.to_json(version)),
            success: false,
        }
    };
    let requested_version = serde_json::from_slice::<Value>(stdin).ok().and_then(|v| {
        v.get("cniVersion")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let answer_version = requested_version
        .as_deref()
        .and_then(Version::parse)
        .unwrap_or(Version::CURRENT);
    let inv = match inv {
        Ok(inv) => inv,
        Err(e) => return fail(e, answer_version),
    };
    if inv.command == Command::Version {
        return Outcome {
            stdout: Some(version_info(requested_version.as_deref().unwrap_or(""))),
            success: true,
        };
    }
    let config = match Config::parse(stdin) {
        Ok(c) => c,
        Err(e) => return fail(e, answer_version),
    };
    let version = config.version();
    let settings = match settings {
        Ok(s) => s,
        Err(e) => return fail(e, version),
    };
    if matches!(inv.command, Command::Status | Command::Gc) && version < Version::V1_1_0 {
        return fail(
            CniError::new(
                ErrorCode::IncompatibleVersion,
                format!(
                    "{} needs cniVersion 1.1.0 or newer, the configuration says {version}",
                    inv.command.as_str()
                ),
            ),
            version,
        );
    }
    let span = tracing::info_span!("spinel", cmd = inv.command.as_str(), container = %inv.container_id, ifname = %inv.ifname);
    let _enter = span.enter();
    let result = match inv.command {
        Command::Add => commands::add::run(&inv, &config, settings).map(Some),
        Command::Del => commands::del::run(&inv, &config, settings).map(|()| None),
        Command::Check => commands::check::run(&inv, &config, settings).map(|()| None),
        Command::Status => commands::status::run(&inv, &config, settings).map(|()| None),
        Command::Gc => commands::gc::run(&inv, &config, settings).map(|()| None),
        Command::Version => unreachable_version(),
    };
    match result {
        Ok(stdout) => Outcome {
            stdout,
            success: true,
        },
        Err(e) => fail(e, version),
    }
}

fn unreachable_version() -> Result<Option<Value>, CniError> {
    Err(CniError::new(
        ErrorCode::InvalidEnvironment,
        "CNI_COMMAND: VERSION is answered before dispatch",
    ))
}

/// The log level to use: the network's `logLevel` when the configuration names one, else the
/// node's.
pub fn log_level(stdin: &[u8], settings: Option<&Settings>) -> LogLevel {
    serde_json::from_slice::<Value>(stdin)
        .ok()
        .and_then(|v| v.get("logLevel").cloned())
        .and_then(|l| serde_json::from_value(l).ok())
        .or(settings.map(|s| s.log_level))
        .unwrap_or(LogLevel::Warn)
}
