//! The agent's HTTP endpoints: `/metrics` (OpenMetrics text), `/healthz` (the agent's loops
//! are turning) and `/readyz` (it has done its job once: host routing reconciled, the
//! RoCEFabricReady condition written) for the DaemonSet's probes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

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

#[derive(Clone)]
struct AppState {
    metrics: Metrics,
    probes: Arc<Probes>,
    stale: Duration,
}

async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    // Encoding reads sysfs (the RDMA counters): off the async workers.
    let text = tokio::task::spawn_blocking(move || s.metrics.encode())
        .await
        .unwrap_or_default();
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
}

async fn healthz(State(s): State<AppState>) -> impl IntoResponse {
    if s.probes.alive(s.stale) {
        (StatusCode::OK, "ok\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "the health loop stopped\n")
    }
}

async fn readyz(State(s): State<AppState>) -> impl IntoResponse {
    let routes = s.probes.routes.load(Ordering::Relaxed);
    let condition = s.probes.condition.load(Ordering::Relaxed);
    match (routes, condition) {
        (true, true) => (StatusCode::OK, "ready\n".to_owned()),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: host routing reconciled {routes}, condition written {condition}\n"),
        ),
    }
}

/// Serves on `address` until `shutdown` completes. `stale`: how long the health loop may
/// stand still before `/healthz` fails.
pub async fn serve(
    address: SocketAddr,
    metrics: Metrics,
    probes: Arc<Probes>,
    stale: Duration,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(self::metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            metrics,
            probes,
            stale,
        });
    let listener = tokio::net::TcpListener::bind(address).await?;
    tracing::info!(%address, "serving /metrics, /healthz, /readyz");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
