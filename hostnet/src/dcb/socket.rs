//! The DCB netlink socket and its typed operations, named after iproute2's `dcb` commands.

use super::attr::{APP_SEL_DSCP, DcbApp, DcbAttribute, IeeeAttribute, IeeeEts, IeeePfc};
use super::message::DcbMessage;
use crate::netlink::{NetlinkError, Socket};
use crate::netns::{NetNs, NetNsError};

/// A failed DCB netlink operation.
#[derive(Debug, thiserror::Error)]
pub enum DcbError {
    /// The device's driver has no DCB operations: nothing can be read or set through dcbnl.
    #[error(
        "{}: the driver of {ifname} has no DCB netlink operations, so its PFC, ETS and APP \
         settings cannot be read or set (veth, bridges and most virtual NICs; RoCE NICs such as \
         mlx5, bnxt, ice and irdma's hosts have them)", source.what
    )]
    NotSupported {
        /// The device.
        ifname: String,
        /// The kernel's answer (EOPNOTSUPP).
        #[source]
        source: NetlinkError,
    },
    /// No such device in the socket's namespace.
    #[error("{}: no network device {ifname} in this namespace", source.what)]
    NoSuchDevice {
        /// The device asked for.
        ifname: String,
        /// The kernel's answer (ENODEV).
        #[source]
        source: NetlinkError,
    },
    /// The kernel refused or the socket failed.
    #[error(transparent)]
    Netlink(NetlinkError),
    /// Entering the namespace to open the socket failed.
    #[error("open a DCB netlink socket: {0}")]
    NetNs(#[from] NetNsError),
    /// The driver refused a set; dcbnl reports this as a status in its reply, not as an errno.
    #[error("{what}: the driver refused the change (status {status})")]
    Rejected {
        /// The operation.
        what: String,
        /// The driver's status byte.
        status: u8,
    },
    /// The reply lacks what the request asked for.
    #[error("{what}: the kernel's reply has no {attribute}")]
    MissingAttribute {
        /// The operation.
        what: String,
        /// The attribute.
        attribute: &'static str,
    },
    /// A recorded reply that is not one.
    #[error("not a dcbnl IEEE_GET reply: {0}")]
    NotAReply(String),
}

impl DcbError {
    fn from_netlink(ifname: &str, e: NetlinkError) -> Self {
        if e.is(libc::EOPNOTSUPP) {
            Self::NotSupported {
                ifname: ifname.to_owned(),
                source: e,
            }
        } else if e.is(libc::ENODEV) {
            Self::NoSuchDevice {
                ifname: ifname.to_owned(),
                source: e,
            }
        } else {
            Self::Netlink(e)
        }
    }

    /// True when the driver cannot do DCB at all (the answer is "cannot read", not "off").
    pub fn is_not_supported(&self) -> bool {
        matches!(self, Self::NotSupported { .. })
    }
}

/// Everything one `DCB_CMD_IEEE_GET` reports for a device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IeeeState {
    /// ETS, when the driver reports it.
    pub ets: Option<IeeeEts>,
    /// PFC, when the driver reports it.
    pub pfc: Option<IeeePfc>,
    /// The APP table.
    pub apps: Vec<DcbApp>,
    /// The peer's ETS, from a firmware DCBX agent.
    pub peer_ets: Option<IeeeEts>,
    /// The peer's PFC, from a firmware DCBX agent.
    pub peer_pfc: Option<IeeePfc>,
    /// Trusted selectors, most trusted first (drivers with the apptrust operation).
    pub trust: Option<Vec<u8>>,
    /// DCBX mode flags.
    pub dcbx: Option<u8>,
}

impl IeeeState {
    /// Reads the state out of an IEEE_GET reply.
    pub fn from_message(message: &DcbMessage) -> Self {
        let mut s = Self::default();
        for a in &message.attributes {
            match a {
                DcbAttribute::Ieee(ieee) => {
                    for i in ieee {
                        match i {
                            IeeeAttribute::Ets(e) => s.ets = Some(e.clone()),
                            IeeeAttribute::Pfc(p) => s.pfc = Some(p.clone()),
                            IeeeAttribute::AppTable(apps) => s.apps.extend(apps),
                            IeeeAttribute::PeerEts(e) => s.peer_ets = Some(e.clone()),
                            IeeeAttribute::PeerPfc(p) => s.peer_pfc = Some(p.clone()),
                            IeeeAttribute::TrustTable(t) => s.trust = Some(t.clone()),
                            IeeeAttribute::MaxRate(_) | IeeeAttribute::Other(_) => {}
                        }
                    }
                }
                DcbAttribute::Dcbx(d) => s.dcbx = Some(*d),
                _ => {}
            }
        }
        s
    }

    /// Reads the state out of the payload of an IEEE_GET reply (`struct dcbmsg` and the
    /// attributes: what follows the netlink header), as recorded from a driver. The fabric
    /// agent's tests replay such recordings for veth, which has no DCB operations.
    pub fn from_reply_payload(payload: &[u8]) -> Result<Self, DcbError> {
        use netlink_packet_core::{NetlinkDeserializable, NetlinkHeader};
        let mut header = NetlinkHeader::default();
        header.message_type = super::attr::RTM_GETDCB;
        DcbMessage::deserialize(&header, payload)
            .map(|m| Self::from_message(&m))
            .map_err(|e| DcbError::NotAReply(e.to_string()))
    }

    /// The APP table's DSCP → priority entries, sorted.
    pub fn dscp_priorities(&self) -> Vec<(u8, u8)> {
        let mut v: Vec<(u8, u8)> = self
            .apps
            .iter()
            .filter(|a| a.selector == APP_SEL_DSCP)
            .map(|a| (u8::try_from(a.protocol).unwrap_or(u8::MAX), a.priority))
            .collect();
        v.sort_unstable();
        v
    }
}

