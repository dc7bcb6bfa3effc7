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
    // DEL always finishes: a configuration that does not validate (a NAD edited since ADD, a
    // field this build refuses) must not keep a sandbox from going away. DEL goes by the
    // record, which holds the configuration ADD ran with.
    let config = match Config::parse(stdin) {
        Ok(c) => Ok(c),
        Err(e) if inv.command == Command::Del => {
            tracing::warn!(
                code = e.code.code(),
                "DEL goes on without the configuration: {e}"
            );
            Err(e)
        }
        Err(e) => return fail(e, answer_version),
    };
    if let Ok(c) = &config
        && c.conf.log_file.is_some()
    {
        tracing::warn!("logFile: ignored; spinel logs to stderr, which the runtime keeps");
    }
    let version = config.as_ref().map_or(answer_version, Config::version);
    let settings = match settings {
        Ok(s) => s,
        Err(e) => return fail(e, version),
    };
    let since = match inv.command {
        Command::Status | Command::Gc => Version::V1_1_0,
        Command::Check => Version::V0_4_0,
        _ => Version::V0_3_0,
    };
    if version < since {
        return fail(
            CniError::new(
                ErrorCode::IncompatibleVersion,
                format!(
                    "{} needs cniVersion {since} or newer, the configuration says {version}",
                    inv.command.as_str()
                ),
            ),
            version,
        );
    }
    // The fields an operator filters a node's CNI log by: the call, the attachment, the network.
    let network = config.as_ref().map_or("", |c| c.conf.name.as_str());
    let span = tracing::info_span!("spinel", cmd = inv.command.as_str(), container = %inv.container_id, ifname = %inv.ifname, network);
    let _enter = span.enter();
    let result = match (inv.command, &config) {
        (Command::Del, config) => {
            commands::del::run(&inv, config.as_ref().ok(), stdin, settings).map(|()| None)
        }
        (_, Err(_)) => unreachable_config(),
        (Command::Add, Ok(config)) => commands::add::run(&inv, config, settings).map(Some),
        (Command::Check, Ok(config)) => commands::check::run(&inv, config, settings).map(|()| None),
        (Command::Status, Ok(config)) => {
            commands::status::run(&inv, config, settings).map(|()| None)
        }
        (Command::Gc, Ok(config)) => commands::gc::run(&inv, config, settings).map(|()| None),
        (Command::Version, Ok(_)) => unreachable_version(),
    };
    match result {
        Ok(stdout) => Outcome {
            stdout,
            success: true,
        },
        Err(e) => fail(e, version),
    }
}

fn unreachable_config() -> Result<Option<Value>, CniError> {
    Err(CniError::new(
        ErrorCode::InvalidConfig,
        "only DEL runs without a valid configuration",
    ))
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
