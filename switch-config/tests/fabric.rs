//! The intent and topo-discovery's inferred fabric: an intent generated from LLDP tables, and
//! cabling checked against a written intent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use spinel_switch_config::check::{Kind, Severity};
use spinel_switch_config::inferred::{Template, check_cabling, intent_from_fabric};
use spinel_switch_config::intent::{self, Intent, SwitchOs};
use spinel_switch_config::plan::{FabricPlan, PortPeer};
use spinel_wire::neighbor::{
    Capabilities, Capability, ChassisId, ChassisIdSubtype, Neighbor, NeighborTable, Observer,
    PortId, PortIdSubtype, PortNeighbors, Role, SCHEMA,
};
use topo_discovery::fabric::{Fabric, InferOptions, infer};

fn example() -> Intent {
    intent::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabric-intent.yaml"))
        .unwrap()
}

fn neighbor(system: &str, port: &str, switch: bool) -> Neighbor {
    let mut n = Neighbor::new(
        ChassisId {
            subtype: ChassisIdSubtype::Local,
            value: system.into(),
        },
        PortId {
            subtype: PortIdSubtype::InterfaceName,
            value: port.into(),
        },
        120,
    );
    n.system_name = Some(system.into());
    let caps = if switch {
        vec![Capability::Bridge, Capability::Router]
    } else {
        vec![Capability::Station]
    };
    n.capabilities = Some(Capabilities {
        supported: caps.clone(),
        enabled: caps,
    });
    n
}

fn table(name: &str, role: Role, ports: Vec<(String, Neighbor)>) -> NeighborTable {
    NeighborTable {
        schema: SCHEMA.into(),
        observer: Observer {
            name: name.into(),
            chassis_id: Some(ChassisId {
                subtype: ChassisIdSubtype::Local,
                value: name.into(),
            }),
            role: Some(role),
        },
        ports: ports
            .into_iter()
            .map(|(port, n)| PortNeighbors {
                port,
                neighbors: vec![n],
                counters: None,
            })
            .collect(),
    }
}

/// The LLDP tables hosts and switches would print if cabled exactly as `intent` says.
fn tables_for(intent: &Intent) -> Vec<NeighborTable> {
    let plan = FabricPlan::new(intent);
    let mut tables: Vec<NeighborTable> = plan
        .hosts
        .iter()
        .map(|(host, nics)| {
            let ports = nics
                .iter()
                .map(|n| (n.nic.to_owned(), neighbor(n.switch, n.port, true)))
                .collect();
            table(host, Role::Host, ports)
        })
        .collect();
    for sp in &plan.switches {
        let ports = sp
            .ports
            .iter()
            .map(|p| {
                let n = match &p.peer {
                    PortPeer::Switch { switch, port } => neighbor(switch, port, true),
                    PortPeer::Host { host, nic, .. } => neighbor(host, nic, false),
                };
                (p.name.to_owned(), n)
            })
            .collect();
        tables.push(table(&sp.switch.name, Role::Switch, ports));
    }
    tables
}

fn inferred(intent: &Intent) -> Fabric {
    infer(&tables_for(intent), &InferOptions::default())
}

#[test]
fn a_fabric_cabled_as_designed_has_no_cabling_findings() {
    let i = example();
    let report = check_cabling(&i, &inferred(&i));
    assert!(report.findings.is_empty(), "{report:#?}");
}

#[test]
fn swapped_nics_are_named_with_where_they_are_and_should_be() {
    let i = example();
    let fabric = inferred(&i);
    // The written intent swaps node01 and node02 on leaf01; the fabric is cabled the other way.
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabric-intent.yaml"),
    )
    .unwrap()
    .replace("Ethernet0: node01/ens1f0np0", "Ethernet0: node02/ens1f0np0")
    .replace("Ethernet8: node02/ens1f0np0", "Ethernet8: node01/ens1f0np0");
    let swapped = Intent::parse(&text, "swapped.yaml").unwrap();
    let report = check_cabling(&swapped, &fabric);
    assert_eq!(report.errors(), 2, "{report:#?}");
    assert!(report.findings.iter().all(|f| f.kind == Kind::Cabling));
    let messages: Vec<&str> = report.findings.iter().map(|f| f.message.as_str()).collect();
    assert!(
        messages.contains(
            &"node01 ens1f0np0 is cabled to leaf01 Ethernet0; the intent says leaf01 Ethernet8"
        ),
        "{messages:#?}"
    );
    assert!(
        messages.contains(
            &"node02 ens1f0np0 is cabled to leaf01 Ethernet8; the intent says leaf01 Ethernet0"
        ),
        "{messages:#?}"
    );
}

#[test]
fn a_missing_uplink_is_one_error_naming_both_ends() {
    let i = example();
    let mut tables = tables_for(&i);
    // leaf04's link to spine02 is down (neither end sees it).
    for t in &mut tables {
        t.ports.retain(|p| {
            let n = &p.neighbors[0];
            !((t.observer.name == "leaf04" && n.system_name.as_deref() == Some("spine02"))
                || (t.observer.name == "spine02" && n.system_name.as_deref() == Some("leaf04")))
        });
    }
    let report = check_cabling(&i, &infer(&tables, &InferOptions::default()));
    let errors: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{report:#?}");
    assert!(
        errors[0]
            .message
            .contains("leaf04 Ethernet32/1 — spine02 Ethernet1/4"),
        "{}",
        errors[0].message
    );
}

#[test]
fn an_intent_generated_from_the_fabric_is_valid_and_matches_it() {
    let i = example();
    let fabric = inferred(&i);
    let t = Template {
        fabric: "gpu-a".into(),
        leaf_os: SwitchOs::Cumulus,
        spine_os: SwitchOs::Eos,
        leaf_version: Some("5.15".into()),
        spine_version: Some("4.33".into()),
        spine_platform: Some(spinel_switch_config::intent::software::EosPlatform::Sand),
        ..Template::default()
    };
    let generated = intent_from_fabric(&fabric, &t).unwrap();
    let issues: Vec<_> = intent::validate(&generated)
        .into_iter()
        .filter(|i| i.is_error())
        .collect();
    assert!(issues.is_empty(), "{issues:#?}");
    assert!(check_cabling(&generated, &fabric).findings.is_empty());
    let plan = FabricPlan::new(&generated);
    let original = FabricPlan::new(&i);
    assert_eq!(plan.hosts.len(), 4);
    for (host, nics) in &original.hosts {
        let got: Vec<(&str, &str, &str)> = plan.hosts[host]
            .iter()
            .map(|n| (n.nic, n.switch, n.port))
            .collect();
        let want: Vec<(&str, &str, &str)> =
            nics.iter().map(|n| (n.nic, n.switch, n.port)).collect();
        assert_eq!(got, want, "{host}");
    }
    // Written out and read back, it is the same intent (and the same bytes twice).
    let yaml = intent::to_yaml(&generated).unwrap();
    assert_eq!(Intent::parse(&yaml, "generated.yaml").unwrap(), generated);
    assert_eq!(
        intent::to_yaml(&intent_from_fabric(&fabric, &t).unwrap()).unwrap(),
        yaml
    );
}
