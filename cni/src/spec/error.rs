//! CNI error results: the spec's JSON and codes, plus Spinel's own codes (100 and up).

use std::fmt;

use serde::Serialize;

use super::Version;

/// A CNI error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// 1: incompatible CNI version.
    IncompatibleVersion,
    /// 2: unsupported field in the network configuration.
    UnsupportedField,
    /// 3: container unknown or does not exist.
    UnknownContainer,
    /// 4: invalid necessary environment variables.
    InvalidEnvironment,
    /// 5: I/O failure.
    Io,
    /// 6: failed to decode content.
    Decode,
    /// 7: invalid network config.
    InvalidConfig,
    /// 11: try again later.
    TryAgainLater,
    /// 50: the plugin is not available.
    NotAvailable,
    /// 51: the plugin is not available, and existing containers may be degraded.
    NotAvailableDegraded,
    /// 100: the device (VF, PF, sysfs entry) is missing or unusable.
    Device,
    /// 101: a kernel operation (netlink, sysctl, namespace) failed.
    Kernel,
    /// 102: the delegated IPAM plugin failed.
    Ipam,
    /// 103: the state journal could not be read or written.
    State,
    /// 104: CHECK found the attachment differs from what ADD set up.
    Drift,
    /// 105: the attachment already exists.
    AlreadyAttached,
}

impl ErrorCode {
    /// The numeric code on the wire.
    pub fn code(self) -> u32 {
        match self {
            ErrorCode::IncompatibleVersion => 1,
            ErrorCode::UnsupportedField => 2,
            ErrorCode::UnknownContainer => 3,
            ErrorCode::InvalidEnvironment => 4,
            ErrorCode::Io => 5,
            ErrorCode::Decode => 6,
            ErrorCode::InvalidConfig => 7,
            ErrorCode::TryAgainLater => 11,
            ErrorCode::NotAvailable => 50,
            ErrorCode::NotAvailableDegraded => 51,
            ErrorCode::Device => 100,
            ErrorCode::Kernel => 101,
            ErrorCode::Ipam => 102,
            ErrorCode::State => 103,
            ErrorCode::Drift => 104,
            ErrorCode::AlreadyAttached => 105,
        }
    }
}

/// An error as the runtime sees it: `{cniVersion, code, msg, details}` on stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CniError {
    /// The code.
    pub code: ErrorCode,
    /// One line saying what failed, on which object, and what to do.
    pub msg: String,
    /// More context: the causes, other errors collected on the way.
    pub details: String,
}

impl CniError {
    /// An error with a message and no details.
    pub fn new(code: ErrorCode, msg: impl Into<String>) -> Self {
        Self {
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }

    /// An error whose details are the full cause chain of `source`.
    pub fn caused(code: ErrorCode, msg: impl Into<String>, source: &dyn std::error::Error) -> Self {
        Self {
            code,
            msg: msg.into(),
            details: chain(source),
        }
    }

    /// Adds a line to the details.
    pub fn with_detail(mut self, detail: impl AsRef<str>) -> Self {
        if !self.details.is_empty() {
            self.details.push_str("; ");
        }
        self.details.push_str(detail.as_ref());
        self
    }

    /// The JSON the runtime reads.
    pub fn to_json(&self, version: Version) -> serde_json::Value {
        #[derive(Serialize)]
        struct Wire<'a> {
            #[serde(rename = "cniVersion")]
            cni_version: &'a str,
            code: u32,
            msg: &'a str,
            #[serde(skip_serializing_if = "str::is_empty")]
            details: &'a str,
        }
        serde_json::to_value(Wire {
            cni_version: version.as_str(),
            code: self.code.code(),
            msg: &self.msg,
            details: &self.details,
        })
        .unwrap_or_default()
    }
}

impl fmt::Display for CniError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code.code(), self.msg)?;
        if !self.details.is_empty() {
            write!(f, " ({})", self.details)?;
        }
        Ok(())
    }
}

impl std::error::Error for CniError {}

/// `a: b: c` from an error and its sources.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_format() {
        let e = CniError::new(ErrorCode::TryAgainLater, "VF 0000:3b:00.2 is locked")
            .with_detail("held by pid 42");
        let j = e.to_json(Version::V1_0_0);
        assert_eq!(j["code"], 11);
        assert_eq!(j["cniVersion"], "1.0.0");
        assert_eq!(j["msg"], "VF 0000:3b:00.2 is locked");
        assert_eq!(j["details"], "held by pid 42");
        let bare = CniError::new(ErrorCode::InvalidConfig, "x").to_json(Version::V1_1_0);
        assert!(bare.get("details").is_none());
    }

    #[test]
    fn chain_skips_repeated_text() {
        let io = std::io::Error::other("disk full");
        #[derive(Debug, thiserror::Error)]
        #[error("write journal")]
        struct W(#[source] std::io::Error);
        assert_eq!(chain(&W(io)), "write journal: disk full");
    }
}
