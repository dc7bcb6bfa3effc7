//! What the agent's probes answer, served by `spinel-kube`'s probe server: `/metrics`
//! (OpenMetrics text), `/healthz` (the health loop is turning) and `/readyz` (it has done its
//! job once: host routing reconciled, the RoCEFabricReady condition written) for the
//! DaemonSet's probes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use spinel_kube::probes::{Health, Probe};

use crate::metrics::Metrics;

/// What the probes look at.
#[derive(Debug, Default)]
pub struct Probes {
    /// Host routing reconciled once (or routing is off).
    pub routes: Arc<AtomicBool>,
    /// The condition was written once.
    pub condition: Arc<AtomicBool>,
    /// Seconds since the epoch of the last health pass.
    pub heartbeat: AtomicU64,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl Probes {
    /// Records that the health loop turned.
    pub fn beat(&self) {
        self.heartbeat.store(now_secs(), Ordering::Relaxed);
    }

    /// Alive unless the health loop stopped turning for `stale`.
    fn alive(&self, stale: Duration) -> bool {
        let last = self.heartbeat.load(Ordering::Relaxed);
        last == 0 || now_secs().saturating_sub(last) <= stale.as_secs()
    }
}

/// The agent's answers: its metrics and probes; `stale` is how long the health loop may stand
/// still before `/healthz` fails.
pub struct AgentHealth {
    /// The metrics.
    pub metrics: Metrics,
    /// The probes' state.
    pub probes: Arc<Probes>,
    /// How long the health loop may stand still.
    pub stale: Duration,
}

impl Health for AgentHealth {
    fn alive(&self) -> Probe {
        if self.probes.alive(self.stale) {
            Probe::Pass
        } else {
            Probe::Fail("the health loop stopped".into())
        }
    }

    fn ready(&self) -> Probe {
        let routes = self.probes.routes.load(Ordering::Relaxed);
        let condition = self.probes.condition.load(Ordering::Relaxed);
        if routes && condition {
            Probe::Pass
        } else {
            Probe::Fail(format!(
                "not ready: host routing reconciled {routes}, condition written {condition}"
            ))
        }
    }

    fn metrics(&self) -> String {
        // Encoding reads sysfs (the RDMA counters); the probe server calls this off the
        // async workers.
        self.metrics.encode()
    }
}
