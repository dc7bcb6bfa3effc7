//! `spinel-switch-config`: one fabric intent, rendered for every switch OS and host, and a
//! checker that proves switches, hosts and what the switches advertise agree with it.
//!
//! - [`intent`]: the YAML intent, bounded parsing, semantic validation;
//! - [`plan`] and [`qos`]: the intent resolved per switch and host, the lossless chain;

pub mod host;
pub mod intent;
pub mod plan;
pub mod qos;
pub mod render;
