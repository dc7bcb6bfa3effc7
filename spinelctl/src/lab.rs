//! `spinelctl lab`: a virtual RoCE fabric of network namespaces where every Spinel component
//! does its job end to end (the `spinel-lab` crate does the work).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use spinel_lab::layout::{LabSize, Plan};
use spinel_lab::scenario::{self, Report};
use spinel_lab::state::{DEFAULT_DIR, StateDir};
use spinel_lab::supervisor::{Binaries, Phase, Status, Step, read_status};
use spinel_lab::{control, namespaces::Fabric, observe, picture};

/// How long `up` waits for the lab to be ready.
const UP_TIMEOUT: Duration = Duration::from_secs(300);

/// `spinelctl lab`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Build the fabric and start every component; returns when all run.
    Up(UpArgs),
    /// The fabric as a text tree (and an SVG picture), each node's labels and health, the
    /// miswiring report, the processes.
    Status(StatusArgs),
    /// The main job: discovery, a gang scheduled, attached, traffic, a reused address, a pulled
    /// cable, teardown. Starts a lab first unless one runs, and stops it after unless --keep.
    Run(RunArgs),
    /// Stop every process and remove every namespace and file of the lab, also after a crash.
    Down(DirArgs),
    /// (internal) The supervisor `up` starts in its own session.
    #[command(hide = true)]
    Supervise(SuperviseArgs),
}

/// The lab's directory.
#[derive(clap::Args)]
pub struct DirArgs {
    /// State directory (everything the lab makes is recorded here).
    #[arg(long, default_value = DEFAULT_DIR)]
    state_dir: PathBuf,
}

/// The lab's size.
#[derive(clap::Args)]
pub struct SizeArgs {
    /// Spine switches.
    #[arg(long, default_value_t = LabSize::default().spines)]
    spines: u32,
    /// Rail groups (one leaf per rail in each).
    #[arg(long, default_value_t = LabSize::default().rail_groups)]
    rail_groups: u32,
    /// RoCE NICs per node, one per rail.
    #[arg(long, default_value_t = LabSize::default().rails)]
    rails: u32,
    /// GPU nodes, spread over the rail groups.
    #[arg(long, default_value_t = LabSize::default().nodes)]
    nodes: u32,
    /// VFs per NIC.
    #[arg(long, default_value_t = LabSize::default().vfs_per_rail)]
    vfs_per_rail: u32,
    /// GPUs per node.
    #[arg(long, default_value_t = LabSize::default().gpus_per_node)]
    gpus_per_node: u32,
}

impl SizeArgs {
    fn size(&self) -> LabSize {
        LabSize {
            spines: self.spines,
            rail_groups: self.rail_groups,
            rails: self.rails,
            nodes: self.nodes,
            vfs_per_rail: self.vfs_per_rail,
            gpus_per_node: self.gpus_per_node,
        }
    }
}

/// `lab up`.
#[derive(clap::Args)]
pub struct UpArgs {
    #[command(flatten)]
    dir: DirArgs,
    #[command(flatten)]
    size: SizeArgs,
}

/// `lab status`.
#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// Print JSON instead of the tree.
    #[arg(long)]
    json: bool,
    /// Write the picture here (default: fabric.svg in the state directory).
    #[arg(long)]
    svg: Option<PathBuf>,
}

/// `lab run`.
#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    dir: DirArgs,
    #[command(flatten)]
    size: SizeArgs,
    /// Leave the lab running afterwards (`spinelctl lab status`, `spinelctl lab down`).
    #[arg(long)]
    keep: bool,
    /// Print one JSON document at the end instead of the narrative.
    #[arg(long)]
    json: bool,
}

/// `lab supervise`.
#[derive(clap::Args)]
pub struct SuperviseArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// The size, as JSON.
    #[arg(long)]
    size: String,
}

