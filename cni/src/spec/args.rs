//! `CNI_ARGS`: `KEY=VALUE;KEY=VALUE`, deprecated by the spec but still what Multus sends.

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

/// Parsed `CNI_ARGS`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniArgs {
    values: BTreeMap<String, String>,
}

impl CniArgs {
    /// Parses and checks `CNI_ARGS`.
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.len() > MAX_LEN {
            return Err(format!("longer than {MAX_LEN} bytes"));
        }
        let mut values = BTreeMap::new();
        for pair in raw.split(';').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?} is not KEY=VALUE"))?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(format!("invalid key {key:?}"));
            }
            if value.chars().any(char::is_control) {
                return Err(format!("value of {key} holds control characters"));
            }
            if values.insert(key.to_owned(), value.to_owned()).is_some() {
                return Err(format!("{key} given twice"));
            }
        }
        let ignore_unknown = values
            .get("IgnoreUnknown")
            .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true"));
        if !ignore_unknown
            && let Some(unknown) = values.keys().find(|k| !KNOWN.contains(&k.as_str()))
        {
            return Err(format!(
                "unknown key {unknown} (set IgnoreUnknown=1 to ignore it)"
            ));
        }
        Ok(Self { values })
    }

    /// A value, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
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
                .contains("FOO")
        );
        assert!(CniArgs::parse("K8S_POD_NAME=x;K8S_POD_NAME=y").is_err());
        assert!(CniArgs::parse("=x").is_err());
        assert!(CniArgs::parse("K8S POD=x").is_err());
        assert!(CniArgs::parse("MAC=a\nb").is_err());
        assert!(CniArgs::parse(&"K8S_POD_NAME=x;".repeat(1000)).is_err());
    }
}
