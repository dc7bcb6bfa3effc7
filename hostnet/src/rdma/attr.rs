//! RDMA netlink ("nldev") constants and attributes.
//!
//! Values from the kernel's uapi `rdma/rdma_netlink.h` (Debian's `linux-libc-dev`), checked by
//! compiling a program that prints them: the enums there are ABI ("don't change the order").

use netlink_packet_core::{
    DecodeError, DefaultNla, Nla, NlaBuffer, Parseable, emit_u32, emit_u64, parse_string, parse_u8,
    parse_u32, parse_u64,
};

/// `RDMA_NL_NLDEV`: the netlink client of the RDMA device interface.
pub const RDMA_NL_NLDEV: u16 = 5;

/// `RDMA_NL_GET_TYPE(client, op)`: the netlink message type of an nldev operation.
pub const fn nldev_type(op: u16) -> u16 {
    (RDMA_NL_NLDEV << 10) + op
}

/// `RDMA_NLDEV_CMD_GET`: a device (can dump).
pub const RDMA_NLDEV_CMD_GET: u16 = 1;
/// `RDMA_NLDEV_CMD_SET`: change a device (name, netns, ...).
pub const RDMA_NLDEV_CMD_SET: u16 = 2;
/// `RDMA_NLDEV_CMD_NEWLINK`: create a software device (`rdma link add`).
pub const RDMA_NLDEV_CMD_NEWLINK: u16 = 3;
/// `RDMA_NLDEV_CMD_DELLINK`: delete a software device (`rdma link delete`).
pub const RDMA_NLDEV_CMD_DELLINK: u16 = 4;
/// `RDMA_NLDEV_CMD_PORT_GET`: a port (can dump).
pub const RDMA_NLDEV_CMD_PORT_GET: u16 = 5;
/// `RDMA_NLDEV_CMD_SYS_GET`: subsystem settings (netns mode, ...).
pub const RDMA_NLDEV_CMD_SYS_GET: u16 = 6;
/// `RDMA_NLDEV_CMD_SYS_SET`: change subsystem settings.
pub const RDMA_NLDEV_CMD_SYS_SET: u16 = 7;

const DEV_INDEX: u16 = 1;
const DEV_NAME: u16 = 2;
const PORT_INDEX: u16 = 3;
const CAP_FLAGS: u16 = 4;
const FW_VERSION: u16 = 5;
const NODE_GUID: u16 = 6;
const SYS_IMAGE_GUID: u16 = 7;
const SUBNET_PREFIX: u16 = 8;
const LID: u16 = 9;
const SM_LID: u16 = 10;
const LMC: u16 = 11;
const PORT_STATE: u16 = 12;
const PORT_PHYS_STATE: u16 = 13;
const DEV_NODE_TYPE: u16 = 14;
const NDEV_INDEX: u16 = 50;
const NDEV_NAME: u16 = 51;
const LINK_TYPE: u16 = 65;
const SYS_NETNS_MODE: u16 = 66;
const DEV_PROTOCOL: u16 = 67;
const NET_NS_FD: u16 = 68;

/// One nldev attribute. Those Spinel does not use are kept as [`RdmaAttribute::Other`], so a
/// newer kernel's additions never fail a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdmaAttribute {
    /// `RDMA_NLDEV_ATTR_DEV_INDEX` (u32): the device's index.
    DevIndex(u32),
    /// `RDMA_NLDEV_ATTR_DEV_NAME` (string): `mlx5_0`, `rxe0`.
    DevName(String),
    /// `RDMA_NLDEV_ATTR_PORT_INDEX` (u32): a port number (from 1), or in a device reply the
    /// number of ports.
    PortIndex(u32),
    /// `RDMA_NLDEV_ATTR_CAP_FLAGS` (u64).
    CapFlags(u64),
    /// `RDMA_NLDEV_ATTR_FW_VERSION` (string).
    FwVersion(String),
    /// `RDMA_NLDEV_ATTR_NODE_GUID` (u64, host byte order).
    NodeGuid(u64),
    /// `RDMA_NLDEV_ATTR_SYS_IMAGE_GUID` (u64, host byte order).
    SysImageGuid(u64),
    /// `RDMA_NLDEV_ATTR_SUBNET_PREFIX` (u64; InfiniBand ports).
    SubnetPrefix(u64),
    /// `RDMA_NLDEV_ATTR_LID` (u32; InfiniBand ports).
    Lid(u32),
    /// `RDMA_NLDEV_ATTR_SM_LID` (u32; InfiniBand ports).
    SmLid(u32),
    /// `RDMA_NLDEV_ATTR_LMC` (u8; InfiniBand ports).
    Lmc(u8),
    /// `RDMA_NLDEV_ATTR_PORT_STATE` (u8).
    PortState(u8),
    /// `RDMA_NLDEV_ATTR_PORT_PHYS_STATE` (u8).
    PortPhysState(u8),
    /// `RDMA_NLDEV_ATTR_DEV_NODE_TYPE` (u8, `enum rdma_node_type`: 1 = CA).
    DevNodeType(u8),
    /// `RDMA_NLDEV_ATTR_NDEV_INDEX` (u32): ifindex of the port's netdev (RoCE, iWARP).
    NdevIndex(u32),
    /// `RDMA_NLDEV_ATTR_NDEV_NAME` (string): name of the port's netdev.
    NdevName(String),
    /// `RDMA_NLDEV_ATTR_LINK_TYPE` (string): the software driver for `rdma link add` (`rxe`).
    LinkType(String),
    /// `RDMA_NLDEV_SYS_ATTR_NETNS_MODE` (u8): 0 exclusive, 1 shared.
    NetnsMode(u8),
    /// `RDMA_NLDEV_ATTR_DEV_PROTOCOL` (string): `roce`, `ib`, `iw`, ...
    DevProtocol(String),
    /// `RDMA_NLDEV_NET_NS_FD` (u32): a namespace file descriptor of the sending process.
    NetNsFd(u32),
    /// Any other attribute, kept as received.
    Other(DefaultNla),
}

