//! The RDMA netlink socket and its typed operations, named after iproute2's `rdma` commands.

use std::fmt;
use std::os::fd::AsRawFd;

use super::attr::RdmaAttribute;
use super::message::RdmaMessage;
use crate::netlink::{NetlinkError, Socket};
use crate::netns::{NetNs, NetNsError};

/// The RDMA subsystem's network namespace mode (`rdma system set netns ...`), written
/// `exclusive` or `shared` as `rdma system show` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetnsMode {
    /// Each RDMA device belongs to one namespace and can be moved (what SR-IOV pods need).
    Exclusive,
    /// Every namespace sees every RDMA device (the kernel's default).
    Shared,
}

impl NetnsMode {
    /// The attribute's value: 0 exclusive, 1 shared.
    pub fn to_u8(self) -> u8 {
        match self {
            Self::Exclusive => 0,
            Self::Shared => 1,
        }
    }

    /// From the attribute's value; `None` for a value this code does not know.
    pub fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(Self::Exclusive),
            1 => Some(Self::Shared),
            _ => None,
        }
    }
}

impl fmt::Display for NetnsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Exclusive => "exclusive",
            Self::Shared => "shared",
        })
    }
}

/// An RDMA device as `rdma dev show` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaDevice {
    /// Kernel index (stable while the device exists, reused after).
    pub index: u32,
    /// Name (`mlx5_0`, `rxe0`).
    pub name: String,
    /// Number of ports (numbered from 1).
    pub port_count: u32,
    /// Node GUID, host byte order.
    pub node_guid: Option<u64>,
    /// System image GUID, host byte order.
    pub sys_image_guid: Option<u64>,
    /// Firmware version, when the driver reports one.
    pub fw_version: Option<String>,
    /// `enum rdma_node_type` (1 = CA).
    pub node_type: Option<u8>,
    /// `roce`, `ib`, `iw`, ... (kernels since 5.x).
    pub protocol: Option<String>,
}

/// Port states (IBTA PortInfo:PortState), as `rdma link show` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortState {
    /// 0: no state change.
    Nop,
    /// 1: down.
    Down,
    /// 2: initialised.
    Init,
    /// 3: armed.
    Armed,
    /// 4: active: the port carries traffic.
    Active,
    /// 5: active, deferred.
    ActiveDefer,
    /// Anything else the kernel reports.
    Other(u8),
}

impl From<u8> for PortState {
    fn from(v: u8) -> Self {
        match v {
            0 => Self::Nop,
            1 => Self::Down,
            2 => Self::Init,
            3 => Self::Armed,
            4 => Self::Active,
            5 => Self::ActiveDefer,
            v => Self::Other(v),
        }
    }
}

/// A port of an RDMA device as `rdma link show` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaPort {
    /// The device's index.
    pub device_index: u32,
    /// The device's name.
    pub device_name: String,
    /// Port number, from 1.
    pub port: u32,
    /// Logical state.
    pub state: Option<PortState>,
    /// Physical state (IBTA PortPhysicalState: 5 = LinkUp).
    pub phys_state: Option<u8>,
    /// The netdev behind the port (RoCE, iWARP): `(ifindex, name)`. The kernel reports it only
    /// when the netdev is in the requesting socket's namespace.
    pub netdev: Option<(u32, String)>,
}

/// A failed RDMA netlink operation.
#[derive(Debug, thiserror::Error)]
pub enum RdmaError {
    /// The kernel refused or the socket failed; `what` names the operation in `rdma` terms.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
    /// Entering the namespace to open the socket failed.
    #[error("open an RDMA netlink socket: {0}")]
    NetNs(#[from] NetNsError),
    /// The device's driver cannot be moved between namespaces.
    #[error(
        "{}: the driver of RDMA device {device} does not support moving it to another network \
         namespace (software devices such as rxe and siw cannot move; create one inside the \
         namespace instead)", source.what
    )]
    MoveNotSupported {
        /// The device.
        device: String,
        /// The kernel's answer (EOPNOTSUPP).
        #[source]
        source: NetlinkError,
    },
    /// Moving devices needs exclusive mode.
    #[error(
        "{}: the RDMA subsystem is in shared netns mode, where devices cannot move; set \
         `rdma system set netns exclusive` while no other network namespace exists, or boot \
         with the ib_core module option netns_mode=0", source.what
    )]
    SharedMode {
        /// The kernel's answer (EOPNOTSUPP).
        #[source]
        source: NetlinkError,
    },
    /// The mode can change only while the initial namespace is the only one.
    #[error(
        "{}: the netns mode can change only while no network namespace other than the \
         initial one exists; set it at boot with the ib_core module option netns_mode=0 \
         (0 exclusive, 1 shared)", source.what
    )]
    ModeBusy {
        /// The kernel's answer (EBUSY).
        #[source]
        source: NetlinkError,
    },
    /// No device of that name is visible in the socket's namespace.
    #[error("rdma dev show {name}: no such RDMA device in this network namespace")]
    NoSuchDevice {
        /// The name asked for.
        name: String,
    },
    /// A reply lacks an attribute the kernel always sends.
    #[error("{what}: the kernel's reply has no {attribute}")]
    MissingAttribute {
        /// The operation.
        what: String,
        /// The attribute (`RDMA_NLDEV_ATTR_*`).
        attribute: &'static str,
    },
}

