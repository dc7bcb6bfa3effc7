//! Leader election with a `coordination.k8s.io/v1` Lease, so two replicas never both write.
//!
//! A replica holds the lease by renewing it (optimistic concurrency on its resourceVersion:
//! two replicas racing for it cannot both win). Another replica takes it only after the
//! record has stayed unchanged for a whole lease duration by its own clock. The holder may
//! write only until `renew_deadline` after it *sent* its last successful renewal, which is
//! shorter than the lease duration, so its right to write ends before anyone else's can begin
//! ([`Leadership::may_write`]). On shutdown the holder releases the lease, so a standby takes
//! over at its next try instead of after the lease duration.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;

/// Lease timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long a record must stay unchanged before another replica may take the lease.
    pub duration: Duration,
    /// How long after sending its last successful renewal the holder may still write.
    pub renew_deadline: Duration,
    /// Time between two attempts to acquire or renew.
    pub retry: Duration,
}

impl Timing {
    /// client-go's defaults: 15 s, 10 s, 2 s.
    pub const DEFAULT: Self = Self {
        duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry: Duration::from_secs(2),
    };

    /// Checks `retry < renew_deadline < duration`.
    pub fn validate(&self) -> Result<(), String> {
        if self.retry.is_zero()
            || self.retry >= self.renew_deadline
            || self.renew_deadline >= self.duration
        {
            return Err(format!(
                "lease timing: need 0 < retry ({:?}) < renew deadline ({:?}) < duration ({:?})",
                self.retry, self.renew_deadline, self.duration
            ));
        }
        if self.duration.as_secs() < 1 {
            return Err("lease duration: at least 1 s".into());
        }
        Ok(())
    }
}

/// Whether this replica may write now; shared by the elector and every writer.
#[derive(Debug, Clone)]
pub struct Leadership {
    origin: Instant,
    /// Nanoseconds after `origin` until which writes are allowed; 0 = not leading.
    until: Arc<AtomicU64>,
}

impl Default for Leadership {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            until: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Leadership {
    /// True while the lease is held and its last renewal is recent enough.
    pub fn may_write(&self) -> bool {
        let now = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        now < self.until.load(Ordering::Acquire)
    }

    fn extend_to(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(self.origin).as_nanos();
        self.until.store(
            u64::try_from(nanos).unwrap_or(u64::MAX).max(1),
            Ordering::Release,
        );
    }

    fn revoke(&self) {
        self.until.store(0, Ordering::Release);
    }
}

/// The record as last seen, and when it last changed by our clock.
struct Seen {
    resource_version: Option<String>,
    since: Instant,
}

/// Runs the election for `identity` on `api`/`name` until `stop` turns true; then releases
/// the lease if held. `leading` reports each change of leadership.
pub async fn run(
    api: Api<Lease>,
    name: String,
    identity: String,
    timing: Timing,
    leadership: Leadership,
    leading: watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let mut seen: Option<Seen> = None;
    loop {
        let sent = Instant::now();
        match try_acquire_or_renew(&api, &name, &identity, timing, &mut seen).await {
            Ok(true) => leadership.extend_to(sent + timing.renew_deadline),
            Ok(false) => leadership.revoke(),
            Err(e) => tracing::warn!(lease = %name, "cannot reach the lease: {e}"),
        }
        let now_leading = leadership.may_write();
        if *leading.borrow() != now_leading {
            if now_leading {
                tracing::info!(lease = %name, identity = %identity, "leading");
            } else {
                tracing::warn!(lease = %name, identity = %identity, "not leading");
            }
            let _ = leading.send(now_leading);
        }
        tokio::select! {
            () = tokio::time::sleep(timing.retry) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    if leadership.may_write() {
        leadership.revoke();
        let _ = leading.send(false);
        match release(&api, &name, &identity).await {
            Ok(()) => tracing::info!(lease = %name, "released the lease"),
            Err(e) => tracing::warn!(lease = %name, "cannot release the lease: {e}"),
        }
    }
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

fn duration_seconds(timing: Timing) -> i32 {
    i32::try_from(timing.duration.as_secs()).unwrap_or(i32::MAX)
}

/// One round: true when this replica holds the lease afterwards.
async fn try_acquire_or_renew(
    api: &Api<Lease>,
    name: &str,
    identity: &str,
    timing: Timing,
    seen: &mut Option<Seen>,
) -> kube::Result<bool> {
    let Some(mut lease) = api.get_opt(name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(identity.to_owned()),
                lease_duration_seconds: Some(duration_seconds(timing)),
                acquire_time: Some(now()),
                renew_time: Some(now()),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        return conflict_is_false(api.create(&PostParams::default(), &lease).await);
    };
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder != identity {
        let rv = lease.metadata.resource_version.clone();
        let changed = seen.as_ref().is_none_or(|s| s.resource_version != rv);
        if changed {
            *seen = Some(Seen {
                resource_version: rv,
                since: Instant::now(),
            });
        }
        let held_for = u64::try_from(spec.lease_duration_seconds.unwrap_or(0).max(0)).unwrap_or(0);
        let expired = seen
            .as_ref()
            .is_some_and(|s| s.since.elapsed() > Duration::from_secs(held_for));
        if !holder.is_empty() && !expired {
            return Ok(false);
        }
        spec.acquire_time = Some(now());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        tracing::info!(lease = name, previous = %holder, "taking over the lease");
    }
    spec.holder_identity = Some(identity.to_owned());
    spec.lease_duration_seconds = Some(duration_seconds(timing));
    spec.renew_time = Some(now());
    // Replace carries the resourceVersion read: a replica that changed it in between wins.
    conflict_is_false(api.replace(name, &PostParams::default(), &lease).await)
}

fn conflict_is_false(result: kube::Result<Lease>) -> kube::Result<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Gives the lease up: no holder, and a one-second duration for clients that look at it.
async fn release(api: &Api<Lease>, name: &str, identity: &str) -> kube::Result<()> {
    let mut lease = api.get(name).await?;
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    if spec.holder_identity.as_deref() != Some(identity) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(now());
    api.replace(name, &PostParams::default(), &lease).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_must_leave_the_holder_less_time_than_a_taker_waits() {
        assert!(Timing::DEFAULT.validate().is_ok());
        let bad = Timing {
            renew_deadline: Duration::from_secs(15),
            ..Timing::DEFAULT
        };
        assert!(bad.validate().is_err());
        let bad = Timing {
            retry: Duration::from_secs(10),
            ..Timing::DEFAULT
        };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn writes_stop_at_the_renew_deadline() {
        let l = Leadership::default();
        assert!(!l.may_write());
        l.extend_to(Instant::now() + Duration::from_secs(60));
        assert!(l.may_write());
        l.extend_to(Instant::now() - Duration::from_millis(1));
        assert!(!l.may_write());
        l.extend_to(Instant::now() + Duration::from_secs(60));
        l.revoke();
        assert!(!l.may_write());
    }
}
