//! Fabric tiers as a job names them: 0 is one node, 1 the leaf (or leaf group), 2 the spine,
//! and so on; [`Tier::CLUSTER`] means anywhere.

use std::fmt;

use serde::Serialize;
use spinel_api::labels::LabelOptions;
use spinel_api::scheduling::HOSTNAME_LABEL;

/// A level of the fabric hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Tier(pub u8);

/// A tier name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{value:?} is not a tier: expected node, leaf, spine, super-spine, tier-N (1-15), cluster, \
     a tier label key such as {example}, or kubernetes.io/hostname"
)]
pub struct TierError {
    /// The rejected text.
    pub value: String,
    /// A valid tier key under the cluster's label options.
    pub example: String,
}

impl Tier {
    /// One node.
    pub const NODE: Tier = Tier(0);
    /// Tier 1: the leaf, or the leaf group of a rail-optimised fabric.
    pub const LEAF: Tier = Tier(1);
    /// Tier 2: the spine (a pod of leaves).
    pub const SPINE: Tier = Tier(2);
    /// Anywhere in the cluster.
    pub const CLUSTER: Tier = Tier(u8::MAX);
    /// Highest numbered tier a request may name.
    pub const MAX_NAMED: u8 = 15;

    /// Parses a tier name, a `tier-N`, a tier label key or the hostname label.
    pub fn parse(text: &str, labels: &LabelOptions) -> Result<Tier, TierError> {
        let t = text.trim();
        let named = match t {
            "node" | "host" | HOSTNAME_LABEL => Some(Tier::NODE),
            "leaf" | "leaf-group" | "rack" => Some(Tier::LEAF),
            "spine" | "pod" => Some(Tier::SPINE),
            "super-spine" | "superspine" | "core" => Some(Tier(3)),
            "cluster" | "any" => Some(Tier::CLUSTER),
            _ => None,
        };
        let numbered = || {
            t.strip_prefix("tier-")
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<u8>().ok())
                .filter(|n| (1..=Tier::MAX_NAMED).contains(n))
                .map(Tier)
        };
        named
            .or_else(numbered)
            .or_else(|| {
                labels
                    .tier_of_key(t)
                    .filter(|n| *n <= Tier::MAX_NAMED)
                    .map(Tier)
            })
            .ok_or_else(|| TierError {
                value: text.to_owned(),
                example: labels.tier_key(1),
            })
    }

    /// Whether this is the whole cluster.
    pub fn is_cluster(self) -> bool {
        self == Tier::CLUSTER
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("node"),
            1 => f.write_str("leaf"),
            2 => f.write_str("spine"),
            3 => f.write_str("super-spine"),
            u8::MAX => f.write_str("cluster"),
            n => write!(f, "tier-{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_numbers_and_keys_parse() {
        let o = LabelOptions::default();
        assert_eq!(Tier::parse("node", &o), Ok(Tier::NODE));
        assert_eq!(Tier::parse("kubernetes.io/hostname", &o), Ok(Tier::NODE));
        assert_eq!(Tier::parse("leaf", &o), Ok(Tier::LEAF));
        assert_eq!(Tier::parse("spine", &o), Ok(Tier::SPINE));
        assert_eq!(Tier::parse("tier-3", &o), Ok(Tier(3)));
        assert_eq!(Tier::parse("fabric.spinel.dev/tier-2", &o), Ok(Tier(2)));
        assert_eq!(Tier::parse("cluster", &o), Ok(Tier::CLUSTER));
        for bad in [
            "",
            "tier-0",
            "tier-16",
            "tier-",
            "rack-1",
            "fabric.spinel.dev/tier-0",
        ] {
            let e = Tier::parse(bad, &o).unwrap_err();
            assert!(e.to_string().contains("fabric.spinel.dev/tier-1"), "{e}");
        }
    }

    #[test]
    fn tiers_print_their_names() {
        assert_eq!(Tier::LEAF.to_string(), "leaf");
        assert_eq!(Tier(4).to_string(), "tier-4");
        assert_eq!(Tier::CLUSTER.to_string(), "cluster");
    }
}
