//! Inference settings: how NICs map to rails, which NICs are the fabric's, which systems are
//! known to be hosts. The CLI fills them from flags; the fabric controller from the cluster
//! (Kubernetes node names, the NICs each node's agent found with an RDMA device).

use std::collections::BTreeMap;

/// How NICs are assigned to rails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RailKey {
    /// Rail = NIC name: `ens1f0np0` is the same rail on every host. Right when hosts share a
    /// hardware layout (the usual case), and robust to a host missing a NIC.
    #[default]
    NicName,
    /// Rail = position of the NIC in the host's NIC list (natural name order): for fleets whose
    /// NIC names differ between hosts.
    NicOrder,
}

/// Which host NICs are the fabric (RoCE) NICs. Others (a management NIC to an out-of-band
/// switch, a NIC to a storage network) are left out: they become no rail and place no host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FabricNics {
    /// Every NIC that sees a switch, except those on a switch that only management NICs reach
    /// (a switch joining hosts of several leaf groups that share no leaf otherwise).
    #[default]
    Inferred,
    /// NICs whose name matches one of these patterns on every host.
    Matching(Vec<NicPattern>),
    /// Per host (by name), the NICs that are the fabric's: what each node's agent reports, for
    /// example the NICs with an RDMA device. Hosts not listed keep [`FabricNics::Inferred`].
    PerHost(BTreeMap<String, Vec<String>>),
}

/// A NIC name, or a shell-style pattern with `*` (any run of characters) and `?` (one
/// character): `ens1f0np0`, `ens*np*`, `eth?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicPattern(String);

impl NicPattern {
    /// A pattern (a plain name matches only itself).
    pub fn new(pattern: impl Into<String>) -> Self {
        Self(pattern.into())
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        glob(self.0.as_bytes(), name.as_bytes())
    }
}

/// `*` and `?` matching with backtracking to the last star: linear for the patterns people
/// write for interface names.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

impl FabricNics {
    /// Whether the operator (or the agent) said which NICs are the fabric's.
    pub fn is_explicit(&self) -> bool {
        !matches!(self, Self::Inferred)
    }
}

/// Inference settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InferOptions {
    /// How NICs map to rails.
    pub rail_key: RailKey,
    /// Which host NICs are the fabric's.
    pub fabric_nics: FabricNics,
    /// Systems known to be hosts, by name: the Kubernetes node names, or an inventory. The
    /// strongest evidence of all; a name matches a system's short or fully qualified name
    /// (`node1` and `node1.example.com`), and the host takes the name given here. When given,
    /// a system that only advertises Router is not taken for a host by structure.
    pub hosts: Vec<String>,
}

impl InferOptions {
    /// Whether the caller said which systems are hosts (a host list or per-host NICs), so
    /// that inference does not guess hosts from the shape of the graph.
    pub fn hosts_are_named(&self) -> bool {
        !self.hosts.is_empty() || matches!(self.fabric_nics, FabricNics::PerHost(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nic_patterns_match_like_the_shell() {
        let p = |s: &str| NicPattern::new(s);
        assert!(p("ens1f0np0").matches("ens1f0np0"));
        assert!(!p("ens1f0np0").matches("ens1f0np1"));
        assert!(p("ens*np*").matches("ens1f0np0"));
        assert!(p("ens*np*").matches("ens10f1np1"));
        assert!(!p("ens*np*").matches("eno1"));
        assert!(p("eth?").matches("eth0") && !p("eth?").matches("eth10"));
        assert!(p("*").matches("") && p("a*b*c").matches("aXbYbc"));
        assert!(!p("a*b").matches("ab_"));
    }
}
