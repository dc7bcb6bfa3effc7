//! Topology discovery for RoCE spine/leaf fabrics.
//!
//! Input is neighbour tables in the stable schema of `spinel_wire::neighbor` (what a host's
//! LLDP listener reports, or a switch's lldpd output read by [`sources`]). [`fabric`] infers the
//! one model of the fabric from them and derives every output (labels, Volcano HyperNodes,
//! Kueue Topology, Slurm topology.conf, pictures).

pub mod fabric;
pub mod sources;
