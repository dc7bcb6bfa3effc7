//! `spinel-lab`: a virtual RoCE spine/leaf fabric of network namespaces on one machine, where
//! every Spinel component does its job end to end. `spinelctl lab` drives it.

pub mod cluster;
pub mod control;
pub mod layout;
pub mod namespaces;
pub mod nodes;
pub mod observe;
pub mod picture;
pub mod procs;
pub mod scenario;
pub mod state;
pub mod supervisor;
pub mod switches;