impl RdmaError {
    /// The kernel's errno, when it gave one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Self::Netlink(e)
            | Self::MoveNotSupported { source: e, .. }
            | Self::SharedMode { source: e }
            | Self::ModeBusy { source: e } => e.errno(),
            Self::NetNs(_) | Self::NoSuchDevice { .. } | Self::MissingAttribute { .. } => None,
        }
    }
}

/// An RDMA netlink (`NETLINK_RDMA`) socket bound to one network namespace.
///
/// In exclusive mode the kernel shows a socket only the devices of its own namespace, so open
/// the socket in the namespace whose devices you mean ([`RdmaSocket::open_in`]).
pub struct RdmaSocket {
    socket: Socket<RdmaMessage>,
}

impl RdmaSocket {
    /// Opens a socket in the calling thread's namespace.
    pub fn open() -> Result<Self, RdmaError> {
        Ok(Self {
            socket: Socket::open(netlink_sys::protocols::NETLINK_RDMA)?,
        })
    }

    /// Opens a socket inside `ns`; the calling thread is back in its own namespace on return.
    pub fn open_in(ns: &NetNs) -> Result<Self, RdmaError> {
        ns.run(Self::open)?
    }

    /// The underlying request/response socket.
    pub fn socket(&mut self) -> &mut Socket<RdmaMessage> {
        &mut self.socket
    }

    /// `rdma dev show`: every RDMA device visible in this socket's namespace.
    pub fn devices(&mut self) -> Result<Vec<RdmaDevice>, RdmaError> {
        let what = "rdma dev show";
        let replies = self.socket.dump(RdmaMessage::dev_dump(), what)?;
        replies.iter().map(|m| device_from(m, what)).collect()
    }

    /// `rdma dev show <dev>` for the device with kernel index `index`.
    pub fn device(&mut self, index: u32) -> Result<RdmaDevice, RdmaError> {
        let what = format!("rdma dev show (index {index})");
        let replies = self.socket.get(RdmaMessage::dev_get(index), what.clone())?;
        let reply = replies.first().ok_or_else(|| RdmaError::MissingAttribute {
            what: what.clone(),
            attribute: "reply",
        })?;
        device_from(reply, &what)
    }

    /// `rdma dev show <name>`.
    pub fn device_by_name(&mut self, name: &str) -> Result<RdmaDevice, RdmaError> {
        // The kernel looks devices up by index only; iproute2 too resolves names from a dump.
        self.devices()?
            .into_iter()
            .find(|d| d.name == name)
            .ok_or_else(|| RdmaError::NoSuchDevice {
                name: name.to_owned(),
            })
    }

    /// `rdma link show <dev>/<port>`.
    pub fn port(&mut self, device: &RdmaDevice, port: u32) -> Result<RdmaPort, RdmaError> {
        let what = format!("rdma link show {}/{port}", device.name);
        let replies = self
            .socket
            .get(RdmaMessage::port_get(device.index, port), what.clone())?;
        let reply = replies.first().ok_or_else(|| RdmaError::MissingAttribute {
            what: what.clone(),
            attribute: "reply",
        })?;
        port_from(reply, &what)
    }

    /// `rdma link show <dev>`: every port of `device`, with its netdev.
    pub fn ports(&mut self, device: &RdmaDevice) -> Result<Vec<RdmaPort>, RdmaError> {
        (1..=device.port_count)
            .map(|p| self.port(device, p))
            .collect()
    }

    /// `rdma system show`: the netns mode.
    pub fn netns_mode(&mut self) -> Result<NetnsMode, RdmaError> {
        let what = "rdma system show";
        let replies = self.socket.get(RdmaMessage::sys_get(), what)?;
        replies
            .iter()
            .flat_map(|m| &m.attributes)
            .find_map(|a| match a {
                RdmaAttribute::NetnsMode(v) => NetnsMode::from_u8(*v),
                _ => None,
            })
            .ok_or_else(|| RdmaError::MissingAttribute {
                what: what.to_owned(),
                attribute: "RDMA_NLDEV_SYS_ATTR_NETNS_MODE",
            })
    }

    /// `rdma system set netns exclusive|shared`.
    pub fn set_netns_mode(&mut self, mode: NetnsMode) -> Result<(), RdmaError> {
        let what = format!("rdma system set netns {mode}");
        self.socket
            .request(RdmaMessage::sys_set_netns_mode(mode.to_u8()), 0, what)
            .map_err(|e| {
                // rdma_compatdev_set refuses while a non-initial namespace exists.
                if e.is(libc::EBUSY) {
                    RdmaError::ModeBusy { source: e }
                } else {
                    e.into()
                }
            })
    }

