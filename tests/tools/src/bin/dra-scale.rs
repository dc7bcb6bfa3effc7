//! `dra-scale`: what Spinel's ResourceSlices cost the real kube-scheduler on a large cluster.
//!
//! One control plane (`spinel-k8s`: etcd, kube-apiserver, kube-scheduler with its default
//! configuration, DRA on as released) holds `--nodes` Ready Node objects labelled as the fabric
//! controller labels a synthetic rail-optimised fabric (8 rails), 8 GPUs each. In one run, each
//! phase `--pods` pods of 8 GPUs, one at a time:
//!
//! 1. `alone`: no slices anywhere, pods without claims: kube-scheduler alone, the baseline;
//! 2. `slices, no claim`: every node publishes its `roce.spinel.dev` slice (8 rails ×
//!    `--vfs-per-rail` VFs, the attributes the agent publishes), the same pods without claims:
//!    what the slices cost pods that do not use them;
//! 3. `1 VF claim`: each pod with a claim for one VF (class `vf.roce.spinel.dev`);
//! 4. `VF per rail claim`: each pod with the shipped `deploy/examples/dra-one-vf-per-rail.yaml`
//!    claim (8 VFs, one per rail, all under one leaf group);
//! 5. the same claim without its `matchAttribute` constraint: what the constraint costs.
//!
//! A pod's latency runs from its create request to a watch showing it bound (its claim
//! created just before it). Also reported: the time to publish every node's slice.
//!
//! Usage (root; `tests/k8s/build.sh` first):
//!   target/release/dra-scale [--nodes 1000] [--pods 100] [--vfs-per-rail 8]

// A benchmark harness fails loudly on setup errors.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use spinel_api::dra;
use spinel_netns_tests::cluster;
use spinel_netns_tests::k8s::{ControlPlane, ControlPlaneOptions};
use spinel_netns_tests::sched::latency::{Bound, schedule, summary, watch_bindings};
use spinel_netns_tests::sched::objects::{
    create_ready_nodes, fabric_labels, gpu_node, gpu_pod, namespace,
};
use tokio::sync::mpsc;
use topo_discovery::fabric::synthetic::SyntheticSpec;

const NAMESPACE: &str = "scale";
const RAILS: u16 = 8;

