//! Leader election on a `coordination.k8s.io` Lease, with client-go's rules, so several
//! replicas can run and exactly one decides:
//!
//! - a replica takes the Lease when nobody holds it, or when the holder has not renewed it
//!   for its `leaseDurationSeconds` as timed by *this* replica's clock since it last saw the
//!   record change (clocks of different machines are never compared);
//! - every write carries the `resourceVersion` read, so of two replicas racing for an expired
//!   Lease one wins and the other gets a conflict;
//! - the leader renews every retry period and steps down as soon as it has not renewed for the
//!   renew deadline, which is shorter than the lease duration: it stops deciding before any
//!   other replica may start;
//! - on a clean shutdown the leader releases the Lease (empty holder), so a standby takes over
//!   at its next retry instead of after the lease duration.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};

/// Where the Lease is and how it is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// The Lease's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// This replica's identity, unique per process (`holderIdentity`).
    pub identity: String,
    /// How long a Lease not renewed stays its holder's.
    pub duration: Duration,
    /// How long the leader keeps deciding without a successful renewal.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
}

/// Settings that would let two replicas decide at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The leader must give up before others may take over.
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
    #[error("the retry period ({retry:?}) must be shorter than the renew deadline ({renew:?})")]
    RetryNotBeforeDeadline {
        /// Retry period.
        retry: Duration,
        /// Renew deadline.
        renew: Duration,
    },
    /// The API stores whole seconds.
    #[error("the lease duration must be at least one second")]
    TooShort,
}

impl LeaseConfig {
    /// Checks that the timings keep leaders apart.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.duration < Duration::from_secs(1) {
            return Err(ConfigError::TooShort);
        }
        if self.renew_deadline >= self.duration {
            return Err(ConfigError::RenewNotBeforeExpiry {
                renew: self.renew_deadline,
                duration: self.duration,
            });
        }
        if self.retry_period >= self.renew_deadline {
            return Err(ConfigError::RetryNotBeforeDeadline {
                retry: self.retry_period,
                renew: self.renew_deadline,
            });
        }
        Ok(())
    }
}

/// Why a leader stopped leading.
#[derive(Debug, thiserror::Error)]
pub enum LostError {
    /// Another replica holds the Lease now.
    #[error("lease {lease} is held by {holder} now")]
    Taken {
        /// `namespace/name`.
        lease: String,
        /// The new holder.
        holder: String,
    },
    /// Renewals failed for the whole renew deadline.
    #[error("lease {lease} not renewed for {deadline:?}: {last}")]
    NotRenewed {
        /// `namespace/name`.
        lease: String,
        /// The renew deadline.
        deadline: Duration,
        /// The last failure.
        last: String,
    },
}

/// The Lease record as last seen, and when this replica saw it change.
#[derive(Debug, Clone)]
struct Observed {
    holder: String,
    renew_time: Option<MicroTime>,
    duration: Duration,
    seen: Instant,
}

/// One replica's side of the election.
pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
    observed: Option<Observed>,
}

enum Attempt {
    Held,
    HeldBy(String),
}

impl Elector {
    /// An elector for `config` (validate it first).
    pub fn new(client: Client, config: LeaseConfig) -> Elector {
        Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
        }
    }

    fn lease(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }

    /// Returns once this replica holds the Lease; tries every retry period.
    pub async fn acquire(&mut self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(Attempt::Held) => return,
                Ok(Attempt::HeldBy(holder)) => {
                    tracing::debug!(lease = %self.lease(), %holder, "standing by");
                }
                Err(e) => tracing::warn!(lease = %self.lease(), error = %e, "acquiring failed"),
            }
            tokio::time::sleep(self.config.retry_period).await;
        }
    }

    /// Renews the Lease every retry period; returns when leadership is lost (the caller must
    /// stop deciding at once).
    pub async fn hold(&mut self) -> LostError {
        let mut renewed = Instant::now();
        loop {
            tokio::time::sleep(self.config.retry_period).await;
            let last = match self.try_acquire_or_renew().await {
                Ok(Attempt::Held) => {
                    renewed = Instant::now();
                    continue;
                }
                Ok(Attempt::HeldBy(holder)) => {
                    return LostError::Taken {
                        lease: self.lease(),
                        holder,
                    };
                }
                Err(e) => e.to_string(),
            };
            tracing::warn!(lease = %self.lease(), error = %last, "renewing failed");
            if renewed.elapsed() >= self.config.renew_deadline {
                return LostError::NotRenewed {
                    lease: self.lease(),
                    deadline: self.config.renew_deadline,
                    last,
                };
            }
        }
    }

    /// Gives the Lease up (empty holder) if this replica holds it, so a standby takes over at
    /// its next try. Failures are logged: the Lease then expires by itself.
    pub async fn release(&mut self) {
        let result = async {
            let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
                return Ok(());
            };
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
                return Ok(());
            }
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            self.api
                .replace(&self.config.name, &PostParams::default(), &lease)
                .await
                .map(|_| ())
        }
        .await;
        match result {
            Ok(()) => tracing::info!(lease = %self.lease(), "lease released"),
            Err(e) => tracing::warn!(lease = %self.lease(), error = %e, "releasing failed"),
        }
    }

    /// Notes the record; the expiry clock restarts whenever holder or renew time change.
    fn observe(&mut self, lease: &Lease) {
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.unwrap_or_default();
        let duration = Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
        );
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|o| o.holder != holder || o.renew_time != spec.renew_time);
        if changed {
            self.observed = Some(Observed {
                holder,
                renew_time: spec.renew_time,
                duration,
                seen: Instant::now(),
            });
        }
    }

    fn record(&self, now: Timestamp, acquire: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.config.duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: acquire.or(Some(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, kube::Error> {
        let now = Timestamp::now();
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.record(now, None, 0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(&created);
                    Ok(Attempt::Held)
                }
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::HeldBy(String::new())),
                Err(e) => Err(e),
            };
        };
        self.observe(&lease);
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let mine = holder == self.config.identity;
        let expired = self
            .observed
            .as_ref()
            .is_some_and(|o| o.seen.elapsed() >= o.duration);
        if !mine && !holder.is_empty() && !expired {
            return Ok(Attempt::HeldBy(holder));
        }
        let transitions = spec.lease_transitions.unwrap_or(0);
        lease.spec = Some(if mine {
            self.record(now, spec.acquire_time, transitions)
        } else {
            self.record(now, None, transitions.saturating_add(1))
        });
        // `replace` sends the resourceVersion read above: a racing replica gets a conflict.
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                self.observe(&updated);
                Ok(Attempt::Held)
            }
            // Someone else wrote first; for the holder itself that is a failed renewal.
            Err(kube::Error::Api(s)) if s.code == 409 && !mine => Ok(Attempt::HeldBy(holder)),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(duration: u64, renew: u64, retry: u64) -> LeaseConfig {
        LeaseConfig {
            name: "l".into(),
            namespace: "n".into(),
            identity: "me".into(),
            duration: Duration::from_secs(duration),
            renew_deadline: Duration::from_secs(renew),
            retry_period: Duration::from_secs(retry),
        }
    }

    #[test]
    fn timings_must_keep_leaders_apart() {
        assert_eq!(config(15, 10, 2).validate(), Ok(()));
        assert!(matches!(
            config(10, 10, 2).validate(),
            Err(ConfigError::RenewNotBeforeExpiry { .. })
        ));
        assert!(matches!(
            config(15, 2, 2).validate(),
            Err(ConfigError::RetryNotBeforeDeadline { .. })
        ));
        assert_eq!(config(0, 0, 0).validate(), Err(ConfigError::TooShort));
    }
}
