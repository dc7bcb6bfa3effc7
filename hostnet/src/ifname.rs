//! Interface names, parsed once: the type lives in `spinel-wire` (no kernel needed to check a
//! name), so cluster-side crates share it; hostnet re-exports it where it builds paths.

pub use spinel_wire::ifname::{IfName, IfNameError, is_valid_ifname};
