//! Everything inference reads, kept current by the watches: each node's report and the
//! operator's switch tables, and what changed since the model last took them in (so the
//! model takes in only the changed reports).

pub mod node;
pub mod switches;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use spinel_api::crd::MAX_CARRY_OVER;
use topo_discovery::fabric::RailKey;
use topo_discovery::fabric::live::{Change, HostReport};

pub use node::{HostTable, NodeReport, UnusableReport};
pub use switches::SwitchEntry;

/// The inputs of the model.
#[derive(Debug, Clone)]
pub struct Inputs {
    reports: BTreeMap<String, NodeReport>,
    /// Switch tables by source (`ConfigMap/...`, `file:...`), then by entry.
    switches: BTreeMap<String, BTreeMap<String, SwitchEntry>>,
    rail_key: RailKey,
    /// What changed since [`Self::take_changes`], in order.
    pending: Vec<Change>,
    /// Each node's agent run and when its first report arrived.
    runs: BTreeMap<String, (Option<String>, Instant)>,
    /// Reports held back: a new agent run showing fewer neighbours than the last report, until
    /// the last report's neighbours would have aged out or the run shows as many again.
    held: BTreeMap<String, (NodeReport, Instant)>,
}

/// A report as the model takes it: its table when usable, its NICs.
fn host_report(report: &NodeReport) -> HostReport {
    HostReport {
        table: report.table.as_ref().ok().map(|t| t.0.clone()),
        nics: report.nics.clone(),
    }
}

/// An entry as the model takes it: its captures, or nothing when it cannot be read.
fn switch_change(key: &str, entry: Option<&SwitchEntry>) -> Change {
    let captures = entry.and_then(|e| e.captures.as_ref().ok().cloned());
    Change::Switches(key.to_owned(), captures)
}

impl Inputs {
    /// No inputs yet; NICs map to rails by `rail_key`.
    pub fn new(rail_key: RailKey) -> Self {
        Self {
            reports: BTreeMap::new(),
            switches: BTreeMap::new(),
            rail_key,
            pending: Vec::new(),
            runs: BTreeMap::new(),
            held: BTreeMap::new(),
        }
    }

    /// How NICs map to rails.
    pub fn rail_key(&self) -> RailKey {
        self.rail_key
    }

    /// Takes in a node's report; false when it is the version already known, or when it is
    /// held back (see [`Self::upsert_node_at`]).
    pub fn upsert_node(&mut self, name: String, report: NodeReport) -> bool {
        self.upsert_node_at(name, report, Instant::now())
    }

    /// [`Self::upsert_node`] at `now`. A restarted agent hears its leaves one LLDPDU at a time:
    /// a report of a new agent run that shows fewer neighbours than the last run's is held
    /// until the last one's neighbours would have aged out (their longest TTL after the run's
    /// first report, by this controller's clock, at most [`MAX_CARRY_OVER`]), or until the run shows
    /// as many again, so a restart never strips a node's labels.
    pub fn upsert_node_at(&mut self, name: String, report: NodeReport, now: Instant) -> bool {
        if let Some(last) = self.reports.get(&name) {
            if last.same_version(&report) {
                self.held.remove(&name);
                return false;
            }
            let run = self
                .runs
                .entry(name.clone())
                .or_insert_with(|| (last.run.clone(), now));
            if run.0 != report.run {
                *run = (report.run.clone(), now);
            }
            // Only a report of a known agent run is held over: one without (a forged or
            // hand-written report) has no leaves to wait for, and its TTLs are not believed
            // past what lldpd itself announces.
            let fresh_run = report.run.is_some() && last.run.is_some() && last.run != report.run;
            let ttl = u64::from(last.max_ttl).min(MAX_CARRY_OVER.as_secs());
            let until = run.1 + Duration::from_secs(ttl);
            if fresh_run && report.neighbours < last.neighbours && now < until {
                tracing::info!(
                    node = %name,
                    neighbours = report.neighbours,
                    before = last.neighbours,
                    "holding a restarted agent's thinner report until its leaves are heard or the last neighbours would have aged out"
                );
                self.held.insert(name, (report, until));
                return false;
            }
        } else {
            self.runs.insert(name.clone(), (report.run.clone(), now));
        }
        self.held.remove(&name);
        self.pending
            .push(Change::Host(name.clone(), Some(host_report(&report))));
        self.reports.insert(name, report);
        true
    }

