//! The fabric model kept current as tables come and go, for a controller that runs
//! continuously: hosts' reports and switches' captures in and out by name, the [`Fabric`]
//! always equal to what [`super::infer`] gives on the same tables (a property test drives
//! random sequences of changes and compares, output by output).
//!
//! A host's report replaced costs in proportion to that host and its leaf group: its NICs and
//! links are inferred on their own, then its leaf group's membership, the rails and free
//! ports of its leaves and the report about its group are brought up to date. When a change
//! reaches further (a switch's table, a host that joins or leaves, a rail that appears, two
//! leaf groups that join, a leaf that loses its last host), the whole model is inferred again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::compact::CompactTable;
use super::infer::live::{FastState, HostInput, Touched};
use super::infer::run_traced;
use super::ingest::FabricBuilder;
use super::model::Fabric;
use super::options::{FabricNics, InferOptions, RailKey};
use crate::sources::Capture;

/// One node's report as the model holds it: its table (when usable) and its fabric NICs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostReport {
    /// The neighbour table; `None` when the report could not be used (the node is still named
    /// as a host).
    pub table: Option<Arc<CompactTable>>,
    /// The NICs that are the node's fabric NICs (what its agent found with an RDMA device).
    pub nics: Vec<String>,
}

/// A change of the inputs.
#[derive(Debug, Clone)]
pub enum Change {
    /// A node's report, new or replaced; `None`: the node is gone.
    Host(String, Option<HostReport>),
    /// The captures of one switch-table entry (a ConfigMap key, a file); `None`: gone.
    Switches(String, Option<Arc<Vec<Capture>>>),
}

/// What a change may have changed in the model's outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta {
    /// Anything: the model was inferred again.
    Everything,
    /// Only these hosts' labels or findings, and these leaf groups' members (domain ids);
    /// the report as a whole is in [`Fabric::findings`].
    Hosts {
        /// Hosts by name.
        hosts: BTreeSet<String>,
        /// Leaf groups by id.
        groups: BTreeSet<String>,
    },
}

/// How changes were taken in so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveStats {
    /// Changes handled by the host-local path.
    pub fast: u64,
    /// Changes that inferred the whole model again.
    pub full: u64,
}

/// The fabric model, kept current. See the module documentation.
pub struct LiveFabric {
    rail_key: RailKey,
    hosts: BTreeMap<String, HostReport>,
    switches: BTreeMap<String, Arc<Vec<Capture>>>,
    fabric: Fabric,
    refused: BTreeMap<String, String>,
    fast: Option<FastState>,
    stats: LiveStats,
}

impl LiveFabric {
    /// An empty model; NICs map to rails by `rail_key`.
    pub fn new(rail_key: RailKey) -> Self {
        let mut live = Self {
            rail_key,
            hosts: BTreeMap::new(),
            switches: BTreeMap::new(),
            fabric: FabricBuilder::new().infer(&InferOptions::default()),
            refused: BTreeMap::new(),
            fast: None,
            stats: LiveStats::default(),
        };
        live.full();
        live.stats = LiveStats::default();
        live
    }

    /// The model.
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// Switch-table entries left out because their box cannot be decided, with why.
    pub fn refused(&self) -> &BTreeMap<String, String> {
        &self.refused
    }

    /// How changes were taken in so far.
    pub fn stats(&self) -> LiveStats {
        self.stats
    }

    /// Inference settings: the nodes with a report are the hosts, their NICs the fabric NICs.
    pub fn options(&self) -> InferOptions {
        InferOptions {
            rail_key: self.rail_key,
            fabric_nics: FabricNics::PerHost(
                self.hosts
                    .iter()
                    .map(|(n, r)| (n.clone(), r.nics.clone()))
                    .collect(),
            ),
            hosts: self.hosts.keys().cloned().collect(),
        }
    }

    /// A builder holding every table, with captures of neighbours only matched to their
    /// boxes; entries whose box cannot be decided are left out, with why. What the full
    /// inference reads: the reference the model is compared with.
    pub fn builder(&self) -> (FabricBuilder, BTreeMap<String, String>) {
        let mut refused: BTreeMap<String, String> = BTreeMap::new();
        loop {
            let mut builder = FabricBuilder::new();
            for (name, captures) in &self.switches {
                if !refused.contains_key(name) {
                    for c in captures.iter() {
                        c.add_to(&mut builder);
                    }
                }
            }
            for (name, report) in &self.hosts {
                if let Some(table) = &report.table {
                    table.add_to(name, &mut builder);
                }
            }
            match builder.resolve_stand_ins() {
                Ok(_) => return (builder, refused),
                Err(e) => {
                    let before = refused.len();
                    for u in e.undecided {
                        refused.insert(u.source, u.why);
                    }
                    if refused.len() == before {
                        return (builder, refused);
                    }
                }
            }
        }
    }

    /// Takes in `changes` (in order) and brings the model up to date.
    pub fn apply(&mut self, changes: Vec<Change>) -> Delta {
        let mut replaced: Vec<(String, HostReport)> = Vec::new();
        let mut fast = self.fast.is_some() && self.rail_key == RailKey::NicName;
        for change in changes {
            match change {
                Change::Host(name, report) => {
                    let old = match report {
                        Some(r) => self.hosts.insert(name.clone(), r),
                        None => self.hosts.remove(&name),
                    };
                    let usable = |r: &HostReport| r.table.is_some();
                    match (old, self.hosts.get(&name)) {
                        (Some(o), Some(n)) if usable(&o) && usable(n) => {
                            if o != *n {
                                replaced.push((name, o));
                            }
                        }
                        _ => fast = false,
                    }
                }
                Change::Switches(key, captures) => {
                    // A switch's table bears on its ports, links and name: the whole model.
                    match captures {
                        Some(c) => self.switches.insert(key, c),
                        None => self.switches.remove(&key),
                    };
                    fast = false;
                }
            }
        }
        if fast && let Some(delta) = self.fast_path(&replaced) {
            self.stats.fast += 1;
            return delta;
        }
        self.full();
        self.stats.full += 1;
        Delta::Everything
    }

    /// Host reports replaced, each host's old report in `replaced`: the host-local path, or
    /// `None` when a change reaches further.
    fn fast_path(&mut self, replaced: &[(String, HostReport)]) -> Option<Delta> {
        let state = self.fast.as_mut()?;
        let mut touched = Touched::default();
        for (name, old) in replaced {
            let new = self.hosts.get(name)?;
            let (Some(ot), Some(nt)) = (&old.table, &new.table) else {
                return None;
            };
            let old_in = HostInput {
                table: ot,
                nics: &old.nics,
            };
            let new_in = HostInput {
                table: nt,
                nics: &new.nics,
            };
            state.replace_host(&mut self.fabric, name, &old_in, &new_in, &mut touched)?;
        }
        state.finish(&mut self.fabric, &mut touched);
        if self.fabric.placed_hosts() == 0 {
            return None;
        }
        let hosts = touched
            .hosts
            .iter()
            .map(|&h| self.fabric.hosts[h as usize].name.clone())
            .collect();
        let groups = touched
            .groups
            .iter()
            .map(|&g| self.fabric.domains[g as usize].id.clone())
            .collect();
        Some(Delta::Hosts { hosts, groups })
    }

    /// Infers the whole model again, and keeps what the host-local path needs.
    fn full(&mut self) {
        let options = self.options();
        let (builder, refused) = self.builder();
        let mut trace = Default::default();
        self.fabric = run_traced(builder.into_raw(), &options, Some(&mut trace));
        self.refused = refused;
        self.fast = FastState::new(&self.fabric, trace, &options.fabric_nics);
    }
}
