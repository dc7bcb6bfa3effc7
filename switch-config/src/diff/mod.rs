//! Only what must change on a switch: its rendered configuration against the one it runs.
//!
//! - SONiC: a JSON Patch (RFC 6902) over config_db, for `config apply-patch` (SONiC's generic
//!   config updater validates it against the same YANG models before applying);
//! - NVUE: `nv set` / `nv unset` lines against `nv config show -o json`.
//!
//! The scope is what the renderer owns: the objects it names, the entries of the ports in the
//! intent, and PORT's admin status, description, MTU and speed. Everything else the switch
//! runs (other VLANs, BGP, other ports) is left alone.

pub mod nvue;
pub mod sonic;
