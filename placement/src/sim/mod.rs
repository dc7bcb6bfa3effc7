//! The simulator: a cluster, a seeded job trace and several placement policies run side by
//! side, with per-job placement quality, queueing delay, utilisation and fragmentation.

pub mod fabric;
