//! `spinelctl topo ...`

use std::process::ExitCode;

/// Topology commands.
#[derive(clap::Subcommand)]
pub enum Command {}

/// Runs a topology command.
pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {}
}
