//! Node facts and node actions shared by the CNI plugin, the fabric agent and `spinelctl`.
//!
//! - [`roce_info`]: which interfaces are RoCE (a RoCE v2 GID for their address), their RDMA device,
//!   port and GID index, and the NCCL settings that follow.
//! - [`attachment_record`]: the per-attachment records the CNI publishes on the host for
//!   workloads and for the agent.
//! - [`gratuitous`]: gratuitous ARP / unsolicited NA rounds on one interface of one namespace
//!   (frames from `spinel_wire::garp`, the socket from `hostnet::packet`).
//! - `lldp` (feature `lldp`): LLDP on a set of ports on tokio, receive and transmit.
//! - [`nics`]: which interfaces are the node's RoCE NICs, and their link facts.
//! - [`cni_settings`]: the `spinel` CNI's node settings file, for the CNI and the agent's
//!   installer alike.
//!
//! Kernel access goes through `hostnet`; this crate decides what to read and what it means.

pub mod attachment_record;
pub mod cni_settings;
pub mod gratuitous;
#[cfg(feature = "lldp")]
pub mod lldp;
pub mod nics;
pub mod roce_info;
