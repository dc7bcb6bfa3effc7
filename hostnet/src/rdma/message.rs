//! The nldev message: a command and a flat list of attributes, no family header.

use netlink_packet_core::{
    DecodeError, Emitable, NetlinkDeserializable, NetlinkHeader, NetlinkSerializable, NlaBuffer,
    NlasIterator, Parseable,
};

use super::attr::{
    RDMA_NL_NLDEV, RDMA_NLDEV_CMD_DELLINK, RDMA_NLDEV_CMD_GET, RDMA_NLDEV_CMD_NEWLINK,
    RDMA_NLDEV_CMD_PORT_GET, RDMA_NLDEV_CMD_SET, RDMA_NLDEV_CMD_SYS_GET, RDMA_NLDEV_CMD_SYS_SET,
    RdmaAttribute, nldev_type,
};

/// An RDMA netlink (`NETLINK_RDMA`, client `RDMA_NL_NLDEV`) message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaMessage {
    /// The nldev operation (`RDMA_NLDEV_CMD_*`).
    pub command: u16,
    /// The attributes, in order.
    pub attributes: Vec<RdmaAttribute>,
}

impl RdmaMessage {
    /// A message with `command` and `attributes`.
    pub fn new(command: u16, attributes: Vec<RdmaAttribute>) -> Self {
        Self {
            command,
            attributes,
        }
    }

    /// `rdma dev show` (sent with `NLM_F_DUMP`): every device visible in this namespace.
    pub fn dev_dump() -> Self {
        Self::new(RDMA_NLDEV_CMD_GET, Vec::new())
    }

    /// `rdma dev show <dev>`: one device by index.
    pub fn dev_get(dev_index: u32) -> Self {
        Self::new(RDMA_NLDEV_CMD_GET, vec![RdmaAttribute::DevIndex(dev_index)])
    }

    /// `rdma link show <dev>/<port>`: one port.
    pub fn port_get(dev_index: u32, port: u32) -> Self {
        Self::new(
            RDMA_NLDEV_CMD_PORT_GET,
            vec![
                RdmaAttribute::DevIndex(dev_index),
                RdmaAttribute::PortIndex(port),
            ],
        )
    }

    /// `rdma system show`.
    pub fn sys_get() -> Self {
        Self::new(RDMA_NLDEV_CMD_SYS_GET, Vec::new())
    }

    /// `rdma system set netns exclusive|shared` (`netns_mode` 0 or 1).
    pub fn sys_set_netns_mode(netns_mode: u8) -> Self {
        Self::new(
            RDMA_NLDEV_CMD_SYS_SET,
            vec![RdmaAttribute::NetnsMode(netns_mode)],
        )
    }

    /// `rdma dev set <dev> netns <ns>`, with `ns_fd` an open namespace descriptor.
    pub fn dev_set_netns(dev_index: u32, ns_fd: u32) -> Self {
        Self::new(
            RDMA_NLDEV_CMD_SET,
            vec![
                RdmaAttribute::DevIndex(dev_index),
                RdmaAttribute::NetNsFd(ns_fd),
            ],
        )
    }

    /// `rdma link add <name> type <link_type> netdev <netdev>`.
    pub fn link_add(name: &str, link_type: &str, netdev: &str) -> Self {
        Self::new(
            RDMA_NLDEV_CMD_NEWLINK,
            vec![
                RdmaAttribute::DevName(name.to_owned()),
                RdmaAttribute::LinkType(link_type.to_owned()),
                RdmaAttribute::NdevName(netdev.to_owned()),
            ],
        )
    }

    /// `rdma link delete <dev>`.
    pub fn link_delete(dev_index: u32) -> Self {
        Self::new(
            RDMA_NLDEV_CMD_DELLINK,
            vec![RdmaAttribute::DevIndex(dev_index)],
        )
    }
}

impl NetlinkSerializable for RdmaMessage {
    fn message_type(&self) -> u16 {
        nldev_type(self.command)
    }

    fn buffer_len(&self) -> usize {
        self.attributes.as_slice().buffer_len()
    }

    fn serialize(&self, buffer: &mut [u8]) {
        self.attributes.as_slice().emit(buffer);
    }
}

impl NetlinkDeserializable for RdmaMessage {
    type Error = DecodeError;

    fn deserialize(header: &NetlinkHeader, payload: &[u8]) -> Result<Self, Self::Error> {
        let client = header.message_type >> 10;
        if client != RDMA_NL_NLDEV {
            return Err(DecodeError::from(format!(
                "netlink message type {:#06x} is RDMA client {client}, not nldev ({RDMA_NL_NLDEV})",
                header.message_type
            )));
        }
        let command = header.message_type & 0x3ff;
        let mut attributes = Vec::new();
        for nla in NlasIterator::new(payload) {
            let nla: NlaBuffer<&[u8]> = nla?;
            attributes.push(RdmaAttribute::parse(&nla)?);
        }
        Ok(Self {
            command,
            attributes,
        })
    }
}
