//! [`IfName`]: an interface name, parsed once. A value of this type is a name the kernel would
//! accept (1-15 bytes, not `.`/`..`, no `/`, `:`, whitespace or NUL, and not `all` or
//! `default`, the names of the per-family `conf` directories), so it is safe wherever it
//! becomes part of a path (`/sys/class/net/<name>`, `/proc/sys/net/ipv4/conf/<name>`).

use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

/// An interface name the kernel would accept.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct IfName(String);

/// A string that is not an interface name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not an interface name ({reason})")]
pub struct IfNameError {
    name: String,
    reason: &'static str,
}

/// Why `name` is not an interface name, if it is not.
fn refusal(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("empty")
    } else if name.len() >= 16 {
        Some("longer than 15 bytes")
    } else if matches!(name, "." | "..") {
        Some("a path component")
    } else if matches!(name, "all" | "default") {
        Some("reserved by the kernel")
    } else if name
        .bytes()
        .any(|b| b == b'/' || b == b':' || b == 0 || b.is_ascii_whitespace())
    {
        Some("'/', ':', NUL or whitespace")
    } else {
        None
    }
}

/// True for a name the kernel would accept as an interface name (see [`IfName`]).
pub fn is_valid_ifname(name: &str) -> bool {
    refusal(name).is_none()
}

impl IfName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for IfName {
    type Err = IfNameError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match refusal(name) {
            None => Ok(Self(name.to_owned())),
            Some(reason) => Err(IfNameError {
                name: name.chars().take(32).collect(),
                reason,
            }),
        }
    }
}

impl TryFrom<String> for IfName {
    type Error = IfNameError;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        match refusal(&name) {
            None => Ok(Self(name)),
            Some(_) => name.parse(),
        }
    }
}

impl<'de> Deserialize<'de> for IfName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .try_into()
            .map_err(serde::de::Error::custom)
    }
}

impl Deref for IfName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for IfName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl AsRef<std::path::Path> for IfName {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(&self.0)
    }
}

impl std::borrow::Borrow<str> for IfName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IfName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for IfName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for IfName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for IfName {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<IfName> for String {
    fn eq(&self, other: &IfName) -> bool {
        *self == other.0
    }
}

impl PartialEq<IfName> for &str {
    fn eq(&self, other: &IfName) -> bool {
        *self == other.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kernel_takes_and_no_others() {
        for ok in [
            "eth0",
            "ens1f0np0",
            "pf0v12",
            "a",
            "x.y-z_1",
            "fifteen_bytes_x",
        ] {
            assert!(ok.parse::<IfName>().is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "all",
            "default",
            "a/b",
            "a:b",
            "a b",
            "a\0",
            "sixteen_bytes_xx",
        ] {
            let e = bad.parse::<IfName>().unwrap_err();
            assert!(!e.to_string().is_empty());
        }
        let name: IfName = serde_json::from_str("\"net1\"").unwrap();
        assert_eq!(name, "net1");
        assert!(serde_json::from_str::<IfName>("\"../x\"").is_err());
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"net1\"");
    }
}
