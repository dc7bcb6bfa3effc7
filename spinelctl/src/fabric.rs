//! `spinelctl fabric ...`: the fabric intent (validate, render, diff), the checker (switches,
//! hosts, what switches advertise), a host's QoS state, and the intent from / against the
//! inferred fabric.
//!
//! This is the I/O edge: files are read here (bounded, named in errors) and handed to the pure
//! logic in `spinel_switch_config`; only `host-state` talks to the kernel, through hostnet.

mod commands;
mod inputs;
mod outdir;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use spinel_switch_config::intent::SwitchOs;
use spinel_switch_config::intent::software::EosPlatform;

/// Exit status when a check or validation found errors (unreadable input exits with 1), as
/// `spinelctl topo infer` does for miswiring.
pub const EXIT_FINDINGS: u8 = 2;

/// Fabric intent and checker commands.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Check an intent file: YAML, limits, and everything YAML cannot say (overlapping subnets,
    /// a rail without a leaf, PFC beyond the buffer profile, MTU below the RoCE payload, ...).
    #[command(after_help = "Exit status: 0 valid (warnings allowed), 2 errors, 1 unreadable.")]
    Validate(ValidateArgs),
    /// Render every switch's configuration (SONiC config_db.json, NVUE commands and YAML, EOS)
    /// and every host's profile (JSON and commands) into a directory.
    Render(RenderArgs),
    /// Print only what must change on one switch: a JSON Patch for SONiC (`config apply-patch`),
    /// `nv set`/`nv unset` lines for NVUE.
    Diff(DiffArgs),
    /// Check collected evidence against the intent: switches' running configurations, hosts'
    /// QoS state, and the LLDP tables hosts heard (their leaves' DCBX). Each disagreement is
    /// reported once, with switch, port, host, NIC and the fix.
    #[command(after_help = "\
Inputs (files or directories; any may be left out):
  --switch-config  running configurations, named after the switch: leaf01.config_db.json
                   (SONiC: show runningconfiguration all), leaf02.json (NVUE: nv config show -o
                   json), leaf03.cfg (EOS: show running-config); NAME=FILE names one explicitly
  --host-state     what `spinelctl fabric host-state` printed on each host
  --lldp           what `spinelctl lldp listen --json` printed on each host (or lldpd captures)

Exit status: 0 no errors (warnings allowed; with --strict none either), 2 errors, 1 unreadable \
input.")]
    Check(CheckArgs),
    /// Read this host's RoCE QoS from the kernel (MTU, PFC, DSCP trust, DCBX, RoCE ToS, ECN) and
    /// print it as JSON for `fabric check --host-state`.
    HostState(HostStateArgs),
    /// Generate an intent from neighbour tables (the inferred fabric), for a cluster that has
    /// none yet.
    Intent(IntentArgs),
    /// Check the inferred fabric's cabling against an intent.
    #[command(
        after_help = "Exit status: 0 cabled as designed (warnings allowed), 2 errors, 1 unreadable."
    )]
    Cabling(CablingArgs),
}

/// `fabric validate`.
#[derive(clap::Args)]
pub struct ValidateArgs {
    /// The intent file.
    intent: PathBuf,
    /// Print the issues as JSON.
    #[arg(long)]
    json: bool,
}

/// `fabric render`.
#[derive(clap::Args)]
pub struct RenderArgs {
    /// The intent file.
    intent: PathBuf,
    /// Output directory: created, or replaced whole when a previous render wrote it (it holds
    /// a .spinel-render marker); a non-empty directory without the marker is refused.
    #[arg(long)]
    out: PathBuf,
    /// Running SONiC configurations (NAME.config_db.json) to take PORT lanes and other
    /// platform fields from, so fragments validate on their own and merge without loss.
    #[arg(long, value_name = "DIR|FILE")]
    running: Vec<String>,
    /// Only these switches (repeatable); hosts are rendered only when no --switch is given.
    #[arg(long = "switch", value_name = "NAME")]
    switches: Vec<String>,
}

/// `fabric diff`.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The intent file.
    intent: PathBuf,
    /// The switch.
    #[arg(long = "switch", value_name = "NAME")]
    switch: String,
    /// Its running configuration (SONiC config_db.json, NVUE `nv config show -o json`).
    #[arg(long)]
    running: PathBuf,
    /// Exit with 3 when something must change (like `git diff --exit-code`).
    #[arg(long)]
    exit_code: bool,
}

/// `fabric check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The intent file.
    intent: PathBuf,
    /// Running switch configurations.
    #[arg(long = "switch-config", value_name = "PATH")]
    switch_configs: Vec<String>,
    /// Host states (`spinelctl fabric host-state` output).
    #[arg(long = "host-state", value_name = "PATH")]
    host_states: Vec<String>,
    /// LLDP neighbour tables heard by hosts.
    #[arg(long = "lldp", value_name = "PATH")]
    lldp: Vec<String>,
    /// Print the findings as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Fail on warnings too (a value that cannot be read is not proof).
    #[arg(long)]
    strict: bool,
}

