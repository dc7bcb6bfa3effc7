//! Topology discovery for RoCE spine/leaf fabrics.
//!
//! [`neighbor`] holds the stable, versioned neighbour-table schema: what a host's LLDP listener
//! reports and what the fabric inference reads, whatever the source (our own listener or a
//! switch's lldpd). [`lldp`] is the LLDP codec behind our own listener. [`sources`] turns input
//! documents (our tables, lldpd's JSON) into tables; [`fabric`] infers the fabric from them and
//! derives every output.

pub mod fabric;
pub mod lldp;
pub mod neighbor;
pub mod sources;
