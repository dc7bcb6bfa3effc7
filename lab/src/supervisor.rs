//! The lab's supervisor: one process (a session leader, so everything it starts can be found
//! again after a crash) that builds the fabric, starts the control plane and every Spinel
//! component, keeps them running, reports progress in `status.json`, and on SIGTERM stops them
//! and deletes the fabric's namespaces. It holds the lab's lock for its whole life.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use tokio::signal::unix::{SignalKind, signal};

use crate::cluster::{ControlPlane, NAMESPACE, scheduler_config};
use crate::layout::Plan;
use crate::namespaces::Fabric;
use crate::nodes::{self, NodeDirs};
use crate::procs::{ProcessState, Processes, Spec};
use crate::state::{LabLock, LabRecord, StateDir};
use crate::switches;

/// How long discovery may take before the lab gives up.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a component gets to stop after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Where the lab is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Building.
    Starting,
    /// Everything runs.
    Ready,
    /// Building failed; `error` says why. The supervisor has stopped what it started.
    Failed,
    /// Stopping after SIGTERM.
    Stopping,
}

/// One step of `up`, with how long it took.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// What was done.
    pub name: String,
    /// Milliseconds it took.
    pub ms: u64,
}

/// `status.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Phase.
    pub phase: Phase,
    /// The supervisor's PID.
    pub pid: u32,
    /// When it started (Unix milliseconds).
    pub started_unix_ms: u64,
    /// Steps done so far.
    pub steps: Vec<Step>,
    /// The API server, once it runs.
    pub server: Option<String>,
    /// The admin kubeconfig, once the API server runs.
    pub admin_kubeconfig: Option<PathBuf>,
    /// spinel-scheduler's extender address.
    pub extender: Option<String>,
    /// Every supervised process.
    pub processes: Vec<ProcessState>,
    /// Why the lab failed.
    pub error: Option<String>,
}

/// The executables the lab runs: all from one build, next to `spinelctl` (or in
/// `$SPINEL_BIN_DIR`).
#[derive(Clone, Debug)]
pub struct Binaries {
    /// `spinelctl` (LLDP on the switches).
    pub spinelctl: PathBuf,
    /// `spinel-agent`.
    pub agent: PathBuf,
    /// `spinel-fabric-controller`.
    pub controller: PathBuf,
    /// `spinel-scheduler`.
    pub scheduler: PathBuf,
    /// The `spinel` CNI plugin.
    pub cni: PathBuf,
}

impl Binaries {
    /// Finds every binary, or says which is missing and how to build it.
    pub fn locate() -> anyhow::Result<Self> {
        let spinelctl = std::env::current_exe().context("where is spinelctl")?;
        let dir = match std::env::var_os("SPINEL_BIN_DIR") {
            Some(d) => PathBuf::from(d),
            None => spinelctl
                .parent()
                .context("spinelctl has no directory")?
                .to_owned(),
        };
        let find = |name: &str| -> anyhow::Result<PathBuf> {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                bail!(
                    "{} is missing: build every binary together (cargo build --release \
                     --workspace --bins) or point SPINEL_BIN_DIR at them",
                    path.display()
                )
            }
        };
        Ok(Self {
            agent: find("spinel-agent")?,
            controller: find("spinel-fabric-controller")?,
            scheduler: find("spinel-scheduler")?,
            cni: find("spinel")?,
            spinelctl,
        })
    }
}

/// The supervisor's state while it builds and runs.
struct Supervisor {
    state: StateDir,
    plan: Plan,
    bins: Binaries,
    procs: Processes,
    status: Status,
    clock: Instant,
}

/// Runs the lab until SIGTERM or SIGINT. The caller holds `lock`; the lab's record is written
/// before anything is made, so a crash at any point leaves something `down` can sweep.
pub async fn supervise(
    state: StateDir,
    lock: LabLock,
    plan: Plan,
    bins: Binaries,
) -> anyhow::Result<()> {
    let session = nix::unistd::getsid(None).context("getsid")?.as_raw();
    if session != std::process::id() as i32 {
        bail!("the lab supervisor must lead its own session (start it with `spinelctl lab up`)");
    }
    if state.record()?.is_some() {
        state.sweep(&lock)?;
    }
    state.write_record(
        &lock,
        &LabRecord {
            kind: "spinel-lab".into(),
            session,
            plan: plan.clone(),
        },
    )?;
    let mut sup = Supervisor {
        procs: Processes::new(&state.logs())?,
        status: Status {
            phase: Phase::Starting,
            pid: std::process::id(),
            started_unix_ms: unix_ms(),
            steps: Vec::new(),
            server: None,
            admin_kubeconfig: None,
            extender: None,
            processes: Vec::new(),
            error: None,
        },
        state,
        plan,
        bins,
        clock: Instant::now(),
    };
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    sup.publish()?;
    let built = tokio::select! {
        r = sup.build() => r,
        _ = term.recv() => Err(anyhow::anyhow!("stopped while starting")),
        _ = int.recv() => Err(anyhow::anyhow!("interrupted while starting")),
    };
    let outcome = match built {
        Ok(_control_plane) => {
            sup.status.phase = Phase::Ready;
            sup.publish()?;
            let watched = sup.watch(&mut term, &mut int).await;
            sup.status.phase = Phase::Stopping;
            sup.publish()?;
            watched
        }
        Err(e) => {
            sup.status.phase = Phase::Failed;
            sup.status.error = Some(format!("{e:#}"));
            sup.publish()?;
            Err(e)
        }
    };
    sup.procs.stop_all(STOP_GRACE).await;
    crate::namespaces::sweep_namespaces(&sup.state.netns())?;
    sup.status.processes = sup.procs.states();
    sup.publish()?;
    drop(lock);
    outcome
}

