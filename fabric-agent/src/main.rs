//! `spinel-agent`: the node agent's binary. Wiring only: flags, logging, configuration, then
//! the library's [`spinel_agent::run`]; `spinel-agent install-cni ...` runs the DaemonSet's
//! init container, [`spinel_agent::cni_install`].

use std::process::ExitCode;

use clap::Parser;
use spinel_agent::config::{AgentConfig, Flags};

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "install-cni")
    {
        return install_cni();
    }
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

fn install_cni() -> ExitCode {
    use spinel_agent::cni_install::{InstallFlags, run};
    let flags = InstallFlags::parse_from(std::env::args_os().skip(1));
    spinel_kube::logging::init(&flags.log);
    match run(&flags) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("install-cni failed: {:#}", anyhow::Error::new(e));
            ExitCode::FAILURE
        }
    }
}
