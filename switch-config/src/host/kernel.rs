//! Reading a host's RoCE QoS from its kernel, through hostnet: MTU over rtnetlink, PFC, the
//! APP table (DSCP trust), DCBX mode and willing bit over DCB netlink, the RoCE ToS and DCQCN
//! ECN from the RDMA stack's files.

use std::path::{Path, PathBuf};

use hostnet::dcb::{DcbError, DcbSocket, IeeeState, dcbx_flag_names, tos_ecn};
use hostnet::netlink::{NetlinkError, RouteSocket};
use hostnet::netns::NetNs;

use super::{HostState, NicState, Reading, STATE_SCHEMA};

/// Where the RDMA stack's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// sysfs; `None`: the namespace's own (a fresh sysfs mounted for it when a namespace is
    /// given, since `/sys/class/net` shows the mounting namespace's devices).
    pub sysfs: Option<PathBuf>,
    /// configfs (`/sys/kernel/config`; node-wide, rdma_cm settings are not per namespace).
    pub configfs: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Self {
            sysfs: None,
            configfs: PathBuf::from("/sys/kernel/config"),
        }
    }
}

/// Why the state could not be read at all (sockets, namespace).
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The route netlink socket.
    #[error("open a route netlink socket: {0}")]
    Route(#[from] hostnet::netlink::OpenInError),
    /// The route netlink socket, in this namespace.
    #[error("open a route netlink socket: {0}")]
    RouteHere(#[from] NetlinkError),
    /// The DCB socket.
    #[error(transparent)]
    Dcb(#[from] DcbError),
    /// Mounting the namespace's sysfs.
    #[error(transparent)]
    NetNs(#[from] hostnet::netns::NetNsError),
}

/// Reads `nics` of host `host`, in `ns` (or the caller's namespace).
pub fn read(
    ns: Option<&NetNs>,
    host: &str,
    nics: &[String],
    roots: &Roots,
) -> Result<HostState, KernelError> {
    let mut route = match ns {
        Some(ns) => RouteSocket::open_in(ns)?,
        None => RouteSocket::open()?,
    };
    let mut dcb = match ns {
        Some(ns) => DcbSocket::open_in(ns)?,
        None => DcbSocket::open()?,
    };
    let mut kernel = Vec::with_capacity(nics.len());
    for nic in nics {
        let mtu = match route.link_by_name(nic) {
            Ok(Some(link)) => Reading::Value(link.mtu),
            Ok(None) => Reading::CannotRead(format!("no interface {nic}")),
            Err(e) => Reading::CannotRead(e.to_string()),
        };
        kernel.push((nic, mtu, dcb.ieee(nic)));
    }
    let build = |sysfs: &Path| -> Vec<NicState> {
        kernel
            .into_iter()
            .map(|(nic, mtu, ieee)| nic_state(nic, mtu, ieee, sysfs, &roots.configfs))
            .collect()
    };
    let out = match (&roots.sysfs, ns) {
        (Some(sysfs), _) => build(sysfs),
        (None, Some(ns)) => ns.with_sysfs(build)?,
        (None, None) => build(Path::new("/sys")),
    };
    Ok(HostState {
        schema: STATE_SCHEMA.into(),
        host: host.to_owned(),
        nics: out,
    })
}

fn nic_state(
    nic: &str,
    mtu: Reading<u32>,
    ieee: Result<IeeeState, DcbError>,
    sysfs: &Path,
    configfs: &Path,
) -> NicState {
    let cannot = |e: &DcbError| e.to_string();
    let (pfc, dscp_priority, trust, dcbx, willing) = match &ieee {
        Ok(s) => (
            s.pfc.as_ref().map_or_else(
                || Reading::CannotRead(format!("the driver of {nic} reports no IEEE PFC object")),
                |p| Reading::Value(p.enabled()),
            ),
            Reading::Value(s.dscp_priorities()),
            s.trust
                .as_ref()
                .map(|t| t.iter().map(|sel| selector_name(*sel)).collect()),
            s.dcbx.map_or_else(
                || Reading::CannotRead(format!("the driver of {nic} reports no DCBX mode")),
                |d| Reading::Value(dcbx_flag_names(d).into_iter().map(str::to_owned).collect()),
            ),
            s.ets.as_ref().map_or_else(
                || Reading::CannotRead(format!("the driver of {nic} reports no IEEE ETS object")),
                |e| Reading::Value(e.willing != 0),
            ),
        ),
        Err(e) => (
            Reading::CannotRead(cannot(e)),
            Reading::CannotRead(cannot(e)),
            None,
            Reading::CannotRead(cannot(e)),
            Reading::CannotRead(cannot(e)),
        ),
    };
    let roce_tos = match tos_ecn::roce_tos(sysfs, configfs, nic) {
        Ok(t) => Reading::Value(t.tos),
        Err(e) => Reading::CannotRead(e.to_string()),
    };
    let ecn = match tos_ecn::ecn_priorities(sysfs, nic) {
        Ok(v) => Reading::Value(v),
        Err(e) => Reading::CannotRead(e.to_string()),
    };
    NicState {
        nic: nic.to_owned(),
        mtu,
        pfc,
        dscp_priority,
        trust,
        dcbx,
        willing,
        roce_tos,
        ecn,
    }
}

/// `dcb apptrust`'s names for selectors.
fn selector_name(sel: u8) -> String {
    match sel {
        1 => "ethtype".into(),
        2 => "stream-port".into(),
        3 => "dgram-port".into(),
        4 => "port".into(),
        5 => "dscp".into(),
        255 => "pcp".into(),
        other => format!("selector-{other}"),
    }
}
