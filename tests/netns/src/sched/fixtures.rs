//! Recorded extender traffic as fixtures: with `SPINEL_RECORD_FIXTURES=1`, a scheduler test
//! keeps what kube-scheduler sent the extender and what it answered, with the cluster it
//! happened in, under `scheduler/tests/fixtures/recorded/NAME/`; `scheduler/tests/recorded.rs`
//! replays them against the extender.

use std::path::Path;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1alpha2::PodGroup;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use super::Exchange;
use super::objects::TEST_LABEL;

/// Set to record fixtures.
pub const RECORD_ENV: &str = "SPINEL_RECORD_FIXTURES";

/// Records `exchanges` as fixtures named `name` when [`RECORD_ENV`] is set: each request body
/// exactly as kube-scheduler sent it and the reply, an index in order (`exchanges.json`), the
/// test's Nodes, Pods and PodGroups at the end without managedFields (`nodes.json`,
/// `pods.json`, `podgroups.json`), from which the replay rebuilds the cluster, and the
/// `timeline` of node changes the test made in between (`{"at": EXCHANGE, "node": NAME,
/// "degraded": BOOL}`: the extender had seen the change before exchange `at`).
pub async fn record_fixtures(
    admin: &kube::Client,
    name: &str,
    exchanges: &[Exchange],
    timeline: &[Value],
) {
    if std::env::var_os(RECORD_ENV).is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scheduler/tests/fixtures/recorded")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the fixture directory");
    let mut index = Vec::new();
    for (i, e) in exchanges.iter().enumerate() {
        let verb = e.path.trim_start_matches('/');
        let request = format!("{i:03}-{verb}.json");
        let reply = format!("{i:03}-{verb}.reply.json");
        std::fs::write(dir.join(&request), &e.request).expect("write a request");
        std::fs::write(dir.join(&reply), &e.reply).expect("write a reply");
        index.push(
            json!({"path": e.path, "status": e.status, "pod": e.pod_name(),
                          "request": request, "reply": reply}),
        );
    }
    let lp = ListParams::default().labels(&format!("{TEST_LABEL}=true"));
    let nodes = Api::<Node>::all(admin.clone())
        .list(&lp)
        .await
        .expect("list nodes");
    let pods = Api::<Pod>::all(admin.clone())
        .list(&lp)
        .await
        .expect("list pods");
    let write = |file: &str, v: &Value| {
        let text = serde_json::to_string_pretty(v).expect("JSON") + "\n";
        std::fs::write(dir.join(file), text).expect("write a fixture");
    };
    // Served only with GenericWorkload on; none recorded otherwise.
    let groups = Api::<PodGroup>::all(admin.clone())
        .list(&ListParams::default())
        .await
        .map(|l| serde_json::to_value(l).expect("pod groups"))
        .unwrap_or_else(|_| json!({"items": []}));
    write("exchanges.json", &json!(index));
    write("timeline.json", &json!(timeline));
    write("podgroups.json", &without_managed_fields(groups));
    write(
        "nodes.json",
        &without_managed_fields(serde_json::to_value(nodes).expect("nodes")),
    );
    write(
        "pods.json",
        &without_managed_fields(serde_json::to_value(pods).expect("pods")),
    );
}

fn without_managed_fields(mut list: Value) -> Value {
    for item in list["items"].as_array_mut().into_iter().flatten() {
        if let Some(meta) = item["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
    }
    list
}
