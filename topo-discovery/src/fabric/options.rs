//! Inference settings: how NICs map to rails.

/// How NICs are assigned to rails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RailKey {
    /// Rail = NIC name: `ens1f0np0` is the same rail on every host. Right when hosts share a
    /// hardware layout (the usual case), and robust to a host missing a NIC.
    #[default]
    NicName,
    /// Rail = position of the NIC in the host's NIC list (natural name order): for fleets whose
    /// NIC names differ between hosts.
    NicOrder,
}

/// Inference settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InferOptions {
    /// How NICs map to rails.
    pub rail_key: RailKey,
}
