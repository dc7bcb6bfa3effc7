//! The extender's HTTP server: `POST /filter`, `/prioritize`, `/bind` (kube-scheduler extender
//! v1), `GET /healthz` (alive), `/readyz` (leading, and the cluster view is loaded) and
//! `/metrics` (Prometheus).
//!
//! A standby replica (leader election on, lease held elsewhere) answers every verb with 503 and
//! is not ready, so a Service sends kube-scheduler only to the leader and a stray request
//! decides nothing.
//!
//! Bodies are read whole up to a size limit (413 above it) and parsed with serde_json, whose
//! recursion limit (128 levels) turns hostile nesting into an error; anything that does not
//! parse, or lacks the pod or the candidates, is a 400 with the reason. Nothing a request
//! carries can panic a handler.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State as AxumState};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use k8s_openapi::api::core::v1::Pod;
use serde::Deserialize;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::metrics::{self, Decision, Metrics, Snapshot};
use crate::publish::Publisher;
use crate::state::{FilterDecision, Publication, State};
use crate::wire::{
    ExtenderArgs, ExtenderBindingArgs, ExtenderBindingResult, Failures, FilterReply, NameList,
    NodeListRef, host_priorities, names, node_name,
};

/// Server settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerOptions {
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Whether `/bind` binds pods (only one extender in a cluster may).
    pub bind: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_body_bytes: 64 << 20,
            bind: false,
        }
    }
}

/// What the handlers share.
#[derive(Clone)]
pub struct App {
    state: Arc<Mutex<State>>,
    publisher: Arc<dyn Publisher>,
    started: Instant,
    options: ServerOptions,
    metrics: Arc<Metrics>,
    leading: Arc<AtomicBool>,
}

impl App {
    /// An app over `state`, publishing through `publisher`.
    pub fn new(
        state: Arc<Mutex<State>>,
        publisher: Arc<dyn Publisher>,
        options: ServerOptions,
    ) -> App {
        // Gangs released outside any request (stranded past their grace) publish through it.
        if let Ok(mut s) = state.lock() {
            s.set_publisher(publisher.clone());
        }
        App {
            state,
            publisher,
            started: Instant::now(),
            options,
            metrics: Arc::new(Metrics::new()),
            leading: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Records into `metrics` (shared with the watches) instead of a private set.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> App {
        self.metrics = metrics;
        self
    }

    /// Decides only while `leading` is true (leader election); a replica without it always
    /// leads.
    pub fn with_leadership(mut self, leading: Arc<AtomicBool>) -> App {
        self.leading = leading;
        self
    }

    fn is_leader(&self) -> bool {
        self.leading.load(Ordering::Acquire)
    }

    /// Counts a finished request: its time, and its status when refused.
    fn finish(&self, verb: &'static str, start: Instant, response: Response) -> Response {
        self.metrics.observe(verb, start.elapsed().as_secs_f64());
        if !response.status().is_success() {
            self.metrics.rejected(verb, response.status().as_u16());
        }
        response
    }

    /// The refusal for a replica that must not decide: a standby, or a leader whose cluster
    /// view is not loaded yet (an empty view would call every gang impossible).
    fn standby(&self) -> Option<Response> {
        if !self.is_leader() {
            return Some(text(
                StatusCode::SERVICE_UNAVAILABLE,
                "this spinel-scheduler replica is a standby: another holds the leader lease",
            ));
        }
        match self.state.lock() {
            Ok(s) if s.is_ready() => None,
            Ok(_) => Some(text(
                StatusCode::SERVICE_UNAVAILABLE,
                "cluster view not loaded yet",
            )),
            Err(_) => Some(text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "state lock poisoned",
            )),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, Rejection> {
        self.state.lock().map_err(|_| {
            Rejection(
                StatusCode::INTERNAL_SERVER_ERROR,
                "state lock poisoned".to_owned(),
            )
        })
    }
}

/// The router.
pub fn router(app: App) -> Router {
    let limit = app.options.max_body_bytes;
    Router::new()
        .route("/filter", post(filter))
        .route("/prioritize", post(prioritize))
        .route("/bind", post(bind))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(app)
}

/// A request refused with a status and a reason.
struct Rejection(StatusCode, String);

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        text(self.0, self.1)
    }
}

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], body.into()).into_response()
}

