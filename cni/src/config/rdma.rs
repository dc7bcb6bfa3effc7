//! What a network needs of the RDMA subsystem and of the RoCE GID lookup.

use serde::Deserialize;

/// What the network needs of the RDMA subsystem.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Rdma {
    /// The RDMA namespace mode the network requires: `any` (default), `exclusive` (the pod
    /// gets its own RDMA device, moved into its namespace) or `shared`.
    pub netns_mode: NetnsRequirement,
    /// Whether ADD must find the interface's RoCE v2 GID (`required`, the default when the
    /// VF has an RDMA device), only report it when found (`optional`), or skip it (`off`).
    pub gid: GidPolicy,
    /// How long ADD waits for the kernel to add the GID after the address.
    pub gid_timeout_ms: u64,
}

impl Default for Rdma {
    fn default() -> Self {
        Self {
            netns_mode: NetnsRequirement::Any,
            gid: GidPolicy::Required,
            gid_timeout_ms: 3000,
        }
    }
}

/// `rdma.netnsMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetnsRequirement {
    /// Whatever the node runs.
    Any,
    /// Each pod owns its RDMA device.
    Exclusive,
    /// RDMA devices stay in the host namespace, visible to every pod.
    Shared,
}

/// `rdma.gid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GidPolicy {
    /// ADD fails (code 11) when the GID does not appear in time.
    Required,
    /// The GID is reported when found.
    Optional,
    /// No GID lookup.
    Off,
}
