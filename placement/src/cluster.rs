//! The cluster as the planner sees it: nodes in a tree of fabric domains built from their tier
//! labels, each domain keeping a histogram of its nodes' free units so that "how many blocks of
//! this shape fit here" costs O(distinct free values), and a node change costs O(tiers).
//!
//! Domain identity is the path from the top (as in Kueue), so equal label values under
//! different spines stay apart. A node that lacks a tier label is alone in its domain at that
//! tier: nothing is assumed close to it that the fabric did not say.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;
use spinel_api::labels::LabelOptions;

use crate::tier::Tier;

/// What the cluster knows of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// Node name.
    pub name: String,
    /// Its labels (only the tier keys are read).
    pub labels: BTreeMap<String, String>,
    /// Allocatable units of the scheduled resource.
    pub allocatable: u32,
    /// Units held by pods bound to it.
    pub used: u32,
    /// Carries the fabric agent's degraded taint.
    pub degraded: bool,
    /// Cordoned (`spec.unschedulable`) or not ready.
    pub unschedulable: bool,
}

/// Settings of a cluster view.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Tier label keys.
    pub labels: LabelOptions,
    /// Names of tiers 1, 2, 3, ... in messages (tier 1 is a leaf group in rail-optimised
    /// fabrics).
    pub tier_names: Vec<String>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            labels: LabelOptions::default(),
            tier_names: vec!["leaf".into(), "spine".into(), "super-spine".into()],
        }
    }
}

/// Index of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct NodeId(pub u32);

/// Index of a fabric domain (index 0 is the whole cluster).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct DomainId(pub u32);

/// Count of nodes per free (or allocatable) amount.
#[derive(Debug, Clone, Default)]
pub(crate) struct Histogram(BTreeMap<u32, u32>);

impl Histogram {
    fn add(&mut self, v: u32) {
        *self.0.entry(v).or_default() += 1;
    }

    fn remove(&mut self, v: u32) {
        if let Some(c) = self.0.get_mut(&v) {
            *c -= 1;
            if *c == 0 {
                self.0.remove(&v);
            }
        }
    }

    /// Slots of `unit` units over all nodes.
    pub(crate) fn slots(&self, unit: u32) -> u64 {
        self.0
            .iter()
            .map(|(v, c)| u64::from(v / unit.max(1)) * u64::from(*c))
            .sum()
    }

    /// Smallest amount of at least `low` on any node.
    pub(crate) fn min_at_least(&self, low: u32) -> Option<u32> {
        self.0.range(low..).next().map(|(v, _)| *v)
    }

    /// Largest amount on any node.
    pub(crate) fn max(&self) -> u32 {
        self.0.keys().next_back().copied().unwrap_or(0)
    }
}

/// One node's state.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) name: String,
    /// Tier values read from its labels (index 0 = tier 1).
    tier_values: Vec<Option<String>>,
    /// Domains from tier 1 up to the cluster.
    pub(crate) path: Vec<DomainId>,
    pub(crate) allocatable: u32,
    pub(crate) used: u32,
    pub(crate) reserved: u32,
    pub(crate) degraded: bool,
    pub(crate) unschedulable: bool,
    /// Hidden from the plan being made (kube-scheduler found it infeasible for the gang).
    pub(crate) excluded: bool,
}

impl Node {
    /// Units a new pod could take now.
    pub(crate) fn free(&self) -> u32 {
        if self.degraded || self.unschedulable || self.excluded {
            0
        } else {
            self.allocatable
                .saturating_sub(self.used.saturating_add(self.reserved))
        }
    }
}

/// A fabric domain.
#[derive(Debug, Clone)]
pub(crate) struct Domain {
    /// The label value, or `node/<name>` for a node alone in its domain.
    pub(crate) value: String,
    pub(crate) tier: u8,
    pub(crate) parent: Option<DomainId>,
    pub(crate) children: Vec<DomainId>,
    /// Nodes directly in it (tier-1 domains only).
    pub(crate) nodes: Vec<NodeId>,
    pub(crate) free: Histogram,
    pub(crate) alloc: Histogram,
}

