//! RDMA: the netlink device interface ("nldev", what iproute2's `rdma` tool speaks) and the
//! RoCE v2 GID table in sysfs.
//!
//! No Rust crate covers RDMA netlink, so the codec is here, small: a message is a command and
//! a flat attribute list ([`RdmaMessage`]), carried by the crate's generic netlink
//! [`Socket`](crate::netlink::Socket). [`RdmaSocket`] gives the typed operations Spinel needs:
//! list devices and ports (with their netdevs), read and set the netns mode, move a device into
//! a pod's namespace. Requests are proven byte for byte against iproute2's (fixtures captured
//! in the kernel tier: `tests/kernel/capture-rdma-fixtures.sh`).

mod attr;
pub mod counters;
pub mod gid;
mod message;
mod socket;

pub use attr::{
    RDMA_NL_NLDEV, RDMA_NLDEV_CMD_DELLINK, RDMA_NLDEV_CMD_GET, RDMA_NLDEV_CMD_NEWLINK,
    RDMA_NLDEV_CMD_PORT_GET, RDMA_NLDEV_CMD_SET, RDMA_NLDEV_CMD_SYS_GET, RDMA_NLDEV_CMD_SYS_SET,
    RdmaAttribute, nldev_type,
};
pub use message::RdmaMessage;
pub use socket::{NetnsMode, PortState, RdmaDevice, RdmaError, RdmaPort, RdmaSocket};

#[cfg(test)]
mod tests;
