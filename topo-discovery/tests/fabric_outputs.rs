//! Outputs derived from one fabric agree with each other: node labels and HyperNodes name the
//! same domains, HyperNodes form a strict tree, Kueue levels are the label keys, Slurm places
//! every node once; and the result does not depend on input order.

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::prelude::*;
use spinel_api::labels::{KeyMode, LabelOptions};
use spinel_wire::neighbor::NeighborTable;
use topo_discovery::fabric::synthetic::{Lab, SyntheticSpec, TWO_RAIL_NICS};
use topo_discovery::fabric::{
    Fabric, FabricBuilder, InferOptions, dot, infer, json, kueue, labels, names, slurm, volcano,
};

const NIC0: &str = TWO_RAIL_NICS[0];

fn hn_name(h: &volcano::HyperNode) -> &str {
    h.metadata.name.as_deref().expect("HyperNodes are named")
}

fn labels_of(h: &volcano::HyperNode) -> &BTreeMap<String, String> {
    h.metadata.labels.as_ref().expect("HyperNodes are labelled")
}

fn member_name(m: &volcano::MemberSpec) -> &str {
    m.selector.exact_name().expect("members by exact name")
}
const NIC1: &str = TWO_RAIL_NICS[1];

/// A few fabrics with different shapes and faults.
fn fabrics() -> Vec<(&'static str, Fabric)> {
    let clean = Lab::two_rail_groups();
    let mut miswired = Lab::two_rail_groups();
    miswired
        .uncable("h1", NIC0)
        .uncable("h1", NIC1)
        .cable("h1", NIC0, "leaf2", "swp1")
        .cable("h1", NIC1, "leaf1", "swp1")
        .uncable("h6", NIC1)
        .cable("h6", NIC1, "leaf2", "swp9")
        .uncable("leaf4", "swp51");
    let mut partial = Lab::two_rail_groups();
    partial.uncable("leaf4", "swp51").uncable("leaf4", "swp52"); // a group half cut off
    let mut cut = Lab::two_rail_groups();
    for leaf in ["leaf3", "leaf4"] {
        cut.uncable(leaf, "swp51").uncable(leaf, "swp52"); // a whole group cut off
    }
    let spec = SyntheticSpec {
        hosts: 1500,
        ..SyntheticSpec::rail_optimized(1500)
    };
    let mut b = FabricBuilder::new();
    for t in spec.tables() {
        b.add_table(&t);
    }
    vec![
        ("clean", infer(&clean.tables(), &InferOptions::default())),
        (
            "miswired",
            infer(&miswired.tables(), &InferOptions::default()),
        ),
        (
            "partial",
            infer(&partial.tables(), &InferOptions::default()),
        ),
        ("cut", infer(&cut.tables(), &InferOptions::default())),
        ("synthetic", b.infer(&InferOptions::default())),
    ]
}

fn label_modes() -> [LabelOptions; 2] {
    [
        LabelOptions::default(),
        LabelOptions {
            prefix: "fabric.example.com/".into(),
            keys: KeyMode::Topograph,
        },
    ]
}

#[test]
fn labels_and_hypernodes_name_the_same_domains() {
    for (name, f) in fabrics() {
        for opts in label_modes() {
            let hns = volcano::hypernodes(&f, &opts);
            let by_name: HashMap<&str, &volcano::HyperNode> =
                hns.iter().map(|h| (hn_name(h), h)).collect();
            // parent of each member, by member name
            let mut parent: HashMap<(&str, &str), &str> = HashMap::new();
            for h in &hns {
                for m in &h.spec.members {
                    parent.insert((m.member_type.as_str(), member_name(m)), hn_name(h));
                }
            }
            for node in labels::node_labels(&f, &opts) {
                // Walk up the HyperNode tree from the node and compare each tier's label.
                let mut tier = 1u8;
                let mut current = parent.get(&("Node", node.node.as_str())).copied();
                while let Some(hn) = current {
                    let key = opts.tier_key(tier);
                    assert_eq!(
                        node.labels.get(&key).map(String::as_str),
                        Some(hn),
                        "{name}: {}",
                        node.node
                    );
                    let obj = by_name[hn];
                    assert_eq!(obj.spec.tier, i32::from(tier), "{name}: {hn}");
                    assert_eq!(labels_of(obj).get(&key).map(String::as_str), Some(hn));
                    current = parent.get(&("HyperNode", hn)).copied();
                    tier += 1;
                }
                // No tier label without a HyperNode behind it.
                assert!(
                    !node.labels.contains_key(&opts.tier_key(tier)),
                    "{name}: {}",
                    node.node
                );
                if f.host(f.host_by_name(&node.node).unwrap()).domain.is_some() {
                    assert!(
                        tier > 1,
                        "{name}: {} has a domain but no HyperNode",
                        node.node
                    );
                }
            }
        }
    }
}

