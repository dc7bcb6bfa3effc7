//! The controller's decisions without an API server: what it would write for a small
//! rail-optimised fabric (two leaf groups under two spines), and what it would not.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeMap, HashSet};

use spinel_api::crd::NodeFabricStatus;
use spinel_api::labels::LabelOptions;
use spinel_api::volcano::HyperNode;
use spinel_fabric_controller::desired::{self, Desired, MANAGED_BY_LABEL, Settings};
use spinel_fabric_controller::inputs::switches::parse_entry;
use spinel_fabric_controller::inputs::{HostTable, Inputs, NodeReport};
use spinel_fabric_controller::publish::{Observed, Write, plan};
use spinel_wire::neighbor::Role;
use topo_discovery::fabric::RailKey;
use topo_discovery::fabric::synthetic::{Lab, TWO_RAIL_NICS};

fn settings() -> Settings {
    Settings {
        labels: LabelOptions::default(),
        topology_name: "spinel-fabric".into(),
    }
}

fn report(lab: &Lab, host: &str, generation: i64) -> NodeReport {
    let table = lab
        .tables()
        .into_iter()
        .find(|t| t.observer.name == host)
        .unwrap();
    NodeReport {
        uid: format!("uid-{host}"),
        generation,
        nics: TWO_RAIL_NICS.iter().map(|n| (*n).to_owned()).collect(),
        table: HostTable::parse(host, &serde_json::to_value(&table).unwrap()),
    }
}

/// The hosts' reports from `lab`, the switches' tables as one ConfigMap.
fn inputs(lab: &Lab) -> Inputs {
    let mut inputs = Inputs::new(RailKey::NicName);
    let mut switches = BTreeMap::new();
    for t in lab.tables() {
        if t.observer.role == Some(Role::Switch) {
            let bytes = serde_json::to_vec(&t).unwrap();
            let key = format!("{}.json", t.observer.name);
            switches.insert(key.clone(), parse_entry(&key, &key, bytes));
        } else {
            let name = t.observer.name.clone();
            inputs.upsert_node(name.clone(), report(lab, &name, 1));
        }
    }
    inputs.set_switch_source("configmap", switches);
    inputs
}

/// What the API server holds after every write of `d` went through.
fn written(d: &Desired) -> (Observed, HashSet<String>) {
    let mut o = Observed::default();
    o.statuses.begin_list();
    o.hypernodes.begin_list();
    o.topologies.begin_list();
    o.fabrics.begin_list();
    for (n, s) in &d.statuses {
        o.statuses.apply(n.clone(), Some(1), Some(s.clone()));
    }
    for (n, h) in d.hypernodes.as_ref().unwrap() {
        o.hypernodes.apply(n.clone(), Some(1), h.clone());
    }
    let t = d.topology.clone().unwrap();
    o.topologies
        .apply(t.metadata.name.clone().unwrap(), Some(1), t);
    o.fabrics
        .apply("default".into(), Some(1), Some(d.fabric.clone()));
    o.statuses.end_list();
    o.hypernodes.end_list();
    o.topologies.end_list();
    o.fabrics.end_list();
    (o, d.events.iter().map(|e| e.name.clone()).collect())
}

#[test]
fn an_unchanged_fabric_is_byte_identical_and_writes_nothing() {
    let lab = Lab::two_rail_groups();
    let first = desired::compute(&inputs(&lab), &settings());
    let again = desired::compute(&inputs(&lab), &settings());
    let json = |d: &Desired| {
        serde_json::to_string(&(&d.statuses, &d.hypernodes, &d.topology, &d.fabric)).unwrap()
    };
    assert_eq!(json(&first), json(&again));
    let h1 = &first.statuses["h1"];
    assert_eq!(
        h1.labels["fabric.spinel.dev/tier-1"],
        h1.tier1.clone().unwrap()
    );
    assert!(h1.labels.contains_key("fabric.spinel.dev/tier-2"), "{h1:?}");
    assert_eq!(h1.observed_generation, 1);
    assert_eq!(first.fabric.hosts, 8);
    assert_eq!(first.fabric.tiers, 2);
    assert_eq!(
        first.hypernodes.as_ref().unwrap().len(),
        3,
        "two leaf groups, one spine domain"
    );

    let (observed, emitted) = written(&first);
    assert!(observed.listed());
    assert_eq!(plan(&again, &observed, "default", &emitted), []);
    // Nothing observed yet: everything is written, the Fabric object before its status.
    let (mut empty, none) = (Observed::default(), HashSet::new());
    empty.statuses = observed.statuses.clone();
    let writes = plan(&first, &empty, "default", &none);
    assert_eq!(
        writes
            .iter()
            .filter(|w| matches!(w, Write::HyperNode(_)))
            .count(),
        3
    );
    let fabric_at = writes
        .iter()
        .position(|w| matches!(w, Write::FabricObject(_)))
        .unwrap();
    assert!(matches!(writes[fabric_at + 1], Write::FabricStatus(..)));
}

