//! `spinel-agent`: the node agent's binary. Wiring only: flags, logging, configuration, then
//! the library's [`spinel_agent::run`].

use std::process::ExitCode;

use clap::Parser;
use spinel_agent::config::{AgentConfig, Flags};

fn main() -> ExitCode {
    let flags = Flags::parse();
    spinel_kube::logging::init(&flags.log);
    let config = match AgentConfig::load(&flags) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("invalid configuration: {e:#}");
            return ExitCode::from(2);
        }
    };
    match spinel_agent::run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{:#}", anyhow::Error::new(e));
            ExitCode::FAILURE
        }
    }
}