/// `fabric host-state`.
#[derive(clap::Args)]
pub struct HostStateArgs {
    /// RoCE interface(s); repeat or separate with commas.
    #[arg(long = "iface", required = true, value_delimiter = ',')]
    ifaces: Vec<String>,
    /// Network namespace: a path, or a bare name meaning /run/netns/NAME (default: ours).
    #[arg(long)]
    netns: Option<String>,
    /// Host name written in the state (default: the hostname).
    #[arg(long)]
    node_name: Option<String>,
    /// sysfs root to read RDMA devices and ECN files from (default: the namespace's own).
    #[arg(long)]
    sysfs: Option<PathBuf>,
    /// configfs root for rdma_cm's default ToS.
    #[arg(long, default_value = "/sys/kernel/config")]
    configfs: PathBuf,
}

/// `fabric intent`.
#[derive(clap::Args)]
pub struct IntentArgs {
    /// Neighbour-table files or directories (as for `spinelctl topo infer`).
    #[arg(required = true, value_name = "FILE")]
    tables: Vec<String>,
    /// Fabric name.
    #[arg(long, default_value = "fabric")]
    fabric: String,
    /// OS of the leaves.
    #[arg(long, value_enum, default_value_t = OsArg::Sonic)]
    leaf_os: OsArg,
    /// OS of spines and super-spines.
    #[arg(long, value_enum, default_value_t = OsArg::Sonic)]
    spine_os: OsArg,
    /// Release of the leaves' OS (Cumulus `5.15`, EOS `4.33`; default: the newest known).
    #[arg(long)]
    leaf_version: Option<String>,
    /// Release of the spines' OS.
    #[arg(long)]
    spine_version: Option<String>,
    /// EOS platform family of the leaves (default: strata).
    #[arg(long, value_enum)]
    leaf_platform: Option<PlatformArg>,
    /// EOS platform family of the spines (default: strata).
    #[arg(long, value_enum)]
    spine_platform: Option<PlatformArg>,
    /// Pool the rail networks are carved from.
    #[arg(long, default_value = "10.0.0.0/8")]
    subnet_pool: ipnet::Ipv4Net,
    /// Prefix length of each rail network.
    #[arg(long, default_value_t = 24)]
    subnet_prefix: u8,
    /// Pool the switch links' /31s come from.
    #[arg(long, default_value = "10.255.0.0/16")]
    link_pool: ipnet::Ipv4Net,
    /// VLAN of rail 0 (rail k gets this + k).
    #[arg(long, default_value_t = 100)]
    vlan_base: u16,
    /// Port speed, Gb/s.
    #[arg(long)]
    speed_gbps: Option<u32>,
    /// ASIC buffer, bytes (SONiC needs it).
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    buffer_bytes: u64,
}

/// `fabric cabling`.
#[derive(clap::Args)]
pub struct CablingArgs {
    /// The intent file.
    intent: PathBuf,
    /// Neighbour-table files or directories.
    #[arg(required = true, value_name = "FILE")]
    tables: Vec<String>,
    /// Print the findings as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// A switch OS on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum OsArg {
    /// SONiC.
    Sonic,
    /// Cumulus Linux (NVUE).
    Cumulus,
    /// Arista EOS.
    Eos,
}

impl From<OsArg> for SwitchOs {
    fn from(o: OsArg) -> Self {
        match o {
            OsArg::Sonic => Self::Sonic,
            OsArg::Cumulus => Self::Cumulus,
            OsArg::Eos => Self::Eos,
        }
    }
}

/// An EOS platform family on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum PlatformArg {
    /// Trident/Tomahawk (7050X, 7060X, 7260X, 7300X, 7388X): `uc-tx-queue`.
    Strata,
    /// Arad/Jericho (7280R, 7500R, 7800R): `tx-queue`.
    Sand,
}

impl From<PlatformArg> for EosPlatform {
    fn from(p: PlatformArg) -> Self {
        match p {
            PlatformArg::Strata => Self::Strata,
            PlatformArg::Sand => Self::Sand,
        }
    }
}

/// Runs a fabric command.
pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Validate(a) => commands::validate(&a),
        Command::Render(a) => commands::render(&a),
        Command::Diff(a) => commands::diff(&a),
        Command::Check(a) => commands::check(&a),
        Command::HostState(a) => commands::host_state(&a),
        Command::Intent(a) => commands::intent(&a),
        Command::Cabling(a) => commands::cabling(&a),
    }
}
