//! The invocation: `CNI_*` environment variables, validated before anything uses them.

use std::path::{Component, Path, PathBuf};

use hostnet::sriov::is_valid_ifname;

use super::args::CniArgs;
use super::{CniError, ErrorCode};

/// The operation the runtime asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Attach.
    Add,
    /// Detach; best effort and idempotent.
    Del,
    /// Verify an attachment.
    Check,
    /// Report readiness.
    Status,
    /// Remove everything not in `cni.dev/valid-attachments`.
    Gc,
    /// Report supported versions.
    Version,
}

impl Command {
    /// The `CNI_COMMAND` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Add => "ADD",
            Command::Del => "DEL",
            Command::Check => "CHECK",
            Command::Status => "STATUS",
            Command::Gc => "GC",
            Command::Version => "VERSION",
        }
    }
}

/// Longest container ID accepted (runtimes use 64 hex characters).
const MAX_CONTAINER_ID: usize = 256;
/// Longest path accepted in `CNI_NETNS` and `CNI_PATH` entries.
const MAX_PATH: usize = 4096;

/// A validated invocation.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// `CNI_COMMAND`.
    pub command: Command,
    /// `CNI_CONTAINERID`: alphanumeric start, then alphanumerics, `_`, `.`, `-`.
    pub container_id: String,
    /// `CNI_NETNS`, absolute; optional on DEL.
    pub netns: Option<PathBuf>,
    /// `CNI_IFNAME`, a valid interface name.
    pub ifname: String,
    /// `CNI_ARGS`, parsed.
    pub args: CniArgs,
    /// `CNI_ARGS` as received, for delegates.
    pub raw_args: Option<String>,
    /// `CNI_PATH`: where delegated plugins (IPAM) are found.
    pub path: Vec<PathBuf>,
}

fn invalid(var: &str, what: impl std::fmt::Display) -> CniError {
    CniError::new(ErrorCode::InvalidEnvironment, format!("{var}: {what}"))
}

/// True for a container ID the spec allows.
pub fn is_valid_container_id(id: &str) -> bool {
    let mut chars = id.chars();
    id.len() <= MAX_CONTAINER_ID
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn absolute_path(var: &str, value: &str) -> Result<PathBuf, CniError> {
    let path = Path::new(value);
    if value.len() > MAX_PATH {
        return Err(invalid(var, format!("path longer than {MAX_PATH} bytes")));
    }
    if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(invalid(
            var,
            format!("{value:?} must be an absolute path without '..'"),
        ));
    }
    Ok(path.to_owned())
}

impl Invocation {
    /// Reads and validates the invocation from `get` (the process environment in production).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, CniError> {
        let command = match get("CNI_COMMAND").as_deref() {
            Some("ADD") => Command::Add,
            Some("DEL") => Command::Del,
            Some("CHECK") => Command::Check,
            Some("STATUS") => Command::Status,
            Some("GC") => Command::Gc,
            Some("VERSION") => Command::Version,
            Some(other) => {
                return Err(invalid(
                    "CNI_COMMAND",
                    format!("unknown command {:?}", truncate(other)),
                ));
            }
            None => return Err(invalid("CNI_COMMAND", "not set")),
        };
        if command == Command::Version {
            // VERSION must answer whatever else the environment holds.
            return Ok(Self {
                command,
                container_id: String::new(),
                netns: None,
                ifname: String::new(),
                args: CniArgs::default(),
                raw_args: None,
                path: Vec::new(),
            });
        }
        if get(crate::ipam::DELEGATE_ENV).is_some() {
            // Our own delegate: a network whose ipam.type names spinel (or a link to it) would
            // otherwise recurse until the VF lock times out.
            return Err(CniError::new(
                ErrorCode::InvalidConfig,
                "ipam.type: spinel was called as its own IPAM plugin; name an IPAM plugin (host-local, static, whereabouts, ...)",
            ));
        }
        let per_container = matches!(command, Command::Add | Command::Del | Command::Check);
        // Runtimes set unused variables to "" as often as they leave them out.
        let get = |k: &str| get(k).filter(|v| !v.is_empty());