fn json<T: Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8], what: &str) -> Result<T, Rejection> {
    serde_json::from_slice(body)
        .map_err(|e| Rejection(StatusCode::BAD_REQUEST, format!("invalid {what}: {e}")))
}

/// The pod and the candidates, in whichever mode the scheduler sent them, borrowed from the
/// request body.
struct Request<'a> {
    pod: Pod,
    names: Vec<Cow<'a, str>>,
    /// `NodeNames` as sent, to echo when every candidate passes.
    raw_names: Option<&'a RawValue>,
    nodes: Option<NodeListRef<'a>>,
}

fn bad(reason: &str) -> Rejection {
    Rejection(StatusCode::BAD_REQUEST, reason.to_owned())
}

fn request(body: &Bytes) -> Result<Request<'_>, Rejection> {
    let args: ExtenderArgs<'_> = parse(body, "ExtenderArgs")?;
    let pod = args
        .pod
        .ok_or_else(|| bad("invalid ExtenderArgs: Pod is missing"))?;
    match (args.node_names, args.nodes) {
        (Some(raw), _) => Ok(Request {
            pod,
            names: names(raw).map_err(|e| bad(&format!("invalid ExtenderArgs: NodeNames: {e}")))?,
            raw_names: Some(raw),
            nodes: None,
        }),
        (None, Some(list)) => {
            let names = list
                .items
                .iter()
                .map(|n| node_name(n))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("invalid ExtenderArgs: a node in Nodes has no metadata.name"))?;
            Ok(Request {
                pod,
                names,
                raw_names: None,
                nodes: Some(list),
            })
        }
        (None, None) => Err(bad(
            "invalid ExtenderArgs: neither Nodes nor NodeNames is set",
        )),
    }
}

fn publish(app: &App, pod: &Pod, p: Publication) {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    if !p.annotations.is_empty() {
        app.publisher.annotate(ns, name, p.annotations);
    }
    if let Some((reason, message)) = p.event {
        app.publisher.event(ns, name, &reason, &message);
    }
    for other in p.others {
        app.publisher
            .annotate(&other.namespace, &other.name, other.annotations);
    }
}

/// The reply keeping the candidates `pass` accepts (by position), in the caller's mode.
fn reply<'a>(req: &'a mut Request<'_>, pass: impl Fn(usize, &str) -> bool) -> FilterReply<'a> {
    let mut out = FilterReply::default();
    match req.nodes.take() {
        Some(mut list) => {
            let names = &req.names;
            let mut i = 0;
            list.items.retain(|_| {
                let keep = pass(i, &names[i]);
                i += 1;
                keep
            });
            out.nodes = Some(list);
        }
        None => {
            let kept: Vec<&str> = req
                .names
                .iter()
                .enumerate()
                .filter(|(i, n)| pass(*i, n))
                .map(|(_, n)| n.as_ref())
                .collect();
            out.node_names = Some(match req.raw_names {
                Some(raw) if kept.len() == req.names.len() => NameList::Echo(raw),
                _ => NameList::Kept(kept),
            });
        }
    }
    out
}

/// The body, or the extractor's refusal (413 above the size limit) as a response.
type Body = Result<Bytes, BytesRejection>;

async fn filter(AxumState(app): AxumState<App>, body: Body) -> Response {
    let start = Instant::now();
    let response = match (app.standby(), body) {
        (Some(refusal), _) => refusal,
        (None, Err(e)) => e.into_response(),
        (None, Ok(body)) => filter_body(&app, &body).await,
    };
    app.finish("filter", start, response)
}

/// How long a filter request for a gang pod the pod watch has not shown yet waits for it
/// (kube-scheduler's informer may see a new pod a moment before the extender's watch does).
const WATCH_WAIT: Duration = Duration::from_millis(250);

