//! The simulator: a cluster, a seeded job trace ([`trace`]) and several placement policies
//! ([`policy`]) run side by side ([`run`]), with per-job placement quality, queueing delay,
//! utilisation and fragmentation, a chart ([`chart`]) and, for small cases, the exact optimum
//! ([`optimal`]).

pub mod chart;
pub mod optimal;
pub mod policy;
pub mod run;
pub mod trace;
pub mod uniform;

use std::fmt::Write as _;

use serde::Serialize;

use crate::cluster::{Cluster, NodeId};
use crate::plan::{PlanOptions, plan};
use crate::request::GangRequest;
use crate::sim::policy::Policy;
use crate::sim::run::{PolicyRun, run};
use crate::sim::trace::Job;
use crate::spread::measure;
use crate::tier::Tier;

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

/// One decision of Spinel's audited against the best placement on the same cluster state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The gang.
    pub gang: String,
    /// Pods in it.
    pub pods: u32,
    /// Spinel's (largest, total) group spread.
    pub spinel: (u32, u32),
    /// The optimum's (largest, total) when `exact`, else a proven floor under it.
    pub bound: (u32, u32),
    /// Whether `bound` is the optimum itself (exhaustive search, or an exact floor).
    pub exact: bool,
    /// Per level (`dp`, `pp`, ...): Spinel's summed group spread and the bound's, when the
    /// bound gives one per level (an exhaustive search does).
    pub levels: Vec<(String, u32, Option<u32>)>,
    /// The searched optimum puts some group in a wider tier than Spinel granted its level:
    /// Spinel keeps a soft level in the tightest tier with room, which the bare spread
    /// objective does not ask for.
    pub optimum_widens: bool,
}

impl Decision {
    /// Spinel's total spread above the bound, in percent of the bound (0 when both are 0;
    /// `None` when the bound is 0 and Spinel's is not).
    pub fn gap_percent(&self) -> Option<f64> {
        match (self.spinel.1, self.bound.1) {
            (s, b) if s <= b => Some(0.0),
            (_, 0) => None,
            (s, b) => Some((f64::from(s) / f64::from(b) - 1.0) * 100.0),
        }
    }
}

/// Spinel against the exact optimum on the same cluster state, decision by decision.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OptimumCheck {
    /// Decisions whose optimum is known exactly.
    pub decisions: u32,
    /// Decisions with only a proven floor (too large to search, floor not exact).
    pub skipped: u32,
    /// Sum of Spinel's total group spread over the exact decisions.
    pub spinel_total: u64,
    /// Sum of the optimum's total group spread over the exact decisions.
    pub optimal_total: u64,
    /// Decisions where Spinel crossed a spine and the optimum did not.
    pub avoidable_spine_crossings: u32,
    /// Exact decisions where Spinel's total exceeds the optimum's by more than 5 %.
    pub over_five_percent: u32,
    /// Every decision.
    pub log: Vec<Decision>,
}

impl OptimumCheck {
    /// Decisions by gap to the bound: `(label, exact decisions, floor-only decisions)`, the
    /// floor-only ones counted by their gap to the floor (at least the true gap).
    pub fn distribution(&self) -> Vec<(&'static str, u32, u32)> {
        const BUCKETS: [(&str, f64); 5] = [
            ("0 (at the bound)", 0.0),
            ("(0, 5 %]", 5.0),
            ("(5, 10 %]", 10.0),
            ("(10, 25 %]", 25.0),
            ("> 25 %", f64::INFINITY),
        ];
        let mut out: Vec<(&str, u32, u32)> = BUCKETS.iter().map(|(l, _)| (*l, 0, 0)).collect();
        out.push(("bound 0, spinel above it", 0, 0));
        for d in &self.log {
            let i = match d.gap_percent() {
                Some(g) => BUCKETS
                    .iter()
                    .position(|(_, top)| if *top == 0.0 { g == 0.0 } else { g <= *top })
                    .unwrap_or(BUCKETS.len() - 1),
                None => BUCKETS.len(),
            };
            if d.exact {
                out[i].1 += 1;
            } else {
                out[i].2 += 1;
            }
        }
        out
    }

    /// The distribution as a Markdown table, with per-level totals.
    pub fn report(&self) -> String {
        let mut s = String::from(
            "| total spread above the bound | decisions (exact optimum) | decisions (proven floor) |\n|---|---:|---:|\n",
        );
        for (label, exact, floor) in self.distribution() {
            let _ = writeln!(s, "| {label} | {exact} | {floor} |");
        }
        let mut levels: std::collections::BTreeMap<&str, (u64, u64, u32)> =
            std::collections::BTreeMap::new();
        for d in self.log.iter().filter(|d| d.exact) {
            for (name, ours, best) in &d.levels {
                if let Some(b) = best {
                    let e = levels.entry(name).or_default();
                    e.0 += u64::from(*ours);
                    e.1 += u64::from(*b);
                    e.2 += 1;
                }
            }
        }
        s.push_str(
            "\n| level | decisions with a per-level optimum | spinel's summed spread | the optimum's |\n|---|---:|---:|---:|\n",
        );
        for (name, (ours, best, n)) in levels {
            let _ = writeln!(s, "| {name} | {n} | {ours} | {best} |");
        }
        s
    }
}

