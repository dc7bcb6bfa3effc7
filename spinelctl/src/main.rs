//! `spinelctl`: Spinel's operator CLI.
//!
//! Each command group lives in its own module with its own argument types.

mod fabric;
mod lab;
mod lldp;
mod nccl;
mod output;
mod sched;
mod topo;

use clap::{Parser, Subcommand};

/// Spinel's operator CLI.
#[derive(Parser)]
#[command(name = "spinelctl", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// LLDP: listen for neighbours, emulate a switch.
    #[command(subcommand)]
    Lldp(lldp::Command),
    /// Fabric intent: validate, render switch and host configuration, diff, and check switches,
    /// hosts and advertised DCBX against it.
    #[command(subcommand)]
    Fabric(fabric::Command),
    /// Fabric topology: infer tiers, rails and miswiring from neighbour tables.
    #[command(subcommand)]
    Topo(topo::Command),
    /// Gang scheduling: the placement simulator, a placed gang's hostfile.
    #[command(subcommand)]
    Sched(sched::Command),
    /// The lab: a virtual RoCE fabric where every Spinel component does its job end to end.
    #[command(subcommand)]
    Lab(lab::Command),
    /// NCCL settings (NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_SOCKET_IFNAME) for this pod's RoCE
    /// interfaces, from what the kernel shows here.
    NcclEnv(nccl::Args),
}

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // `topo infer` reserves 2 for "miswired", so its usage errors exit with EX_USAGE;
            // the other commands keep clap's status.
            let topo = std::env::args_os().nth(1).is_some_and(|a| a == "topo");
            if topo && e.use_stderr() {
                let _ = e.print();
                return std::process::ExitCode::from(topo::EXIT_USAGE);
            }
            e.exit()
        }
    };
    let result = match cli.command {
        Command::Fabric(cmd) => fabric::run(cmd),
        Command::Lldp(cmd) => lldp::run(cmd),
        Command::Topo(cmd) => topo::run(cmd),
        Command::Sched(cmd) => sched::run(cmd),
        Command::NcclEnv(args) => nccl::run(args),
        Command::Lab(cmd) => lab::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("spinelctl: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
