//! Leader election on a `coordination.k8s.io/v1` Lease, so of several replicas exactly one
//! decides and writes, with client-go's rules:
//!
//! - a replica takes the Lease when nobody holds it, or when its record has stayed unchanged
//!   for the holder's `leaseDurationSeconds` as timed by *this* replica's clock since it last
//!   saw the record change (clocks of different machines are never compared);
//! - every write carries the `resourceVersion` read, so of two replicas racing for it one
//!   wins and the other gets a conflict;
//! - the holder may act only until `renew_deadline` after it *sent* its last successful
//!   renewal ([`Leadership::may_act`]), which is shorter than the lease duration, so its right
//!   to act ends before anyone else's can begin;
//! - on a clean stop the holder releases the Lease (no holder), so a standby takes over at its
//!   next try instead of after the lease duration.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Where the Lease is and how it is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// The Lease's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// This replica's identity, unique per process (`holderIdentity`).
    pub identity: String,
    /// How long a record must stay unchanged before another replica may take the Lease.
    pub duration: Duration,
    /// How long after sending its last successful renewal the holder may still act.
    pub renew_deadline: Duration,
    /// Time between two attempts to acquire or renew.
    pub retry_period: Duration,
}

/// Timings that would let two replicas act at once.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LeaseConfigError {
    /// The leader must stop before others may take over.
    #[error(
        "the renew deadline ({renew:?}) must be shorter than the lease duration ({duration:?})"
    )]
    RenewNotBeforeExpiry {
        /// Renew deadline.
        renew: Duration,
        /// Lease duration.
        duration: Duration,
    },
    /// At least one renewal must fit in the renew deadline.
    #[error(
        "the retry period ({retry:?}) must be shorter than the renew deadline ({renew:?}) and above zero"
    )]
    RetryNotBeforeDeadline {
        /// Retry period.
        retry: Duration,
        /// Renew deadline.
        renew: Duration,
    },
    /// The API stores whole seconds.
    #[error("the lease duration must be at least one second")]
    TooShort,
    /// A flag that is not a positive number of seconds.
    #[error("{flag}: {value} is not a positive number of seconds")]
    NotSeconds {
        /// The flag.
        flag: &'static str,
        /// What it said.
        value: f64,
    },
}

/// The election flags the controller and the scheduler share (`#[command(flatten)]`).
#[derive(Clone, Debug, clap::Args)]
pub struct LeaseArgs {
    /// Seconds a Lease record must stay unchanged before another replica takes it.
    #[arg(long, default_value_t = 15.0)]
    pub lease_duration: f64,
    /// Seconds after its last renewal during which the leader may still act (below the
    /// duration).
    #[arg(long, default_value_t = 10.0)]
    pub renew_deadline: f64,
    /// Seconds between two attempts to acquire or renew the Lease.
    #[arg(long, default_value_t = 2.0)]
    pub retry_period: f64,
}

fn seconds(flag: &'static str, value: f64) -> Result<Duration, LeaseConfigError> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or(LeaseConfigError::NotSeconds { flag, value })
}

impl LeaseArgs {
    /// The validated configuration of Lease `namespace/name` held as `identity`.
    pub fn config(
        &self,
        namespace: &str,
        name: &str,
        identity: String,
    ) -> Result<LeaseConfig, LeaseConfigError> {
        let config = LeaseConfig {
            duration: seconds("--lease-duration", self.lease_duration)?,
            renew_deadline: seconds("--renew-deadline", self.renew_deadline)?,
            retry_period: seconds("--retry-period", self.retry_period)?,
            ..LeaseConfig::new(namespace, name, identity)
        };
        config.validate()?;
        Ok(config)
    }
}