    /// When the first held report is due.
    pub fn held_until(&self) -> Option<Instant> {
        self.held.values().map(|(_, until)| *until).min()
    }

    /// Takes in the held reports that are due at `now`; true when any was.
    pub fn release_held(&mut self, now: Instant) -> bool {
        let due: Vec<String> = self
            .held
            .iter()
            .filter(|(_, (_, until))| *until <= now)
            .map(|(n, _)| n.clone())
            .collect();
        let mut changed = false;
        for name in due {
            if let Some((report, _)) = self.held.remove(&name) {
                tracing::info!(node = %name, "a held report is due: taking it in");
                // Its run counts from long enough ago that it is taken now.
                self.runs.insert(name.clone(), (report.run.clone(), now));
                self.pending
                    .push(Change::Host(name.clone(), Some(host_report(&report))));
                self.reports.insert(name, report);
                changed = true;
            }
        }
        changed
    }

    /// Forgets a node's report; false when there was none.
    pub fn remove_node(&mut self, name: &str) -> bool {
        self.held.remove(name);
        self.runs.remove(name);
        if self.reports.remove(name).is_none() {
            return false;
        }
        self.pending.push(Change::Host(name.to_owned(), None));
        true
    }

    /// Replaces every report with `all` (a watch that listed again); false when nothing changed.
    pub fn replace_nodes(&mut self, all: Vec<(String, NodeReport)>) -> bool {
        let keep: std::collections::HashSet<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        let gone: Vec<String> = self
            .reports
            .keys()
            .filter(|n| !keep.contains(n.as_str()))
            .cloned()
            .collect();
        let mut changed = false;
        for name in gone {
            changed |= self.remove_node(&name);
        }
        for (name, report) in all {
            changed |= self.upsert_node(name, report);
        }
        changed
    }

    /// Replaces the entries of one switch-table source; false when they are the same.
    pub fn set_switch_source(
        &mut self,
        source: &str,
        entries: BTreeMap<String, SwitchEntry>,
    ) -> bool {
        let empty = BTreeMap::new();
        let old = self.switches.get(source).unwrap_or(&empty);
        if *old == entries {
            return false;
        }
        for key in old.keys() {
            if !entries.contains_key(key) {
                self.pending.push(switch_change(key, None));
            }
        }
        for (key, entry) in &entries {
            if old.get(key) != Some(entry) {
                self.pending.push(switch_change(key, Some(entry)));
            }
        }
        if entries.is_empty() {
            self.switches.remove(source);
        } else {
            self.switches.insert(source.to_owned(), entries);
        }
        true
    }