/// Spinel's planner, auditing each decision against the optimum: the exhaustive search where
/// it finishes (stopping at a proven floor it reaches), else the floor of [`crate::floor`].
#[derive(Debug, Default)]
pub struct Audited {
    /// Planner settings.
    pub options: PlanOptions,
    /// Exhaustive search limits.
    pub limits: Option<optimal::Limits>,
    /// The audit so far.
    pub check: OptimumCheck,
}

/// Whether some block of `nodes` spans more than one domain of the tier `tiers` grants its
/// level.
fn spans_wider(cluster: &Cluster, request: &GangRequest, tiers: &[Tier], nodes: &[NodeId]) -> bool {
    request.levels.iter().zip(tiers).any(|(l, t)| {
        let t = cluster.effective_tier(*t);
        t >= 1
            && t <= cluster.depth()
            && nodes.chunks(l.pods.max(1) as usize).any(|b| {
                b.iter()
                    .any(|n| cluster.ancestor(*n, t) != cluster.ancestor(b[0], t))
            })
    })
}

fn level_spreads(cluster: &Cluster, request: &GangRequest, nodes: &[NodeId]) -> Vec<(String, u32)> {
    let s = measure(cluster, request, nodes);
    request
        .levels
        .iter()
        .map(|l| {
            let sum = s
                .groups
                .iter()
                .filter(|g| g.level == l.name)
                .map(|g| g.spread)
                .sum();
            (l.name.clone(), sum)
        })
        .collect()
}

impl Policy for Audited {
    fn name(&self) -> &'static str {
        "spinel"
    }

    fn place(&mut self, cluster: &Cluster, request: &GangRequest) -> Option<Vec<NodeId>> {
        let p = plan(cluster, request, &self.options).ok()?;
        let ours = (p.spread.max, p.spread.total);
        let lower = crate::floor::floor(cluster, request);
        let at_floor = lower.is_some_and(|f| ours <= (f.max, f.total));
        let limits = self.limits.unwrap_or_default();
        let target = lower.map(|f| (f.max, f.total));
        // Spinel at the floor needs no search: nothing is below a floor.
        let searched = if at_floor {
            None
        } else {
            optimal::solve_down_to(cluster, request, limits, target)
        };
        let ours_by_level = level_spreads(cluster, request, &p.nodes);
        let (bound, exact, levels) = match (&searched, lower) {
            (Some(opt), _) => {
                let best = level_spreads(cluster, request, &opt.nodes);
                let levels = ours_by_level
                    .into_iter()
                    .zip(best)
                    .map(|((n, a), (_, b))| (n, a, Some(b)))
                    .collect();
                ((opt.max, opt.total), true, levels)
            }
            (None, Some(f)) => {
                // An exact floor is the optimum level by level too: the groups that are the
                // whole gang have its spread, every other group is inside a leaf.
                let levels = ours_by_level
                    .into_iter()
                    .zip(&request.levels)
                    .map(|((n, a), l)| {
                        let best =
                            f.exact
                                .then_some(if l.pods == request.size { f.max } else { 0 });
                        (n, a, best)
                    })
                    .collect();
                ((f.max, f.total), f.exact || at_floor, levels)
            }
            (None, None) => (ours, false, Vec::new()),
        };
        let optimum_widens = searched
            .as_ref()
            .is_some_and(|o| spans_wider(cluster, request, &p.tiers, &o.nodes));
        let c = &mut self.check;
        if exact {
            c.decisions += 1;
            c.spinel_total += u64::from(ours.1);
            c.optimal_total += u64::from(bound.1);
            if f64::from(ours.1) > f64::from(bound.1) * 1.05 {
                c.over_five_percent += 1;
            }
            if let Some(opt) = &searched {
                let opt_cross = measure(cluster, request, &opt.nodes).cross_spine_groups;
                if p.spread.cross_spine_groups > 0 && opt_cross == 0 {
                    c.avoidable_spine_crossings += 1;
                }
            }
        } else {
            c.skipped += 1;
        }
        c.log.push(Decision {
            gang: request.gang.to_string(),
            pods: request.size,
            spinel: ours,
            bound,
            exact,
            levels,
            optimum_widens,
        });
        Some(p.nodes)
    }
}