#[test]
fn hypernodes_form_a_strict_tree_of_valid_names() {
    for (name, f) in fabrics() {
        let hns = volcano::hypernodes(&f, &LabelOptions::default());
        assert!(!hns.is_empty(), "{name}");
        let tiers: HashMap<&str, i32> = hns.iter().map(|h| (hn_name(h), h.spec.tier)).collect();
        assert_eq!(tiers.len(), hns.len(), "{name}: HyperNode names are unique");
        let mut member_of: HashMap<(&str, &str), usize> = HashMap::new();
        for h in &hns {
            assert_eq!(
                serde_json::to_value(h).unwrap()["apiVersion"],
                "topology.volcano.sh/v1alpha1"
            );
            assert!(names::is_valid_id(hn_name(h)), "{name}: {}", hn_name(h));
            assert!(
                !h.spec.members.is_empty(),
                "{name}: {} has no members (MinItems=1)",
                hn_name(h)
            );
            assert_eq!(labels_of(h)["volcano.sh/network-topology-source"], "spinel");
            for m in &h.spec.members {
                *member_of
                    .entry((m.member_type.as_str(), member_name(m)))
                    .or_default() += 1;
                match m.member_type.as_str() {
                    "Node" => assert_eq!(h.spec.tier, 1, "{name}: nodes only in tier 1"),
                    "HyperNode" => {
                        let child = tiers.get(member_name(m)).copied();
                        assert_eq!(child, Some(h.spec.tier - 1), "{name}: child one tier down");
                    }
                    other => panic!("{name}: member type {other}"),
                }
            }
        }
        assert!(
            member_of.values().all(|&n| n == 1),
            "{name}: a member with two parents"
        );
        let placed = f.hosts.iter().filter(|h| h.domain.is_some()).count();
        assert_eq!(
            member_of.keys().filter(|k| k.0 == "Node").count(),
            placed,
            "{name}"
        );
    }
}

#[test]
fn kueue_levels_are_the_label_keys_coarsest_first() {
    for (name, f) in fabrics() {
        for opts in label_modes() {
            let t = kueue::topology(&f, "spinel-fabric", &opts);
            let levels: Vec<&str> = t
                .spec
                .levels
                .iter()
                .map(|l| l.node_label.as_str())
                .collect();
            let mut want: Vec<String> = (1..=f.depth).rev().map(|k| opts.tier_key(k)).collect();
            want.push("kubernetes.io/hostname".into());
            assert_eq!(levels, want, "{name}");
            let used: BTreeSet<String> = labels::node_labels(&f, &opts)
                .into_iter()
                .flat_map(|n| n.labels.into_keys())
                .filter(|k| k.contains("tier-"))
                .collect();
            assert!(
                used.iter().all(|k| levels.contains(&k.as_str())),
                "{name}: {used:?}"
            );
        }
    }
}

/// Expands a Slurm hostlist (`h[1-3,5],x`) for checking.
fn expand(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = list;
    while !rest.is_empty() {
        let end = rest.find(',').unwrap_or(rest.len());
        let bracket = rest.find('[');
        if bracket.is_some_and(|b| b < end) {
            let b = bracket.unwrap();
            let close = rest.find(']').unwrap();
            let prefix = &rest[..b];
            for range in rest[b + 1..close].split(',') {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                let width = lo.len();
                for n in lo.parse::<u64>().unwrap()..=hi.parse::<u64>().unwrap() {
                    out.push(format!("{prefix}{n:0width$}"));
                }
            }
            rest = rest[close + 1..].trim_start_matches(',');
        } else {
            out.push(rest[..end].to_owned());
            rest = rest[end..].trim_start_matches(',');
        }
    }
    out
}

#[test]
fn slurm_places_every_placed_node_once_under_defined_switches() {
    for (name, f) in fabrics() {
        let conf = slurm::topology_conf(&f);
        let mut switches = BTreeMap::new();
        let mut nodes = Vec::new();
        let mut referenced = Vec::new();
        for line in conf.lines().filter(|l| !l.starts_with('#')) {
            let mut fields = line.split_whitespace();
            let sw = fields.next().unwrap().strip_prefix("SwitchName=").unwrap();
            assert!(
                switches.insert(sw.to_owned(), ()).is_none(),
                "{name}: {sw} twice"
            );
            let kv = fields.next().unwrap();
            if let Some(list) = kv.strip_prefix("Nodes=") {
                nodes.extend(expand(list));
            } else {
                referenced.extend(
                    kv.strip_prefix("Switches=")
                        .unwrap()
                        .split(',')
                        .map(str::to_owned),
                );
            }
        }
        assert!(
            referenced.iter().all(|s| switches.contains_key(s)),
            "{name}"
        );
        let mut placed: Vec<String> = f
            .hosts
            .iter()
            .filter(|h| h.domain.is_some())
            .map(|h| h.name.clone())
            .collect();
        placed.sort();
        nodes.sort();
        assert_eq!(nodes, placed, "{name}");
    }
}