/// An rtnetlink socket speaking dcbnl, bound to one network namespace.
pub struct DcbSocket {
    socket: Socket<DcbMessage>,
}

impl DcbSocket {
    /// Opens a socket in the calling thread's namespace.
    pub fn open() -> Result<Self, DcbError> {
        Ok(Self {
            socket: Socket::open(netlink_sys::protocols::NETLINK_ROUTE)
                .map_err(DcbError::Netlink)?,
        })
    }

    /// Opens a socket inside `ns`; the calling thread is back in its own namespace on return.
    pub fn open_in(ns: &NetNs) -> Result<Self, DcbError> {
        ns.run(Self::open)?
    }

    fn transact(
        &mut self,
        ifname: &str,
        message: DcbMessage,
        what: String,
    ) -> Result<Vec<DcbMessage>, DcbError> {
        let replies = self
            .socket
            .transact(message, what.clone())
            .map_err(|e| DcbError::from_netlink(ifname, e))?;
        for r in &replies {
            for a in &r.attributes {
                if let DcbAttribute::IeeeStatus(status) = a
                    && *status != 0
                {
                    return Err(DcbError::Rejected {
                        what: what.clone(),
                        status: *status,
                    });
                }
            }
        }
        Ok(replies)
    }

    /// `dcb ets|pfc|app|dcbx show dev IF`.
    pub fn ieee(&mut self, ifname: &str) -> Result<IeeeState, DcbError> {
        let what = format!("dcb pfc show dev {ifname}");
        let replies = self.transact(ifname, DcbMessage::ieee_get(ifname), what.clone())?;
        let reply = replies.first().ok_or(DcbError::MissingAttribute {
            what,
            attribute: "reply",
        })?;
        Ok(IeeeState::from_message(reply))
    }

    /// `dcb pfc set dev IF prio-pfc all:off P:on ...`: reads PFC, replaces the bitmap, writes
    /// the structure back (as `dcb` does, so the driver's other fields survive).
    pub fn set_pfc(&mut self, ifname: &str, priorities: &[u8]) -> Result<(), DcbError> {
        let state = self.ieee(ifname)?;
        let mut pfc = state.pfc.ok_or_else(|| DcbError::MissingAttribute {
            what: format!("dcb pfc show dev {ifname}"),
            attribute: "DCB_ATTR_IEEE_PFC",
        })?;
        pfc.pfc_en = IeeePfc::bitmap(priorities);
        let what = format!("dcb pfc set dev {ifname} prio-pfc {priorities:?}");
        self.transact(ifname, DcbMessage::ieee_set_pfc(ifname, pfc), what)
            .map(drop)
    }

    /// `dcb ets set dev IF ...` with a whole ETS structure.
    pub fn set_ets(&mut self, ifname: &str, ets: IeeeEts) -> Result<(), DcbError> {
        let what = format!("dcb ets set dev {ifname}");
        self.transact(ifname, DcbMessage::ieee_set_ets(ifname, ets), what)
            .map(drop)
    }

    /// `dcb app add dev IF ...`.
    pub fn app_add(&mut self, ifname: &str, apps: &[DcbApp]) -> Result<(), DcbError> {
        let what = format!("dcb app add dev {ifname}");
        self.transact(
            ifname,
            DcbMessage::ieee_set_app(ifname, apps.to_vec()),
            what,
        )
        .map(drop)
    }

    /// `dcb app del dev IF ...`.
    pub fn app_del(&mut self, ifname: &str, apps: &[DcbApp]) -> Result<(), DcbError> {
        let what = format!("dcb app del dev {ifname}");
        self.transact(
            ifname,
            DcbMessage::ieee_del_app(ifname, apps.to_vec()),
            what,
        )
        .map(drop)
    }

    /// `dcb dcbx set dev IF ...` with `DCB_CAP_DCBX_*` flags.
    pub fn set_dcbx(&mut self, ifname: &str, flags: u8) -> Result<(), DcbError> {
        let what = format!("dcb dcbx set dev {ifname}");
        self.transact(ifname, DcbMessage::set_dcbx(ifname, flags), what)
            .map(drop)
    }

    /// `DCB_CMD_GDCBX`: the DCBX mode flags.
    pub fn dcbx(&mut self, ifname: &str) -> Result<u8, DcbError> {
        let what = format!("DCB_CMD_GDCBX {ifname}");
        let replies = self.transact(ifname, DcbMessage::get_dcbx(ifname), what.clone())?;
        find_u8(&replies, |a| match a {
            DcbAttribute::Dcbx(v) => Some(*v),
            _ => None,
        })
        .ok_or(DcbError::MissingAttribute {
            what,
            attribute: "DCB_ATTR_DCBX",
        })
    }

    /// `DCB_CMD_GSTATE`: 1 when DCB is on.
    pub fn state(&mut self, ifname: &str) -> Result<u8, DcbError> {
        let what = format!("DCB_CMD_GSTATE {ifname}");
        let replies = self.transact(ifname, DcbMessage::get_state(ifname), what.clone())?;
        find_u8(&replies, |a| match a {
            DcbAttribute::State(v) => Some(*v),
            _ => None,
        })
        .ok_or(DcbError::MissingAttribute {
            what,
            attribute: "DCB_ATTR_STATE",
        })
    }
}

fn find_u8(replies: &[DcbMessage], f: impl Fn(&DcbAttribute) -> Option<u8>) -> Option<u8> {
    replies.iter().flat_map(|r| &r.attributes).find_map(f)
}
