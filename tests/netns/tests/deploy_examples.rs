//! `deploy/examples/`, as an operator copies it: every NetworkAttachmentDefinition's config is
//! one the real `spinel` accepts (STATUS parses and checks the whole configuration), each names
//! a resource the SR-IOV device plugin's configuration creates, and the training pods ask for
//! those networks and resources. (The API server's side is tests/helm/test.sh: it applies them.)

// A test fails loudly on what it cannot read.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use spinel_netns_tests::Sandbox;
use spinel_netns_tests::cni::{CniCall, CniOutput, run, spinel_binary};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/examples")
}

/// The YAML documents of `deploy/examples/<file>`.
fn documents(file: &str) -> Vec<Value> {
    let path = examples().join(file);
    let text = fs::read_to_string(&path).unwrap();
    text.split("\n---\n")
        .filter(|d| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
        })
        .map(|d| serde_saphyr::from_str(d).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect()
}

/// (name, resourceName annotation, config) of every NetworkAttachmentDefinition.
fn attachments() -> Vec<(String, String, Value)> {
    documents("rails.yaml")
        .into_iter()
        .filter(|d| d["kind"] == "NetworkAttachmentDefinition")
        .map(|d| {
            let config = d["spec"]["config"].as_str().expect("spec.config");
            (
                d["metadata"]["name"].as_str().unwrap().to_owned(),
                d["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"]
                    .as_str()
                    .expect("a resourceName annotation")
                    .to_owned(),
                serde_json::from_str(config).expect("spec.config is JSON"),
            )
        })
        .collect()
}

/// STATUS of the real plugin with `config`, on a node whose settings point into the sandbox.
/// STATUS is the verb that reads a whole configuration without a pod; it exists from CNI 1.1.0,
/// while the examples say 1.0.0 (what Multus speaks), so only `cniVersion` is raised for it.
fn status(sb: &Sandbox, config: &Value) -> CniOutput {
    let mut config = config.clone();
    config["cniVersion"] = json!("1.1.0");
    let sysfs = sb.dir().join("sys");
    fs::create_dir_all(sysfs.join("bus/pci/devices")).unwrap();
    let settings = sb.dir().join("cni.json");
    fs::write(
        &settings,
        json!({"stateDir": sb.dir().join("state"), "sysfsRoot": sysfs}).to_string(),
    )
    .unwrap();
    let mut cmd = Command::new(spinel_binary());
    CniCall::bare("STATUS").apply(&mut cmd, Path::new("/usr/lib/cni"));
    cmd.env("SPINEL_CNI_SETTINGS", &settings);
    run(cmd, &config)
}

#[test]
fn every_rails_attachment_is_a_config_spinel_accepts() {
    let sb = Sandbox::new("examples_nad");
    let nads = attachments();
    assert_eq!(nads.len(), 2, "one NetworkAttachmentDefinition per rail");
    for (name, _, config) in &nads {
        assert_eq!(config["type"], "spinel", "{name}");
        assert_eq!(config["name"].as_str(), Some(name.as_str()));
        status(&sb, config).expect_ok(&format!("STATUS with {name}'s config"));
        // The control: the same config with a key spinel does not know is refused.
        let mut bad = config.clone();
        bad["vlann"] = json!(5);
        let msg = status(&sb, &bad)
            .expect_code(7, "STATUS with an unknown key")
            .to_owned();
        assert!(msg.contains("vlann"), "{msg}");
    }
}

#[test]
fn each_rail_has_a_device_plugin_resource_and_the_training_pods_use_both() {
    let nads = attachments();
    let dp = documents("sriov-device-plugin.yaml");
    let config: Value =
        serde_json::from_str(dp[0]["data"]["config.json"].as_str().expect("config.json")).unwrap();
    let resources: Vec<String> = config["resourceList"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["resourcePrefix"].as_str().unwrap(),
                r["resourceName"].as_str().unwrap()
            )
        })
        .collect();
    for (name, resource, _) in &nads {
        assert!(
            resources.contains(resource),
            "{name} names {resource}, the device plugin makes {resources:?}"
        );
    }
    let networks: Vec<&str> = nads.iter().map(|(n, _, _)| n.as_str()).collect();
    let pods: Vec<Value> = documents("training.yaml")
        .into_iter()
        .filter(|d| d["kind"] == "Pod")
        .collect();
    assert!(!pods.is_empty());
    for pod in &pods {
        let asked = pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
            .as_str()
            .unwrap();
        assert_eq!(asked.split(',').collect::<Vec<_>>(), networks);
        let limits = &pod["spec"]["containers"][0]["resources"]["limits"];
        for (_, resource, _) in &nads {
            assert_eq!(limits[resource.as_str()], json!(1), "{resource}");
        }
    }
}