#[derive(Debug)]
struct Options {
    nodes: usize,
    pods: usize,
    vfs_per_rail: u16,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        nodes: 1000,
        pods: 100,
        vfs_per_rail: 8,
    };
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n: usize = value
            .parse()
            .map_err(|_| format!("{flag}: {value:?} is not a count"))?;
        match flag.as_str() {
            "--nodes" if n >= 10 => o.nodes = n,
            "--pods" if n >= 1 => o.pods = n,
            // One slice per node: at most 64 devices (the API's limit per slice).
            "--vfs-per-rail" if (1..=8).contains(&n) => o.vfs_per_rail = n as u16,
            "--nodes" | "--pods" | "--vfs-per-rail" => {
                return Err(format!("{flag}: {n} is out of range"));
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if o.pods * 5 + 5 > o.nodes {
        return Err(format!(
            "--pods {}: five phases of whole-node pods need {} nodes",
            o.pods,
            o.pods * 5 + 5
        ));
    }
    Ok(o)
}

/// The node's slice as the agent publishes it: VF `v` of rail `k` with its PCI address, its
/// place (rail, leaf, tier domains from the node's labels) and Multus's attributes.
fn slice(node: &str, labels: &BTreeMap<String, String>, vfs_per_rail: u16) -> ResourceSlice {
    let label = |key: &str| labels.get(&format!("{}{key}", spinel_api::labels::DEFAULT_PREFIX));
    let mut devices = Vec::new();
    for k in 0..RAILS {
        let leaf = label(&format!("rail-{k}")).cloned().unwrap_or_default();
        for v in 0..vfs_per_rail {
            let pci = format!(
                "0000:{:02x}:{:02x}.{}",
                0x1a + k * 0x10,
                0x10 + v / 8,
                v % 8
            );
            let mut a = json!({
                dra::ATTR_KIND: {"string": "vf"},
                dra::ATTR_RAIL: {"int": k},
                dra::ATTR_LEAF: {"string": leaf},
                dra::ATTR_PF_NAME: {"string": format!("ens{}f0np0", k + 1)},
                dra::ATTR_VF_INDEX: {"int": v},
                dra::ATTR_PCI_ADDRESS: {"string": pci},
                dra::ATTR_PCIE_ROOT: {"string": format!("pci0000:{:02x}", 0x10 + k * 0x10)},
                dra::ATTR_NUMA_NODE: {"int": k / 4},
                dra::ATTR_RDMA_DEVICE: {"string": format!("mlx5_{}", 8 + k * vfs_per_rail + v)},
                dra::ATTR_LINK_SPEED: {"int": 400_000},
                dra::ATTR_MTU: {"int": 9000},
                dra::ATTR_MULTUS_DEVICE_ID: {"string": pci},
                dra::ATTR_MULTUS_RESOURCE_NAME: {"string": dra::rail_resource_name(k)},
            });
            for tier in 1..=3u8 {
                if let Some(id) = label(&format!("tier-{tier}")) {
                    a[dra::tier_attribute(tier)] = json!({"string": id});
                }
            }
            devices.push(json!({"name": dra::vf_device_name(&pci), "attributes": a}));
        }
    }
    serde_json::from_value(json!({
        "metadata": {"name": dra::slice_name(node, 0)},
        "spec": {
            "driver": dra::DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }))
    .unwrap()
}

/// Creates `slice`, again while the API server answers that etcd is busy (a single embedded
/// etcd on two cores takes 10,000 slices slower than a fleet of agents would send them).
async fn create_retrying(api: &Api<ResourceSlice>, slice: &ResourceSlice) {
    for _ in 0..50 {
        match api.create(&PostParams::default(), slice).await {
            Ok(_) => return,
            Err(kube::Error::Api(e)) if e.code == 409 => return,
            Err(kube::Error::Api(e)) if e.code >= 500 => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("create slice {:?}: {e}", slice.metadata.name),
        }
    }
    panic!("create slice {:?}: etcd stayed busy", slice.metadata.name);
}

/// What a phase's pods claim.
#[derive(Clone, Copy)]
enum Claim {
    None,
    OneVf,
    VfPerRail,
    VfPerRailUnconstrained,
}

/// The claim spec of the shipped one-VF-per-rail template.
fn vf_per_rail_spec() -> Value {
    let path = cluster::workspace_root().join("deploy/examples/dra-one-vf-per-rail.yaml");
    let doc = cluster::documents_at(&path).into_iter().next().unwrap();
    doc["spec"]["spec"].clone()
}

/// `n` pods one at a time (after one warm-up pod, not counted), each with its claim.
async fn phase(
    admin: &kube::Client,
    bound: &mut mpsc::UnboundedReceiver<Bound>,
    prefix: &str,
    n: usize,
    claim: Claim,
) -> Vec<Duration> {
    let claims = Api::<ResourceClaim>::namespaced(admin.clone(), NAMESPACE);
    let per_rail = vf_per_rail_spec();
    let mut all = Vec::new();
    for i in 0..=n {
        let name = format!("{prefix}-{i}");
        let mut pod: Pod = gpu_pod(&name, 8, None, &[]);
        let spec = match claim {
            Claim::None => None,
            Claim::OneVf => Some(json!({"devices": {"requests": [{"name": "vf",
                "exactly": {"deviceClassName": "vf.roce.spinel.dev"}}]}})),
            Claim::VfPerRail => Some(per_rail.clone()),
            Claim::VfPerRailUnconstrained => {
                let mut spec = per_rail.clone();
                spec["devices"]
                    .as_object_mut()
                    .unwrap()
                    .remove("constraints");
                Some(spec)
            }
        };
        if let Some(spec) = spec {
            let rc: ResourceClaim =
                serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
            claims.create(&PostParams::default(), &rc).await.unwrap();
            let s = pod.spec.as_mut().unwrap();
            s.resource_claims = Some(vec![
                serde_json::from_value(json!({"name": "nics", "resourceClaimName": name})).unwrap(),
            ]);
            s.containers[0]
                .resources
                .get_or_insert_with(Default::default)
                .claims = Some(vec![
                serde_json::from_value(json!({"name": "nics"})).unwrap(),
            ]);
        }
        let done = schedule(admin, NAMESPACE, bound, vec![pod]).await;
        if i > 0 {
            all.extend(done.into_iter().map(|(_, _, latency)| latency));
        }
    }
    all
}

fn main() -> ExitCode {
    let o = match parse_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "dra-scale: {e}\nusage: dra-scale [--nodes N] [--pods N] [--vfs-per-rail 1-8]"
            );
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cp = ControlPlane::start(
        ControlPlaneOptions::new("dra-scale")
            .scheduler("{}")
            .ready_timeout(Duration::from_secs(300)),
    );
    let labelled = fabric_labels(SyntheticSpec::rail_optimized(o.nodes));
    runtime.block_on(async {
        let admin = cp.admin_client().await;
        cluster::apply_files(&admin, &["deploy/dra/device-classes.yaml"]).await;
        let nodes: Vec<Node> = labelled.iter().map(|(n, l)| gpu_node(n, l, 8)).collect();
        create_ready_nodes(&admin, nodes, 32).await;
        namespace(&admin, NAMESPACE).await;
        let mut bound = watch_bindings(admin.clone(), NAMESPACE);
        let alone = phase(&admin, &mut bound, "alone", o.pods, Claim::None).await;

        let t0 = Instant::now();
        let api = Api::<ResourceSlice>::all(admin.clone());
        let mut publishing = tokio::task::JoinSet::new();
        for chunk in labelled.chunks(labelled.len().div_ceil(8)) {
            let api = api.clone();
            let slices: Vec<ResourceSlice> = chunk
                .iter()
                .map(|(n, l)| slice(n, l, o.vfs_per_rail))
                .collect();
            publishing.spawn(async move {
                for s in slices {
                    create_retrying(&api, &s).await;
                }
            });
        }
        while let Some(done) = publishing.join_next().await {
            done.unwrap();
        }
        let published = t0.elapsed();
        // kube-scheduler's informer has every slice before the first counted pod: its warm-up
        // pod waits for it like every other.
        let no_claim = phase(&admin, &mut bound, "slices", o.pods, Claim::None).await;
        let one_vf = phase(&admin, &mut bound, "onevf", o.pods, Claim::OneVf).await;
        let per_rail = phase(&admin, &mut bound, "rails", o.pods, Claim::VfPerRail).await;
        let unconstrained = phase(
            &admin,
            &mut bound,
            "free",
            o.pods,
            Claim::VfPerRailUnconstrained,
        )
        .await;

        let devices = labelled.len() * usize::from(RAILS * o.vfs_per_rail);
        println!(
            "{} nodes; {} slices ({devices} devices) published in {:.1} s",
            labelled.len(),
            labelled.len(),
            published.as_secs_f64()
        );
        println!(
            "\n| kube-scheduler, pod of 8 GPUs | pods | p50 | p99 | mean | max |\n\
             |---|---:|---:|---:|---:|---:|"
        );
        summary("alone (no slices, no claim)", alone);
        summary("slices published, no claim", no_claim);
        summary("claim: 1 VF", one_vf);
        summary("claim: 1 VF per rail, one leaf group (8 VFs)", per_rail);
        summary("claim: 1 VF per rail, no matchAttribute", unconstrained);
    });
    // The watch task stops with the runtime, before the control plane goes away.
    runtime.shutdown_background();
    println!(
        "\nload average at the end: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_read_and_bad_ones_refused_with_the_reason() {
        let parse = |s: &str| parse_args(s.split_whitespace().map(str::to_owned));
        let o = parse("--nodes 10000 --pods 50 --vfs-per-rail 2").unwrap();
        assert_eq!((o.nodes, o.pods, o.vfs_per_rail), (10_000, 50, 2));
        assert!(
            parse("--vfs-per-rail 9")
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            parse("--nodes 100 --pods 50")
                .unwrap_err()
                .contains("need 255 nodes")
        );
        assert!(parse("--pods").unwrap_err().contains("needs a value"));
    }

    #[test]
    fn a_slice_holds_every_rail_s_vfs_with_their_place() {
        let labels = BTreeMap::from([
            ("fabric.spinel.dev/tier-1".to_owned(), "s1.g1".to_owned()),
            (
                "fabric.spinel.dev/rail-3".to_owned(),
                "s1.g1.lf3".to_owned(),
            ),
        ]);
        let s = slice("n1", &labels, 8);
        let devices = s.spec.devices.unwrap();
        assert_eq!(devices.len(), dra::MAX_DEVICES_PER_SLICE);
        let rail3: Vec<_> = devices
            .iter()
            .filter(|d| d.attributes.as_ref().unwrap()[dra::ATTR_RAIL].int == Some(3))
            .collect();
        assert_eq!(rail3.len(), 8);
        let a = rail3[0].attributes.as_ref().unwrap();
        assert_eq!(a[dra::ATTR_LEAF].string.as_deref(), Some("s1.g1.lf3"));
        assert_eq!(a[&dra::tier_attribute(1)].string.as_deref(), Some("s1.g1"));
        assert!(a.len() <= dra::MAX_ATTRIBUTES_PER_DEVICE);
    }
}
