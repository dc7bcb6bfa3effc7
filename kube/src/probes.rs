//! The one small HTTP server of every daemon: `GET /metrics` (OpenMetrics text), `/healthz`
//! (the process is turning) and `/readyz` (it is doing its job), for Prometheus and the
//! kubelet's probes. The scheduler merges the same routes into its extender server.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::shutdown::Shutdown;

/// The `Content-Type` of OpenMetrics text.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// 200.
    Pass,
    /// 503, with the reason a person reads.
    Fail(String),
}

/// What a daemon answers on its probe endpoints.
pub trait Health: Send + Sync + 'static {
    /// `/healthz`: fails only when restarting the process would help.
    fn alive(&self) -> Probe;
    /// `/readyz`: fails while the daemon cannot do its job yet (or, a standby, should not).
    fn ready(&self) -> Probe;
    /// `/metrics`: OpenMetrics text. Runs on a blocking thread (it may read sysfs).
    fn metrics(&self) -> String;
}

fn answer(probe: Probe, ok: &'static str) -> Response {
    match probe {
        Probe::Pass => (StatusCode::OK, ok).into_response(),
        Probe::Fail(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
    }
}

async fn healthz(State(h): State<Arc<dyn Health>>) -> Response {
    answer(h.alive(), "ok\n")
}

async fn readyz(State(h): State<Arc<dyn Health>>) -> Response {
    answer(h.ready(), "ready\n")
}

async fn metrics(State(h): State<Arc<dyn Health>>) -> Response {
    match tokio::task::spawn_blocking(move || h.metrics()).await {
        Ok(text) => ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
    }
}

/// The three routes, for a server of one's own or for merging into another router.
pub fn router(health: Arc<dyn Health>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health)
}

/// Binds `address` now (a port in use fails the daemon at start, not silently later) and
/// serves `router` there until `shutdown`.
pub async fn serve(
    address: SocketAddr,
    router: Router,
    shutdown: Shutdown,
) -> std::io::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    tracing::info!(address = %listener.local_addr()?, "serving /metrics, /healthz, /readyz");
    Ok(tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.wait().await })
            .await
    }))
}
