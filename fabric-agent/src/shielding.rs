//! RoCE health over time: every period, the findings ([`crate::roce_health`]) from the latest
//! observation, the kernel readings and the controller's cabling findings go into the node's
//! report; the hysteresis decides the `RoCEFabricReady` condition and, when configured, the
//! degraded taint, which are written only when they change (and refreshed every
//! [`REFRESH`], in case someone edited them).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use spinel_api::crd::{HealthFinding, NodeFabricStatus};
use tokio::sync::watch;

use crate::metrics::{FindingLabel, Metrics};
use crate::node_condition::{self, Verdict};
use crate::probes::Probes;
use crate::readings::Reader;
use crate::report::Observation;
use crate::roce_health::{self, Shield, condition_reason, is_informational};
use crate::settings::Health;

/// The condition is applied again at least this often, unchanged.
const REFRESH: Duration = Duration::from_secs(600);

/// The verdict for `findings` when the node is (or is not) ready.
pub fn verdict(ready: bool, findings: &[HealthFinding], nics: usize) -> Verdict {
    let blocking: Vec<&HealthFinding> = findings
        .iter()
        .filter(|f| !is_informational(&f.reason))
        .collect();
    let notes: Vec<&str> = findings
        .iter()
        .filter(|f| is_informational(&f.reason))
        .map(|f| f.message.as_str())
        .collect();
    if ready {
        let mut message = format!("{nics} RoCE NIC(s) checked, no problem found");
        if !blocking.is_empty() {
            message = format!(
                "problems not yet lasting long enough to shield the node: {}",
                blocking
                    .iter()
                    .map(|f| f.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        if !notes.is_empty() {
            message += &format!("; not checked: {}", notes.join("; "));
        }
        let reason = if notes.is_empty() {
            "RoCEFabricHealthy"
        } else {
            "RoCEFabricHealthyPfcUnknown"
        };
        return Verdict {
            ready,
            reason: reason.into(),
            message,
        };
    }
    Verdict {
        ready,
        reason: blocking
            .first()
            .map(|f| condition_reason(f))
            .unwrap_or_else(|| "RoCEFabricDegraded".into()),
        message: blocking
            .iter()
            .map(|f| f.message.as_str())
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// What the loop needs.
pub struct Shielding {
    /// Settings.
    pub settings: Health,
    /// This node.
    pub node: String,
    /// Nodes (own Node only, by admission policy).
    pub nodes: Api<Node>,
    /// The observation the report is made of (findings go in).
    pub observation: Arc<watch::Sender<Observation>>,
    /// The node's `NodeFabric` status: the controller's cabling findings about it.
    pub status: watch::Receiver<Option<NodeFabricStatus>>,
    /// Kernel readings.
    pub reader: Reader,
    /// Metrics.
    pub metrics: Metrics,
    /// The probes: a heartbeat per pass, and whether the condition was written.
    pub probes: Arc<Probes>,
    /// Whether the NICs are shielded one by one (DRA device taints): then only findings about
    /// the whole node decide the condition and the node taint.
    pub node_wide_only: bool,
}

/// What was last written.
#[derive(Default)]
struct Written {
    verdict: Option<Verdict>,
    transition: Option<Time>,
    at: Option<Instant>,
    taint: Option<bool>,
}

impl Shielding {
    /// Runs until the task is aborted.
    pub async fn run(self) {
        let started = Instant::now();
        let mut shield = Shield::new();
        let mut written = Written::default();
        let mut tick = tokio::time::interval(self.settings.period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.probes.beat();
            let (nics, table) = {
                let o = self.observation.borrow();
                (
                    o.nics.clone(),
                    o.table_at(&self.node, std::time::Instant::now()),
                )
            };
            let readings = self.reader.read(nics.clone()).await;
            let cabling = self
                .status
                .borrow()
                .as_ref()
                .map(|s| s.findings.clone())
                .unwrap_or_default();
            let settled = started.elapsed() >= self.settings.neighbor_grace;
            let findings = roce_health::findings(
                &self.settings,
                &nics,
                table.as_ref(),
                &cabling,
                &readings,
                settled,
            );
            self.record(&findings);
            let findings = if self.node_wide_only {
                crate::dra::taints::node_wide(&findings, &nics)
            } else {
                findings
            };
            let troubled = findings.iter().any(|f| !is_informational(&f.reason));
            let decision = shield.update(
                Instant::now(),
                troubled,
                self.settings.unhealthy_after,
                self.settings.healthy_after,
            );
            if let Some(ready) = decision {
                self.write(&mut written, verdict(ready, &findings, nics.len()))
                    .await;
            }
        }
    }

    /// Puts the findings into the report and the metrics.
    fn record(&self, findings: &[HealthFinding]) {
        self.observation.send_if_modified(|o| {
            let changed = o.health != findings;
            if changed {
                o.health = findings.to_vec();
            }
            changed
        });
        self.metrics.findings.clear();
        for f in findings {
            let label = FindingLabel {
                nic: f.nic.clone().unwrap_or_default(),
                reason: f.reason.clone(),
            };
            self.metrics.findings.get_or_create(&label).set(1);
        }
    }

    #[tracing::instrument(name = "shield", skip_all, fields(node = %self.node, ready = verdict.ready))]
    async fn write(&self, written: &mut Written, verdict: Verdict) {
        let node = self.node.as_str();
        let due = written.at.is_none_or(|at| at.elapsed() >= REFRESH);
        if written.verdict.as_ref() != Some(&verdict) || due {
            let transition = match (&written.verdict, &written.transition) {
                (Some(v), Some(t)) if v.ready == verdict.ready => t.clone(),
                (Some(_), _) => Time(k8s_openapi::jiff::Timestamp::now()),
                // First write since start: keep the Node's transition time if it agrees.
                (None, _) => match node_condition::current_condition(&self.nodes, node).await {
                    Ok(Some(c)) if (c.status == "True") == verdict.ready => c
                        .last_transition_time
                        .unwrap_or_else(|| Time(k8s_openapi::jiff::Timestamp::now())),
                    _ => Time(k8s_openapi::jiff::Timestamp::now()),
                },
            };
            match node_condition::apply_condition(&self.nodes, node, &verdict, &transition).await {
                Ok(()) => {
                    if written.verdict.as_ref() != Some(&verdict) {
                        tracing::info!(node, ready = verdict.ready, reason = %verdict.reason, message = %verdict.message, "RoCEFabricReady");
                    }
                    self.metrics.ready.set(i64::from(verdict.ready));
                    self.probes.condition.store(true, Ordering::Relaxed);
                    written.verdict = Some(verdict.clone());
                    written.transition = Some(transition);
                    written.at = Some(Instant::now());
                }
                Err(e) => tracing::warn!(node, "cannot set the RoCEFabricReady condition: {e}"),
            }
        }
        // Without the setting the agent still removes a taint it may have set before.
        let taint = self.settings.taint && !verdict.ready;
        if written.taint != Some(taint) {
            match node_condition::set_taint(&self.nodes, node, taint).await {
                Ok(changed) => {
                    if changed {
                        tracing::info!(
                            node,
                            taint,
                            "{}",
                            if taint {
                                "node shielded: degraded taint set"
                            } else {
                                "node released: degraded taint removed"
                            }
                        );
                    }
                    self.metrics.tainted.set(i64::from(taint));
                    written.taint = Some(taint);
                }
                Err(e) => tracing::warn!(node, "cannot change the degraded taint: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(nic: &str, reason: &str) -> HealthFinding {
        HealthFinding {
            nic: Some(nic.into()),
            reason: reason.into(),
            message: format!("{nic}: {reason}"),
        }
    }

    #[test]
    fn the_condition_names_the_nic_and_problem_and_says_what_was_not_checked() {
        let v = verdict(false, &[f("pf0", "PfcUnknown"), f("pf1", "LinkDown")], 2);
        assert_eq!(v.reason, "LinkDown:pf1");
        assert_eq!(v.message, "pf1: LinkDown");
        let v = verdict(true, &[], 2);
        assert_eq!(v.reason, "RoCEFabricHealthy");
        let v = verdict(true, &[f("pf0", "PfcUnknown")], 1);
        assert_eq!(v.reason, "RoCEFabricHealthyPfcUnknown");
        assert!(
            v.message.contains("not checked: pf0: PfcUnknown"),
            "{}",
            v.message
        );
    }
}
