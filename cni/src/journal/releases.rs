//! IPAM releases that failed: kept apart from the attachment, so the device goes back to the
//! node at once while the address is released later, and counted for monitoring.
//!
//! A VF never waits for IPAM: when a teardown gives the device back but the IPAM plugin's DEL
//! fails, the attachment's record and claim go, and a [`PendingRelease`] keeps what the plugin
//! needs to release the address (configuration, container ID, interface, namespace path,
//! `CNI_ARGS`). ADD, DEL, GC and STATUS retry the ones that are due, with back-off; none is
//! ever dropped without a successful release, so no address leaks silently.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hostnet::netns::{NetNs, NsId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::files::{self, JournalError, io_err};
use super::{AttachmentKey, AttachmentRecord, Journal, SCHEMA, read_json, write_json};
use crate::spec::Version;

/// Longest wait between two retries of one release.
const MAX_BACKOFF_SECS: u64 = 3600;

/// An address whose release failed, kept until a retry succeeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PendingRelease {
    /// Layout version.
    pub schema: u32,
    /// The attachment the address was allocated for.
    pub key: AttachmentKey,
    /// Its network.
    pub network: String,
    /// The configuration ADD received (the IPAM plugin gets it again).
    pub config: Value,
    /// Its `cniVersion`.
    pub cni_version: Version,
    /// The IPAM plugin.
    pub ipam: String,
    /// `CNI_NETNS` at ADD.
    pub netns: Option<PathBuf>,
    /// That namespace's identity at ADD: a retry passes `netns` only while it still leads to
    /// this namespace (see [`PendingRelease::netns_if_same`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns_id: Option<NsId>,
    /// `CNI_ARGS` at ADD.
    pub cni_args: Option<String>,
    /// Failed attempts so far.
    pub attempts: u32,
    /// When the first attempt failed (seconds since the epoch).
    pub since: u64,
    /// No retry before this time (seconds since the epoch).
    pub next_attempt: u64,
    /// What the plugin said last time.
    pub last_error: String,
}

/// Totals since the state directory was created, for metrics (`counters.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Counters {
    /// Layout version.
    pub schema: u32,
    /// IPAM releases that failed and were deferred.
    pub ipam_releases_deferred: u64,
    /// Retries of deferred releases that failed again.
    pub ipam_release_retries_failed: u64,
    /// Deferred releases that later succeeded.
    pub ipam_releases_recovered: u64,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl PendingRelease {
    /// Whether a retry is due.
    pub fn is_due(&self) -> bool {
        now() >= self.next_attempt
    }

    /// `CNI_NETNS` for a retry: the recorded path only while it provably is the namespace ADD
    /// used, else none. A retry runs long after the pod, from another attachment's ADD; the
    /// path may name a newer pod's namespace by then, and a plugin that is really a main plugin
    /// (bridge deletes `CNI_IFNAME` in `CNI_NETNS` on DEL) would delete that pod's interface.
    /// IPAM plugins release by container ID and interface name.
    pub fn netns_if_same(&self) -> Option<&Path> {
        let (path, id) = (self.netns.as_deref()?, self.netns_id.as_ref()?);
        NetNs::open(path)
            .is_ok_and(|ns| id.cookie.is_some() && ns.is(id))
            .then_some(path)
    }
}

impl Journal {
    /// Records that `record`'s address could not be released (`error`), for later retries.
    pub fn defer_release(
        &self,
        record: &AttachmentRecord,
        error: &str,
    ) -> Result<PendingRelease, JournalError> {
        let Some(ipam) = record.ipam.clone() else {
            return Err(files::corrupt(
                &self.release_path(&record.key),
                "no IPAM plugin to retry",
            ));
        };
        let at = now();
        let pending = PendingRelease {
            schema: SCHEMA,
            key: record.key.clone(),
            network: record.network.clone(),
            config: record.config.clone(),
            cni_version: record.cni_version,
            ipam,
            netns: record.netns.clone(),
            netns_id: record.netns_id,
            cni_args: record.cni_args.clone(),
            attempts: 1,
            since: at,
            next_attempt: at + 1,
            last_error: error.to_owned(),
        };
        write_json(&self.release_path(&record.key), &pending)?;
        self.count(|c| c.ipam_releases_deferred += 1)?;
        Ok(pending)
    }

    /// The pending release of `key`, if any.
    pub fn pending_release(
        &self,
        key: &AttachmentKey,
    ) -> Result<Option<PendingRelease>, JournalError> {
        read_json(&self.release_path(key), SCHEMA)
    }

    /// Every pending release.
    pub fn pending_releases(&self) -> Result<Vec<PendingRelease>, JournalError> {
        let root = self.dir.join("releases");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&root)
            .map_err(io_err("list", &root))?
            .flatten()
        {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json")
                && let Some(p) = read_json::<PendingRelease>(&path, SCHEMA)?
            {
                out.push(p);
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// A retry failed again: count it and back off (doubling, at most an hour).
    pub fn release_retry_failed(
        &self,
        pending: &PendingRelease,
        error: &str,
    ) -> Result<(), JournalError> {
        let mut next = pending.clone();
        next.attempts = next.attempts.saturating_add(1);
        let backoff = 1u64
            .checked_shl(next.attempts.min(20))
            .unwrap_or(u64::MAX)
            .min(MAX_BACKOFF_SECS);
        next.next_attempt = now() + backoff;
        next.last_error = error.to_owned();
        write_json(&self.release_path(&pending.key), &next)?;
        self.count(|c| c.ipam_release_retries_failed += 1)
    }

    /// A retry succeeded: the address is free, nothing is owed any more.
    pub fn release_recovered(&self, key: &AttachmentKey) -> Result<(), JournalError> {
        files::remove_file(&self.release_path(key))?;
        self.count(|c| c.ipam_releases_recovered += 1)
    }

    /// The totals.
    pub fn counters(&self) -> Result<Counters, JournalError> {
        Ok(
            read_json(&self.dir.join("counters.json"), SCHEMA)?.unwrap_or(Counters {
                schema: SCHEMA,
                ..Counters::default()
            }),
        )
    }

    fn count(&self, bump: impl FnOnce(&mut Counters)) -> Result<(), JournalError> {
        let path = self.dir.join("locks").join("counters.lock");
        let _lock = files::lock(&path, "the counters".into(), Duration::from_secs(5))?;
        let mut counters = self.counters()?;
        counters.schema = SCHEMA;
        bump(&mut counters);
        write_json(&self.dir.join("counters.json"), &counters)
    }
}
