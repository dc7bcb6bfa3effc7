//! The manifests in deploy/controller: RBAC grants exactly what the controller uses and
//! nothing on Nodes; the sample switch-table ConfigMap is read as the controller reads it.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;
use spinel_fabric_controller::inputs::switches::from_config_map;

fn documents(file: &str) -> Vec<Value> {
    let path = format!("{}/../deploy/controller/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.split("\n---\n")
        .filter(|d| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
        })
        .map(|d| serde_saphyr::from_str::<Value>(d).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

#[test]
fn rbac_grants_only_what_the_controller_uses_and_nothing_on_nodes() {
    let mut granted = Vec::new();
    for doc in documents("rbac.yaml") {
        if doc["kind"] != "ClusterRole" && doc["kind"] != "Role" {
            continue;
        }
        let ns = doc["metadata"]["namespace"].as_str().unwrap_or("*");
        for rule in doc["rules"].as_array().unwrap() {
            let names = rule["resourceNames"].as_array().map_or(String::new(), |n| {
                format!(
                    "({})",
                    n.iter()
                        .map(|v| v.as_str().unwrap())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            });
            for group in rule["apiGroups"].as_array().unwrap() {
                for res in rule["resources"].as_array().unwrap() {
                    for verb in rule["verbs"].as_array().unwrap() {
                        granted.push(format!(
                            "{ns}:{}/{}{names}:{}",
                            group.as_str().unwrap(),
                            res.as_str().unwrap(),
                            verb.as_str().unwrap()
                        ));
                    }
                }
            }
        }
    }
    granted.sort();
    assert!(
        !granted.iter().any(|g| g.contains("/nodes")),
        "{granted:#?}"
    );
    assert_eq!(
        granted,
        [
            "*:fabric.spinel.dev/fabrics/status:patch",
            "*:fabric.spinel.dev/fabrics:create",
            "*:fabric.spinel.dev/fabrics:get",
            "*:fabric.spinel.dev/fabrics:list",
            "*:fabric.spinel.dev/fabrics:patch",
            "*:fabric.spinel.dev/fabrics:watch",
            "*:fabric.spinel.dev/nodefabrics/status:patch",
            "*:fabric.spinel.dev/nodefabrics:get",
            "*:fabric.spinel.dev/nodefabrics:list",
            "*:fabric.spinel.dev/nodefabrics:watch",
            "*:kueue.x-k8s.io/topologies:create",
            "*:kueue.x-k8s.io/topologies:get",
            "*:kueue.x-k8s.io/topologies:list",
            "*:kueue.x-k8s.io/topologies:patch",
            "*:kueue.x-k8s.io/topologies:watch",
            "*:topology.volcano.sh/hypernodes:create",
            "*:topology.volcano.sh/hypernodes:delete",
            "*:topology.volcano.sh/hypernodes:get",
            "*:topology.volcano.sh/hypernodes:list",
            "*:topology.volcano.sh/hypernodes:patch",
            "*:topology.volcano.sh/hypernodes:watch",
            "default:events.k8s.io/events:create",
            "spinel-system:/configmaps(spinel-switch-tables):get",
            "spinel-system:/configmaps(spinel-switch-tables):list",
            "spinel-system:/configmaps(spinel-switch-tables):watch",
            "spinel-system:coordination.k8s.io/leases(spinel-fabric-controller):get",
            "spinel-system:coordination.k8s.io/leases(spinel-fabric-controller):update",
            "spinel-system:coordination.k8s.io/leases:create",
        ]
    );
}

#[test]
fn the_deployment_runs_two_replicas_with_the_names_rbac_grants() {
    let docs = documents("deployment.yaml");
    let deploy = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    assert_eq!(deploy["spec"]["replicas"], 2);
    let pod = &deploy["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "spinel-fabric-controller");
    let args: Vec<&str> = pod["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&"--switch-tables-configmap=spinel-switch-tables"));
}

#[test]
fn the_sample_switch_tables_are_read_as_the_controller_reads_them() {
    let doc = documents("switch-tables.sample.yaml").remove(0);
    let cm: ConfigMap = serde_json::from_value(doc).unwrap();
    let entries = from_config_map(&cm);
    assert_eq!(entries.len(), 1);
    let captures = entries.values().next().unwrap().captures.as_ref().unwrap();
    let t = &captures[0].table;
    assert_eq!(t.observer.name, "spine1");
    let seen: Vec<_> = t
        .ports
        .iter()
        .flat_map(|p| {
            p.neighbors
                .iter()
                .map(move |n| (p.port.as_str(), n.system_name.as_deref()))
        })
        .collect();
    assert_eq!(seen, [("swp1", Some("leaf1")), ("swp2", Some("leaf2"))]);
}
