//! GC: releases every attachment of this network that is not in `cni.dev/valid-attachments`,
//! continuing past failures and reporting them together.

use std::collections::BTreeSet;

use crate::config::Config;
use crate::journal::AttachmentKey;
use crate::node::{Node, journal_error};
use crate::settings::Settings;
use crate::spec::env::Invocation;
use crate::spec::{CniError, ErrorCode};
use crate::teardown::{retry_pending_releases, teardown};

/// Runs GC.
pub fn run(inv: &Invocation, config: &Config, settings: Settings) -> Result<(), CniError> {
    let mut node = Node::open(settings)?;
    node.journal.sweep_temporaries();
    let valid: BTreeSet<AttachmentKey> = config
        .conf
        .valid_attachments
        .iter()
        .flatten()
        .map(|a| AttachmentKey {
            container_id: a.container_id.clone(),
            ifname: a.ifname.clone(),
        })
        .collect();
    let mut failures = Vec::new();
    let records = node.journal.records().map_err(journal_error)?;
    for record in records
        .iter()
        .filter(|r| r.network == config.conf.name && !valid.contains(&r.key))
    {
        let result = record
            .device
            .kind()
            .lock(&node.journal, &record.key, node.settings.lock_timeout())
            .map_err(journal_error)
            .and_then(
                |lock| match node.journal.load(&record.key).map_err(journal_error)? {
                    Some(fresh) => teardown(&mut node, &fresh, &inv.path, &lock).map(drop),
                    None => Ok(()),
                },
            );
        match result {
            Ok(()) => tracing::info!(attachment = %record.key, "garbage-collected"),
            Err(e) => failures.push(format!("{}: {} {}", record.key, e.msg, e.details)),
        }
    }
    // Claims whose attachment has no record belong to ADDs that died before changing anything.
    for (pci, holder) in node.journal.claims().map_err(journal_error)? {
        if node.journal.load(&holder).map_err(journal_error)?.is_none()
            && let Ok(_lock) = node.journal.lock_vf(&pci, std::time::Duration::ZERO)
            && node.journal.load(&holder).map_err(journal_error)?.is_none()
        {
            node.journal
                .release_claim(&pci, &holder)
                .map_err(journal_error)?;
        }
    }
    let pending = retry_pending_releases(&node, &inv.path, None);
    if pending > 0 {
        tracing::warn!(pending, "address releases still pending after GC's retry");
    }
    if let Some(kind) = config.conf.ipam_type()
        && let Err(e) = node
            .ipam(kind, &inv.path)
            .and_then(|ipam| ipam.forward_if_supported("GC", &config.raw))
    {
        failures.push(e.msg);
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(CniError::new(
            ErrorCode::Io,
            format!("GC could not release {} item(s)", failures.len()),
        )
        .with_detail(failures.join("; ")))
    }
}
