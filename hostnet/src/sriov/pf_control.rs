//! Setting and reading a VF's attributes through its PF (`ip link set PF vf N ...`), behind one
//! seam with two implementations:
//!
//! - [`PfControl::Kernel`] sends the request to the kernel (production);
//! - [`PfControl::Recorded`] is a dry-run aid for nodes whose kernel has no SR-IOV (labs, CI):
//!   it takes the very same encoded request, appends it to a file and keeps the VF state a PF
//!   would report in another, so everything else runs for real.
//!
//! Which one a program uses is the node operator's choice (the CNI reads it from its root-owned
//! node settings); nothing a pod sends can select it.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::netlink::{NetlinkError, RouteSocket, VfSettings};

/// How VF attributes reach a PF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PfControl {
    /// Through the kernel.
    Kernel,
    /// Recorded in this directory instead (no kernel here implements VF attributes).
    Recorded(PathBuf),
}

/// Setting or reading VF attributes failed.
#[derive(Debug, thiserror::Error)]
pub enum PfControlError {
    /// The PF's netdev is not in the namespace the socket looks at.
    #[error("PF {0} has no network interface in the host namespace")]
    NoPf(String),
    /// The PF does not report the VF.
    #[error("PF {pf} does not report VF {index}")]
    NoVf {
        /// PF name.
        pf: String,
        /// VF index.
        index: u32,
    },
    /// The request failed.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
    /// The recording's files failed.
    #[error("VF request recording at {path}: {reason}")]
    Recording {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

impl PfControl {
    fn pf_index(host: &mut RouteSocket, pf: &str) -> Result<u32, PfControlError> {
        Ok(host
            .link_by_name(pf)?
            .ok_or_else(|| PfControlError::NoPf(pf.to_owned()))?
            .index)
    }

    /// The attributes of VF `index` of `pf` as the PF reports them.
    pub fn read(
        &self,
        host: &mut RouteSocket,
        pf: &str,
        index: u32,
    ) -> Result<VfSettings, PfControlError> {
        let pf_index = Self::pf_index(host, pf)?;
        match self {
            Self::Kernel => host
                .vf_settings(pf_index)?
                .into_iter()
                .find(|s| s.index == index)
                .ok_or_else(|| PfControlError::NoVf {
                    pf: pf.to_owned(),
                    index,
                }),
            Self::Recorded(dir) => Ok(Recording::open(dir, pf)?
                .state()?
                .get(&index)
                .copied()
                .unwrap_or_else(|| VfSettings::factory_default(index))),
        }
    }

    /// Sets every attribute of one VF of `pf` in one request.
    pub fn apply(
        &self,
        host: &mut RouteSocket,
        pf: &str,
        settings: &VfSettings,
    ) -> Result<(), PfControlError> {
        let pf_index = Self::pf_index(host, pf)?;
        match self {
            Self::Kernel => Ok(host.set_vf(pf_index, settings)?),
            Self::Recorded(dir) => Recording::open(dir, pf)?.apply(pf_index, settings),
        }
    }
}

/// The recording's files for one PF: `<pf>.requests` (one line per request: the encoded bytes
/// in hex, a tab, the `ip link set` arguments), `<pf>.state.json` (what the PF would report),
/// and `<pf>.ignore` (attribute names this PF silently does not apply, to emulate hardware that
/// does not take them). A lock file serialises writers.
struct Recording {
    requests: PathBuf,
    state: PathBuf,
    ignore: PathBuf,
    _lock: fs::File,
}

fn recording_error(path: &Path, reason: impl ToString) -> PfControlError {
    PfControlError::Recording {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

impl Recording {
    fn open(dir: &Path, pf: &str) -> Result<Self, PfControlError> {
        if !crate::sriov::is_valid_ifname(pf) {
            return Err(recording_error(dir, format!("{pf:?} is not a PF name")));
        }
        fs::create_dir_all(dir).map_err(|e| recording_error(dir, e))?;
        let lock_path = dir.join(format!("{pf}.lock"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| recording_error(&lock_path, e))?;
        lock.lock().map_err(|e| recording_error(&lock_path, e))?;
        Ok(Self {
            requests: dir.join(format!("{pf}.requests")),
            state: dir.join(format!("{pf}.state.json")),
            ignore: dir.join(format!("{pf}.ignore")),
            _lock: lock,
        })
    }

    fn state(&self) -> Result<BTreeMap<u32, VfSettings>, PfControlError> {
        match fs::read(&self.state) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| recording_error(&self.state, e))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(recording_error(&self.state, e)),
        }
    }

    fn apply(&self, pf_index: u32, settings: &VfSettings) -> Result<(), PfControlError> {
        let hex: String = settings
            .request_bytes(pf_index)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.requests)
            .map_err(|e| recording_error(&self.requests, e))?;
        writeln!(log, "{hex}\t{settings}").map_err(|e| recording_error(&self.requests, e))?;

        let mut state = self.state()?;
        let old = state
            .get(&settings.index)
            .copied()
            .unwrap_or_else(|| VfSettings::factory_default(settings.index));
        let ignored = fs::read_to_string(&self.ignore).unwrap_or_default();
        let ignores = |name: &str| ignored.split_whitespace().any(|w| w == name);
        let mut new = *settings;
        if ignores("trust") {
            new.trust = old.trust;
        }
        if ignores("spoofchk") {
            new.spoofchk = old.spoofchk;
        }
        if ignores("rate") {
            new.min_tx_rate = old.min_tx_rate;
            new.max_tx_rate = old.max_tx_rate;
        }
        if ignores("vlan") {
            (new.vlan, new.qos, new.proto) = (old.vlan, old.qos, old.proto);
        }
        state.insert(settings.index, new);
        let json =
            serde_json::to_vec_pretty(&state).map_err(|e| recording_error(&self.state, e))?;
        let tmp = self.state.with_extension("json.tmp");
        fs::write(&tmp, json).map_err(|e| recording_error(&tmp, e))?;
        fs::rename(&tmp, &self.state).map_err(|e| recording_error(&self.state, e))
    }
}
