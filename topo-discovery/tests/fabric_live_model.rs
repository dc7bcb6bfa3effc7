//! The incremental model (issue 20): after every change of a random sequence (recable, swap,
//! unplug, add, remove, rename a host; a switch's table late or gone) the live model equals a
//! full inference over the same tables, as a model and byte for byte in its outputs (labels,
//! HyperNodes, Kueue Topology, findings).

// Test helpers panic on unexpected input: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use spinel_api::labels::LabelOptions;
use spinel_wire::neighbor::{NeighborTable, Role};
use topo_discovery::fabric::live::{Change, Delta, HostReport, LiveFabric};
use topo_discovery::fabric::synthetic::Lab;
use topo_discovery::fabric::{CompactTable, Fabric, RailKey, kueue, labels, volcano};
use topo_discovery::sources::{Capture, Format, NamedBy};

/// `groups` rail groups of `rails` leaves under two spines, `per_group` hosts each.
fn lab(groups: usize, rails: usize, per_group: usize) -> Lab {
    let mut lab = Lab::new();
    lab.switch("spine1").switch("spine2");
    let nics: Vec<String> = (0..rails).map(|k| format!("ens{}f0np0", k + 1)).collect();
    let refs: Vec<&str> = nics.iter().map(String::as_str).collect();
    for g in 1..=groups {
        for k in 0..rails {
            let leaf = format!("leaf{g}-{k}");
            lab.switch(&leaf);
            for s in 1..=2 {
                let n = (g - 1) * rails + k + 1;
                lab.cable(
                    &leaf,
                    &format!("swp{}", 50 + s),
                    &format!("spine{s}"),
                    &format!("swp{n}"),
                );
            }
            for p in 1..=per_group + 2 {
                lab.free_port(&leaf, &format!("swp{p}"));
            }
        }
        for h in 1..=per_group {
            let host = format!("h{g}x{h}");
            lab.host(&host, &refs);
            for (k, nic) in nics.iter().enumerate() {
                lab.cable(&host, nic, &format!("leaf{g}-{k}"), &format!("swp{h}"));
            }
        }
    }
    lab
}

fn capture(t: &NeighborTable) -> Capture {
    Capture {
        table: t.clone(),
        advertised: Vec::new(),
        format: Format::Spinel,
        own_capabilities: None,
        observer_named_by: NamedBy::Capture,
        source: None,
    }
}

fn report(t: &NeighborTable) -> HostReport {
    HostReport {
        table: Some(std::sync::Arc::new(CompactTable::from_table(t))),
        nics: t.ports.iter().map(|p| p.port.clone()).collect(),
    }
}

/// The changes that turn `before`'s tables into `after`'s.
fn changes(before: &[NeighborTable], after: &[NeighborTable]) -> Vec<Change> {
    let by_name = |ts: &[NeighborTable]| -> BTreeMap<String, NeighborTable> {
        ts.iter()
            .map(|t| (t.observer.name.clone(), t.clone()))
            .collect()
    };
    let (b, a) = (by_name(before), by_name(after));
    let mut out = Vec::new();
    for name in b
        .keys()
        .chain(a.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (x, y) = (b.get(name), a.get(name));
        if x == y {
            continue;
        }
        let is_host = |t: &NeighborTable| t.observer.role == Some(Role::Host);
        let host = x.or(y).is_some_and(is_host);
        out.push(if host {
            Change::Host(name.clone(), y.map(report))
        } else {
            Change::Switches(
                name.clone(),
                y.map(|t| std::sync::Arc::new(vec![capture(t)])),
            )
        });
    }
    out
}

/// The outputs, rendered.
fn outputs(f: &Fabric) -> (String, String, String, String) {
    let o = LabelOptions::default();
    (
        serde_json::to_string(&labels::node_objects(f, &o)).unwrap(),
        serde_json::to_string(&volcano::hypernodes(f, &o)).unwrap(),
        serde_json::to_string(&kueue::topology(f, "spinel-fabric", &o)).unwrap(),
        serde_json::to_string(&f.findings).unwrap(),
    )
}

