//! Everything inference reads, kept current by the watches: each node's report and the
//! operator's switch tables, and what changed since the model last took them in (so the
//! model takes in only the changed reports).

pub mod node;
pub mod switches;

use std::collections::BTreeMap;

use topo_discovery::fabric::RailKey;
use topo_discovery::fabric::live::{Change, HostReport};

pub use node::{HostTable, NodeReport};
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
        }
    }

    /// How NICs map to rails.
    pub fn rail_key(&self) -> RailKey {
        self.rail_key
    }

    /// Takes in a node's report; false when it is the version already known.
    pub fn upsert_node(&mut self, name: String, report: NodeReport) -> bool {
        if self
            .reports
            .get(&name)
            .is_some_and(|r| r.same_version(&report))
        {
            return false;
        }
        self.pending
            .push(Change::Host(name.clone(), Some(host_report(&report))));
        self.reports.insert(name, report);
        true
    }

    /// Forgets a node's report; false when there was none.
    pub fn remove_node(&mut self, name: &str) -> bool {
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
                .map(|e| (format!("NodeFabric/{name}"), e.clone()))
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
            table: Err("none".into()),
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
            [("NodeFabric/h2".to_owned(), "none".to_owned())]
        );
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