impl Nla for RdmaAttribute {
    fn value_len(&self) -> usize {
        use RdmaAttribute::*;
        match self {
            DevIndex(_) | PortIndex(_) | Lid(_) | SmLid(_) | NdevIndex(_) | NetNsFd(_) => 4,
            CapFlags(_) | NodeGuid(_) | SysImageGuid(_) | SubnetPrefix(_) => 8,
            Lmc(_) | PortState(_) | PortPhysState(_) | DevNodeType(_) | NetnsMode(_) => 1,
            // NUL-terminated, as the kernel's NLA_NUL_STRING policy and iproute2's
            // mnl_attr_put_strz have it.
            DevName(s) | FwVersion(s) | NdevName(s) | LinkType(s) | DevProtocol(s) => s.len() + 1,
            Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        use RdmaAttribute::*;
        match self {
            DevIndex(_) => DEV_INDEX,
            DevName(_) => DEV_NAME,
            PortIndex(_) => PORT_INDEX,
            CapFlags(_) => CAP_FLAGS,
            FwVersion(_) => FW_VERSION,
            NodeGuid(_) => NODE_GUID,
            SysImageGuid(_) => SYS_IMAGE_GUID,
            SubnetPrefix(_) => SUBNET_PREFIX,
            Lid(_) => LID,
            SmLid(_) => SM_LID,
            Lmc(_) => LMC,
            PortState(_) => PORT_STATE,
            PortPhysState(_) => PORT_PHYS_STATE,
            DevNodeType(_) => DEV_NODE_TYPE,
            NdevIndex(_) => NDEV_INDEX,
            NdevName(_) => NDEV_NAME,
            LinkType(_) => LINK_TYPE,
            NetnsMode(_) => SYS_NETNS_MODE,
            DevProtocol(_) => DEV_PROTOCOL,
            NetNsFd(_) => NET_NS_FD,
            Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        use RdmaAttribute::*;
        match self {
            DevIndex(v) | PortIndex(v) | Lid(v) | SmLid(v) | NdevIndex(v) | NetNsFd(v) => {
                // The buffer is exactly value_len() long; emit_u32 only fails on a shorter one.
                let _ = emit_u32(buffer, *v);
            }
            CapFlags(v) | NodeGuid(v) | SysImageGuid(v) | SubnetPrefix(v) => {
                let _ = emit_u64(buffer, *v);
            }
            Lmc(v) | PortState(v) | PortPhysState(v) | DevNodeType(v) | NetnsMode(v) => {
                if let Some(b) = buffer.first_mut() {
                    *b = *v;
                }
            }
            DevName(s) | FwVersion(s) | NdevName(s) | LinkType(s) | DevProtocol(s) => {
                let n = s.len().min(buffer.len());
                buffer[..n].copy_from_slice(&s.as_bytes()[..n]);
                if let Some(nul) = buffer.get_mut(n) {
                    *nul = 0;
                }
            }
            Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for RdmaAttribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        use RdmaAttribute::*;
        let v = buf.value();
        let string = |v| parse_string(v);
        Ok(match buf.kind() {
            DEV_INDEX => DevIndex(parse_u32(v)?),
            DEV_NAME => DevName(string(v)?),
            PORT_INDEX => PortIndex(parse_u32(v)?),
            CAP_FLAGS => CapFlags(parse_u64(v)?),
            FW_VERSION => FwVersion(string(v)?),
            NODE_GUID => NodeGuid(parse_u64(v)?),
            SYS_IMAGE_GUID => SysImageGuid(parse_u64(v)?),
            SUBNET_PREFIX => SubnetPrefix(parse_u64(v)?),
            LID => Lid(parse_u32(v)?),
            SM_LID => SmLid(parse_u32(v)?),
            LMC => Lmc(parse_u8(v)?),
            PORT_STATE => PortState(parse_u8(v)?),
            PORT_PHYS_STATE => PortPhysState(parse_u8(v)?),
            DEV_NODE_TYPE => DevNodeType(parse_u8(v)?),
            NDEV_INDEX => NdevIndex(parse_u32(v)?),
            NDEV_NAME => NdevName(string(v)?),
            LINK_TYPE => LinkType(string(v)?),
            SYS_NETNS_MODE => NetnsMode(parse_u8(v)?),
            DEV_PROTOCOL => DevProtocol(string(v)?),
            NET_NS_FD => NetNsFd(parse_u32(v)?),
            // PAD (type 0, RDMA_NLDEV_ATTR_PAD) aligns the u64 attributes on some architectures; kept as Other.
            _ => Other(DefaultNla::parse(buf)?),
        })
    }
}
