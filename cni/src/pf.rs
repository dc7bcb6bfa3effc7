//! VF attributes set through the PF (`ip link set PF vf N ...`), with read-back.
//!
//! [`PfAccess::Kernel`] sends the request to the kernel. [`PfAccess::Recording`] exists because
//! no kernel here implements VF attributes: it takes the very same encoded request, records it
//! and keeps the VF state in files, so the namespace tests exercise everything else for real.
//! It is chosen only by the node settings (`recordVfRequestsTo`), which no pod configuration
//! can reach.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use hostnet::netlink::{NetlinkError, RouteSocket, Socket, VfSettings};
use netlink_packet_core::NLM_F_ACK;
use netlink_packet_route::RouteNetlinkMessage;

/// How VF attributes reach the PF.
#[derive(Debug, Clone)]
pub enum PfAccess {
    /// Through the kernel (production).
    Kernel,
    /// Recorded in this directory instead (tests).
    Recording(PathBuf),
}

/// Setting or reading VF attributes failed.
#[derive(Debug, thiserror::Error)]
pub enum PfError {
    /// The PF's netdev is not in the host namespace.
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
    /// The recording double's files failed.
    #[error("VF request recording at {path}: {reason}")]
    Recording {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// The attributes in which `have` differs from `want`, by configuration name.
pub fn differences(want: &VfSettings, have: &VfSettings) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |name: &str, w: String, h: String| {
        if w != h {
            out.push(format!("{name} (asked {w}, PF reports {h})"));
        }
    };
    check("mac", want.mac.to_string(), have.mac.to_string());
    check("vlan", want.vlan.to_string(), have.vlan.to_string());
    check("vlanQoS", want.qos.to_string(), have.qos.to_string());
    check(
        "vlanProto",
        format!("{:?}", want.proto),
        format!("{:?}", have.proto),
    );
    check(
        "spoofchk",
        want.spoofchk.to_string(),
        have.spoofchk.to_string(),
    );
    check("trust", want.trust.to_string(), have.trust.to_string());
    check(
        "linkState",
        format!("{:?}", want.link_state),
        format!("{:?}", have.link_state),
    );
    check(
        "minTxRate",
        want.min_tx_rate.to_string(),
        have.min_tx_rate.to_string(),
    );
    check(
        "maxTxRate",
        want.max_tx_rate.to_string(),
        have.max_tx_rate.to_string(),
    );
    out
}

impl PfAccess {
    fn pf_index(host: &mut RouteSocket, pf: &str) -> Result<u32, PfError> {
        Ok(host
            .link_by_name(pf)?
            .ok_or_else(|| PfError::NoPf(pf.to_owned()))?
            .index)
    }

    /// The VF's attributes as the PF reports them.
    pub fn read(
        &self,
        host: &mut RouteSocket,
        pf: &str,
        index: u32,
    ) -> Result<VfSettings, PfError> {
        let pf_index = Self::pf_index(host, pf)?;
        match self {
            PfAccess::Kernel => host
                .vf_settings(pf_index)?
                .into_iter()
                .find(|s| s.index == index)
                .ok_or_else(|| PfError::NoVf {
                    pf: pf.to_owned(),
                    index,
                }),
            PfAccess::Recording(dir) => {
                let state = Recorder::new(dir, pf)?.state()?;
                Ok(state
                    .get(&index)
                    .copied()
                    .unwrap_or_else(|| VfSettings::factory_default(index)))
            }
        }
    }

    /// Sets every attribute of the VF in one request.
    pub fn apply(
        &self,
        host: &mut RouteSocket,
        pf: &str,
        settings: &VfSettings,
    ) -> Result<(), PfError> {
        let pf_index = Self::pf_index(host, pf)?;
        match self {
            PfAccess::Kernel => Ok(host.set_vf(pf_index, settings)?),
            PfAccess::Recording(dir) => Recorder::new(dir, pf)?.apply(pf_index, settings),
        }
    }
}

/// The recording double's files for one PF: `<pf>.requests` (one line per request: the
/// encoded bytes in hex, a tab, the `ip link set` arguments), `<pf>.state.json` (what the PF
/// would report), and `<pf>.ignore` (attribute names this PF silently does not apply, to
/// emulate hardware that does not take them).
struct Recorder {
    requests: PathBuf,
    state: PathBuf,
    ignore: PathBuf,
    _lock: fs::File,
}

impl Recorder {
    fn new(dir: &Path, pf: &str) -> Result<Self, PfError> {
        let err = |path: &Path, e: std::io::Error| PfError::Recording {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        fs::create_dir_all(dir).map_err(|e| err(dir, e))?;
        // The PF name was validated as an interface name before it got here.
        let lock_path = dir.join(format!("{pf}.lock"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| err(&lock_path, e))?;
        lock.lock().map_err(|e| err(&lock_path, e))?;
        Ok(Self {
            requests: dir.join(format!("{pf}.requests")),
            state: dir.join(format!("{pf}.state.json")),
            ignore: dir.join(format!("{pf}.ignore")),
            _lock: lock,
        })
    }

    fn state(&self) -> Result<BTreeMap<u32, VfSettings>, PfError> {
        match fs::read(&self.state) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| PfError::Recording {
                path: self.state.clone(),
                reason: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(PfError::Recording {
                path: self.state.clone(),
                reason: e.to_string(),
            }),
        }
    }

    fn apply(&self, pf_index: u32, settings: &VfSettings) -> Result<(), PfError> {
        let bytes = Socket::<RouteNetlinkMessage>::encode(settings.message(pf_index), NLM_F_ACK, 0);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let record = |path: &Path, e: std::io::Error| PfError::Recording {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.requests)
            .map_err(|e| record(&self.requests, e))?;
        writeln!(log, "{hex}\t{settings}").map_err(|e| record(&self.requests, e))?;

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
        let json = serde_json::to_vec_pretty(&state).map_err(|e| PfError::Recording {
            path: self.state.clone(),
            reason: e.to_string(),
        })?;
        let tmp = self.state.with_extension("json.tmp");
        fs::write(&tmp, json).map_err(|e| record(&tmp, e))?;
        fs::rename(&tmp, &self.state).map_err(|e| record(&self.state, e))
    }
}