fn assert_like_full(live: &LiveFabric, step: &str) {
    let (builder, _) = live.builder();
    let full = builder.infer(&live.options());
    assert_eq!(outputs(live.fabric()), outputs(&full), "{step}");
    assert!(
        *live.fabric() == full,
        "{step}: the model differs beyond its outputs"
    );
}

#[derive(Debug, Clone)]
enum Op {
    Swap(usize),
    Recable(usize, usize, usize, usize),
    Unplug(usize, usize),
    Replug(usize),
    Remove(usize),
    Add(usize),
    Rename(usize),
    DropSwitch(usize),
    AddSwitch(usize),
    Hub(usize, usize, usize),
    RenameNic(usize, usize),
    OnSpine(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<usize>().prop_map(Op::Swap),
        4 => (any::<usize>(), any::<usize>(), any::<usize>(), 1usize..8)
            .prop_map(|(h, n, l, p)| Op::Recable(h, n, l, p)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(h, n)| Op::Unplug(h, n)),
        2 => any::<usize>().prop_map(Op::Replug),
        1 => any::<usize>().prop_map(Op::Remove),
        1 => any::<usize>().prop_map(Op::Add),
        1 => any::<usize>().prop_map(Op::Rename),
        1 => any::<usize>().prop_map(Op::DropSwitch),
        1 => any::<usize>().prop_map(Op::AddSwitch),
        2 => (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(h, n, l)| Op::Hub(h, n, l)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(h, n)| Op::RenameNic(h, n)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(h, n)| Op::OnSpine(h, n)),
    ]
}

/// Applies `op` to the tables (host tables edited in place, as an agent would report).
fn apply(op: &Op, tables: &mut Vec<NeighborTable>, spare: &mut Vec<NeighborTable>, base: &Lab) {
    let hosts: Vec<usize> = (0..tables.len())
        .filter(|&i| tables[i].observer.role == Some(Role::Host))
        .collect();
    let leaves: Vec<NeighborTable> = base
        .tables()
        .into_iter()
        .filter(|t| t.observer.name.starts_with("leaf"))
        .collect();
    let pick = |i: usize| hosts.get(i % hosts.len().max(1)).copied();
    match *op {
        Op::Swap(h) => {
            if let Some(h) = pick(h)
                && tables[h].ports.len() >= 2
            {
                let (a, b) = tables[h].ports.split_at_mut(1);
                std::mem::swap(&mut a[0].neighbors, &mut b[0].neighbors);
            }
        }
        Op::Recable(h, n, l, p) => {
            if let Some(h) = pick(h) {
                let leaf = &leaves[l % leaves.len()];
                let len = tables[h].ports.len().max(1);
                if let Some(port) = tables[h].ports.get_mut(n % len) {
                    let mut n = topo_discovery_neighbor(leaf, &format!("swp{p}"));
                    n.system_name = Some(leaf.observer.name.clone());
                    port.neighbors = vec![n];
                }
            }
        }
        Op::Unplug(h, n) => {
            if let Some(h) = pick(h) {
                let len = tables[h].ports.len().max(1);
                if let Some(port) = tables[h].ports.get_mut(n % len) {
                    port.neighbors.clear();
                }
            }
        }
        Op::Replug(h) => {
            if let Some(h) = pick(h) {
                let name = tables[h].observer.name.clone();
                if let Some(t) = base.tables().into_iter().find(|t| t.observer.name == name) {
                    tables[h] = t;
                }
            }
        }
        Op::Remove(h) => {
            if let Some(h) = pick(h) {
                spare.push(tables.remove(h));
            }
        }
        Op::Add(i) => {
            if !spare.is_empty() {
                let t = spare.remove(i % spare.len());
                tables.push(t);
            }
        }
        Op::Rename(h) => {
            if let Some(h) = pick(h) {
                let t = &mut tables[h];
                t.observer.name = format!("{}r", t.observer.name);
            }
        }
        Op::Hub(h, n, l) => {
            // A second leaf on the NIC, through a hub: several neighbours.
            if let Some(h) = pick(h) {
                let leaf = &leaves[l % leaves.len()];
                let len = tables[h].ports.len().max(1);
                if let Some(port) = tables[h].ports.get_mut(n % len) {
                    let mut n = topo_discovery_neighbor(leaf, "swp9");
                    n.system_name = Some(leaf.observer.name.clone());
                    port.neighbors.push(n);
                }
            }
        }
        Op::RenameNic(h, n) => {
            if let Some(h) = pick(h) {
                let len = tables[h].ports.len().max(1);
                if let Some(port) = tables[h].ports.get_mut(n % len) {
                    port.port = format!("odd{n}");
                }
            }
        }
        Op::OnSpine(h, n) => {
            if let Some(h) = pick(h) {
                let spine = base
                    .tables()
                    .into_iter()
                    .find(|t| t.observer.name == "spine1")
                    .unwrap();
                let len = tables[h].ports.len().max(1);
                if let Some(port) = tables[h].ports.get_mut(n % len) {
                    let mut n = topo_discovery_neighbor(&spine, "swp40");
                    n.system_name = Some("spine1".into());
                    port.neighbors = vec![n];
                }
            }
        }
        Op::DropSwitch(s) => {
            let switches: Vec<usize> = (0..tables.len())
                .filter(|&i| tables[i].observer.role == Some(Role::Switch))
                .collect();
            if !switches.is_empty() {
                spare.push(tables.remove(switches[s % switches.len()]));
            }
        }
        Op::AddSwitch(i) => {
            let late: Vec<usize> = (0..spare.len())
                .filter(|&j| spare[j].observer.role == Some(Role::Switch))
                .collect();
            if !late.is_empty() {
                tables.push(spare.remove(late[i % late.len()]));
            }
        }
    }
}