    /// `rdma dev set <dev> netns <ns>`: moves `device` into `ns` (exclusive mode only).
    pub fn move_device(&mut self, device: &RdmaDevice, ns: &NetNs) -> Result<(), RdmaError> {
        let what = format!("rdma dev set {} netns {}", device.name, ns.path().display());
        // An open descriptor is never negative; u32::MAX would only earn EBADF from the kernel.
        let fd = u32::try_from(ns.as_raw_fd()).unwrap_or(u32::MAX);
        match self
            .socket
            .request(RdmaMessage::dev_set_netns(device.index, fd), 0, what)
        {
            Ok(()) => Ok(()),
            // The kernel answers EOPNOTSUPP both in shared mode and for drivers without
            // disassociate_ucontext (rxe, siw); ask which, so the message says what to fix.
            Err(e) if e.is(libc::EOPNOTSUPP) => match self.netns_mode() {
                Ok(NetnsMode::Shared) => Err(RdmaError::SharedMode { source: e }),
                _ => Err(RdmaError::MoveNotSupported {
                    device: device.name.clone(),
                    source: e,
                }),
            },
            Err(e) => Err(e.into()),
        }
    }

    /// `rdma link add <name> type <link_type> netdev <netdev>`: a software device (`rxe`).
    pub fn link_add(&mut self, name: &str, link_type: &str, netdev: &str) -> Result<(), RdmaError> {
        let what = format!("rdma link add {name} type {link_type} netdev {netdev}");
        Ok(self
            .socket
            .request(RdmaMessage::link_add(name, link_type, netdev), 0, what)?)
    }

    /// `rdma link delete <dev>`.
    pub fn link_delete(&mut self, device: &RdmaDevice) -> Result<(), RdmaError> {
        let what = format!("rdma link delete {}", device.name);
        Ok(self
            .socket
            .request(RdmaMessage::link_delete(device.index), 0, what)?)
    }
}

pub(crate) fn device_from(m: &RdmaMessage, what: &str) -> Result<RdmaDevice, RdmaError> {
    let mut d = RdmaDevice {
        index: u32::MAX,
        name: String::new(),
        port_count: 0,
        node_guid: None,
        sys_image_guid: None,
        fw_version: None,
        node_type: None,
        protocol: None,
    };
    let (mut has_index, mut has_name) = (false, false);
    for a in &m.attributes {
        match a {
            RdmaAttribute::DevIndex(v) => (d.index, has_index) = (*v, true),
            RdmaAttribute::DevName(v) => (d.name, has_name) = (v.clone(), true),
            RdmaAttribute::PortIndex(v) => d.port_count = *v,
            RdmaAttribute::NodeGuid(v) => d.node_guid = Some(*v),
            RdmaAttribute::SysImageGuid(v) => d.sys_image_guid = Some(*v),
            RdmaAttribute::FwVersion(v) => d.fw_version = Some(v.clone()),
            RdmaAttribute::DevNodeType(v) => d.node_type = Some(*v),
            RdmaAttribute::DevProtocol(v) => d.protocol = Some(v.clone()),
            _ => {}
        }
    }
    require(has_index, what, "RDMA_NLDEV_ATTR_DEV_INDEX")?;
    require(has_name, what, "RDMA_NLDEV_ATTR_DEV_NAME")?;
    Ok(d)
}

/// A port from the kernel's answer to `PORT_GET`, whatever its message type: the kernel marks
/// that answer `RDMA_NLDEV_CMD_GET`, not `PORT_GET` (see the `link-show` fixtures).
pub(crate) fn port_from(m: &RdmaMessage, what: &str) -> Result<RdmaPort, RdmaError> {
    let mut p = RdmaPort {
        device_index: u32::MAX,
        device_name: String::new(),
        port: 0,
        state: None,
        phys_state: None,
        netdev: None,
    };
    let (mut has_index, mut has_port) = (false, false);
    let (mut ndev_index, mut ndev_name) = (None, None);
    for a in &m.attributes {
        match a {
            RdmaAttribute::DevIndex(v) => (p.device_index, has_index) = (*v, true),
            RdmaAttribute::DevName(v) => p.device_name = v.clone(),
            RdmaAttribute::PortIndex(v) => (p.port, has_port) = (*v, true),
            RdmaAttribute::PortState(v) => p.state = Some(PortState::from(*v)),
            RdmaAttribute::PortPhysState(v) => p.phys_state = Some(*v),
            RdmaAttribute::NdevIndex(v) => ndev_index = Some(*v),
            RdmaAttribute::NdevName(v) => ndev_name = Some(v.clone()),
            _ => {}
        }
    }
    require(has_index, what, "RDMA_NLDEV_ATTR_DEV_INDEX")?;
    require(has_port, what, "RDMA_NLDEV_ATTR_PORT_INDEX")?;
    p.netdev = ndev_index.zip(ndev_name);
    Ok(p)
}

fn require(present: bool, what: &str, attribute: &'static str) -> Result<(), RdmaError> {
    if present {
        Ok(())
    } else {
        Err(RdmaError::MissingAttribute {
            what: what.to_owned(),
            attribute,
        })
    }
}
