//! `spinel-scheduler`: a kube-scheduler extender that places whole training gangs by fabric
//! topology (TP groups in a node, DP groups under a leaf, the pipeline under a spine).
//!
//! - [`wire`]: the extender v1 JSON types;
//! - [`objects`]: what is read from Pods and Nodes;
//! - [`state`]: the decisions (placement engine, usage, ranks), without I/O;
//! - [`http`]: the extender's HTTP server (filter, prioritize, bind, health, metrics);
//! - [`metrics`]: the Prometheus metrics;
//! - [`publish`]: side effects (annotations, Events, Bindings) behind a trait;
//! - [`watch`]: the Kubernetes watches that feed the state, and the real publisher.
//!
//! Leader election, the client, logging and signals come from `spinel-kube`, as for every
//! Spinel daemon.

pub mod http;
pub mod metrics;
pub mod objects;
pub mod publish;
pub mod state;
pub mod watch;
pub mod wire;
