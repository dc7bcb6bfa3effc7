//! The dcbnl message: `struct dcbmsg` (family, command, pad) and a flat attribute list.

use netlink_packet_core::{
    DecodeError, Emitable, NetlinkDeserializable, NetlinkHeader, NetlinkSerializable, NlaBuffer,
    NlasIterator, Parseable,
};

use super::attr::{
    DCB_CMD_GDCBX, DCB_CMD_GSTATE, DCB_CMD_IEEE_DEL, DCB_CMD_IEEE_GET, DCB_CMD_IEEE_SET,
    DCB_CMD_SDCBX, DcbApp, DcbAttribute, IeeeAttribute, IeeeEts, IeeePfc, RTM_GETDCB, RTM_SETDCB,
};

/// Size of `struct dcbmsg`.
const DCBMSG_LEN: usize = 4;

/// A DCB netlink message (`RTM_GETDCB` / `RTM_SETDCB`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DcbMessage {
    /// `RTM_GETDCB` or `RTM_SETDCB`.
    pub message_type: u16,
    /// `DCB_CMD_*`.
    pub command: u8,
    /// The attributes, in order.
    pub attributes: Vec<DcbAttribute>,
}

impl DcbMessage {
    fn new(message_type: u16, command: u8, ifname: &str, mut rest: Vec<DcbAttribute>) -> Self {
        let mut attributes = vec![DcbAttribute::IfName(ifname.to_owned())];
        attributes.append(&mut rest);
        Self {
            message_type,
            command,
            attributes,
        }
    }

    /// `dcb ets|pfc|app|dcbx show dev IF`: one IEEE_GET returns ETS, PFC, the APP table, the
    /// peer's objects where the driver reports them, and the DCBX mode.
    pub fn ieee_get(ifname: &str) -> Self {
        Self::new(RTM_GETDCB, DCB_CMD_IEEE_GET, ifname, Vec::new())
    }

    /// `dcb pfc set dev IF ...`: the whole `struct ieee_pfc` as read, with the new bitmap.
    pub fn ieee_set_pfc(ifname: &str, pfc: IeeePfc) -> Self {
        Self::ieee_set(ifname, vec![IeeeAttribute::Pfc(pfc)])
    }

    /// `dcb ets set dev IF ...`: the whole `struct ieee_ets`.
    pub fn ieee_set_ets(ifname: &str, ets: IeeeEts) -> Self {
        Self::ieee_set(ifname, vec![IeeeAttribute::Ets(ets)])
    }

    /// `dcb app add dev IF ...`.
    pub fn ieee_set_app(ifname: &str, apps: Vec<DcbApp>) -> Self {
        Self::ieee_set(ifname, vec![IeeeAttribute::AppTable(apps)])
    }

    /// `dcb app del dev IF ...`.
    pub fn ieee_del_app(ifname: &str, apps: Vec<DcbApp>) -> Self {
        Self::new(
            RTM_SETDCB,
            DCB_CMD_IEEE_DEL,
            ifname,
            vec![DcbAttribute::Ieee(vec![IeeeAttribute::AppTable(apps)])],
        )
    }

    fn ieee_set(ifname: &str, ieee: Vec<IeeeAttribute>) -> Self {
        Self::new(
            RTM_SETDCB,
            DCB_CMD_IEEE_SET,
            ifname,
            vec![DcbAttribute::Ieee(ieee)],
        )
    }

    /// `dcb dcbx set dev IF ...` with `DCB_CAP_DCBX_*` flags.
    pub fn set_dcbx(ifname: &str, flags: u8) -> Self {
        Self::new(
            RTM_SETDCB,
            DCB_CMD_SDCBX,
            ifname,
            vec![DcbAttribute::Dcbx(flags)],
        )
    }

    /// `DCB_CMD_GDCBX`: the DCBX mode alone (what lldpad asks).
    pub fn get_dcbx(ifname: &str) -> Self {
        Self::new(RTM_GETDCB, DCB_CMD_GDCBX, ifname, Vec::new())
    }

    /// `DCB_CMD_GSTATE`: whether DCB is on (CEE drivers).
    pub fn get_state(ifname: &str) -> Self {
        Self::new(RTM_GETDCB, DCB_CMD_GSTATE, ifname, Vec::new())
    }
}

impl NetlinkSerializable for DcbMessage {
    fn message_type(&self) -> u16 {
        self.message_type
    }

    fn buffer_len(&self) -> usize {
        DCBMSG_LEN + self.attributes.as_slice().buffer_len()
    }

    fn serialize(&self, buffer: &mut [u8]) {
        if buffer.len() < DCBMSG_LEN {
            return;
        }
        // dcb_family AF_UNSPEC, cmd, two pad bytes.
        buffer[..DCBMSG_LEN].copy_from_slice(&[0, self.command, 0, 0]);
        self.attributes.as_slice().emit(&mut buffer[DCBMSG_LEN..]);
    }
}

impl NetlinkDeserializable for DcbMessage {
    type Error = DecodeError;

    fn deserialize(header: &NetlinkHeader, payload: &[u8]) -> Result<Self, Self::Error> {
        if header.message_type != RTM_GETDCB && header.message_type != RTM_SETDCB {
            return Err(DecodeError::from(format!(
                "netlink message type {} is not RTM_GETDCB/RTM_SETDCB",
                header.message_type
            )));
        }
        let Some((dcbmsg, attrs)) = payload.split_at_checked(DCBMSG_LEN) else {
            return Err(DecodeError::from(
                "dcbnl message shorter than struct dcbmsg",
            ));
        };
        let mut attributes = Vec::new();
        for nla in NlasIterator::new(attrs) {
            let nla: NlaBuffer<&[u8]> = nla?;
            attributes.push(DcbAttribute::parse(&nla)?);
        }
        Ok(Self {
            message_type: header.message_type,
            command: dcbmsg[1],
            attributes,
        })
    }
}
