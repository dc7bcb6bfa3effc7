//! `hostnet` is the only Spinel crate that talks to the kernel.
//!
//! Everything above it (the CNI plugin, the agent, topology discovery) works on the small,
//! honest types defined here: a namespace handle ([`netns::NetNs`]), a route netlink socket bound
//! to one namespace ([`netlink::RouteSocket`]), namespaced sysctls ([`sysctl`]) and the SR-IOV
//! model read from sysfs ([`sriov`]).

pub mod netns;
pub mod packet;