#[test]
fn json_document_paths_match_the_labels() {
    for (name, f) in fabrics() {
        let doc = serde_json::to_value(json::document(&f)).unwrap();
        assert_eq!(doc["schema"], "spinel.dev/fabric/v1");
        assert_eq!(doc["summary"]["errors"], f.error_count());
        let opts = LabelOptions::default();
        for (host, node) in doc["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .zip(labels::node_labels(&f, &opts))
        {
            assert_eq!(host["name"], node.node.as_str());
            for (k, id) in host["path"].as_array().unwrap().iter().enumerate() {
                assert_eq!(
                    Some(id.as_str().unwrap()),
                    node.labels
                        .get(&opts.tier_key(k as u8 + 1))
                        .map(String::as_str),
                    "{name}"
                );
            }
        }
    }
}

#[test]
fn dot_draws_every_host_and_switch_and_marks_miswiring() {
    let (_, f) = fabrics().swap_remove(1);
    let text = dot::render(&f, dot::HostDetail::Each);
    assert!(text.starts_with("digraph fabric {") && text.trim_end().ends_with('}'));
    assert_eq!(text.matches('{').count(), text.matches('}').count());
    for (i, h) in f.hosts.iter().enumerate() {
        assert!(
            text.contains(&format!("h{i} [label=\"{}\"", h.name)),
            "{}",
            h.name
        );
    }
    for (i, s) in f.switches.iter().enumerate() {
        assert!(
            text.contains(&format!("s{i} [label=\"{}", s.name)),
            "{}",
            s.name
        );
    }
    // Edges point down the tree (switch to host), so count every red edge.
    let red = text
        .lines()
        .filter(|l| l.contains(" -> ") && l.contains("color=red"))
        .count();
    assert_eq!(
        red, 4,
        "h1's two swapped cables, h6's foreign cable, leaf4's missing uplink"
    );
    let summary = dot::render(&f, dot::HostDetail::Summary);
    assert!(summary.contains("4 hosts") && !summary.contains("ens1f0np0"));
}

#[test]
fn the_same_fabric_is_inferred_twice_byte_for_byte() {
    for (name, f) in fabrics() {
        let a = serde_json::to_string(&json::document(&f)).unwrap();
        let b = serde_json::to_string(&json::document(&f.clone())).unwrap();
        assert_eq!(a, b, "{name}");
    }
}

fn shuffled(tables: &[NeighborTable], seed: &[usize]) -> Vec<NeighborTable> {
    let mut out: Vec<NeighborTable> = tables.to_vec();
    let mut k = 0usize;
    let mut next = |n: usize| {
        k += 1;
        if n == 0 { 0 } else { seed[k % seed.len()] % n }
    };
    for i in (1..out.len()).rev() {
        let j = next(i + 1);
        out.swap(i, j);
    }
    for t in &mut out {
        for i in (1..t.ports.len()).rev() {
            let j = next(i + 1);
            t.ports.swap(i, j);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn input_order_never_changes_the_result(seed in proptest::collection::vec(0usize..1000, 2..40)) {
        let mut lab = Lab::two_rail_groups();
        lab.uncable("h1", NIC0).uncable("h1", NIC1).cable("h1", NIC0, "leaf2", "swp1").cable("h1", NIC1, "leaf1", "swp1");
        lab.uncable("leaf3", "swp52");
        let tables = lab.tables();
        let reference = infer(&tables, &InferOptions::default());
        let shuffled_tables = shuffled(&tables, &seed);
        let again = infer(&shuffled_tables, &InferOptions::default());
        prop_assert_eq!(&reference, &again);
        let a = serde_json::to_string(&json::document(&reference)).unwrap();
        let b = serde_json::to_string(&json::document(&again)).unwrap();
        prop_assert_eq!(a, b);
        // Duplicated tables (the same file given twice) change nothing either.
        let mut doubled = shuffled_tables.clone();
        doubled.extend(shuffled(&tables, &seed[1..]));
        prop_assert_eq!(&reference, &infer(&doubled, &InferOptions::default()));
    }
}