    /// What changed since the last call, in order.
    pub fn take_changes(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.pending)
    }

    /// Every input as changes from nothing: what a model starting afresh takes in.
    pub fn all_changes(&self) -> Vec<Change> {
        let switches = self
            .switch_entries()
            .map(|(key, entry)| switch_change(key, Some(entry)));
        let hosts = self
            .reports
            .iter()
            .map(|(name, r)| Change::Host(name.clone(), Some(host_report(r))));
        switches.chain(hosts).collect()
    }

    /// The reports, by node.
    pub fn reports(&self) -> &BTreeMap<String, NodeReport> {
        &self.reports
    }

    /// Every switch-table entry that can be read, by name.
    pub fn switch_entries(&self) -> impl Iterator<Item = (&String, &SwitchEntry)> {
        self.switches.values().flatten()
    }

    /// Inputs that cannot be used, with why: `NodeFabric/<name>` and switch-table entries.
    pub fn unusable(&self) -> BTreeMap<String, String> {
        let nodes = self.reports.iter().filter_map(|(name, r)| {
            r.table
                .as_ref()
                .err()
                .map(|e| (format!("NodeFabric/{name}"), e.to_string()))
        });
        let switches = self.switch_entries().filter_map(|(name, e)| {
            e.captures
                .as_ref()
                .err()
                .map(|err| (name.clone(), err.clone()))
        });
        nodes.chain(switches).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(uid: &str, generation: i64, nics: &[&str]) -> NodeReport {
        NodeReport {
            uid: uid.into(),
            generation,
            nics: nics.iter().map(|n| (*n).to_owned()).collect(),
            table: Err(UnusableReport::Schema(None)),
            run: None,
            neighbours: 0,
            max_ttl: 0,
        }
    }

    fn hosts(changes: &[Change]) -> Vec<(&str, Option<&[String]>)> {
        changes
            .iter()
            .filter_map(|c| match c {
                Change::Host(n, r) => Some((n.as_str(), r.as_ref().map(|r| r.nics.as_slice()))),
                Change::Switches(..) => None,
            })
            .collect()
    }

    #[test]
    fn the_model_takes_in_only_what_changed() {
        let mut inputs = Inputs::new(RailKey::NicName);
        assert!(inputs.upsert_node("h2".into(), report("u2", 1, &["a"])));
        assert!(inputs.upsert_node("h1".into(), report("u1", 1, &["a", "b"])));
        assert!(!inputs.upsert_node("h1".into(), report("u1", 1, &["a", "b"])));
        assert!(inputs.upsert_node("h1".into(), report("u1", 2, &["b"])));
        let nics = |n: &[&str]| -> Vec<String> { n.iter().map(|s| (*s).to_owned()).collect() };
        let (a, ab, b) = (nics(&["a"]), nics(&["a", "b"]), nics(&["b"]));
        let taken = inputs.take_changes();
        assert_eq!(
            hosts(&taken),
            [
                ("h2", Some(&a[..])),
                ("h1", Some(&ab[..])),
                ("h1", Some(&b[..]))
            ]
        );
        assert!(inputs.take_changes().is_empty(), "taken once");
        // Recreated under the same name: a new uid is a new report, even at generation 1.
        assert!(inputs.upsert_node("h2".into(), report("u2b", 1, &["a"])));
        assert!(inputs.replace_nodes(vec![("h2".into(), report("u2b", 1, &["a"]))]));
        assert_eq!(
            hosts(&inputs.take_changes()),
            [("h2", Some(&a[..])), ("h1", None)]
        );
        assert!(!inputs.replace_nodes(vec![("h2".into(), report("u2b", 1, &["a"]))]));
        assert!(inputs.take_changes().is_empty());
        assert_eq!(hosts(&inputs.all_changes()), [("h2", Some(&a[..]))]);
        assert_eq!(
            inputs.unusable().into_iter().collect::<Vec<_>>(),
            [(
                "NodeFabric/h2".to_owned(),
                UnusableReport::Schema(None).to_string()
            )]
        );
    }

    /// A restarted agent's first reports show fewer neighbours: held until the last report's
    /// neighbours would have aged out, or until the run shows as many again; an agent that
    /// keeps running (same run) is believed at once, and so is a run with nothing to lose.
    #[test]
    fn a_restarted_agents_thinner_report_is_held_for_its_ttl() {
        let t0 = Instant::now();
        let with = |generation: i64, run: &str, neighbours: usize| NodeReport {
            run: Some(run.into()),
            neighbours,
            max_ttl: 120,
            ..report("u1", generation, &["a", "b"])
        };
        let mut inputs = Inputs::new(RailKey::NicName);
        assert!(inputs.upsert_node_at("h1".into(), with(1, "run1", 2), t0));
        inputs.take_changes();
        // The same run losing a neighbour (a shutdown LLDPDU, a pulled cable): at once.
        assert!(inputs.upsert_node_at("h1".into(), with(2, "run1", 1), t0));
        assert!(inputs.upsert_node_at("h1".into(), with(3, "run1", 2), t0));
        inputs.take_changes();
        // A new run with one of two neighbours: held.
        let t1 = t0 + Duration::from_secs(5);
        assert!(!inputs.upsert_node_at("h1".into(), with(4, "run2", 1), t1));
        assert!(inputs.take_changes().is_empty());
        assert_eq!(inputs.held_until(), Some(t1 + Duration::from_secs(120)));
        assert!(!inputs.release_held(t1 + Duration::from_secs(119)));
        // The run hears its second leaf: taken in, nothing held.
        assert!(inputs.upsert_node_at(
            "h1".into(),
            with(5, "run2", 2),
            t1 + Duration::from_secs(1)
        ));
        assert_eq!(inputs.held_until(), None);
        inputs.take_changes();
        // Another restart that never hears its leaves again: taken in when the TTL is over.
        let t2 = t1 + Duration::from_secs(10);
        assert!(!inputs.upsert_node_at("h1".into(), with(6, "run3", 0), t2));
        assert!(inputs.release_held(t2 + Duration::from_secs(120)));
        assert_eq!(hosts(&inputs.take_changes()).len(), 1);
        assert_eq!(inputs.reports()["h1"].generation, 6);
    }

    /// A report no agent run published (a compromised node's, written by hand) is never held
    /// over when the real agent comes back; and no claimed TTL holds longer than lldpd's own.
    #[test]
    fn a_forged_report_holds_nothing_and_ttls_are_capped() {
        let t0 = Instant::now();
        let with =
            |generation: i64, run: Option<&str>, neighbours: usize, max_ttl: u16| NodeReport {
                run: run.map(str::to_owned),
                neighbours,
                max_ttl,
                ..report("u1", generation, &["a", "b"])
            };
        let mut inputs = Inputs::new(RailKey::NicName);
        // The forged report (33 junk neighbours), then the real agent's: believed at once.
        assert!(inputs.upsert_node_at("h1".into(), with(1, None, 33, 120), t0));
        assert!(inputs.upsert_node_at("h1".into(), with(2, Some("run1"), 2, 120), t0));
        // A run whose neighbours claimed TTLs of 18 hours is held for two minutes at most.
        assert!(inputs.upsert_node_at("h1".into(), with(3, Some("run1"), 2, 65535), t0));
        assert!(!inputs.upsert_node_at("h1".into(), with(4, Some("run2"), 1, 120), t0));
        assert_eq!(inputs.held_until(), Some(t0 + MAX_CARRY_OVER));
        assert!(inputs.release_held(t0 + MAX_CARRY_OVER));
    }

    #[test]
    fn a_switch_source_changes_only_when_its_bytes_do() {
        let mut inputs = Inputs::new(RailKey::NicName);
        let entries = |text: &str| {
            BTreeMap::from([(
                "k".to_owned(),
                switches::parse_entry("cm/spine1.json", "spine1.json", text.as_bytes().to_vec()),
            )])
        };
        assert!(inputs.set_switch_source("cm", entries("{")));
        assert!(!inputs.set_switch_source("cm", entries("{")));
        assert_eq!(inputs.unusable().len(), 1);
        assert!(inputs.set_switch_source("cm", BTreeMap::new()));
        assert!(inputs.unusable().is_empty());
        let keys: Vec<(String, bool)> = inputs
            .take_changes()
            .into_iter()
            .map(|c| match c {
                Change::Switches(k, c) => (k, c.is_some()),
                Change::Host(..) => panic!("no host"),
            })
            .collect();
        assert_eq!(keys, [("k".to_owned(), false), ("k".to_owned(), false)]);
    }
}
