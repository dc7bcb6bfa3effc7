//! STATUS: can this plugin add an attachment right now? Code 50 with the reason if not.

use std::fs;
use std::os::unix::fs::OpenOptionsExt;

use crate::config::{Config, NetnsRequirement};
use crate::node::Node;
use crate::settings::Settings;
use crate::spec::env::Invocation;
use crate::spec::{CniError, ErrorCode};
use crate::teardown::retry_pending_releases;

fn unavailable(msg: impl Into<String>) -> CniError {
    CniError::new(ErrorCode::NotAvailable, msg)
}

/// Runs STATUS.
pub fn run(inv: &Invocation, config: &Config, settings: Settings) -> Result<(), CniError> {
    let state_dir = settings.state_dir.clone();
    let node = Node::open(settings)
        .map_err(|e| unavailable(format!("not ready: {}", e.msg)).with_detail(e.details))?;

    // The journal must be writable, or ADD cannot record what it changes.
    let probe = state_dir.join(format!(".status.{}", std::process::id()));
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&probe)
        .map_err(|e| {
            unavailable(format!(
                "state directory {} is not writable: {e}",
                state_dir.display()
            ))
        })?;
    let _ = fs::remove_file(&probe);

    let devices = node.sysfs.root().join("bus/pci/devices");
    if !devices.is_dir() {
        return Err(unavailable(format!(
            "sysfs has no PCI devices at {}",
            devices.display()
        )));
    }
    if let Some(pf) = &config.conf.pf_name {
        let pf = node
            .sysfs
            .pf(pf)
            .map_err(|e| unavailable(format!("PF unavailable: {e}")))?;
        if pf.num_vfs == 0 {
            return Err(unavailable(format!(
                "PF {} has SR-IOV disabled (sriov_numvfs is 0)",
                pf.name
            )));
        }
    }
    if config.conf.rdma.netns_mode != NetnsRequirement::Any {
        crate::roce::netns_mode(config.conf.rdma.netns_mode).map_err(|e| unavailable(e.msg))?;
    }
    // Pending address releases are retried here too; they never make the plugin unavailable
    // (ADD works), but they are logged and counted in the journal's counters.
    let pending = retry_pending_releases(&node, &inv.path, None);
    if pending > 0 {
        tracing::warn!(
            pending,
            "address releases are pending: the IPAM plugin keeps refusing them (see the journal's releases/)"
        );
    }
    if let Some(kind) = config.conf.ipam_type() {
        let ipam = node
            .ipam(kind, &inv.path)
            .map_err(|e| unavailable(format!("IPAM not ready: {}", e.msg)))?;
        ipam.forward_if_supported("STATUS", &config.raw)
            .map_err(|e| unavailable(format!("IPAM not ready: {}", e.msg)))?;
    }
    Ok(())
}
