//! The lab's main job, on a running lab: the fabric is discovered and published, a gang job is
//! placed by kube-scheduler with Spinel's extender, every pod is attached on every rail by the
//! real CNI, traffic crosses the fabric on the rail it should, a restarted pod's reused address
//! is announced, a pulled cable shields its node from the next gang until it is put back, and
//! everything is given back. Each claim is checked against what the system shows; a step that
//! does not hold ends the run with an error.

pub mod attach;
pub mod job;
mod proofs;
mod report;

use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::cluster::client_from_kubeconfig;
use crate::layout::Plan;
use crate::namespaces::Fabric;
use crate::state::StateDir;
use crate::supervisor::{Binaries, Phase, read_status};

pub use report::Report;

use attach::{Attachment, Cni};
use job::{Job, Placed};

/// How long the controller may take to publish labels for every node.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(150);
/// How long kube-scheduler may take to place a gang.
const PLACE_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a node's health may take to follow its cable.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(120);

/// The first job: one pipeline stage per rail group, leaving one node free in each.
pub fn pretrain(plan: &Plan) -> Job {
    // Nodes per rail group, in the smallest group.
    let per_group = (0..plan.size.rail_groups)
        .map(|g| plan.nodes.iter().filter(|n| n.group == g).count() as u32)
        .min()
        .unwrap_or(1);
    let gpus = plan.size.gpus_per_node;
    let stages = plan.size.rail_groups.max(1);
    let pods_per_stage = per_group.saturating_sub(1).max(1);
    Job {
        name: "pretrain".into(),
        pods: pods_per_stage * stages,
        gpus_per_pod: gpus,
        tp: gpus,
        dp: pods_per_stage,
        pp: stages,
    }
}

/// The second job: two single-node stages, which fit exactly on the two nodes the first left.
pub fn finetune(plan: &Plan) -> Job {
    let gpus = plan.size.gpus_per_node;
    Job {
        name: "finetune".into(),
        pods: 2,
        gpus_per_pod: gpus,
        tp: gpus,
        dp: 1,
        pp: 2,
    }
}

/// Everything the run holds while it goes.
struct Run {
    state: StateDir,
    plan: Plan,
    admin: kube::Client,
    fabric: Fabric,
    cni: Cni,
    report: Report,
    attachments: Vec<Attachment>,
}

/// Runs the main job on the lab in `state`.
pub async fn run(state: &StateDir, bins: &Binaries, report: Report) -> anyhow::Result<Report> {
    let status = read_status(state)?.context("no lab runs here: `spinelctl lab up` first")?;
    if status.phase != Phase::Ready {
        bail!("the lab is {:?}, not ready", status.phase);
    }
    let record = state.record()?.context("the lab has no record")?;
    let kubeconfig = status
        .admin_kubeconfig
        .context("the lab's status names no kubeconfig")?;
    let mut run = Run {
        admin: client_from_kubeconfig(&kubeconfig).await?,
        fabric: Fabric::open(&record.plan, &state.netns())?,
        cni: Cni::new(state, &bins.cni)?,
        plan: record.plan,
        state: state.clone(),
        report,
        attachments: Vec::new(),
    };
    let outcome = run.steps().await;
    // Whatever happened, give back what the run took.
    let cleanup = run.teardown().await;
    outcome.and(cleanup)?;
    Ok(run.report)
}

impl Run {
    async fn steps(&mut self) -> anyhow::Result<()> {
        self.published().await?;
        let a = pretrain(&self.plan);
        let placed = self.place(&a).await?;
        self.attach_all(&placed).await?;
        self.traffic(&a, &placed).await?;
        self.announce_reused_address().await?;
        self.shield(&placed).await
    }

    /// 1. LLDP converged and the controller published labels, HyperNodes and a Kueue Topology.
    async fn published(&mut self) -> anyhow::Result<()> {
        self.report
            .section("1. Discovery: LLDP on every cable, one fabric model, published");
        let started = Instant::now();
        let views = crate::observe::wait_labelled(&self.admin, &self.plan, PUBLISH_TIMEOUT).await?;
        self.report
            .figure("labelsPublishedMs", started.elapsed().as_millis() as u64);
        for (node, view) in &views {
            let labels: Vec<String> = view
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            self.report.say(&format!("  {node}: {}", labels.join(" ")));
        }
        let (hypernodes, topology) = proofs::published_objects(&self.admin).await?;
        self.report
            .say(&format!("  Volcano HyperNodes: {}", hypernodes.join(", ")));
        self.report.say(&format!(
            "  Kueue Topology levels: {}",
            topology.join(" > ")
        ));
        self.report.json("labels", &views)?;
        self.report.json("hyperNodes", &hypernodes)?;
        self.report.json("kueueLevels", &topology)
    }

