//! `CNI_ARGS`: `KEY=VALUE;KEY=VALUE`, deprecated by the spec but still what Multus sends.
//!
//! Keys repeat in real calls: Multus puts its own pairs first (`IgnoreUnknown=true;K8S_POD_*`)
//! and appends the runtime's (`IgnoreUnknown=1;K8S_POD_*`). A repeated key is read as libcni
//! reads it, the later value wins, so spinel sees exactly what its IPAM plugin sees (the same
//! `CNI_ARGS` reaches it); two different values for one key are logged, not refused.

use std::collections::BTreeMap;

/// Longest `CNI_ARGS` accepted.
const MAX_LEN: usize = 8192;

/// Keys this plugin understands; anything else is an error unless `IgnoreUnknown` is true.
const KNOWN: [&str; 8] = [
    "IgnoreUnknown",
    "K8S_POD_NAMESPACE",
    "K8S_POD_NAME",
    "K8S_POD_INFRA_CONTAINER_ID",
    "K8S_POD_UID",
    "MAC",
    "IP",
    "DEVICE_ID",
];

/// Why `CNI_ARGS` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// Over [`MAX_LEN`].
    #[error("longer than {MAX_LEN} bytes")]
    TooLong,
    /// A pair without `=`.
    #[error("{0:?} is not KEY=VALUE")]
    NotAPair(String),
    /// A key outside `[A-Za-z0-9_]+`.
    #[error("invalid key {0:?}")]
    InvalidKey(String),
    /// A value holding control characters.
    #[error("value of {0} holds control characters")]
    ControlCharacters(String),
    /// A key this plugin does not know, without `IgnoreUnknown`.
    #[error("unknown key {0} (set IgnoreUnknown=1 to ignore it)")]
    UnknownKey(String),
}

/// Parsed `CNI_ARGS`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniArgs {
    values: BTreeMap<String, String>,
}

impl CniArgs {
    /// Parses and checks `CNI_ARGS`.
    pub fn parse(raw: &str) -> Result<Self, ArgsError> {
        if raw.len() > MAX_LEN {
            return Err(ArgsError::TooLong);
        }
        let mut values = BTreeMap::new();
        for pair in raw.split(';').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| ArgsError::NotAPair(cut(pair)))?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(ArgsError::InvalidKey(cut(key)));
            }
            if value.chars().any(char::is_control) {
                return Err(ArgsError::ControlCharacters(key.to_owned()));
            }
            if let Some(earlier) = values.insert(key.to_owned(), value.to_owned())
                && earlier != value
                && !(key == "IgnoreUnknown" && truthy(&earlier) == truthy(value))
            {
                tracing::warn!(
                    "CNI_ARGS: {key} given twice ({:?}, then {:?}); the later value counts, as in libcni",
                    cut(&earlier),
                    cut(value)
                );
            }
        }
        let ignore_unknown = values.get("IgnoreUnknown").is_some_and(|v| truthy(v));
        if !ignore_unknown
            && let Some(unknown) = values.keys().find(|k| !KNOWN.contains(&k.as_str()))
        {
            return Err(ArgsError::UnknownKey(cut(unknown)));
        }
        Ok(Self { values })
    }

    /// A value, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

/// `IgnoreUnknown`'s values that mean yes, as libcni reads them.
fn truthy(value: &str) -> bool {
    matches!(value.to_ascii_lowercase().as_str(), "1" | "true")
}

/// A value short enough for a log line.
fn cut(value: &str) -> String {
    value.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multus_style_args() {
        let a = CniArgs::parse("IgnoreUnknown=true;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-0;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1;FOO=bar").unwrap();
        assert_eq!(a.get("K8S_POD_NAME"), Some("trainer-0"));
        assert_eq!(a.get("FOO"), Some("bar"));
    }

    #[test]
    fn strict_without_ignore_unknown() {
        assert!(
            CniArgs::parse("K8S_POD_NAME=x;FOO=bar")
                .unwrap_err()
                .to_string()
                .contains("FOO")
        );
        assert!(CniArgs::parse("=x").is_err());
        assert!(CniArgs::parse("K8S POD=x").is_err());
        assert!(CniArgs::parse("MAC=a\nb").is_err());
        assert!(CniArgs::parse(&"K8S_POD_NAME=x;".repeat(1000)).is_err());
    }

    /// What Multus really sends behind containerd: its own pairs, then the runtime's again
    /// (`pkg/types/conf.go` in Multus).
    #[test]
    fn multus_repeats_the_runtime_pairs() {
        let a = CniArgs::parse("IgnoreUnknown=true;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-0;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1;IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-0;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1").unwrap();
        assert_eq!(a.get("K8S_POD_UID"), Some("u-1"));
        assert_eq!(a.get("IgnoreUnknown"), Some("1"));
    }

    /// Two different values: the later one, as libcni and so the IPAM plugin read it.
    #[test]
    fn a_repeated_key_takes_the_later_value() {
        let a = CniArgs::parse(
            "K8S_POD_NAME=a;MAC=02:00:00:00:00:01;K8S_POD_NAME=b;MAC=02:00:00:00:00:02",
        )
        .unwrap();
        assert_eq!(a.get("K8S_POD_NAME"), Some("b"));
        assert_eq!(a.get("MAC"), Some("02:00:00:00:00:02"));
        // A later IgnoreUnknown=0 turns strictness back on.
        assert!(CniArgs::parse("IgnoreUnknown=1;FOO=bar;IgnoreUnknown=0").is_err());
    }
}
