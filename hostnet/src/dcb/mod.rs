//! DCB netlink (dcbnl): the kernel interface behind iproute2's `dcb`, `lldptool` and
//! `mlnx_qos` on upstream kernels: PFC, ETS, the APP table (DSCP trust), the DCBX mode.
//!
//! No Rust crate speaks dcbnl (netlink-packet-route has `RTM_GETDCB` commented out), so the
//! codec is here: a message is `struct dcbmsg` and attributes ([`DcbMessage`]), carried by the
//! crate's generic netlink [`Socket`](crate::netlink::Socket) on `NETLINK_ROUTE`.
//! [`DcbSocket`] has the typed operations. Requests are proven byte for byte against what
//! iproute2's `dcb` sends (fixtures and the command that made them in
//! `hostnet/tests/fixtures/dcb`), and the decoder against what `dcb` prints for the same reply.
//!
//! [`tos_ecn`] reads the RoCE settings dcbnl does not carry (ToS, DCQCN ECN) from the RDMA stack's
//! files.

mod attr;
mod message;
mod socket;
pub mod tos_ecn;

pub use attr::{
    APP_SEL_DGRAM, APP_SEL_DSCP, APP_SEL_PCP, DCB_CMD_GDCBX, DCB_CMD_GSTATE, DCB_CMD_IEEE_DEL,
    DCB_CMD_IEEE_GET, DCB_CMD_IEEE_SET, DCB_CMD_SDCBX, DCBX_HOST, DCBX_LLD_MANAGED, DCBX_STATIC,
    DCBX_VER_CEE, DCBX_VER_IEEE, DcbApp, DcbAttribute, IEEE_ETS_LEN, IEEE_PFC_LEN, IeeeAttribute,
    IeeeEts, IeeePfc, RTM_GETDCB, RTM_SETDCB,
};
pub use message::DcbMessage;
pub use socket::{DcbError, DcbSocket, IeeeState};

/// The names `dcb dcbx show` prints for the mode flags, in its order.
pub fn dcbx_flag_names(flags: u8) -> Vec<&'static str> {
    [
        (DCBX_HOST, "host"),
        (DCBX_LLD_MANAGED, "lld-managed"),
        (DCBX_VER_CEE, "cee"),
        (DCBX_VER_IEEE, "ieee"),
        (DCBX_STATIC, "static"),
    ]
    .into_iter()
    .filter(|(bit, _)| flags & bit != 0)
    .map(|(_, name)| name)
    .collect()
}

#[cfg(test)]
mod tests;
