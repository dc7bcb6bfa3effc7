//! Side effects on the API server, behind a trait so the decision logic and the HTTP server
//! are tested without one: pod annotations (rank, rank list, placement), Events, Bindings.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

/// A future returned by [`Publisher::bind`].
pub type BindFuture<'a> = Pin<Box<dyn Future<Output = Result<(), BindError>> + Send + 'a>>;

/// A Binding the API server did not take. Its text (cause included) is what the extender
/// answers kube-scheduler in `ExtenderBindingResult.Error`.
#[derive(Debug, thiserror::Error)]
#[error("binding {pod} to {node} failed: {source}")]
pub struct BindError {
    /// `namespace/name`.
    pub pod: String,
    /// The node.
    pub node: String,
    /// The API server's answer.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// Where decisions are published.
pub trait Publisher: Send + Sync + 'static {
    /// Merges `annotations` into a pod's (fire and forget; failures are logged).
    fn annotate(&self, namespace: &str, pod: &str, annotations: BTreeMap<String, String>);
    /// Records an Event on a pod (fire and forget).
    fn event(&self, namespace: &str, pod: &str, reason: &str, message: &str);
    /// Evicts a pod (the Eviction API, so disruption budgets hold; only the pod with `uid`),
    /// fire and forget: a gang part of which was bound where the rest cannot join.
    fn evict(&self, namespace: &str, pod: &str, uid: &str);
    /// Binds a pod to a node (the extender's bind verb).
    fn bind<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        uid: &'a str,
        node: &'a str,
    ) -> BindFuture<'a>;
}

impl std::fmt::Debug for dyn Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Publisher")
    }
}

/// One recorded side effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Annotations merged into a pod.
    Annotate {
        /// `namespace/name`.
        pod: String,
        /// The annotations.
        annotations: BTreeMap<String, String>,
    },
    /// An Event.
    Event {
        /// `namespace/name`.
        pod: String,
        /// Reason.
        reason: String,
        /// Message.
        message: String,
    },
    /// An eviction.
    Evict {
        /// `namespace/name`.
        pod: String,
        /// Its UID.
        uid: String,
    },
    /// A Binding.
    Bind {
        /// `namespace/name`.
        pod: String,
        /// Node.
        node: String,
    },
}

/// A publisher that only records (tests, `--nodes` file mode).
#[derive(Debug, Default)]
pub struct Recorder {
    effects: Mutex<Vec<Effect>>,
}

impl Recorder {
    /// Everything published so far.
    pub fn effects(&self) -> Vec<Effect> {
        self.effects.lock().map(|e| e.clone()).unwrap_or_default()
    }

    fn push(&self, e: Effect) {
        if let Ok(mut v) = self.effects.lock() {
            v.push(e);
        }
    }
}

impl Publisher for Recorder {
    fn annotate(&self, namespace: &str, pod: &str, annotations: BTreeMap<String, String>) {
        self.push(Effect::Annotate {
            pod: format!("{namespace}/{pod}"),
            annotations,
        });
    }

    fn event(&self, namespace: &str, pod: &str, reason: &str, message: &str) {
        self.push(Effect::Event {
            pod: format!("{namespace}/{pod}"),
            reason: reason.to_owned(),
            message: message.to_owned(),
        });
    }

    fn evict(&self, namespace: &str, pod: &str, uid: &str) {
        self.push(Effect::Evict {
            pod: format!("{namespace}/{pod}"),
            uid: uid.to_owned(),
        });
    }

    fn bind<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        _uid: &'a str,
        node: &'a str,
    ) -> BindFuture<'a> {
        self.push(Effect::Bind {
            pod: format!("{namespace}/{pod}"),
            node: node.to_owned(),
        });
        Box::pin(async { Ok(()) })
    }
}
