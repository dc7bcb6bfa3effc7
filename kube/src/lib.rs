//! The runtime shell every Spinel cluster daemon (`spinel-agent`, `spinel-fabric-controller`,
//! `spinel-scheduler`) is built in, so each `main` only wires its own parts together:
//!
//! - [`client`]: the API client from a kubeconfig or the pod's service account;
//! - [`logging`]: JSON or text logs with the fields of the spans they happen in;
//! - [`shutdown`]: SIGTERM and SIGINT, registered before anything starts;
//! - [`backoff`]: the one retry delay (doubling, capped);
//! - [`lease`]: leader election on a Lease, with the renew-deadline fence that ends a
//!   leader's right to write before anyone else's can begin;
//! - [`apply`]: server-side apply, retried with back-off;
//! - [`events`]: `events.k8s.io` Events named after what they are about, so a restarted or
//!   failed-over daemon never tells the same thing twice;
//! - [`probes`]: the HTTP server for `/metrics`, `/healthz` and `/readyz`.

pub mod apply;
pub mod backoff;
pub mod client;
pub mod events;
pub mod lease;
pub mod logging;
pub mod probes;
pub mod shutdown;