/// Runs a `lab` command.
pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match cmd {
        Command::Up(args) => {
            let state = StateDir::new(&args.dir.state_dir)?;
            let status = control::up(&state, &args.size.size(), UP_TIMEOUT, print_progress)?;
            println!(
                "lab ready in {:.1} s: API server {}, kubeconfig {}",
                total_ms(&status) as f64 / 1000.0,
                status.server.as_deref().unwrap_or("?"),
                status
                    .admin_kubeconfig
                    .as_ref()
                    .map_or("?".into(), |p| p.display().to_string())
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Status(args) => rt.block_on(status(args)),
        Command::Run(args) => run_main_job(&rt, args),
        Command::Down(args) => {
            let state = StateDir::new(&args.state_dir)?;
            match control::down(&state)? {
                Some(s) => println!(
                    "lab down: {} process(es) killed, {} namespace(s) and {} entr(ies) removed",
                    s.processes, s.namespaces, s.files
                ),
                None => println!("no lab in {}", state.root().display()),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Supervise(args) => {
            let state = StateDir::new(&args.dir.state_dir)?;
            let size: LabSize = serde_json::from_str(&args.size).context("--size")?;
            let plan = Plan::new(size)?;
            let bins = Binaries::locate()?;
            let lock = state
                .try_lock()?
                .context("another lab holds this state directory")?;
            rt.block_on(spinel_lab::supervisor::supervise(state, lock, plan, bins))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_progress(step: &Step) {
    eprintln!("  {:>6.1} s  {}", step.ms as f64 / 1000.0, step.name);
}

fn total_ms(status: &Status) -> u64 {
    status.steps.iter().map(|s| s.ms).sum()
}

fn run_main_job(rt: &tokio::runtime::Runtime, args: RunArgs) -> anyhow::Result<ExitCode> {
    let state = StateDir::new(&args.dir.state_dir)?;
    let bins = Binaries::locate()?;
    let running = read_status(&state)
        .ok()
        .flatten()
        .is_some_and(|s| s.phase == Phase::Ready);
    let mut started = None;
    if !running {
        eprintln!("Starting the lab (spinelctl lab up):");
        started = Some(control::up(
            &state,
            &args.size.size(),
            UP_TIMEOUT,
            print_progress,
        )?);
    }
    let outcome = rt.block_on(scenario::run(&state, &bins, Report::new(args.json)));
    if !running && !args.keep {
        eprintln!("\nStopping the lab (spinelctl lab down)");
        control::down(&state)?;
    }
    let mut report = outcome?;
    if let Some(status) = started {
        report.figure("labUpMs", total_ms(&status));
        report.json("labSteps", &status.steps)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.document())?);
    } else {
        println!("\nThe main job held at every step.");
    }
    Ok(ExitCode::SUCCESS)
}

async fn status(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let state = StateDir::new(&args.dir.state_dir)?;
    let Some(status) = read_status(&state)? else {
        println!("no lab in {}", state.root().display());
        return Ok(ExitCode::FAILURE);
    };
    let record = state.record()?.context("the lab has no record")?;
    let plan = record.plan;
    let mut fabric = Fabric::open(&plan, &state.netns())?;
    let kubeconfig = status
        .admin_kubeconfig
        .clone()
        .context("the API server is not up yet")?;
    let admin = spinel_lab::cluster::client_from_kubeconfig(&kubeconfig).await?;
    let live = observe::live(&admin, &mut fabric, &plan).await?;
    let summary = observe::fabric_summary(&admin).await?;
    let svg_path = args.svg.unwrap_or_else(|| state.svg_file());
    std::fs::write(&svg_path, picture::svg(&plan, &live))
        .with_context(|| format!("write {}", svg_path.display()))?;
    if args.json {
        let doc = serde_json::json!({
            "status": status, "nodes": live.nodes, "downPorts": live.down_ports,
            "fabric": summary, "svg": svg_path,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "lab {:?}, supervisor pid {}, API server {}",
        status.phase,
        status.pid,
        status.server.as_deref().unwrap_or("-")
    );
    print!("{}", picture::tree(&plan, &live));
    match &summary {
        Some(s) => {
            println!(
                "fabric: {} hosts, {} switches, {} tiers, {} error(s), {} warning(s)",
                s.hosts, s.switches, s.tiers, s.errors, s.warnings
            );
            for f in &s.findings {
                println!("  {}", serde_json::to_string(f)?);
            }
        }
        None => println!("fabric: the controller has published no summary yet"),
    }
    for p in &status.processes {
        println!(
            "  {:<28} pid {:<8} restarts {}",
            p.name,
            p.pid.map_or("-".into(), |p| p.to_string()),
            p.restarts
        );
    }
    println!("picture: {}", svg_path.display());
    Ok(ExitCode::SUCCESS)
}
