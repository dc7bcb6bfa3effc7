//! CNI spec versions this plugin speaks.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A CNI spec version this plugin accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// 0.3.0: what older NADs (sriov-cni's examples among them) still say.
    V0_3_0,
    /// 0.3.1: the same result shape.
    V0_3_1,
    /// 0.4.0: adds CHECK.
    V0_4_0,
    /// 1.0.0: drops `ips[].version`, makes `interfaces` mandatory.
    V1_0_0,
    /// 1.1.0: adds STATUS, GC, interface `mtu`/`pciID`, route `table`/`priority`/...
    V1_1_0,
}

impl Version {
    /// Every supported version, oldest first.
    pub const ALL: [Version; 5] = [
        Version::V0_3_0,
        Version::V0_3_1,
        Version::V0_4_0,
        Version::V1_0_0,
        Version::V1_1_0,
    ];

    /// The newest supported version.
    pub const CURRENT: Version = Version::V1_1_0;

    /// The version's text.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V0_3_0 => "0.3.0",
            Version::V0_3_1 => "0.3.1",
            Version::V0_4_0 => "0.4.0",
            Version::V1_0_0 => "1.0.0",
            Version::V1_1_0 => "1.1.0",
        }
    }

    /// Parses a version this plugin supports.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unsupported cniVersion {s:?} (supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0)"
            ))
        })
    }
}

/// The answer to `VERSION`.
pub fn version_info(requested: &str) -> serde_json::Value {
    serde_json::json!({
        "cniVersion": if Version::parse(requested).is_some() { requested } else { Version::CURRENT.as_str() },
        "supportedVersions": Version::ALL.map(Version::as_str),
    })
}

/// Picks the version to talk to a delegate that supports `theirs`: the newest one that is not
/// newer than `ours` and that both sides speak.
pub fn negotiate(ours: Version, theirs: &[String]) -> Option<Version> {
    Version::ALL
        .into_iter()
        .rev()
        .filter(|v| *v <= ours)
        .find(|v| theirs.iter().any(|t| t == v.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_prefers_newest_common_version_not_above_ours() {
        let debian = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"].map(String::from);
        assert_eq!(negotiate(Version::V1_1_0, &debian), Some(Version::V1_0_0));
        assert_eq!(negotiate(Version::V0_4_0, &debian), Some(Version::V0_4_0));
        assert_eq!(negotiate(Version::V1_1_0, &["0.2.0".to_string()]), None);
        assert_eq!(
            negotiate(Version::V1_1_0, &["0.3.1".to_string()]),
            Some(Version::V0_3_1)
        );
    }

    #[test]
    fn version_info_lists_all() {
        let v = version_info("1.0.0");
        assert_eq!(v["cniVersion"], "1.0.0");
        assert_eq!(v["supportedVersions"].as_array().unwrap().len(), 5);
        assert_eq!(version_info("9.9.9")["cniVersion"], "1.1.0");
    }
}