    /// 2. The gang is placed, each DP group (pipeline stage) under one leaf group.
    async fn place(&mut self, job: &Job) -> anyhow::Result<Vec<Placed>> {
        self.report.section(&format!(
            "2. Scheduling: gang {} of {} pods x {} GPUs (tp={}, dp={}, pp={})",
            job.name, job.pods, job.gpus_per_pod, job.tp, job.dp, job.pp
        ));
        job::ensure_namespace(&self.admin).await?;
        let started = Instant::now();
        job::submit(&self.admin, job).await?;
        let placed = job::wait_placed(&self.admin, job, PLACE_TIMEOUT).await?;
        self.report
            .figure("gangPlacedMs", started.elapsed().as_millis() as u64);
        for p in &placed {
            let group = self.plan.node(&p.node).map_or(0, |n| n.group + 1);
            self.report.say(&format!(
                "  rank {:>2}  {:<12} on {}  rail group {group}  stage {}",
                p.rank,
                p.pod,
                p.node,
                p.rank / job.pods_per_stage()
            ));
        }
        let plan = &self.plan;
        let split = job::stages_split(job, &placed, |n| plan.node(n).map(|n| n.group));
        if !split.is_empty() {
            bail!("stages not under one rail group: {split:?}");
        }
        self.report
            .say("  every DP group (pipeline stage) is under one leaf group");
        self.report.json("placement", &placed)?;
        Ok(placed)
    }

    /// 3. Each pod gets a VF on every rail from the real CNI.
    async fn attach_all(&mut self, placed: &[Placed]) -> anyhow::Result<()> {
        self.report
            .section("3. Attachment: the spinel CNI gives each pod a VF on every rail");
        let started = Instant::now();
        for p in placed {
            let node = self
                .plan
                .node(&p.node)
                .context("placed on an unknown node")?
                .clone();
            for nic in &node.nics {
                let id = format!("{}-{}", p.pod, "c1");
                let att = self.cni.add(&p.pod, &id, &node, nic.rail, None).await?;
                self.report.say(&format!(
                    "  {:<12} {} = {} ({}, VF {} of {})",
                    att.pod, att.ifname, att.ip, att.mac, att.vf_pci, nic.ifname
                ));
                self.attachments.push(att);
            }
        }
        let ms = started.elapsed().as_millis() as u64;
        self.report.figure("attachAllMs", ms);
        self.report.say(&format!(
            "  {} attachments in {ms} ms",
            self.attachments.len()
        ));
        self.report.json("attachments", &self.attachments)
    }

    /// 4. Traffic between stages crosses the spine on its own rail only.
    async fn traffic(&mut self, job: &Job, placed: &[Placed]) -> anyhow::Result<()> {
        self.report
            .section("4. Traffic: stage to stage across the spine, on the rail it was sent on");
        let first = &placed[0];
        let other = placed
            .iter()
            .find(|p| p.rank / job.pods_per_stage() != 0)
            .context("the job has a single stage")?;
        let line = proofs::cross_leaf_ping(
            &mut self.fabric,
            &self.plan,
            &self.state,
            &self.attachments,
            first,
            other,
        )
        .await?;
        self.report.say(&line);
        Ok(())
    }

    /// 5. A pod restarted with its old address on a new VF: the leaf learns the new MAC.
    async fn announce_reused_address(&mut self) -> anyhow::Result<()> {
        self.report
            .section("5. Announcement: a restarted pod reuses its address; the leaf follows");
        let line = proofs::reused_address(
            &mut self.fabric,
            &self.plan,
            &mut self.cni,
            &mut self.attachments,
        )
        .await?;
        self.report.say(&line);
        Ok(())
    }

    /// 6. A pulled cable shields its node; the next gang waits, then fits once it heals.
    async fn shield(&mut self, placed: &[Placed]) -> anyhow::Result<()> {
        self.report
            .section("6. Shielding: a pulled cable takes a node out of the next gang's choice");
        let b = finetune(&self.plan);
        let lines = proofs::pulled_cable(
            &self.admin,
            &mut self.fabric,
            &self.plan,
            placed,
            &b,
            HEALTH_TIMEOUT,
            PLACE_TIMEOUT,
        )
        .await?;
        for l in lines {
            self.report.say(&l);
        }
        job::delete(&self.admin, &b).await
    }

    /// 7. Every attachment deleted, every VF home, the pods gone.
    async fn teardown(&mut self) -> anyhow::Result<()> {
        self.report
            .section("7. Teardown: CNI DEL for every attachment, every VF back on its node");
        let mut errors = Vec::new();
        for att in std::mem::take(&mut self.attachments) {
            if let Err(e) = self.cni.del(&self.plan, &att).await {
                errors.push(format!("{e:#}"));
            }
        }
        for pod in proofs::pods_with_netns(&self.state) {
            if let Err(e) = self.cni.remove_pod_netns(&pod) {
                errors.push(format!("{e:#}"));
            }
        }
        for job in [pretrain(&self.plan), finetune(&self.plan)] {
            if let Err(e) = job::delete(&self.admin, &job).await {
                errors.push(format!("{e:#}"));
            }
        }
        let home = proofs::vfs_home(&mut self.fabric, &self.plan)?;
        self.report
            .say(&format!("  {home} VFs back on their nodes, none missing"));
        if !errors.is_empty() {
            bail!("teardown: {}", errors.join("; "));
        }
        Ok(())
    }
}
