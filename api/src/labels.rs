//! Node label keys: the contract between the fabric controller, which computes them, the agent,
//! which writes them on its own Node, and the scheduler, which reads them.
//!
//! Tier 1 is the switch tier closest to the node (the leaf, or the leaf group in a
//! rail-optimised fabric), as in Volcano's HyperNode tiers; tier 2 is the spine above it, and so
//! on. Values are the fabric model's domain ids.

/// Default key prefix.
pub const DEFAULT_PREFIX: &str = "fabric.spinel.dev/";

/// Topograph's tier key prefix (its tier 0 is our tier 1).
pub const TOPOGRAPH_PREFIX: &str = "fabric.topograph.run/";

/// Which key family the tier labels use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KeyMode {
    /// `<prefix>tier-1` for the domain closest to the node, `tier-2` above, ...
    #[default]
    Spinel,
    /// NVIDIA Topograph's `fabric.topograph.run/tier-0` (closest), `tier-1`, ...: for
    /// schedulers already configured for Topograph. Rail labels keep `<prefix>`.
    Topograph,
}

/// Label key settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelOptions {
    /// Prefix of every key Spinel owns, with its trailing `/`.
    pub prefix: String,
    /// Tier key family.
    pub keys: KeyMode,
}

impl Default for LabelOptions {
    fn default() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_owned(),
            keys: KeyMode::Spinel,
        }
    }
}

/// A label prefix Kubernetes would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "label prefix {prefix:?} is invalid: {reason} (expected a DNS subdomain followed by '/', \
     for example fabric.example.com/)"
)]
pub struct PrefixError {
    /// The rejected prefix.
    pub prefix: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl LabelOptions {
    /// Checks that the prefix is a DNS subdomain of at most 253 characters ending in `/`.
    pub fn validate(&self) -> Result<(), PrefixError> {
        let err = |reason| {
            Err(PrefixError {
                prefix: self.prefix.clone(),
                reason,
            })
        };
        let Some(domain) = self.prefix.strip_suffix('/') else {
            return err("it does not end with '/'");
        };
        if domain.is_empty() || domain.len() > 253 {
            return err("the part before '/' must be 1 to 253 characters");
        }
        let ok = domain.split('.').all(|seg| {
            let b = seg.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        });
        if ok {
            Ok(())
        } else {
            err("each dot-separated part must be lowercase letters, digits and '-'")
        }
    }

    /// Key of the tier-`tier` label (tier 1 = closest to the node).
    pub fn tier_key(&self, tier: u8) -> String {
        match self.keys {
            KeyMode::Spinel => format!("{}tier-{tier}", self.prefix),
            KeyMode::Topograph => format!("{TOPOGRAPH_PREFIX}tier-{}", tier.saturating_sub(1)),
        }
    }

    /// The tier a tier key stands for under these options (`<prefix>tier-2` -> 2), if it is one.
    pub fn tier_of_key(&self, key: &str) -> Option<u8> {
        let (prefix, offset) = match self.keys {
            KeyMode::Spinel => (self.prefix.as_str(), 0u8),
            KeyMode::Topograph => (TOPOGRAPH_PREFIX, 1u8),
        };
        let n = key.strip_prefix(prefix)?.strip_prefix("tier-")?;
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let tier = n.parse::<u8>().ok()?.checked_add(offset)?;
        (tier >= 1).then_some(tier)
    }

    /// Key of the label naming the leaf that serves rail `rail`.
    pub fn rail_key(&self, rail: u16) -> String {
        format!("{}rail-{rail}", self.prefix)
    }

    /// Key of the label counting the node's connected rails.
    pub fn rails_key(&self) -> String {
        format!("{}rails", self.prefix)
    }

    /// Whether `key` is one Spinel writes under these options, so a reconciler can remove
    /// stale ones (for example a `tier-3` left after a fabric lost its super-spines).
    pub fn is_managed_key(&self, key: &str) -> bool {
        let tier_prefix = match self.keys {
            KeyMode::Spinel => self.prefix.as_str(),
            KeyMode::Topograph => TOPOGRAPH_PREFIX,
        };
        let numbered = |rest: Option<&str>| {
            rest.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        numbered(
            key.strip_prefix(tier_prefix)
                .and_then(|k| k.strip_prefix("tier-")),
        ) || numbered(
            key.strip_prefix(self.prefix.as_str())
                .and_then(|k| k.strip_prefix("rail-")),
        ) || key == self.rails_key()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_validated() {
        let ok = LabelOptions::default();
        assert_eq!(ok.validate(), Ok(()));
        for bad in ["fabric.spinel.dev", "/", "Fabric.dev/", "a..b/", "-a.dev/"] {
            let o = LabelOptions {
                prefix: bad.to_owned(),
                keys: KeyMode::Spinel,
            };
            assert!(o.validate().is_err(), "{bad}");
        }
    }

    #[test]
    fn tier_keys_follow_the_key_mode() {
        let spinel = LabelOptions::default();
        assert_eq!(spinel.tier_key(1), "fabric.spinel.dev/tier-1");
        let topograph = LabelOptions {
            keys: KeyMode::Topograph,
            ..LabelOptions::default()
        };
        assert_eq!(topograph.tier_key(1), "fabric.topograph.run/tier-0");
        assert_eq!(topograph.tier_key(3), "fabric.topograph.run/tier-2");
        assert_eq!(topograph.rail_key(2), "fabric.spinel.dev/rail-2");
    }

    #[test]
    fn tier_keys_parse_back() {
        let spinel = LabelOptions::default();
        assert_eq!(spinel.tier_of_key("fabric.spinel.dev/tier-2"), Some(2));
        assert_eq!(spinel.tier_of_key("fabric.spinel.dev/tier-0"), None);
        assert_eq!(spinel.tier_of_key("fabric.spinel.dev/tier-x"), None);
        assert_eq!(spinel.tier_of_key("kubernetes.io/hostname"), None);
        let topograph = LabelOptions {
            keys: KeyMode::Topograph,
            ..LabelOptions::default()
        };
        assert_eq!(
            topograph.tier_of_key("fabric.topograph.run/tier-0"),
            Some(1)
        );
        for t in 1..=5 {
            assert_eq!(topograph.tier_of_key(&topograph.tier_key(t)), Some(t));
            assert_eq!(spinel.tier_of_key(&spinel.tier_key(t)), Some(t));
        }
    }

    #[test]
    fn managed_keys_are_recognised() {
        let o = LabelOptions::default();
        assert!(o.is_managed_key("fabric.spinel.dev/tier-3"));
        assert!(o.is_managed_key("fabric.spinel.dev/rail-12"));
        assert!(o.is_managed_key("fabric.spinel.dev/rails"));
        assert!(!o.is_managed_key("fabric.spinel.dev/tier-"));
        assert!(!o.is_managed_key("fabric.spinel.dev/owner"));
        assert!(!o.is_managed_key("kubernetes.io/hostname"));
        let t = LabelOptions {
            keys: KeyMode::Topograph,
            ..LabelOptions::default()
        };
        assert!(t.is_managed_key("fabric.topograph.run/tier-0"));
        assert!(!t.is_managed_key("fabric.spinel.dev/tier-1"));
    }
}