        let container_id = match get("CNI_CONTAINERID") {
            Some(id) if is_valid_container_id(&id) => id,
            Some(id) => {
                return Err(invalid(
                    "CNI_CONTAINERID",
                    format!(
                        "{:?} is not a valid container ID (alphanumeric first, then alphanumerics, '_', '.', '-'; at most {MAX_CONTAINER_ID})",
                        truncate(&id)
                    ),
                ));
            }
            None if per_container => return Err(invalid("CNI_CONTAINERID", "not set")),
            None => String::new(),
        };

        let netns = match get("CNI_NETNS") {
            Some(p) => Some(absolute_path("CNI_NETNS", &p)?),
            None if matches!(command, Command::Add | Command::Check) => {
                return Err(invalid("CNI_NETNS", "not set"));
            }
            None => None,
        };

        let ifname = match get("CNI_IFNAME") {
            Some(name) if is_valid_ifname(&name) => name,
            Some(name) => {
                return Err(invalid(
                    "CNI_IFNAME",
                    format!(
                        "{:?} is not a valid interface name (1-15 bytes, no '/', ':' or spaces)",
                        truncate(&name)
                    ),
                ));
            }
            None if per_container => return Err(invalid("CNI_IFNAME", "not set")),
            None => String::new(),
        };

        let raw_args = get("CNI_ARGS");
        let args = match &raw_args {
            Some(raw) => CniArgs::parse(raw).map_err(|e| invalid("CNI_ARGS", e))?,
            None => CniArgs::default(),
        };

        let path = match get("CNI_PATH") {
            Some(raw) => raw
                .split(':')
                .filter(|p| !p.is_empty())
                .map(|p| absolute_path("CNI_PATH", p))
                .collect::<Result<Vec<_>, _>>()?,
            None => return Err(invalid("CNI_PATH", "not set")),
        };

        Ok(Self {
            command,
            container_id,
            netns,
            ifname,
            args,
            raw_args,
            path,
        })
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "abc123"),
            ("CNI_NETNS", "/var/run/netns/pod"),
            ("CNI_IFNAME", "net1"),
            ("CNI_PATH", "/opt/cni/bin:/usr/lib/cni"),
        ]
    }

    fn with(replace: (&'static str, &'static str)) -> Result<Invocation, CniError> {
        let mut pairs = base();
        pairs.retain(|(k, _)| *k != replace.0);
        pairs.push(replace);
        Invocation::from_env(env(&pairs))
    }

    #[test]
    fn accepts_a_normal_add() {
        let inv = Invocation::from_env(env(&base())).unwrap();
        assert_eq!(inv.command, Command::Add);
        assert_eq!(inv.path.len(), 2);
    }

    #[test]
    fn rejects_bad_values_naming_the_variable() {
        for (var, value) in [
            ("CNI_COMMAND", "FROB"),
            ("CNI_CONTAINERID", "../etc"),
            ("CNI_CONTAINERID", "-abc"),
            ("CNI_CONTAINERID", "a/b"),
            ("CNI_NETNS", "relative/ns"),
            ("CNI_NETNS", "/var/run/../netns/x"),
            ("CNI_IFNAME", "../../x"),
            ("CNI_IFNAME", "averyveryverylongname"),
            ("CNI_PATH", "bin"),
            ("CNI_ARGS", "K8S_POD_NAME"),
        ] {
            let err = with((var, value)).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidEnvironment, "{var}={value}");
            assert!(err.msg.starts_with(var), "{}", err.msg);
        }
        let long = "a".repeat(300);
        let err = Invocation::from_env(env(&[
            ("CNI_COMMAND", "DEL"),
            ("CNI_CONTAINERID", long.as_str()),
            ("CNI_IFNAME", "net1"),
            ("CNI_PATH", "/x"),
        ]))
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidEnvironment);
    }

    #[test]
    fn del_needs_no_netns_and_version_needs_nothing() {
        let inv = Invocation::from_env(env(&[
            ("CNI_COMMAND", "DEL"),
            ("CNI_CONTAINERID", "abc"),
            ("CNI_IFNAME", "net1"),
            ("CNI_PATH", "/opt/cni/bin"),
            ("CNI_NETNS", ""),
        ]))
        .unwrap();
        assert!(inv.netns.is_none());
        assert!(Invocation::from_env(env(&[("CNI_COMMAND", "VERSION")])).is_ok());
        let err = Invocation::from_env(env(&[("CNI_COMMAND", "ADD")])).unwrap_err();
        assert!(err.msg.contains("CNI_CONTAINERID"));
    }
}