impl LeaseConfig {
    /// client-go's timings (15 s, 10 s, 2 s) for Lease `namespace/name`, held as `identity`.
    pub fn new(namespace: &str, name: &str, identity: String) -> Self {
        Self {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            identity,
            duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Checks `0 < retry < renew deadline < duration` and a duration of whole seconds.
    pub fn validate(&self) -> Result<(), LeaseConfigError> {
        if self.duration < Duration::from_secs(1) {
            return Err(LeaseConfigError::TooShort);
        }
        if self.renew_deadline >= self.duration {
            return Err(LeaseConfigError::RenewNotBeforeExpiry {
                renew: self.renew_deadline,
                duration: self.duration,
            });
        }
        if self.retry_period.is_zero() || self.retry_period >= self.renew_deadline {
            return Err(LeaseConfigError::RetryNotBeforeDeadline {
                retry: self.retry_period,
                renew: self.renew_deadline,
            });
        }
        Ok(())
    }

    fn lease(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// `base` with a suffix unique to this process: a restarted container (same pod name) must
/// wait for its predecessor's Lease like anyone else, not think it holds it.
pub fn unique_identity(base: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{base}_{:x}{nanos:08x}", std::process::id())
}

/// Whether this replica may act now; shared by the election and everything that writes.
#[derive(Debug, Clone)]
pub struct Leadership {
    origin: Instant,
    /// Nanoseconds after `origin` until which this replica may act; 0: not leading.
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
    /// Always leading: for a daemon run without election (a single replica).
    pub fn always() -> Self {
        let l = Self::default();
        l.until.store(u64::MAX, Ordering::Release);
        l
    }

    /// True while the Lease is held and its last renewal was sent recently enough.
    pub fn may_act(&self) -> bool {
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

/// A running election.
pub struct Election {
    leadership: Leadership,
    leading: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Election {
    /// Starts electing `config` (validate it first) on `client`'s API server.
    pub fn start(client: kube::Client, config: LeaseConfig) -> Self {
        let leadership = Leadership::default();
        let (leading_tx, leading) = watch::channel(false);
        let (stop, stop_rx) = watch::channel(false);
        let api = Api::namespaced(client, &config.namespace);
        let task = tokio::spawn(run(api, config, leadership.clone(), leading_tx, stop_rx));
        Self {
            leadership,
            leading,
            stop,
            task,
        }
    }

    /// What writers check before each write.
    pub fn leadership(&self) -> Leadership {
        self.leadership.clone()
    }

    /// Each change of leadership, as it happens.
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// Stops electing and releases the Lease if held; the caller stops acting first.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// The record as last seen, and when it last changed by our clock.
struct Seen {
    resource_version: Option<String>,
    since: Instant,
}

async fn run(
    api: Api<Lease>,
    config: LeaseConfig,
    leadership: Leadership,
    leading: watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let lease = config.lease();
    let mut seen: Option<Seen> = None;
    loop {
        let sent = Instant::now();
        match try_acquire_or_renew(&api, &config, &mut seen).await {
            Ok(true) => leadership.extend_to(sent + config.renew_deadline),
            Ok(false) => leadership.revoke(),
            // The holder keeps acting until its deadline passes; a standby waits.
            Err(e) => tracing::warn!(%lease, "cannot reach the lease: {e}"),
        }
        let now_leading = leadership.may_act();
        if *leading.borrow() != now_leading {
            if now_leading {
                tracing::info!(%lease, identity = %config.identity, "leading");
            } else {
                tracing::warn!(%lease, identity = %config.identity, "not leading");
            }
            let _ = leading.send(now_leading);
        }
        tokio::select! {
            () = tokio::time::sleep(config.retry_period) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    if leadership.may_act() {
        leadership.revoke();
        let _ = leading.send(false);
        match release(&api, &config).await {
            Ok(()) => tracing::info!(%lease, "released the lease"),
            Err(e) => tracing::warn!(%lease, "cannot release the lease: {e}"),
        }
    }
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

fn duration_seconds(config: &LeaseConfig) -> i32 {
    i32::try_from(config.duration.as_secs()).unwrap_or(i32::MAX)
}

/// One round: true when this replica holds the Lease afterwards.
async fn try_acquire_or_renew(
    api: &Api<Lease>,
    config: &LeaseConfig,
    seen: &mut Option<Seen>,
) -> kube::Result<bool> {
    let Some(mut lease) = api.get_opt(&config.name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(config.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(config.identity.clone()),
                lease_duration_seconds: Some(duration_seconds(config)),
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
    if holder != config.identity {
        let rv = lease.metadata.resource_version.clone();
        if seen.as_ref().is_none_or(|s| s.resource_version != rv) {
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
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
        tracing::info!(lease = %config.lease(), previous = %holder, "taking over the lease");
    }
    spec.holder_identity = Some(config.identity.clone());
    spec.lease_duration_seconds = Some(duration_seconds(config));
    spec.renew_time = Some(now());
    // Replace carries the resourceVersion read: a replica that changed it in between wins.
    conflict_is_false(
        api.replace(&config.name, &PostParams::default(), &lease)
            .await,
    )
}

fn conflict_is_false(result: kube::Result<Lease>) -> kube::Result<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Gives the Lease up: no holder, and a one-second duration for clients that look at it.
async fn release(api: &Api<Lease>, config: &LeaseConfig) -> kube::Result<()> {
    let mut lease = api.get(&config.name).await?;
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(now());
    api.replace(&config.name, &PostParams::default(), &lease)
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(duration: u64, renew: u64, retry: u64) -> LeaseConfig {
        LeaseConfig {
            duration: Duration::from_secs(duration),
            renew_deadline: Duration::from_secs(renew),
            retry_period: Duration::from_secs(retry),
            ..LeaseConfig::new("n", "l", "me".into())
        }
    }

    #[test]
    fn timings_must_keep_leaders_apart() {
        assert_eq!(config(15, 10, 2).validate(), Ok(()));
        assert!(matches!(
            config(10, 10, 2).validate(),
            Err(LeaseConfigError::RenewNotBeforeExpiry { .. })
        ));
        assert!(matches!(
            config(15, 2, 2).validate(),
            Err(LeaseConfigError::RetryNotBeforeDeadline { .. })
        ));
        assert!(matches!(
            config(15, 10, 0).validate(),
            Err(LeaseConfigError::RetryNotBeforeDeadline { .. })
        ));
        assert_eq!(config(0, 0, 0).validate(), Err(LeaseConfigError::TooShort));
    }

    #[test]
    fn acting_stops_at_the_renew_deadline() {
        let l = Leadership::default();
        assert!(!l.may_act());
        l.extend_to(Instant::now() + Duration::from_secs(60));
        assert!(l.may_act());
        l.extend_to(Instant::now() - Duration::from_millis(1));
        assert!(!l.may_act());
        l.extend_to(Instant::now() + Duration::from_secs(60));
        l.revoke();
        assert!(!l.may_act());
        assert!(Leadership::always().may_act());
    }

    #[test]
    fn identities_differ_per_process_start() {
        let a = unique_identity("pod");
        assert!(a.starts_with("pod_"), "{a}");
    }
}