/// What a host NIC sees of `leaf`'s port `port`.
fn topo_discovery_neighbor(leaf: &NeighborTable, port: &str) -> spinel_wire::neighbor::Neighbor {
    use spinel_wire::neighbor::{Capabilities, Capability, Neighbor, PortId, PortIdSubtype};
    Neighbor {
        capabilities: Some(Capabilities {
            supported: vec![Capability::Bridge, Capability::Router],
            enabled: vec![Capability::Bridge, Capability::Router],
        }),
        ..Neighbor::new(
            leaf.observer.chassis_id.clone().unwrap(),
            PortId {
                subtype: PortIdSubtype::InterfaceName,
                value: port.to_owned(),
            },
            120,
        )
    }
}

fn start(lab: &Lab) -> (LiveFabric, Vec<NeighborTable>) {
    let tables = lab.tables();
    let mut live = LiveFabric::new(RailKey::NicName);
    assert_eq!(live.apply(changes(&[], &tables)), Delta::Everything);
    assert_like_full(&live, "start");
    (live, tables)
}

#[test]
fn a_swapped_pair_of_cables_is_taken_in_host_by_host() {
    let base = lab(2, 2, 4);
    let (mut live, mut tables) = start(&base);
    let before = tables.clone();
    apply(&Op::Swap(0), &mut tables, &mut Vec::new(), &base);
    let delta = live.apply(changes(&before, &tables));
    assert_eq!(live.stats().fast, 1, "the host-local path: {delta:?}");
    let Delta::Hosts { hosts, .. } = &delta else {
        panic!("{delta:?}")
    };
    assert!(hosts.contains("h1x1"), "{hosts:?}");
    assert_like_full(&live, "swap");
    assert!(
        live.fabric()
            .findings
            .iter()
            .any(|f| f.host.as_deref() == Some("h1x1")),
        "the swap is reported"
    );
    // And back.
    let after = tables.clone();
    apply(&Op::Replug(0), &mut tables, &mut Vec::new(), &base);
    live.apply(changes(&after, &tables));
    assert_eq!(live.stats().fast, 2);
    assert_like_full(&live, "replug");
    assert!(live.fabric().findings.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_live_model_equals_a_full_inference_after_every_change(
        groups in 1usize..=3,
        rails in 2usize..=3,
        per_group in 2usize..=5,
        ops in prop::collection::vec(op(), 1..24),
    ) {
        let base = lab(groups, rails, per_group);
        let (mut live, mut tables) = start(&base);
        let mut spare = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let before = tables.clone();
            apply(op, &mut tables, &mut spare, &base);
            live.apply(changes(&before, &tables));
            assert_like_full(&live, &format!("step {i}: {op:?}"));
        }
    }
}
