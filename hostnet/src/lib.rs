//! `hostnet` is the only Spinel crate that talks to the kernel.
//!
//! Everything above it (the CNI plugin, the agent, topology discovery) works on the small,
//! honest types defined here: a namespace handle ([`netns::NetNs`]), a route netlink socket bound
//! to one namespace ([`netlink::RouteSocket`]), namespaced sysctls ([`sysctl`]), the SR-IOV
//! model read from sysfs ([`sriov`]), raw AF_PACKET sockets ([`packet`]), RDMA: the nldev
//! netlink socket and the RoCE GID table ([`rdma`]), and DCB netlink: PFC, ETS, the APP table
//! and the RoCE ToS/ECN files ([`dcb`]); and [`fs::exchange`], an atomic swap of two paths.

#[cfg(feature = "tokio")]
pub mod async_packet;
pub mod dcb;
pub mod ethtool;
pub mod fs;
pub mod ifname;
pub mod netlink;
pub mod netns;
pub mod packet;
pub mod rdma;
#[cfg(feature = "rtnl")]
pub mod rtnl;
pub mod sriov;
pub mod sysctl;
