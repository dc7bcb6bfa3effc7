//! Everything inference reads, kept current by the watches: each node's report and the
//! operator's switch tables. The host list and the per-host fabric NICs are maintained here
//! as reports come and go, so a recompute does not rebuild them.

pub mod node;
pub mod switches;

use std::collections::BTreeMap;

use topo_discovery::fabric::{FabricBuilder, FabricNics, InferOptions, RailKey};

pub use node::{HostTable, NodeReport};
pub use switches::SwitchEntry;

/// The inputs of one inference.
#[derive(Debug, Clone)]
pub struct Inputs {
    reports: BTreeMap<String, NodeReport>,
    /// Switch tables by source (`ConfigMap/...`, `file:...`), then by entry.
    switches: BTreeMap<String, BTreeMap<String, SwitchEntry>>,
    options: InferOptions,
}

impl Inputs {
    /// No inputs yet; NICs map to rails by `rail_key`.
    pub fn new(rail_key: RailKey) -> Self {
        Self {
            reports: BTreeMap::new(),
            switches: BTreeMap::new(),
            options: InferOptions {
                rail_key,
                fabric_nics: FabricNics::PerHost(BTreeMap::new()),
                hosts: Vec::new(),
            },
        }
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
        if let FabricNics::PerHost(map) = &mut self.options.fabric_nics {
            map.insert(name.clone(), report.nics.clone());
        }
        if let Err(at) = self.options.hosts.binary_search(&name) {
            self.options.hosts.insert(at, name.clone());
        }
        self.reports.insert(name, report);
        true
    }

    /// Forgets a node's report; false when there was none.
    pub fn remove_node(&mut self, name: &str) -> bool {
        if self.reports.remove(name).is_none() {
            return false;
        }
        if let FabricNics::PerHost(map) = &mut self.options.fabric_nics {
            map.remove(name);
        }
        if let Ok(at) = self
            .options
            .hosts
            .binary_search_by(|h| h.as_str().cmp(name))
        {
            self.options.hosts.remove(at);
        }
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
        if self.switches.get(source) == Some(&entries) {
            return false;
        }
        if entries.is_empty() {
            return self.switches.remove(source).is_some();
        }
        self.switches.insert(source.to_owned(), entries);
        true
    }

    /// The reports, by node.
    pub fn reports(&self) -> &BTreeMap<String, NodeReport> {
        &self.reports
    }

    /// Every switch-table entry that can be read, by name.
    pub fn switch_entries(&self) -> impl Iterator<Item = (&String, &SwitchEntry)> {
        self.switches.values().flatten()
    }

    /// Inference settings: the nodes with a report are the hosts, their agents' NICs the
    /// fabric NICs.
    pub fn options(&self) -> &InferOptions {
        &self.options
    }

    /// A builder holding every usable table, with the switch entries of neighbours only
    /// matched to their boxes by their cabling; an entry whose box cannot be decided (or that
    /// is a second capture of one box) is left out, with why, by entry name.
    pub fn builder(&self) -> (FabricBuilder, BTreeMap<String, String>) {
        let mut refused: BTreeMap<String, String> = BTreeMap::new();
        // Each pass leaves out what the previous one could not decide; the rest is decided
        // again without it (at most once more per refused entry).
        loop {
            let mut builder = FabricBuilder::new();
            for (name, entry) in self.switch_entries() {
                if refused.contains_key(name) {
                    continue;
                }
                if let Ok(captures) = &entry.captures {
                    for c in captures {
                        c.add_to(&mut builder);
                    }
                }
            }
            for (name, report) in &self.reports {
                if let Ok(table) = &report.table {
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

    #[test]
    fn hosts_and_fabric_nics_follow_the_reports() {
        let mut inputs = Inputs::new(RailKey::NicName);
        assert!(inputs.upsert_node("h2".into(), report("u2", 1, &["a"])));
        assert!(inputs.upsert_node("h1".into(), report("u1", 1, &["a", "b"])));
        assert!(!inputs.upsert_node("h1".into(), report("u1", 1, &["a", "b"])));
        assert!(inputs.upsert_node("h1".into(), report("u1", 2, &["b"])));
        assert_eq!(inputs.options().hosts, ["h1", "h2"]);
        let FabricNics::PerHost(map) = &inputs.options().fabric_nics else {
            panic!("per-host NICs");
        };
        assert_eq!(map["h1"], ["b"]);
        // Recreated under the same name: a new uid is a new report, even at generation 1.
        assert!(inputs.upsert_node("h2".into(), report("u2b", 1, &["a"])));
        assert!(inputs.replace_nodes(vec![("h2".into(), report("u2b", 1, &["a"]))]));
        assert_eq!(inputs.options().hosts, ["h2"]);
        assert!(!inputs.replace_nodes(vec![("h2".into(), report("u2b", 1, &["a"]))]));
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
    }
}