impl Supervisor {
    fn publish(&mut self) -> anyhow::Result<()> {
        self.status.processes = self.procs.states();
        self.state.write_status(&self.status)
    }

    fn step(&mut self, name: &str) -> anyhow::Result<()> {
        let ms = self.clock.elapsed().as_millis() as u64;
        self.clock = Instant::now();
        self.status.steps.push(Step {
            name: name.to_owned(),
            ms,
        });
        self.publish()
    }

    /// Builds everything; returns the control plane, which lives as long as the lab.
    async fn build(&mut self) -> anyhow::Result<ControlPlane> {
        let plan = self.plan.clone();
        let mut fabric = Fabric::create(&plan, &self.state.netns())?;
        fabric.wire(&plan)?;
        for node in &plan.nodes {
            let dirs = NodeDirs::new(&self.state.nodes(), &node.name);
            nodes::build(&mut fabric, node, &dirs.sysfs())?;
            nodes::write_cni_settings(&dirs)?;
        }
        drop(fabric);
        self.step("fabric: namespaces, cables, simulated SR-IOV nodes")?;

        for switch in &plan.switches {
            let netns = self.state.netns().join(&switch.name);
            let spec = switches::sender(&plan, switch, &netns, &self.bins.spinelctl);
            self.procs.start(spec)?;
        }
        let tables = self.state.switches();
        std::fs::create_dir_all(&tables)?;
        let captures = self.capture_tables();
        self.step("switches advertise LLDP with DCBX")?;

        let extender = free_local_port()?;
        let url = format!("http://{extender}/");
        let sched_yaml = scheduler_config(&url, &self.state.admin_kubeconfig())?;
        let cp = ControlPlane::start(&mut self.procs, &self.state, &sched_yaml).await?;
        self.status.server = Some(cp.server.clone());
        self.status.admin_kubeconfig = Some(cp.admin_kubeconfig.clone());
        self.status.extender = Some(url);
        self.step("Kubernetes: etcd, kube-apiserver, kube-scheduler")?;

        let applied = cp.apply_manifests().await?;
        for node in &plan.nodes {
            cp.register_node(&node.name, plan.size.gpus_per_node)
                .await?;
        }
        self.step(&format!(
            "{applied} shipped objects applied, {} nodes registered",
            plan.nodes.len()
        ))?;

        self.start_scheduler(&cp, extender).await?;
        self.start_components(&cp).await?;
        self.step("spinel-scheduler, spinel-fabric-controller, one spinel-agent per node")?;

        captures
            .await
            .context("switch table captures")?
            .context("switch tables")?;
        self.step("switch LLDP tables captured for the controller")?;
        crate::observe::wait_labelled(&cp.admin, &self.plan, DISCOVERY_TIMEOUT).await?;
        self.step("fabric discovered: every node carries its topology labels")?;
        Ok(cp)
    }

    /// Starts one capture per switch in the background; resolves when all are written.
    fn capture_tables(&self) -> tokio::task::JoinHandle<anyhow::Result<()>> {
        let plan = self.plan.clone();
        let netns = self.state.netns();
        let spinelctl = self.bins.spinelctl.clone();
        let dir = self.state.switches();
        tokio::spawn(async move {
            let mut set = tokio::task::JoinSet::new();
            for switch in plan.switches.clone() {
                let (plan, netns, spinelctl, dir) = (
                    plan.clone(),
                    netns.join(&switch.name),
                    spinelctl.clone(),
                    dir.clone(),
                );
                set.spawn(async move {
                    switches::capture_table(&plan, &switch, &netns, &spinelctl, &dir).await
                });
            }
            while let Some(done) = set.join_next().await {
                done??;
            }
            Ok(())
        })
    }

