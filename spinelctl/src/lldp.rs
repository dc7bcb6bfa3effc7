//! `spinelctl lldp ...`

use std::process::ExitCode;

/// LLDP commands.
#[derive(clap::Subcommand)]
pub enum Command {}

/// Runs an LLDP command.
pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {}
}