/// Longest reason written per node: a reason repeats once per candidate, so the answer stays
/// within a constant of the candidates' size whatever a reason quotes (the whole reason goes
/// to the pod's Event).
pub const MAX_REASON_BYTES: usize = 256;

/// `reason` cut to [`MAX_REASON_BYTES`] on a character boundary, marked when cut.
fn per_node(reason: &str) -> Cow<'_, str> {
    if reason.len() <= MAX_REASON_BYTES {
        return Cow::Borrowed(reason);
    }
    let mut end = MAX_REASON_BYTES - '…'.len_utf8();
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &reason[..end]))
}

/// The engine's decision for the pod in `req`, its candidates telling which nodes
/// kube-scheduler's own filters allow.
fn decide(app: &App, req: &Request<'_>) -> Result<(FilterDecision, Publication), Rejection> {
    let mut state = app.lock()?;
    let candidates = state.candidates(req.raw_names.map(RawValue::get), &req.names);
    Ok(state.filter(&req.pod, Some(&candidates), app.now_ms()))
}

async fn filter_body(app: &App, body: &Bytes) -> Response {
    let mut req = match request(body) {
        Ok(r) => r,
        Err(resp) => return resp.into_response(),
    };
    let waited_until = Instant::now() + WATCH_WAIT;
    let (decision, publication) = loop {
        match decide(app, &req) {
            Ok((FilterDecision::NotSeen { .. }, _)) if Instant::now() < waited_until => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok(d) => break d,
            Err(resp) => return resp.into_response(),
        }
    };
    // Pods outside gangs keep off units reserved for planned gangs.
    let blocked = match decision {
        FilterDecision::PassThrough => match app.lock() {
            Ok(mut state) => {
                let candidates = state.candidates(req.raw_names.map(RawValue::get), &req.names);
                state.blocked_by_reservations(&req.pod, &candidates)
            }
            Err(resp) => return resp.into_response(),
        },
        _ => None,
    };
    publish(app, &req.pod, publication);
    let names = req.names.clone();
    // Refusals list only the nodes the cluster view knows: a name it does not know is left
    // out, which kube-scheduler reads as unresolvable, so no request can make the answer
    // larger than the cluster's nodes times one bounded reason.
    let known: Vec<bool> = match (&decision, app.lock()) {
        (FilterDecision::PassThrough | FilterDecision::Only { .. }, _) => Vec::new(),
        (_, Ok(state)) => {
            let c = state.engine().cluster();
            names.iter().map(|n| c.node_id(n).is_some()).collect()
        }
        (_, Err(resp)) => return resp.into_response(),
    };
    let all = |reason| Failures {
        names: &names,
        except: None,
        mask: Some(&known),
        reason,
    };
    let (response, counted) = match decision {
        FilterDecision::PassThrough => {
            let response = match &blocked {
                None => json(&reply(&mut req, |_, _| true)),
                Some(mask) => {
                    let mut out = reply(&mut req, |i, _| !mask[i]);
                    out.failed_nodes = Failures {
                        names: &names,
                        except: None,
                        mask: Some(mask),
                        reason: "its free units are reserved for a planned gang",
                    };
                    json(&out)
                }
            };
            (response, Decision::PassThrough)
        }
        FilterDecision::Only { node, .. } if names.iter().any(|n| *n == node) => {
            // The other candidates are left out unlisted: kube-scheduler counts a node an
            // extender drops without a reason as UnschedulableAndUnresolvable (its default
            // status for absent nodes), which keeps preemption off them as a listed reason
            // would, at a fraction of the answer's size.
            let out = reply(&mut req, |_, n| n == node);
            (json(&out), Decision::Placed)
        }
        FilterDecision::Only { node, rank, .. } => {
            let reason = format!(
                "rank {rank} is planned on node {node}, which did not pass kube-scheduler's \
                 own filters"
            );
            let mut out = reply(&mut req, |_, _| false);
            out.failed_nodes = all(&reason);
            (json(&out), Decision::PlannedNodeDropped)
        }
        FilterDecision::Reject { resolvable, reason } => {
            let reason = per_node(&reason);
            let mut out = reply(&mut req, |_, _| false);
            if resolvable {
                out.failed_nodes = all(&reason);
            } else {
                out.failed_and_unresolvable_nodes = all(&reason);
            }
            let counted = if resolvable {
                Decision::Pending
            } else {
                Decision::Unschedulable
            };
            (json(&out), counted)
        }
        FilterDecision::NotSeen { reason } => {
            let reason = per_node(&reason);
            let mut out = reply(&mut req, |_, _| false);
            out.failed_nodes = all(&reason);
            (json(&out), Decision::NotSeen)
        }
        FilterDecision::OverLimit { reason } => {
            let reason = per_node(&reason);
            let mut out = reply(&mut req, |_, _| false);
            out.failed_nodes = all(&reason);
            (json(&out), Decision::OverLimit)
        }
    };
    app.metrics.decision(counted);
    response
}