/// The cluster view: nodes, domains and free capacity per domain.
#[derive(Debug, Clone)]
pub struct Cluster {
    options: ClusterOptions,
    depth: u8,
    nodes: Vec<Option<Node>>,
    vacant: Vec<u32>,
    by_name: FxHashMap<String, NodeId>,
    domains: Vec<Domain>,
    by_parent_value: FxHashMap<(DomainId, String), DomainId>,
    generation: u64,
    /// Changes only when a node is added or removed: names map to the same ids until then.
    names_epoch: u64,
    /// How many nodes carry labels down to each depth: the cluster's depth follows the deepest
    /// one present, also when the last node labelled that deep loses the label.
    depths: std::collections::BTreeMap<u8, u32>,
}

fn root_domain(depth: u8) -> Domain {
    Domain {
        value: "cluster".to_owned(),
        tier: depth + 1,
        parent: None,
        children: Vec::new(),
        nodes: Vec::new(),
        free: Histogram::default(),
        alloc: Histogram::default(),
    }
}

impl Cluster {
    /// An empty cluster.
    pub fn new(options: ClusterOptions) -> Cluster {
        Cluster {
            options,
            depth: 1,
            nodes: Vec::new(),
            vacant: Vec::new(),
            by_name: FxHashMap::default(),
            domains: vec![root_domain(1)],
            by_parent_value: FxHashMap::default(),
            generation: 0,
            names_epoch: 0,
            depths: std::collections::BTreeMap::new(),
        }
    }

