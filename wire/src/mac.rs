//! Ethernet MAC addresses.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A 48-bit Ethernet MAC address, written `aa:bb:cc:dd:ee:ff`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// The broadcast address `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: Self = Self([0xff; 6]);

    /// The six octets.
    pub fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// Builds from a slice of exactly six octets.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 6]>::try_from(bytes).ok().map(Self)
    }

    /// True for a unicast address (I/G bit clear) that is not all zeros: the only kind an
    /// interface may use as its own.
    pub fn is_valid_unicast(&self) -> bool {
        self.0[0] & 1 == 0 && self.0 != [0; 6]
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A string that is not six colon-separated hex octets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a MAC address (want six hex octets like 0a:58:0a:00:00:05)")]
pub struct ParseMacError(String);

impl FromStr for MacAddr {
    type Err = ParseMacError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseMacError(s.chars().take(64).collect());
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for octet in &mut out {
            let part = parts.next().ok_or_else(err)?;
            if part.len() != 2 {
                return Err(err());
            }
            *octet = u8::from_str_radix(part, 16).map_err(|_| err())?;
        }
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(Self(out))
    }
}

impl Serialize for MacAddr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MacAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let mac: MacAddr = "0A:58:0a:00:00:FF".parse().unwrap();
        assert_eq!(mac.0, [0x0a, 0x58, 0x0a, 0, 0, 0xff]);
        assert_eq!(mac.to_string(), "0a:58:0a:00:00:ff");
        assert_eq!("0a-58-0a-00-00-ff".parse::<MacAddr>().unwrap(), mac);
        assert!(mac.is_valid_unicast());
        for bad in [
            "",
            "0a:58:0a:00:00",
            "0a:58:0a:00:00:ff:01",
            "0a:58:0a:00:00:g1",
            "0a5:8:0a:00:00:ff",
            "0c::",
        ] {
            assert!(bad.parse::<MacAddr>().is_err(), "{bad}");
        }
        assert!(
            !"01:00:5e:00:00:01"
                .parse::<MacAddr>()
                .unwrap()
                .is_valid_unicast()
        );
        assert!(
            !"00:00:00:00:00:00"
                .parse::<MacAddr>()
                .unwrap()
                .is_valid_unicast()
        );
    }
}