    /// Starts spinel-scheduler, the extender kube-scheduler calls.
    async fn start_scheduler(
        &mut self,
        cp: &ControlPlane,
        extender: SocketAddr,
    ) -> anyhow::Result<()> {
        let kubeconfig = cp
            .component_kubeconfig(&self.state, "spinel-scheduler")
            .await?;
        let mut spec = Spec::new(
            "spinel-scheduler",
            &self.bins.scheduler,
            ["--listen".to_owned(), extender.to_string()],
        );
        spec.env
            .push(("KUBECONFIG".into(), kubeconfig.display().to_string()));
        self.procs.start(spec)?;
        Ok(())
    }

    async fn start_components(&mut self, cp: &ControlPlane) -> anyhow::Result<()> {
        let state = self.state.clone();
        let controller_kc = cp
            .component_kubeconfig(&state, "spinel-fabric-controller")
            .await?;
        let mut spec = Spec::new(
            "spinel-fabric-controller",
            &self.bins.controller,
            [
                "--kubeconfig".into(),
                controller_kc.into_os_string(),
                "--namespace".into(),
                NAMESPACE.into(),
                "--switch-tables".into(),
                state.switches().into_os_string(),
                "--switch-tables-poll".into(),
                "2".into(),
                // Any free port: the lab's processes share the host's loopback.
                "--metrics-address".into(),
                "127.0.0.1:0".into(),
                "--log-format".into(),
                "text".into(),
            ],
        );
        spec.env
            .push(("POD_NAME".into(), "spinel-fabric-controller-lab".into()));
        self.procs.start(spec)?;

        for node in self.plan.nodes.clone() {
            let kc = cp.agent_kubeconfig(&state, &node.name).await?;
            let dirs = NodeDirs::new(&state.nodes(), &node.name);
            std::fs::write(dirs.agent_config(), agent_config(&dirs))?;
            let spec = Spec::new(
                &format!("agent-{}", node.name),
                &self.bins.agent,
                [
                    "--config".into(),
                    dirs.agent_config().into_os_string(),
                    "--node-name".into(),
                    node.name.clone().into(),
                    "--kubeconfig".into(),
                    kc.into_os_string(),
                    "--netns".into(),
                    state.netns().join(&node.name).into_os_string(),
                    "--sysfs-root".into(),
                    dirs.sysfs().into_os_string(),
                    "--log-format".into(),
                    "text".into(),
                ],
            );
            self.procs.start(spec)?;
        }
        Ok(())
    }

    /// Keeps the processes running until a signal; a piped process (the control plane) that
    /// exits ends the lab.
    async fn watch(
        &mut self,
        term: &mut tokio::signal::unix::Signal,
        int: &mut tokio::signal::unix::Signal,
    ) -> anyhow::Result<()> {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                _ = term.recv() => return Ok(()),
                _ = int.recv() => return Ok(()),
                _ = tick.tick() => {
                    if let Err(e) = self.procs.poll() {
                        self.status.error = Some(format!("{e:#}"));
                        return Err(e);
                    }
                    let now = self.procs.states();
                    if !same_processes(&now, &self.status.processes) {
                        self.publish()?;
                    }
                }
            }
        }
    }
}

/// An agent's configuration in the lab: advertise the node over LLDP often (switch tables name
/// hosts as Kubernetes does, changes show within seconds), announce for the pods the node's CNI
/// attached, and shield the node with the degraded taint after 3 s of trouble, releasing it
/// after 5 s clean (production defaults are 10 s and 60 s; the lab is impatient).
fn agent_config(dirs: &NodeDirs) -> String {
    format!(
        "# spinel-agent in the Spinel lab\n\
         lldp:\n  transmit: true\n  txIntervalSeconds: {}\n\
         garp:\n  recordsDir: {}\n\
         health:\n  taint: true\n  unhealthyAfterSeconds: 3\n  healthyAfterSeconds: 5\n\
         \x20 periodSeconds: 1\n\
         metrics:\n  address: \"off\"\n",
        switches::TX_INTERVAL_SECONDS,
        dirs.roce_info().display()
    )
}

fn same_processes(a: &[ProcessState], b: &[ProcessState]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.pid == y.pid && x.restarts == y.restarts && x.last_exit == y.last_exit)
}

/// A free TCP port on 127.0.0.1 for the extender.
fn free_local_port() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("find a free port")?;
    Ok(listener.local_addr()?)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Reads `status.json`, if the lab has one.
pub fn read_status(state: &StateDir) -> anyhow::Result<Option<Status>> {
    match std::fs::read(state.status_file()) {
        Ok(bytes) => Ok(Some(serde_json::from_slice(&bytes).with_context(|| {
            format!("{} is damaged", state.status_file().display())
        })?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("read {}", state.status_file().display())),
    }
}
