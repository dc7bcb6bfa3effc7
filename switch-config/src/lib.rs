//! `spinel-switch-config`: one fabric intent, rendered for every switch OS and host, and a
//! checker that proves switches, hosts and what the switches advertise agree with it.
//!
//! - [`intent`]: the YAML intent, bounded parsing, semantic validation;
//! - [`plan`] and [`qos`]: the intent resolved per switch and host, the lossless chain;
//! - [`render`]: SONiC config_db.json, Cumulus NVUE (commands and YAML), Arista EOS, host
//!   profiles (JSON and commands);
//! - [`observe`] and [`state`]: collected running configurations read into one OS-neutral
//!   shape, and the shape the intent requires;
//! - [`diff`]: only what must change on a switch (a JSON Patch for SONiC, `nv set`/`nv unset`);
//! - [`host`]: host profiles and the host state read from the kernel;
//! - [`check`]: intent vs switches vs advertised DCBX vs hosts, each disagreement once;
//! - [`intent::software`]: switch OS releases and what each accepts;
//! - [`inferred`]: an intent from an inferred fabric, and cabling as designed.

pub mod check;
pub mod diff;
pub mod host;
pub mod inferred;
pub mod intent;
pub mod observe;
pub mod plan;
pub mod qos;
pub mod render;
pub mod state;
pub mod synthetic;
