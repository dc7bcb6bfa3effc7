//! The controller's Prometheus metrics and probes. Every name starts with
//! `spinel_fabric_controller_`. `/readyz` passes once every watch has listed (a standby too: it
//! keeps the same view, ready to write); `/healthz` fails only when the loop has ended.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use spinel_kube::probes::{Health, Probe};

use crate::desired::Desired;
use crate::publish::Outcome;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SeverityLabel {
    severity: &'static str,
}

/// The controller's metrics, and the state its probes read.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconcile: Histogram,
    publish: Histogram,
    writes: Family<OutcomeLabel, Counter>,
    reports: Gauge,
    switch_tables: Gauge,
    hosts: Gauge,
    switches: Gauge,
    findings: Family<SeverityLabel, Gauge>,
    unusable_reports: Gauge,
    leader: Gauge,
    listed: AtomicBool,
    ended: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Metrics {
    /// Every metric registered, at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("spinel_fabric_controller");
        // 100 µs to 6.5 s, doubling: one node's change at 10k nodes and a full inference fit.
        let reconcile = Histogram::new(exponential_buckets(0.000_1, 2.0, 17));
        registry.register_with_unit(
            "reconcile_duration",
            "Time to infer the fabric from the inputs and derive every output",
            Unit::Seconds,
            reconcile.clone(),
        );
        let publish = Histogram::new(exponential_buckets(0.001, 2.0, 15));
        registry.register_with_unit(
            "publish_duration",
            "Time to carry out one batch of writes",
            Unit::Seconds,
            publish.clone(),
        );
        let writes = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "writes",
            "Writes to the API server, by outcome (done, failed, not_leading)",
            writes.clone(),
        );
        let gauges = [
            ("reports", "NodeFabric reports in the inputs"),
            ("switch_tables", "Switch neighbour tables in the inputs"),
            ("hosts", "Hosts the fabric model placed"),
            ("switches", "Switches the fabric model found"),
            ("unusable_reports", "Nodes whose report could not be used"),
            ("leader", "1 while this replica holds the Lease"),
        ]
        .map(|(name, help)| {
            let g = Gauge::default();
            registry.register(name, help, g.clone());
            g
        });
        let findings = Family::<SeverityLabel, Gauge>::default();
        registry.register(
            "findings",
            "Miswiring findings of the current model, by severity",
            findings.clone(),
        );
        let [
            reports,
            switch_tables,
            hosts,
            switches,
            unusable_reports,
            leader,
        ] = gauges;
        Self {
            registry,
            reconcile,
            publish,
            writes,
            reports,
            switch_tables,
            hosts,
            switches,
            findings,
            unusable_reports,
            leader,
            listed: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        }
    }

    /// One inference over `reports` reports and `switch_tables` tables took `took`.
    pub fn reconciled(&self, took: Duration, reports: usize, switch_tables: usize, d: &Desired) {
        self.reconcile.observe(took.as_secs_f64());
        self.reports.set(count(reports));
        self.switch_tables.set(count(switch_tables));
        let f = &d.fabric;
        self.hosts.set(i64::from(f.hosts));
        self.switches.set(i64::from(f.switches));
        self.unusable_reports.set(count(f.unusable_reports.len()));
        for (severity, n) in [("error", f.errors), ("warning", f.warnings)] {
            self.findings
                .get_or_create(&SeverityLabel { severity })
                .set(i64::from(n));
        }
    }

    /// One batch of writes ended with `outcome` after `took`.
    pub fn published(&self, took: Duration, outcome: &Outcome) {
        self.publish.observe(took.as_secs_f64());
        for (label, n) in [
            ("done", outcome.done),
            ("failed", outcome.failed),
            ("not_leading", outcome.not_leading),
        ] {
            self.writes
                .get_or_create(&OutcomeLabel { outcome: label })
                .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
        }
    }

    /// Leadership changed.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// Every watch has listed once (or, false, not yet).
    pub fn set_listed(&self, listed: bool) {
        self.listed.store(listed, Ordering::Relaxed);
    }

    /// The loop ended: the process should be restarted.
    pub fn set_ended(&self) {
        self.ended.store(true, Ordering::Relaxed);
    }
}

impl Health for Metrics {
    fn alive(&self) -> Probe {
        if self.ended.load(Ordering::Relaxed) {
            Probe::Fail("the controller loop ended".into())
        } else {
            Probe::Pass
        }
    }

    fn ready(&self) -> Probe {
        if self.listed.load(Ordering::Relaxed) {
            Probe::Pass
        } else {
            Probe::Fail("not every watch has listed yet".into())
        }
    }

    fn metrics(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_leadership_show_in_the_text() {
        let m = Metrics::new();
        assert_eq!(
            m.ready(),
            Probe::Fail("not every watch has listed yet".into())
        );
        m.set_listed(true);
        m.set_leader(true);
        m.published(
            Duration::from_millis(3),
            &Outcome {
                done: 4,
                failed: 1,
                not_leading: 0,
            },
        );
        let text = m.metrics();
        assert!(
            text.contains("spinel_fabric_controller_writes_total{outcome=\"done\"} 4"),
            "{text}"
        );
        assert!(text.contains("spinel_fabric_controller_leader 1"), "{text}");
        assert_eq!(m.ready(), Probe::Pass);
        m.set_ended();
        assert!(matches!(m.alive(), Probe::Fail(_)));
    }
}