#[test]
fn a_recabled_host_changes_its_own_status_and_nothing_else_of_any_node() {
    let lab = Lab::two_rail_groups();
    let mut inputs = inputs(&lab);
    let before = desired::compute(&inputs, &settings());
    let (observed, emitted) = written(&before);

    let mut moved = lab.clone();
    moved
        .uncable("h1", TWO_RAIL_NICS[0])
        .uncable("h1", TWO_RAIL_NICS[1])
        .cable("h1", TWO_RAIL_NICS[0], "leaf3", "swp9")
        .cable("h1", TWO_RAIL_NICS[1], "leaf4", "swp9");
    assert!(inputs.upsert_node("h1".into(), report(&moved, "h1", 2)));
    let after = desired::compute(&inputs, &settings());
    let writes = plan(&after, &observed, "default", &emitted);
    let statuses: Vec<&str> = writes
        .iter()
        .filter_map(|w| match w {
            Write::NodeStatus(n, _) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, ["h1"]);
    let (old, new) = (&before.statuses["h1"], &after.statuses["h1"]);
    assert_ne!(old.tier1, new.tier1);
    assert_eq!(new.tier1, after.statuses["h5"].tier1);
    assert_eq!(new.observed_generation, 2);
    // The two leaf groups' HyperNodes change membership; the spine domain does not.
    let hypernodes: Vec<&HyperNode> = writes
        .iter()
        .filter_map(|w| match w {
            Write::HyperNode(h) => Some(&**h),
            _ => None,
        })
        .collect();
    assert_eq!(hypernodes.len(), 2, "{writes:#?}");
    assert!(hypernodes.iter().all(|h| h.spec.tier == 1));
}

#[test]
fn hypernodes_of_other_sources_are_left_alone_and_ours_are_removed_when_stale() {
    let lab = Lab::two_rail_groups();
    let d = desired::compute(&inputs(&lab), &settings());
    let (mut observed, emitted) = written(&d);
    let (name, ours) = d.hypernodes.as_ref().unwrap().iter().next().unwrap();
    let mut foreign = ours.clone();
    foreign
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .remove(MANAGED_BY_LABEL);
    foreign.spec.members.clear();
    observed.hypernodes.apply(name.clone(), Some(2), foreign);
    let mut stale = ours.clone();
    stale.metadata.name = Some("gone-domain".into());
    observed
        .hypernodes
        .apply("gone-domain".into(), Some(2), stale);
    let writes = plan(&d, &observed, "default", &emitted);
    assert!(writes.contains(&Write::DeleteHyperNode("gone-domain".into())));
    assert!(!writes.iter().any(|w| matches!(w, Write::HyperNode(_))));
    let status = writes
        .iter()
        .find_map(|w| match w {
            Write::FabricStatus(_, s) => Some(s),
            _ => None,
        })
        .expect("the conflict is reported");
    assert!(
        status
            .findings
            .iter()
            .any(|f| f.kind == "hypernode_conflict" && f.message.contains(name.as_str()))
    );
    // Planned from what changed (here: nothing of the HyperNodes), the summary is the same:
    // the conflict is counted whatever changed, so the summary does not flip between plans.
    let dirty = spinel_fabric_controller::desired::Dirty::default();
    let only = spinel_fabric_controller::publish::plan_changes(
        &d,
        &observed,
        "default",
        &emitted,
        Some(&dirty),
    );
    let summary = only.iter().find_map(|w| match w {
        Write::FabricStatus(_, s) => Some(s),
        _ => None,
    });
    assert_eq!(summary, Some(status));
    assert!(
        !only.iter().any(|w| matches!(w, Write::DeleteHyperNode(_))),
        "a stale HyperNode no change touched waits for a plan of everything"
    );
}

#[test]
fn with_no_host_placed_the_outputs_are_held_and_unusable_reports_named() {
    let lab = Lab::two_rail_groups();
    let mut inputs = inputs(&lab);
    for h in 1..=8 {
        let name = format!("h{h}");
        let mut r = report(&lab, &name, 2);
        r.table = HostTable::parse(&name, &serde_json::json!({"schema": "x"}));
        inputs.upsert_node(name, r);
    }
    let d = desired::compute(&inputs, &settings());
    assert_eq!(d.hypernodes, None);
    assert_eq!(d.topology, None);
    assert_eq!(d.fabric.hosts, 0);
    assert_eq!(d.fabric.unusable_reports.len(), 8);
    assert!(d.fabric.unusable_reports["NodeFabric/h3"].contains("schema"));
    let h3: &NodeFabricStatus = &d.statuses["h3"];
    assert!(h3.labels.is_empty());
    assert_eq!(h3.findings[0].kind, "unusable_report");
    assert!(d.events.iter().any(|e| e.reason == "UnusableReport"));
}

#[test]
fn the_live_model_plans_a_swapped_host_like_a_full_recompute() {
    use spinel_fabric_controller::desired::Model;
    use spinel_fabric_controller::publish::plan_changes;
    let lab = Lab::two_rail_groups();
    let mut inputs = inputs(&lab);
    let mut model = Model::new(&inputs);
    assert!(
        model.update(&mut inputs, &settings()).is_none(),
        "first: everything"
    );
    let (observed, emitted) = written(model.desired().unwrap());

    let [nic0, nic1] = TWO_RAIL_NICS;
    let mut moved = lab.clone();
    moved
        .uncable("h1", nic0)
        .uncable("h1", nic1)
        .cable("h1", nic0, "leaf2", "swp1")
        .cable("h1", nic1, "leaf1", "swp1");
    assert!(inputs.upsert_node("h1".into(), report(&moved, "h1", 2)));
    let dirty = model.update(&mut inputs, &settings());
    let dirty = dirty.expect("a swap is taken in host by host");
    assert!(dirty.nodes.contains("h1"), "{dirty:?}");
    assert_eq!(model.stats(), (1, 1));
    let live = model.desired().unwrap();
    let full = desired::compute(&inputs, &settings());
    assert_eq!(
        live, &full,
        "the live model's desired state is the full recompute's"
    );
    let writes = plan_changes(live, &observed, "default", &emitted, Some(&dirty));
    assert_eq!(writes, plan(&full, &observed, "default", &emitted));
    assert!(
        writes
            .iter()
            .any(|w| matches!(w, Write::NodeStatus(n, _) if n == "h1")),
        "{writes:?}"
    );
}