async fn prioritize(AxumState(app): AxumState<App>, body: Body) -> Response {
    let start = Instant::now();
    let response = match (app.standby(), body) {
        (Some(refusal), _) => refusal,
        (None, Err(e)) => e.into_response(),
        (None, Ok(body)) => prioritize_body(&app, &body),
    };
    app.finish("prioritize", start, response)
}

fn prioritize_body(app: &App, body: &Bytes) -> Response {
    let req = match request(body) {
        Ok(r) => r,
        Err(resp) => return resp.into_response(),
    };
    let scores = match app.lock() {
        Ok(mut state) => {
            let candidates = state.candidates(req.raw_names.map(RawValue::get), &req.names);
            state.prioritize(&req.pod, &candidates, app.now_ms())
        }
        Err(resp) => return resp.into_response(),
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        host_priorities(&req.names, &scores),
    )
        .into_response()
}

async fn bind(AxumState(app): AxumState<App>, body: Body) -> Response {
    let start = Instant::now();
    let response = match (app.standby(), body) {
        (Some(refusal), _) => refusal,
        (None, Err(e)) => e.into_response(),
        (None, Ok(body)) => bind_body(&app, &body).await,
    };
    app.finish("bind", start, response)
}

async fn bind_body(app: &App, body: &Bytes) -> Response {
    if !app.options.bind {
        return text(
            StatusCode::NOT_FOUND,
            "binding is off: start spinel-scheduler with --bind and set bindVerb",
        );
    }
    let args: ExtenderBindingArgs = match parse(body, "ExtenderBindingArgs") {
        Ok(a) => a,
        Err(resp) => return resp.into_response(),
    };
    if args.pod_name.is_empty() || args.pod_uid.is_empty() || args.node.is_empty() {
        return text(
            StatusCode::BAD_REQUEST,
            "invalid ExtenderBindingArgs: PodName, PodUID and Node are required",
        );
    }
    let outcome = app
        .publisher
        .bind(
            &args.pod_namespace,
            &args.pod_name,
            &args.pod_uid,
            &args.node,
        )
        .await;
    let error = match outcome {
        Ok(()) => {
            if let Ok(mut state) = app.state.lock() {
                state.bound(&args.pod_uid, &args.node, app.now_ms());
            }
            String::new()
        }
        Err(e) => e.to_string(),
    };
    json(&ExtenderBindingResult { error })
}

async fn readyz(AxumState(app): AxumState<App>) -> Response {
    app.standby()
        .unwrap_or_else(|| text(StatusCode::OK, "ready"))
}

async fn metrics_text(AxumState(app): AxumState<App>) -> Response {
    let snapshot = match app.state.lock() {
        Ok(s) => Snapshot {
            nodes: s.engine().cluster().node_count(),
            unusable_nodes: s.unusable_nodes(),
            engine: s.engine().stats(),
            held_ranks_limit: s.engine().limits().max_held_ranks,
            released_gangs: s.released_gangs(),
            leader: app.is_leader(),
        },
        Err(_) => {
            return text(StatusCode::INTERNAL_SERVER_ERROR, "state lock poisoned");
        }
    };
    match app.metrics.encode(&snapshot) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
            body,
        )
            .into_response(),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