    fn count_depth(&mut self, depth: u8, add: bool) {
        let count = self.depths.entry(depth).or_default();
        if add {
            *count += 1;
        } else {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.depths.remove(&depth);
            }
        }
    }

    /// The depth the domains should have: the deepest any node is labelled with (at least 1).
    fn wanted_depth(&self) -> u8 {
        self.depths.keys().next_back().copied().unwrap_or(1).max(1)
    }

    /// A cluster holding `nodes`.
    pub fn from_nodes(options: ClusterOptions, nodes: impl IntoIterator<Item = NodeSpec>) -> Self {
        let mut c = Cluster::new(options);
        for n in nodes {
            c.upsert(n);
        }
        c
    }

    /// Deepest tier any node is labelled with (at least 1).
    pub fn depth(&self) -> u8 {
        self.depth
    }

    /// The domain standing for the whole cluster.
    pub fn root(&self) -> DomainId {
        DomainId(0)
    }

    /// Changes on every update; lets callers cache derived data.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Changes when a node is added or removed (not on other updates): node names resolve to
    /// the same ids while it stays.
    pub fn names_epoch(&self) -> u64 {
        self.names_epoch
    }

    /// Label options in use.
    pub fn options(&self) -> &ClusterOptions {
        &self.options
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.by_name.len()
    }

    /// Number of domains, the cluster included.
    pub fn domain_count(&self) -> usize {
        self.domains.len()
    }

    /// Node by name.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// A node's name.
    pub fn node_name(&self, id: NodeId) -> &str {
        self.node(id).map_or("", |n| n.name.as_str())
    }

    pub(crate) fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// Every node id, in name order (deterministic).
    pub fn node_ids(&self) -> Vec<NodeId> {
        let mut ids: Vec<(&str, NodeId)> = self
            .by_name
            .iter()
            .map(|(n, id)| (n.as_str(), *id))
            .collect();
        ids.sort_unstable();
        ids.into_iter().map(|(_, id)| id).collect()
    }

    /// Units free on a node now (0 when degraded or cordoned).
    pub fn free(&self, id: NodeId) -> u32 {
        self.node(id).map_or(0, Node::free)
    }

    /// A node's allocatable units.
    pub fn allocatable(&self, id: NodeId) -> u32 {
        self.node(id).map_or(0, |n| n.allocatable)
    }

    /// Units reserved on a node for planned gangs.
    pub fn reserved(&self, id: NodeId) -> u32 {
        self.node(id).map_or(0, |n| n.reserved)
    }

    /// Units used on a node by bound pods.
    pub fn used(&self, id: NodeId) -> u32 {
        self.node(id).map_or(0, |n| n.used)
    }

    /// Whether the node may receive gang pods (not degraded, not cordoned).
    pub fn is_healthy(&self, id: NodeId) -> bool {
        self.node(id)
            .is_some_and(|n| !n.degraded && !n.unschedulable)
    }

    pub(crate) fn domain(&self, id: DomainId) -> &Domain {
        &self.domains[id.0 as usize]
    }

    pub(crate) fn domain_ids(&self) -> impl Iterator<Item = DomainId> + '_ {
        (0..self.domains.len() as u32).map(DomainId)
    }

    /// The tier-`tier` domain of a node (the cluster above the deepest tier).
    pub fn ancestor(&self, node: NodeId, tier: u8) -> DomainId {
        self.node(node)
            .and_then(|n| {
                n.path
                    .get(usize::from(tier.max(1)) - 1)
                    .or(n.path.last())
                    .copied()
            })
            .unwrap_or(DomainId(0))
    }

    /// A domain's label value (`cluster` for the whole cluster).
    pub fn domain_value(&self, id: DomainId) -> &str {
        &self.domain(id).value
    }

    /// A domain's tier (depth + 1 for the cluster).
    pub fn domain_tier(&self, id: DomainId) -> u8 {
        self.domain(id).tier
    }

    /// How a tier is called in messages.
    pub fn tier_name(&self, tier: u8) -> String {
        if tier == 0 {
            "node".to_owned()
        } else if tier > self.depth {
            "cluster".to_owned()
        } else {
            self.options
                .tier_names
                .get(usize::from(tier) - 1)
                .cloned()
                .unwrap_or_else(|| Tier(tier).to_string())
        }
    }

    /// `leaf leaf-g3` or `cluster`: a domain named for messages.
    pub fn describe(&self, id: DomainId) -> String {
        let d = self.domain(id);
        if d.parent.is_none() {
            "the cluster".to_owned()
        } else {
            format!("{} {}", self.tier_name(d.tier), d.value)
        }
    }

    /// The domain tier a requested tier means here: anything above the deepest labelled tier
    /// is the whole cluster.
    pub fn effective_tier(&self, tier: Tier) -> u8 {
        tier.0.min(self.depth + 1)
    }

    fn tier_values(&self, labels: &BTreeMap<String, String>) -> Vec<Option<String>> {
        let mut values: Vec<Option<String>> = Vec::new();
        for (k, v) in labels {
            if let Some(t) = self.options.labels.tier_of_key(k)
                && t <= Tier::MAX_NAMED
                && !v.is_empty()
            {
                let i = usize::from(t) - 1;
                if values.len() <= i {
                    values.resize(i + 1, None);
                }
                values[i] = Some(v.clone());
            }
        }
        values
    }

    fn domain_for(&mut self, parent: DomainId, value: String, tier: u8) -> DomainId {
        if let Some(d) = self.by_parent_value.get(&(parent, value.clone())) {
            return *d;
        }
        let id = DomainId(self.domains.len() as u32);
        self.domains.push(Domain {
            value: value.clone(),
            tier,
            parent: Some(parent),
            children: Vec::new(),
            nodes: Vec::new(),
            free: Histogram::default(),
            alloc: Histogram::default(),
        });
        self.domains[parent.0 as usize].children.push(id);
        self.by_parent_value.insert((parent, value), id);
        id
    }

    fn path_for(&mut self, name: &str, values: &[Option<String>]) -> Vec<DomainId> {
        let mut path = vec![DomainId(0); usize::from(self.depth) + 1];
        let mut parent = DomainId(0);
        for tier in (1..=self.depth).rev() {
            let value = values
                .get(usize::from(tier) - 1)
                .cloned()
                .flatten()
                .unwrap_or_else(|| format!("node/{name}"));
            parent = self.domain_for(parent, value, tier);
            path[usize::from(tier) - 1] = parent;
        }
        path
    }

    fn account(&mut self, id: NodeId, add: bool) {
        let Some(node) = self.nodes[id.0 as usize].as_ref() else {
            return;
        };
        let (free, alloc) = (node.free(), node.allocatable);
        for d in node.path.clone() {
            let dom = &mut self.domains[d.0 as usize];
            if add {
                dom.free.add(free);
                dom.alloc.add(alloc);
            } else {
                dom.free.remove(free);
                dom.alloc.remove(alloc);
            }
        }
    }

    fn attach(&mut self, id: NodeId) {
        let Some(node) = self.nodes[id.0 as usize].as_ref() else {
            return;
        };
        let (name, values) = (node.name.clone(), node.tier_values.clone());
        let path = self.path_for(&name, &values);
        self.domains[path[0].0 as usize].nodes.push(id);
        if let Some(n) = self.nodes[id.0 as usize].as_mut() {
            n.path = path;
        }
        self.account(id, true);
    }

    fn detach(&mut self, id: NodeId) {
        self.account(id, false);
        if let Some(leaf) = self.nodes[id.0 as usize]
            .as_ref()
            .and_then(|n| n.path.first().copied())
        {
            self.domains[leaf.0 as usize].nodes.retain(|n| *n != id);
        }
    }

    /// Rebuilds every domain for a new depth (a node brought a deeper tier label).
    fn rebuild(&mut self, depth: u8) {
        self.depth = depth;
        self.domains = vec![root_domain(depth)];
        self.by_parent_value.clear();
        for i in 0..self.nodes.len() {
            if self.nodes[i].is_some() {
                self.attach(NodeId(i as u32));
            }
        }
    }

    /// Adds a node or updates it (labels, allocatable, usage, taint); returns its id.
    pub fn upsert(&mut self, spec: NodeSpec) -> NodeId {
        self.generation += 1;
        let values = self.tier_values(&spec.labels);
        let depth = u8::try_from(values.len()).unwrap_or(Tier::MAX_NAMED);
        if let Some(&id) = self.by_name.get(&spec.name) {
            let old_depth = self.node(id).map_or(0, |n| n.tier_values.len() as u8);
            let moved = self.node(id).is_some_and(|n| n.tier_values != values);
            self.detach(id);
            if let Some(n) = self.nodes[id.0 as usize].as_mut() {
                n.tier_values = values;
                n.allocatable = spec.allocatable;
                n.used = spec.used;
                n.degraded = spec.degraded;
                n.unschedulable = spec.unschedulable;
            }
            self.count_depth(old_depth, false);
            self.count_depth(depth, true);
            // A node whose labels went shallower than the cluster's depth would otherwise stand
            // alone under a domain of its own at the missing tier, away from its leaf's peers.
            if self.wanted_depth() != self.depth {
                self.rebuild(self.wanted_depth());
            } else if moved {
                self.attach(id);
            } else {
                let leaf = self.node(id).and_then(|n| n.path.first().copied());
                if let Some(leaf) = leaf {
                    self.domains[leaf.0 as usize].nodes.push(id);
                }
                self.account(id, true);
            }
            return id;
        }
        let node = Node {
            name: spec.name.clone(),
            tier_values: values,
            path: Vec::new(),
            allocatable: spec.allocatable,
            used: spec.used,
            reserved: 0,
            degraded: spec.degraded,
            unschedulable: spec.unschedulable,
            excluded: false,
        };
        let id = match self.vacant.pop() {
            Some(i) => {
                self.nodes[i as usize] = Some(node);
                NodeId(i)
            }
            None => {
                self.nodes.push(Some(node));
                NodeId(self.nodes.len() as u32 - 1)
            }
        };
        self.by_name.insert(spec.name, id);
        self.names_epoch += 1;
        self.count_depth(depth, true);
        if self.wanted_depth() != self.depth {
            self.rebuild(self.wanted_depth());
        } else {
            self.attach(id);
        }
        id
    }

    /// Removes a node; returns its id while it was known.
    pub fn remove(&mut self, name: &str) -> Option<NodeId> {
        let id = self.by_name.remove(name)?;
        self.generation += 1;
        self.names_epoch += 1;
        self.detach(id);
        let depth = self.node(id).map_or(0, |n| n.tier_values.len() as u8);
        self.count_depth(depth, false);
        self.nodes[id.0 as usize] = None;
        self.vacant.push(id.0);
        if self.wanted_depth() != self.depth {
            self.rebuild(self.wanted_depth());
        }
        Some(id)
    }

    fn change(&mut self, id: NodeId, f: impl FnOnce(&mut Node)) {
        if self.node(id).is_none() {
            return;
        }
        self.generation += 1;
        self.account(id, false);
        if let Some(n) = self.nodes[id.0 as usize].as_mut() {
            f(n);
        }
        self.account(id, true);
    }

    /// Sets the units bound pods use on a node.
    pub fn set_used(&mut self, id: NodeId, used: u32) {
        self.change(id, |n| n.used = used);
    }

    /// Cordons or uncordons a node.
    pub fn set_unschedulable(&mut self, id: NodeId, unschedulable: bool) {
        self.change(id, |n| n.unschedulable = unschedulable);
    }

    /// Adds units used by a newly bound pod.
    pub fn add_used(&mut self, id: NodeId, units: u32) {
        self.change(id, |n| n.used = n.used.saturating_add(units));
    }

    /// Releases units of a pod that ended.
    pub fn sub_used(&mut self, id: NodeId, units: u32) {
        self.change(id, |n| n.used = n.used.saturating_sub(units));
    }

    /// Hides nodes from plans (`true`) or shows them again; returns the ids whose state
    /// changed, to hand back to [`Cluster::set_excluded`] with `false`.
    pub(crate) fn set_excluded(&mut self, ids: &[NodeId], excluded: bool) -> Vec<NodeId> {
        let mut changed = Vec::new();
        for id in ids {
            if self.node(*id).is_some_and(|n| n.excluded != excluded) {
                self.change(*id, |n| n.excluded = excluded);
                changed.push(*id);
            }
        }
        changed
    }

    /// One past the largest node id in use (ids are dense indices).
    pub fn id_bound(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn reserve(&mut self, id: NodeId, units: u32) {
        self.change(id, |n| n.reserved = n.reserved.saturating_add(units));
    }

    pub(crate) fn unreserve(&mut self, id: NodeId, units: u32) {
        self.change(id, |n| n.reserved = n.reserved.saturating_sub(units));
    }

    /// Units free in a domain now.
    pub fn domain_free_units(&self, id: DomainId) -> u64 {
        self.domain(id).free.slots(1)
    }

    /// Allocatable units of every node in a domain, degraded ones included.
    pub fn domain_allocatable_units(&self, id: DomainId) -> u64 {
        self.domain(id).alloc.slots(1)
    }

    /// Nodes in a domain (all tiers).
    pub fn domain_node_count(&self, id: DomainId) -> u64 {
        self.domain(id)
            .alloc
            .0
            .values()
            .map(|c| u64::from(*c))
            .sum()
    }

    /// Every domain at a tier, in value order (deterministic).
    pub fn domains_at(&self, tier: u8) -> Vec<DomainId> {
        let mut v: Vec<DomainId> = self
            .domain_ids()
            .filter(|d| self.domain(*d).tier == tier)
            .collect();
        v.sort_by(|a, b| self.domain(*a).value.cmp(&self.domain(*b).value));
        v
    }

    /// Nodes directly under a tier-1 domain.
    pub(crate) fn leaf_nodes(&self, id: DomainId) -> &[NodeId] {
        &self.domain(id).nodes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, leaf: &str, spine: &str, gpus: u32) -> NodeSpec {
        let mut labels = BTreeMap::new();
        labels.insert("fabric.spinel.dev/tier-1".to_owned(), leaf.to_owned());
        labels.insert("fabric.spinel.dev/tier-2".to_owned(), spine.to_owned());
        NodeSpec {
            name: name.to_owned(),
            labels,
            allocatable: gpus,
            used: 0,
            degraded: false,
            unschedulable: false,
        }
    }

    #[test]
    fn domains_follow_label_paths() {
        let c = Cluster::from_nodes(
            ClusterOptions::default(),
            vec![
                spec("a", "l1", "s1", 8),
                spec("b", "l1", "s1", 8),
                spec("c", "l1", "s2", 8),
            ],
        );
        assert_eq!(c.depth(), 2);
        let (a, b, cc) = (
            c.node_id("a").unwrap(),
            c.node_id("b").unwrap(),
            c.node_id("c").unwrap(),
        );
        assert_eq!(c.ancestor(a, 1), c.ancestor(b, 1));
        // Same leaf value under another spine is another leaf.
        assert_ne!(c.ancestor(a, 1), c.ancestor(cc, 1));
        assert_eq!(c.domain_free_units(c.root()), 24);
        assert_eq!(c.domain_free_units(c.ancestor(a, 2)), 16);
    }

    #[test]
    fn nodes_labelled_one_by_one_after_the_first_list_share_their_leaf() {
        // The scheduler lists Nodes before the fabric agents label them, then sees the labels
        // arrive one node at a time.
        let names = ["n1", "n2", "n3", "n4"];
        let mut c = Cluster::new(ClusterOptions::default());
        for n in names {
            let mut s = spec(n, "", "", 2);
            s.labels.clear();
            c.upsert(s);
        }
        // The first reports give partial answers (a node alone, a tier missing) before the
        // whole fabric is known.
        let mut partial = spec("n1", "l1", "", 2);
        partial.labels.remove("fabric.spinel.dev/tier-2");
        c.upsert(partial);
        c.upsert(spec("n2", "node-n2", "s0", 2));
        for n in names {
            c.upsert(spec(n, "l1", "s1", 2));
        }
        let n1 = c.node_id("n1").unwrap();
        let leaf = c.ancestor(n1, 1);
        assert_eq!(c.domain_value(leaf), "l1");
        assert_eq!(c.domain_node_count(leaf), 4);
        assert_eq!(c.domain_allocatable_units(leaf), 8);
        assert_eq!(c.domain_allocatable_units(c.ancestor(n1, 2)), 8);
        assert_eq!(c.domain_allocatable_units(c.root()), 8);
    }

    #[test]
    fn a_deeper_label_that_goes_away_takes_its_tier_with_it() {
        // The controller's first answer, from partial reports, gave one node a third tier; the
        // next answer takes it back. Every node must end up under its leaf again.
        let mut c = Cluster::new(ClusterOptions::default());
        let mut deep = spec("a", "l1", "s1", 2);
        deep.labels
            .insert("fabric.spinel.dev/tier-3".into(), "x".into());
        c.upsert(deep);
        for n in ["a", "b", "c"] {
            c.upsert(spec(n, "l1", "s1", 2));
        }
        assert_eq!(c.depth(), 2);
        let a = c.node_id("a").unwrap();
        assert_eq!(c.domain_node_count(c.ancestor(a, 1)), 3);
        assert_eq!(c.domain_allocatable_units(c.root()), 6);
        let mut deep = spec("d", "l1", "s1", 2);
        deep.labels
            .insert("fabric.spinel.dev/tier-3".into(), "x".into());
        c.upsert(deep);
        assert_eq!(c.depth(), 3);
        c.remove("d");
        assert_eq!(c.depth(), 2);
        assert_eq!(c.domain_node_count(c.ancestor(a, 1)), 3);
    }

    #[test]
    fn unlabelled_nodes_stand_alone() {
        let mut lone = spec("x", "", "s1", 8);
        lone.labels.remove("fabric.spinel.dev/tier-1");
        let c = Cluster::from_nodes(
            ClusterOptions::default(),
            vec![spec("a", "l1", "s1", 8), lone],
        );
        let (a, x) = (c.node_id("a").unwrap(), c.node_id("x").unwrap());
        assert_ne!(c.ancestor(a, 1), c.ancestor(x, 1));
        assert_eq!(c.ancestor(a, 2), c.ancestor(x, 2));
        assert_eq!(c.domain_value(c.ancestor(x, 1)), "node/x");
    }

    #[test]
    fn updates_move_capacity_incrementally() {
        let mut c = Cluster::from_nodes(
            ClusterOptions::default(),
            vec![spec("a", "l1", "s1", 8), spec("b", "l2", "s1", 8)],
        );
        let a = c.node_id("a").unwrap();
        c.add_used(a, 3);
        assert_eq!(c.free(a), 5);
        assert_eq!(c.domain_free_units(c.root()), 13);
        let mut degraded = spec("a", "l1", "s1", 8);
        degraded.degraded = true;
        c.upsert(degraded);
        assert_eq!(c.free(a), 0);
        assert_eq!(c.domain_free_units(c.root()), 8);
        assert_eq!(c.domain_allocatable_units(c.root()), 16);
        // Relabelled to another leaf: the old leaf empties.
        let old_leaf = c.ancestor(a, 1);
        c.upsert(spec("a", "l2", "s1", 8));
        assert_eq!(c.domain_allocatable_units(old_leaf), 0);
        assert_eq!(c.ancestor(a, 1), c.ancestor(c.node_id("b").unwrap(), 1));
        c.remove("b");
        assert_eq!(c.node_count(), 1);
        assert_eq!(c.domain_free_units(c.root()), 8);
    }

    #[test]
    fn a_deeper_label_rebuilds_the_tree() {
        let mut c = Cluster::from_nodes(ClusterOptions::default(), vec![spec("a", "l1", "s1", 8)]);
        let mut deep = spec("b", "l9", "s9", 8);
        deep.labels
            .insert("fabric.spinel.dev/tier-3".to_owned(), "core".to_owned());
        c.upsert(deep);
        assert_eq!(c.depth(), 3);
        let (a, b) = (c.node_id("a").unwrap(), c.node_id("b").unwrap());
        assert_ne!(c.ancestor(a, 3), c.ancestor(b, 3));
        assert_eq!(c.domain_free_units(c.root()), 16);
    }
}
