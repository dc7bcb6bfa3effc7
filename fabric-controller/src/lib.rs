//! `spinel-fabric-controller`: the cluster-wide half of Spinel's fabric discovery (one
//! Deployment, leader-elected). It reads every node's `NodeFabric` report and the operator's
//! switch tables, runs `topo-discovery`'s inference on the whole set, and publishes what
//! follows: each node's labels in its `NodeFabric` status (the node's agent applies them to
//! its own Node; the controller has no Node write permission), Volcano HyperNodes, a Kueue
//! Topology, miswiring Events and the `Fabric/default` summary.
//!
//! - [`inputs`]: the reports and switch tables, kept current;
//! - [`desired`]: every output from one inference (pure);
//! - [`observed`]: what the API server holds, ordered by resourceVersion;
//! - [`publish`]: the writes that differ, and writing them;
//! - [`metrics`]: Prometheus metrics and what the probes answer;
//! - [`watch`]: the watches that feed the controller;
//! - [`controller`]: the state and the loop;
//! - [`config`]: the flags.
//!
//! Leader election, the client, logging, signals, Events and the probe server come from
//! `spinel-kube`, as for every Spinel daemon.

pub mod config;
pub mod controller;
pub mod desired;
pub mod inputs;
pub mod metrics;
pub mod observed;
pub mod publish;
pub mod watch;
