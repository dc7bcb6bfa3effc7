//! Prometheus metrics, served as OpenMetrics text on `GET /metrics`.
//!
//! Counters and latency histograms are updated by the handlers as requests pass; the gauges
//! (nodes in view, gangs, reservations, leadership) are read from the state at scrape time, so
//! they never drift from it. Every name starts with `spinel_scheduler_`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use spinel_placement::EngineStats;

/// The `Content-Type` of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What a filter request decided, as counted in `spinel_scheduler_decisions_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A pod outside any gang: candidates passed (less any held for planned gangs).
    PassThrough,
    /// A gang pod kept only its planned node.
    Placed,
    /// A gang pod waits: no room now (preemption or time may help).
    Pending,
    /// A gang pod can never be placed as asked (invalid request, never fits).
    Unschedulable,
    /// kube-scheduler's own filters dropped the planned node and no other could take its place.
    PlannedNodeDropped,
    /// A gang pod the pod watch has not shown: nothing decided.
    NotSeen,
    /// A new gang would pass the limit on ranks held: it waits.
    OverLimit,
}

impl Decision {
    fn label(self) -> &'static str {
        match self {
            Decision::PassThrough => "pass_through",
            Decision::Placed => "placed",
            Decision::Pending => "pending",
            Decision::Unschedulable => "unschedulable",
            Decision::PlannedNodeDropped => "planned_node_dropped",
            Decision::NotSeen => "unknown_pod",
            Decision::OverLimit => "over_limit",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbLabel {
    verb: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectLabel {
    verb: &'static str,
    code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabel {
    decision: &'static str,
}

type HistogramFamily = Family<VerbLabel, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 100 µs to 3.3 s, doubling: the 5 ms target sits between two buckets' edges.
    Histogram::new(exponential_buckets(0.000_1, 2.0, 16))
}

/// What the gauges show, read from the state when scraped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Nodes in the cluster view.
    pub nodes: usize,
    /// Of those, nodes no gang may use (the degraded taint, cordoned, not Ready).
    pub unusable_nodes: usize,
    /// The engine's counts (gangs, waiting gangs, reservations, ranks and bytes held).
    pub engine: EngineStats,
    /// The limit on ranks held.
    pub held_ranks_limit: u64,
    /// Gangs released whole since the start (part bound where the rest could not join).
    pub released_gangs: u64,
    /// Whether this replica leads (always true without leader election).
    pub leader: bool,
}

/// The extender's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    durations: HistogramFamily,
    rejected: Family<RejectLabel, Counter>,
    decisions: Family<DecisionLabel, Counter>,
    expired: Counter,
    nodes: Gauge,
    unusable_nodes: Gauge,
    gangs: Gauge,
    pending_gangs: Gauge,
    reserved_ranks: Gauge,
    reserved_units: Gauge,
    held_ranks: Gauge,
    held_ranks_limit: Gauge,
    held_bytes: Gauge,
    stranded_gangs: Gauge,
    released_gangs: Gauge,
    leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn gauge(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

impl Metrics {
    /// Every metric registered, at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("spinel_scheduler");
        let durations = HistogramFamily::new_with_constructor(latency_histogram);
        registry.register_with_unit(
            "request_duration",
            "Time to answer an extender request (filter, prioritize, bind), from the whole \
             body read to the reply built",
            prometheus_client::registry::Unit::Seconds,
            durations.clone(),
        );
        let rejected = Family::<RejectLabel, Counter>::default();
        registry.register(
            "rejected_requests",
            "Extender requests refused with an HTTP error (malformed, oversized, not the leader)",
            rejected.clone(),
        );
        let decisions = Family::<DecisionLabel, Counter>::default();
        registry.register(
            "decisions",
            "Filter decisions by outcome",
            decisions.clone(),
        );
        let expired = Counter::default();
        registry.register(
            "reservations_expired",
            "Gang reservations released because the gang made no progress in time",
            expired.clone(),
        );
        let mut gauge_of = |name: &str, help: &str| {
            let g = Gauge::default();
            registry.register(name, help, g.clone());
            g
        };
        Metrics {
            nodes: gauge_of("nodes", "Nodes in the cluster view"),
            unusable_nodes: gauge_of(
                "unusable_nodes",
                "Nodes in view no gang may use: the fabric's degraded taint, cordoned, not Ready",
            ),
            gangs: gauge_of(
                "gangs",
                "Gangs with a plan, reservations or a reason to wait",
            ),
            pending_gangs: gauge_of(
                "pending_gangs",
                "Gangs waiting with a reason (no room, a lost rank that cannot rejoin its group)",
            ),
            reserved_ranks: gauge_of(
                "reserved_ranks",
                "Ranks holding a reservation on a node (planned, not yet bound)",
            ),
            reserved_units: gauge_of(
                "reserved_units",
                "Units of the scheduled resource held by reservations",
            ),
            held_ranks: gauge_of(
                "held_ranks",
                "Ranks the gangs in memory hold (one per pod of each gang's size)",
            ),
            held_ranks_limit: gauge_of(
                "held_ranks_limit",
                "Most ranks held at once; a new gang past it waits with the reason",
            ),
            held_bytes: gauge_of(
                "held_bytes",
                "Bytes the gangs' state takes, estimated from the ranks and pod UIDs held",
            ),
            stranded_gangs: gauge_of(
                "stranded_gangs",
                "Gangs partly bound whose lost ranks cannot rejoin their groups (released whole \
                 after the grace)",
            ),
            released_gangs: gauge_of(
                "released_gangs",
                "Gangs released whole since the start: part bound where the rest could not join",
            ),
            leader: gauge_of("leader", "1 when this replica leads and decides, else 0"),
            registry,
            durations,
            rejected,
            decisions,
            expired,
        }
    }

    /// Records the time one request of `verb` took.
    pub fn observe(&self, verb: &'static str, seconds: f64) {
        self.durations
            .get_or_create(&VerbLabel { verb })
            .observe(seconds);
    }

    /// Counts a request of `verb` refused with HTTP status `code`.
    pub fn rejected(&self, verb: &'static str, code: u16) {
        self.rejected
            .get_or_create(&RejectLabel { verb, code })
            .inc();
    }

    /// Counts a filter decision.
    pub fn decision(&self, decision: Decision) {
        self.decisions
            .get_or_create(&DecisionLabel {
                decision: decision.label(),
            })
            .inc();
    }

    /// Counts reservations released by the timeout.
    pub fn expired(&self, gangs: usize) {
        self.expired
            .inc_by(u64::try_from(gangs).unwrap_or(u64::MAX));
    }

    /// The OpenMetrics text, with the gauges set from `snapshot`.
    pub fn encode(&self, snapshot: &Snapshot) -> Result<String, std::fmt::Error> {
        self.nodes.set(gauge(snapshot.nodes));
        self.unusable_nodes.set(gauge(snapshot.unusable_nodes));
        self.gangs.set(gauge(snapshot.engine.gangs));
        self.pending_gangs.set(gauge(snapshot.engine.waiting));
        self.reserved_ranks
            .set(gauge(snapshot.engine.reserved_ranks));
        self.reserved_units
            .set(gauge(snapshot.engine.reserved_units));
        self.held_ranks.set(gauge(snapshot.engine.held_ranks));
        self.held_ranks_limit.set(gauge(snapshot.held_ranks_limit));
        self.held_bytes.set(gauge(snapshot.engine.held_bytes));
        self.stranded_gangs.set(gauge(snapshot.engine.stranded));
        self.released_gangs.set(gauge(snapshot.released_gangs));
        self.leader.set(i64::from(snapshot.leader));
        let mut out = String::new();
        encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_names_every_metric_with_its_value() {
        let m = Metrics::new();
        m.observe("filter", 0.003);
        m.observe("filter", 0.0002);
        m.rejected("filter", 400);
        m.decision(Decision::Placed);
        m.decision(Decision::Placed);
        m.expired(1);
        let text = m
            .encode(&Snapshot {
                nodes: 16,
                unusable_nodes: 1,
                engine: EngineStats {
                    gangs: 2,
                    waiting: 1,
                    reserved_ranks: 3,
                    reserved_units: 24,
                    held_ranks: 40,
                    held_bytes: 4096,
                    stranded: 1,
                },
                held_ranks_limit: 1 << 20,
                released_gangs: 3,
                leader: true,
            })
            .unwrap();
        for line in [
            "spinel_scheduler_request_duration_seconds_count{verb=\"filter\"} 2",
            "spinel_scheduler_request_duration_seconds_bucket{le=\"0.0004\",verb=\"filter\"} 1",
            "spinel_scheduler_rejected_requests_total{verb=\"filter\",code=\"400\"} 1",
            "spinel_scheduler_decisions_total{decision=\"placed\"} 2",
            "spinel_scheduler_reservations_expired_total 1",
            "spinel_scheduler_nodes 16",
            "spinel_scheduler_unusable_nodes 1",
            "spinel_scheduler_gangs 2",
            "spinel_scheduler_pending_gangs 1",
            "spinel_scheduler_reserved_ranks 3",
            "spinel_scheduler_reserved_units 24",
            "spinel_scheduler_held_ranks 40",
            "spinel_scheduler_held_ranks_limit 1048576",
            "spinel_scheduler_held_bytes 4096",
            "spinel_scheduler_stranded_gangs 1",
            "spinel_scheduler_released_gangs 3",
            "spinel_scheduler_leader 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }
}
