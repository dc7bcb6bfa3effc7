//! Topology discovery for RoCE spine/leaf fabrics.
//!
//! [`neighbor`] holds the stable, versioned neighbour-table schema: what a host's LLDP listener
//! reports and what the fabric inference reads, whatever the source (our own listener or a
//! switch's lldpd).

pub mod lldp;
pub mod neighbor;
