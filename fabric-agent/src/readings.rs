//! The kernel readings RoCE health needs, taken on a plain thread of their own (a DCB netlink
//! socket opened inside the NICs' namespace and kept; sysfs for the GID tables): the host's
//! PFC priorities per NIC, and the NICs' addresses that lack a RoCE v2 GID.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use hostnet::dcb::{DcbSocket, IeeeState};
use hostnet::netns::NetNs;
use hostnet::rdma::gid::{GidQuery, RdmaSysfs};
use spinel_node::nics::RoceNic;
use tokio::sync::oneshot;

use crate::roce_health::{HostPfc, Readings};

type Request = (Vec<RoceNic>, oneshot::Sender<Readings>);

/// Asks the reading thread for a pass.
#[derive(Clone)]
pub struct Reader {
    tx: mpsc::Sender<Request>,
}

impl Reader {
    /// Starts the thread. `dcb_replay` is the test seam: recorded dcbnl replies instead of the
    /// kernel (see [`crate::settings::Health::dcb_replay_dir`]).
    pub fn spawn(ns: Arc<NetNs>, sysfs_root: PathBuf, dcb_replay: Option<PathBuf>) -> Self {
        let (tx, rx) = mpsc::channel::<Request>();
        let spawned = std::thread::Builder::new()
            .name("health-readings".into())
            .spawn(move || {
                let mut dcb: Option<DcbSocket> = None;
                while let Ok((nics, reply)) = rx.recv() {
                    let readings = Readings {
                        pfc: nics
                            .iter()
                            .map(|n| {
                                let pfc = host_pfc(&ns, &mut dcb, dcb_replay.as_deref(), &n.name);
                                (n.name.to_string(), pfc)
                            })
                            .collect(),
                        missing_gids: missing_gids(&sysfs_root, &nics),
                    };
                    let _ = reply.send(readings);
                }
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start the health reading thread: {e}");
        }
        Self { tx }
    }

    /// One pass over `nics`; empty readings if the thread is gone.
    pub async fn read(&self, nics: Vec<RoceNic>) -> Readings {
        let (reply, answer) = oneshot::channel();
        if self.tx.send((nics, reply)).is_err() {
            return Readings::default();
        }
        answer.await.unwrap_or_default()
    }
}

fn from_state(state: IeeeState) -> HostPfc {
    match state.pfc {
        Some(p) => HostPfc::Enabled(p.enabled()),
        None => HostPfc::Unknown("the driver reports no PFC object".into()),
    }
}

/// The host's PFC on `nic`: from the kernel (the socket is opened once, in `ns`), or from a
/// recorded reply `<replay>/<nic>.hex` (hex of the payload after the netlink header).
fn host_pfc(ns: &NetNs, dcb: &mut Option<DcbSocket>, replay: Option<&Path>, nic: &str) -> HostPfc {
    if let Some(dir) = replay {
        let path = dir.join(format!("{nic}.hex"));
        return match std::fs::read_to_string(&path) {
            Ok(text) => match unhex(text.trim()) {
                Some(bytes) => IeeeState::from_reply_payload(&bytes)
                    .map(from_state)
                    .unwrap_or_else(|e| HostPfc::Unknown(e.to_string())),
                None => HostPfc::Unknown(format!("{} is not hex", path.display())),
            },
            Err(e) => HostPfc::Unknown(format!("no recorded reply {}: {e}", path.display())),
        };
    }
    if dcb.is_none() {
        match DcbSocket::open_in(ns) {
            Ok(s) => *dcb = Some(s),
            Err(e) => return HostPfc::Unknown(e.to_string()),
        }
    }
    let Some(sock) = dcb.as_mut() else {
        return HostPfc::Unknown("no DCB netlink socket".into());
    };
    match sock.ieee(nic) {
        Ok(state) => from_state(state),
        Err(e) if e.is_not_supported() => {
            HostPfc::Unknown("the driver has no DCB netlink operations".into())
        }
        Err(e) => HostPfc::Unknown(e.to_string()),
    }
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Per NIC with an RDMA device, its addresses (IPv4, global IPv6) without a RoCE v2 GID.
fn missing_gids(sysfs_root: &Path, nics: &[RoceNic]) -> BTreeMap<String, Vec<String>> {
    let sysfs = RdmaSysfs::new(sysfs_root);
    let mut out = BTreeMap::new();
    for nic in nics {
        let Some(device) = &nic.rdma_device else {
            continue;
        };
        let missing: Vec<String> = nic
            .addresses
            .iter()
            .map(|a| a.addr())
            .filter(|ip| !matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80))
            .filter(|ip| {
                let query = GidQuery {
                    device: Some(device.clone()),
                    netdev: nic.name.to_string(),
                    addr: *ip,
                };
                !matches!(sysfs.resolve(&query), Ok(Some(_)))
            })
            .map(|ip| ip.to_string())
            .collect();
        out.insert(nic.name.to_string(), missing);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_read_strictly() {
        assert_eq!(unhex("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
    }
}
