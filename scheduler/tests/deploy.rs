//! The manifests in deploy/scheduler: they parse, the scheduler configuration keeps every node
//! in view and the extender mandatory, and RBAC grants nothing beyond what the scheduler uses.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

fn documents(file: &str) -> Vec<Value> {
    let path = format!("{}/../deploy/scheduler/{file}", env!("CARGO_MANIFEST_DIR"));
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
fn the_scheduler_configuration_keeps_every_node_and_the_extender_mandatory() {
    let cfg = &documents("kube-scheduler-config.yaml")[0];
    assert_eq!(cfg["kind"], "KubeSchedulerConfiguration");
    assert_eq!(cfg["percentageOfNodesToScore"], 100);
    let ext = &cfg["extenders"][0];
    assert_eq!(ext["filterVerb"], "filter");
    assert_eq!(ext["prioritizeVerb"], "prioritize");
    assert_eq!(ext["nodeCacheCapable"], true);
    assert_eq!(ext["ignorable"], false);
    assert!(ext["weight"].as_i64().unwrap() > 0);
}

#[test]
fn rbac_grants_only_what_the_scheduler_uses() {
    let mut granted = Vec::new();
    for doc in documents("rbac.yaml") {
        if doc["kind"] == "ClusterRole" || doc["kind"] == "Role" {
            for rule in doc["rules"].as_array().unwrap() {
                for group in rule["apiGroups"].as_array().unwrap() {
                    for res in rule["resources"].as_array().unwrap() {
                        for verb in rule["verbs"].as_array().unwrap() {
                            granted.push(format!(
                                "{}/{}:{}",
                                group.as_str().unwrap(),
                                res.as_str().unwrap(),
                                verb.as_str().unwrap()
                            ));
                        }
                    }
                }
            }
        }
    }
    granted.sort();
    assert_eq!(
        granted,
        [
            "/nodes:get",
            "/nodes:list",
            "/nodes:watch",
            "/pods/eviction:create",
            "/pods:get",
            "/pods:list",
            "/pods:patch",
            "/pods:watch",
            "coordination.k8s.io/leases:create",
            "coordination.k8s.io/leases:get",
            "coordination.k8s.io/leases:update",
            "events.k8s.io/events:create",
            "scheduling.k8s.io/podgroups:get",
            "scheduling.k8s.io/podgroups:list",
            "scheduling.k8s.io/podgroups:watch",
        ]
    );
    let deployment = documents("deployment.yaml");
    let pod = &deployment[0]["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "spinel-scheduler");
    // More than one replica only with leader election: two deciders would double-book.
    let replicas = deployment[0]["spec"]["replicas"].as_i64().unwrap();
    let args = pod["containers"][0]["args"].as_array().unwrap();
    assert!(replicas == 1 || args.iter().any(|a| a == "--leader-elect"));
    assert_eq!(
        pod["containers"][0]["readinessProbe"]["httpGet"]["path"],
        "/readyz"
    );
    // Its own Lease; no finalizers or owners on pods (each a policy and its binding).
    assert_eq!(documents("admission-policy.yaml").len(), 4);
}
