//! Server-side apply, the one way the daemons write their objects: forced (the fields a daemon
//! applies are its own), retried with [`Backoff`] while the API server refuses.

use std::fmt::Debug;

use kube::Api;
use kube::api::{Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::backoff::Backoff;

/// Applies `object` (named `name`) as field manager `manager`.
pub async fn apply<K, P>(api: &Api<K>, name: &str, manager: &str, object: &P) -> kube::Result<K>
where
    K: Clone + DeserializeOwned + Debug,
    P: Serialize + Debug,
{
    api.patch(
        name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(object),
    )
    .await
}

/// Applies `object` to the status subresource of `name`.
pub async fn apply_status<K, P>(
    api: &Api<K>,
    name: &str,
    manager: &str,
    object: &P,
) -> kube::Result<K>
where
    K: Clone + DeserializeOwned + Debug,
    P: Serialize + Debug,
{
    api.patch_status(
        name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(object),
    )
    .await
}

/// Applies `object` until the API server takes it or `attempts` (None: no limit) run out,
/// waiting `backoff` between failures; each failure is logged with `what`.
pub async fn apply_retrying<K, P>(
    api: &Api<K>,
    name: &str,
    manager: &str,
    object: &P,
    backoff: &mut Backoff,
    attempts: Option<u32>,
    what: &str,
) -> Option<K>
where
    K: Clone + DeserializeOwned + Debug,
    P: Serialize + Debug,
{
    let mut tried = 0u32;
    loop {
        tried += 1;
        match apply(api, name, manager, object).await {
            Ok(got) => {
                backoff.reset();
                return Some(got);
            }
            Err(e) if attempts.is_none_or(|n| tried < n) => {
                let delay = backoff.next_delay();
                tracing::warn!("cannot apply {what}, retrying in {delay:?}: {e}");
                tokio::time::sleep(delay).await;
            }
            Err(e) => {
                tracing::error!("cannot apply {what}, giving up after {tried} attempts: {e}");
                return None;
            }
        }
    }
}
