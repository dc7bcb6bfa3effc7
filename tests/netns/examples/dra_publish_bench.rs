//! Slice publication for 8 rails x 64 VFs (512 devices, 8 slices), docs/benchmarks.md's
//! "DRA slice publication": from the publisher's process start to the whole pool visible in the
//! real API server (every slice of the pool's generation there, 512 devices).
//!
//! - `spinel-agent` with DRA on, on a namespace-simulated node whose fake sysfs has 8 PFs of 64
//!   VFs under 8 PCIe roots: it reads sysfs, places each NIC in the fabric and publishes.
//! - The peer, the same run and the same 512 devices (the ones the agent published, read back):
//!   Kubernetes' own ResourceSlice controller (k8s.io/dynamic-resource-allocation/resourceslice,
//!   what every Go DRA driver's kubelet-plugin helper runs), as `spinel-k8s slice-publisher`.
//!
//! The two alternate, the pool deleted before each start. Usage (root, release agent in
//! `SPINEL_AGENT_BIN`, `tests/k8s/build.sh` first): `dra_publish_bench [runs]`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::resource::v1::ResourceSlice;
use kube::api::{Api, DeleteParams, ListParams};
use nix::sys::signal::Signal;
use serde_json::Value;
use spinel_api::dra;
use spinel_netns_tests::dra::{DraCluster, DraNode, Placement, slices};
use spinel_netns_tests::{require_root, summary};

const RAILS: usize = 8;
const VFS: u32 = 64;
const NODE: &str = "dra-bench";

/// The node's pool once complete: its slices sorted by name.
async fn complete_pool(admin: &kube::Client, want: usize) -> Option<Vec<ResourceSlice>> {
    let mut s = slices(admin, NODE).await;
    let generation = s.first()?.spec.pool.generation;
    let count = s.first()?.spec.pool.resource_slice_count;
    let devices: usize = s
        .iter()
        .map(|s| s.spec.devices.as_ref().map_or(0, Vec::len))
        .sum();
    let whole = s
        .iter()
        .all(|s| s.spec.pool.generation == generation && s.spec.pool.resource_slice_count == count)
        && usize::try_from(count).ok() == Some(s.len());
    s.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    (whole && devices == want).then_some(s)
}

/// From `start` until the pool is complete, polling the API server back to back.
async fn until_published(admin: &kube::Client, start: Instant) -> (Duration, Vec<ResourceSlice>) {
    loop {
        if let Some(s) = complete_pool(admin, RAILS * VFS as usize).await {
            return (start.elapsed(), s);
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the pool was not published within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Deletes the node's pool and waits until it is gone.
async fn delete_pool(admin: &kube::Client) {
    let lp =
        ListParams::default().fields(&format!("spec.nodeName={NODE},spec.driver={}", dra::DRIVER));
    Api::<ResourceSlice>::all(admin.clone())
        .delete_collection(&DeleteParams::default(), &lp)
        .await
        .unwrap();
    while !slices(admin, NODE).await.is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn main() {
    require_root();
    let runs: usize = std::env::args()
        .nth(1)
        .map_or(10, |a| a.parse().expect("runs"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let c = DraCluster::start(&rt, "dra-bench");
    let roots: Vec<String> = (0..RAILS)
        .map(|k| format!("pci0000:{:02x}", 0x10 + 0x20 * k))
        .collect();
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    let placement = Placement {
        spine: "spine1".into(),
        group: "lg-bench".into(),
    };
    let mut n = DraNode::new(&rt, &c, NODE, "bench", VFS, &roots, &placement);
    let dir = n.agent.node.sb.dir().to_owned();
    let admin = rt.block_on(c.cp.admin_client());
    let (mut agent, mut peer, mut peer_controller) = (Vec::new(), Vec::new(), Vec::new());
    let devices_file = dir.join("devices.json");
    for run in 0..runs {
        rt.block_on(delete_pool(&admin));
        let start = Instant::now();
        n.start();
        let (took, published) = rt.block_on(until_published(&admin, start));
        n.agent.stop(Signal::SIGTERM);
        agent.push(took);
        if run == 0 {
            let devices: Vec<Value> = published
                .iter()
                .map(|s| serde_json::to_value(s.spec.devices.as_ref().unwrap()).unwrap())
                .collect();
            std::fs::write(&devices_file, serde_json::to_vec(&devices).unwrap()).unwrap();
        }

        rt.block_on(delete_pool(&admin));
        let start = Instant::now();
        let mut child = Command::new(spinel_netns_tests::k8s::binary())
            .arg("slice-publisher")
            .arg("--kubeconfig")
            .arg(c.cp.kubeconfig())
            .args(["--driver", dra::DRIVER, "--node", NODE, "--devices"])
            .arg(&devices_file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn spinel-k8s slice-publisher");
        // The moment it says it starts the controller, read as it comes.
        let stdout = child.stdout.take().unwrap();
        let ready = std::thread::spawn(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).unwrap();
            assert!(line.contains("\"ready\":true"), "slice-publisher: {line:?}");
            Instant::now()
        });
        let (took, published) = rt.block_on(until_published(&admin, start));
        let ready = ready.join().unwrap();
        peer.push(took);
        peer_controller.push(took - ready.duration_since(start));
        drop(child.stdin.take());
        assert!(child.wait().unwrap().success(), "slice-publisher failed");
        assert_eq!(
            published.len(),
            RAILS,
            "the peer's pool: {} slices",
            published.len()
        );
    }
    println!(
        "8 rails x 64 VFs (512 devices, 8 slices), process start -> pool complete in the API server:"
    );
    println!(
        "spinel-agent (sysfs, fabric, publish):       {}",
        summary(&mut agent)
    );
    println!(
        "Kubernetes' resourceslice controller (Go): {}",
        summary(&mut peer)
    );
    println!(
        "  of which StartController -> complete:    {}",
        summary(&mut peer_controller)
    );
}
