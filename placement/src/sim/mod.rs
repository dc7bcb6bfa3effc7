//! The simulator: a cluster, a seeded job trace ([`trace`]) and several placement policies
//! ([`policy`]) run side by side ([`run`]), with per-job placement quality, queueing delay,
//! utilisation and fragmentation, a chart ([`chart`]) and, for small cases, the exact optimum
//! ([`optimal`]).

pub mod chart;
pub mod fabric;
pub mod optimal;
pub mod policy;
pub mod run;
pub mod trace;

use std::fmt::Write as _;

use serde::Serialize;

use crate::cluster::{Cluster, NodeId};
use crate::plan::{PlanOptions, plan};
use crate::request::GangRequest;
use crate::sim::policy::Policy;
use crate::sim::run::{PolicyRun, run};
use crate::sim::trace::Job;
use crate::spread::measure;

/// Runs every policy on the same trace.
pub fn compare(
    cluster: &Cluster,
    jobs: &[Job],
    policies: &mut [Box<dyn Policy>],
) -> Vec<PolicyRun> {
    policies
        .iter_mut()
        .map(|p| run(cluster, jobs, p.as_mut()))
        .collect()
}

/// The summary table, one row per policy.
pub fn table(runs: &[PolicyRun]) -> String {
    let mut s = String::from(
        "| policy | jobs run | mean wait (s) | p95 wait (s) | GPU util | fragmentation | mean max spread | total spread | cross-spine groups | jobs crossing spines |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in runs {
        let m = &r.summary;
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {:.0} | {:.1} % | {:.1} % | {:.2} | {} | {} | {} |",
            m.policy,
            m.started,
            m.mean_wait_s,
            m.p95_wait_s,
            m.utilisation * 100.0,
            m.fragmentation * 100.0,
            m.mean_max_spread,
            m.total_spread,
            m.cross_spine_groups,
            m.cross_spine_jobs
        );
    }
    s
}

/// Spinel against the exact optimum on the same cluster state, decision by decision.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OptimumCheck {
    /// Decisions where the optimum could be computed.
    pub decisions: u32,
    /// Decisions too large to search.
    pub skipped: u32,
    /// Sum of Spinel's total group spread.
    pub spinel_total: u64,
    /// Sum of the optimum's total group spread.
    pub optimal_total: u64,
    /// Decisions where Spinel crossed a spine and the optimum did not.
    pub avoidable_spine_crossings: u32,
    /// Decisions where Spinel's total exceeds the optimum's by more than 5 %.
    pub over_five_percent: u32,
}

/// Spinel's planner, auditing each decision against the optimum.
#[derive(Debug, Default)]
pub struct Audited {
    /// Planner settings.
    pub options: PlanOptions,
    /// The audit so far.
    pub check: OptimumCheck,
}

impl Policy for Audited {
    fn name(&self) -> &'static str {
        "spinel"
    }

    fn place(&mut self, cluster: &Cluster, request: &GangRequest) -> Option<Vec<NodeId>> {
        let p = plan(cluster, request, &self.options).ok()?;
        match optimal::solve(cluster, request, optimal::Limits::default()) {
            Some(opt) => {
                let c = &mut self.check;
                c.decisions += 1;
                c.spinel_total += u64::from(p.spread.total);
                c.optimal_total += u64::from(opt.total);
                let opt_cross = measure(cluster, request, &opt.nodes).cross_spine_groups;
                if p.spread.cross_spine_groups > 0 && opt_cross == 0 {
                    c.avoidable_spine_crossings += 1;
                }
                if f64::from(p.spread.total) > f64::from(opt.total) * 1.05 {
                    c.over_five_percent += 1;
                }
            }
            None => self.check.skipped += 1,
        }
        Some(p.nodes)
    }
}
