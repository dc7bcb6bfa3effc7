//! Health as device taints: each NIC has its own hysteresis (the node's rule,
//! [`crate::roce_health::Shield`]: a problem must last `unhealthyAfterSeconds` before the
//! NIC's devices are tainted, and the NIC must stay clean `healthyAfterSeconds` before they
//! are released), so one bad rail shields its devices and nothing else. Which findings still
//! shield the whole node is [`node_wide`]'s answer.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use spinel_api::crd::HealthFinding;
use spinel_node::nics::RoceNic;

use super::devices::{Effect, NicTaints};
use crate::roce_health::{Shield, is_informational};
use crate::settings::Health;

/// The findings that concern the node as a whole, once its NICs are shielded one by one:
/// those about no NIC, and every finding when no NIC is left without a problem (then no
/// device of the node can be used and the node taint says so where DRA is not looked at).
pub fn node_wide(findings: &[HealthFinding], nics: &[RoceNic]) -> Vec<HealthFinding> {
    let blocking: Vec<&HealthFinding> = findings
        .iter()
        .filter(|f| !is_informational(&f.reason))
        .collect();
    let troubled: BTreeSet<&str> = blocking.iter().filter_map(|f| f.nic.as_deref()).collect();
    let all_down = !nics.is_empty() && nics.iter().all(|n| troubled.contains(n.name.as_str()));
    findings
        .iter()
        .filter(|f| f.nic.is_none() || all_down)
        .cloned()
        .collect()
}

/// Per-NIC shields.
#[derive(Debug, Default)]
pub struct NicShields {
    nics: BTreeMap<String, (Shield, BTreeSet<String>)>,
}

impl NicShields {
    /// One pass at `now` over the NICs and the current findings: the taints of every NIC that
    /// is shielded, with the reasons seen last while it was troubled.
    pub fn update(
        &mut self,
        now: Instant,
        nics: &[RoceNic],
        findings: &[HealthFinding],
        health: &Health,
        evict_on: &BTreeSet<String>,
    ) -> NicTaints {
        self.nics
            .retain(|name, _| nics.iter().any(|n| n.name.as_str() == name));
        let mut out = NicTaints::new();
        for nic in nics {
            let name = nic.name.as_str();
            let reasons: BTreeSet<String> = findings
                .iter()
                .filter(|f| f.nic.as_deref() == Some(name) && !is_informational(&f.reason))
                .map(|f| f.reason.clone())
                .collect();
            let (shield, last) = self.nics.entry(name.to_owned()).or_default();
            if !reasons.is_empty() {
                *last = reasons.clone();
            }
            let ready = shield.update(
                now,
                !reasons.is_empty(),
                health.unhealthy_after,
                health.healthy_after,
            );
            if ready == Some(false) {
                let taints = last
                    .iter()
                    .map(|r| {
                        let effect = if evict_on.contains(r) {
                            Effect::NoExecute
                        } else {
                            Effect::NoSchedule
                        };
                        (r.clone(), effect)
                    })
                    .collect();
                out.insert(name.to_owned(), taints);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::dra::devices::tests::nic;
    use crate::settings::{DutiesFile, DutyFlags};

    fn f(nic: Option<&str>, reason: &str) -> HealthFinding {
        HealthFinding {
            nic: nic.map(Into::into),
            reason: reason.into(),
            message: reason.into(),
        }
    }

    #[test]
    fn a_nic_is_tainted_after_its_problem_lasts_and_released_after_it_stays_clean() {
        let mut health = DutiesFile::default()
            .resolve(&DutyFlags::default())
            .unwrap()
            .health;
        health.unhealthy_after = Duration::from_secs(10);
        health.healthy_after = Duration::from_secs(60);
        let nics = [nic("pf0", "0000:3b:00.0"), nic("pf1", "0000:5e:00.0")];
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let evict: BTreeSet<String> = ["LinkDown".to_owned()].into();
        let mut s = NicShields::default();
        let down = [f(Some("pf1"), "LinkDown"), f(Some("pf1"), "PfcUnknown")];
        assert!(s.update(at(0), &nics, &down, &health, &evict).is_empty());
        let t = s.update(at(10), &nics, &down, &health, &evict);
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(t["pf1"].len(), 1, "PfcUnknown is no reason to shield");
        assert_eq!(t["pf1"]["LinkDown"], Effect::NoExecute);
        // Clean again: still tainted, with the last reason, until 60 s have passed.
        let t = s.update(at(11), &nics, &[], &health, &evict);
        assert_eq!(t["pf1"]["LinkDown"], Effect::NoExecute);
        assert!(s.update(at(71), &nics, &[], &health, &evict).is_empty());
        let gid = [f(Some("pf0"), "NoRoceV2Gid")];
        s.update(at(80), &nics, &gid, &health, &evict);
        let t = s.update(at(90), &nics, &gid, &health, &evict);
        assert_eq!(t["pf0"]["NoRoceV2Gid"], Effect::NoSchedule);
    }

    #[test]
    fn only_findings_about_the_whole_node_shield_the_node() {
        let nics = [nic("pf0", "0000:3b:00.0"), nic("pf1", "0000:5e:00.0")];
        let one = [f(Some("pf1"), "LinkDown")];
        assert!(node_wide(&one, &nics).is_empty());
        let both = [f(Some("pf1"), "LinkDown"), f(Some("pf0"), "NoNeighbor")];
        assert_eq!(node_wide(&both, &nics).len(), 2);
        let unknown = [f(Some("pf1"), "LinkDown"), f(Some("pf0"), "PfcUnknown")];
        assert!(node_wide(&unknown, &nics).is_empty(), "pf0 is usable");
        let node = [f(None, "Something")];
        assert_eq!(node_wide(&node, &nics).len(), 1);
    }
}
