//! Runs inside the test VM: the spinel CNI against a real kernel with `rdma_rxe`.
//!
//! `vm-cni shared`: VF and macvlan attachments whose RoCE v2 GID index spinel finds in real
//! GID tables (checked entry by entry against sysfs), STATUS refusing an exclusive-mode
//! network on a shared-mode node, and DEL after a pod dies with a real PCI NIC standing in for
//! the VF (the kernel returns it to the host itself).
//! `vm-cni exclusive`: the node runs RDMA in exclusive mode; rxe cannot change namespaces, so
//! ADD must fail clearly and leave everything as it was.
//! Prints `ok <step>` per passed step; fails with the reason otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test program fails loudly

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use spinel_kernel_tests::guest::{ok, poll, sh};
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{self, CniCall, DEBIAN_CNI_DIR, first_ip, with_prev_result};
use spinel_netns_tests::node::{PF_PCI, fake_pf_with_real_vf, pci_address};

/// The GID table entry at `index` of `dev` port 1, as sysfs shows it: (gid, type, ndev).
fn entry(dev: &str, index: u64) -> (String, String, String) {
    let base = format!("/sys/class/infiniband/{dev}/ports/1");
    let read = |p: String| {
        fs::read_to_string(p)
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    };
    (
        read(format!("{base}/gids/{index}")),
        read(format!("{base}/gid_attrs/types/{index}")),
        read(format!("{base}/gid_attrs/ndevs/{index}")),
    )
}

/// The sysfs GID text of an IPv4-mapped address.
fn mapped(ip: &str) -> String {
    let o: Vec<u8> = ip.split('.').map(|p| p.parse().unwrap()).collect();
    format!(
        "0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}",
        o[0], o[1], o[2], o[3]
    )
}

/// The fake sysfs under `sysfs_root` describes the PCI side; the RDMA devices are the
/// kernel's real ones.
fn link_real_rdma(sysfs_root: &Path) {
    let class = sysfs_root.join("class");
    fs::create_dir_all(&class).unwrap();
    std::os::unix::fs::symlink("/sys/class/infiniband", class.join("infiniband")).unwrap();
}

/// `spinel` for `call` in the VM's own namespace, with a clean environment pointing at
/// `settings` and Debian's plugins on `CNI_PATH`.
fn spinel(settings: &Path, call: &CniCall) -> Command {
    let mut cmd = Command::new(cni::spinel_binary());
    cmd.env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("SPINEL_CNI_SETTINGS", settings);
    call.apply(&mut cmd, Path::new(DEBIAN_CNI_DIR));
    cmd
}

fn assert_gid(result: &Value, dev: &str, ifname: &str) -> u64 {
    let roce = &result["interfaces"][0]["roce"];
    assert_eq!(roce["rdmaDevice"], dev, "{result}");
    let index = roce["gidIndex"].as_u64().unwrap();
    let (gid, kind, ndev) = entry(dev, index);
    assert_eq!(gid, mapped(&first_ip(result)), "GID at index {index}");
    assert_eq!(kind, "RoCE v2");
    assert_eq!(ndev, ifname);
    index
}

fn shared() -> anyhow::Result<()> {
    // rxe unregisters its device when its own netdev changes namespace, so it cannot back a VF
    // netdev that moves. It sits on the PF stand-in instead: the VF stand-ins are its uppers,
    // so their addresses land in its table with the pod interface as ndev, which is what the
    // lookup has to get right.
    let node = SimNode::new("vm-cni-vf", 2);
    link_real_rdma(node.sysfs.root());
    node.sb.run_in(
        "node",
        "rdma",
        &["link", "add", "rxe_pf", "type", "rxe", "netdev", "pf0"],
    );
    for vf in &node.vfs {
        node.sysfs.add_rdma(&vf.pci, "rxe_pf");
    }
    node.sysfs.add_rdma(PF_PCI, "rxe_pf");
    let netns = node.pod("p0");
    let call = CniCall::new("ADD", "gid0", Some(&netns), "net1");
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
    let index = assert_gid(&result, "rxe_pf", "net1");
    ok(&format!(
        "VF mode: RoCE v2 GID index {index} of the pod's address found and checked in sysfs"
    ));
    // The node's roceInfoDir (the simulated node keeps it in its sandbox).
    let info_dir = node.records_dir.join("gid0");
    let env = fs::read_to_string(info_dir.join("net1.env")).unwrap();
    assert!(
        env.contains(&format!("NCCL_IB_GID_INDEX={index}\n"))
            && env.contains("NCCL_IB_HCA==rxe_pf:1"),
        "{env}"
    );
    ok("GID and NCCL hints published in the node's roceInfoDir");
    let prev = with_prev_result(&conf, &result);
    node.spinel(&call.with_command("CHECK"), &prev)
        .expect_ok("CHECK");
    node.sb
        .run_in("p0", "ip", &["addr", "flush", "dev", "net1"]);
    let msg = node
        .spinel(&call.with_command("CHECK"), &prev)
        .expect_code(104, "CHECK")
        .to_owned();
    assert!(msg.contains("no RoCE v2 GID"), "{msg}");
    ok("CHECK notices the GID is gone");
    node.spinel(&call.with_command("DEL"), &prev)
        .expect_ok("DEL");
    assert!(!info_dir.join("net1.env").exists());
    ok("DEL removes the published details");

    let mut status = node.conf("1.1.0", None);
    status["rdma"] = json!({"netnsMode": "exclusive"});
    let msg = node
        .spinel(&CniCall::bare("STATUS"), &status)
        .expect_code(50, "STATUS")
        .to_owned();
    assert!(
        msg.contains("needs exclusive mode") && msg.contains("is shared"),
        "{msg}"
    );
    ok("STATUS: an exclusive-mode network on a shared-mode node is not available");

    // macvlan mode: the same rxe on the PF shared by every pod; each pod's index differs.
    let mut indices = Vec::new();
    for pod in ["m0", "m1", "m2"] {
        let netns = node.pod(pod);
        let call = CniCall::new("ADD", pod, Some(&netns), "net1");
        let mut conf = node.conf("1.1.0", None);
        conf["mode"] = json!("macvlan");
        conf["pfName"] = json!("pf0");
        let result = node.spinel(&call, &conf).expect_ok("macvlan ADD").clone();
        indices.push(assert_gid(&result, "rxe_pf", "net1"));
    }
    let mut distinct = indices.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        3,
        "each pod has its own index in the shared table: {indices:?}"
    );
    ok(&format!(
        "macvlan mode: three pods, three GID indices {indices:?}, each the pod's own address"
    ));
    // Inside each pod, nccl-env reads the same index from what the kernel shows there.
    for (pod, index) in ["m0", "m1", "m2"].iter().zip(&indices) {
        let out = Command::new(cni::spinelctl_binary())
            .args([
                "nccl-env",
                "--netns",
                node.sb.netns_path(pod).to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "nccl-env in {pod}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains(&format!("NCCL_IB_GID_INDEX={index}\n")),
            "{pod}: {text}"
        );
        assert!(
            text.contains("NCCL_IB_HCA==rxe_pf:1") && text.contains("NCCL_SOCKET_IFNAME==net1"),
            "{text}"
        );
    }
    ok("spinelctl nccl-env in each pod prints that pod's own GID index");
    drop(node);

    // A real PCI NIC stands in for the VF: when the pod dies the kernel itself returns it.
    netns_gone_with_a_real_nic()
}

/// A call into the namespace `ip netns add pod` creates, without `CNI_ARGS` (no Multus here).
fn real_nic_call(command: &str, container_id: &str) -> CniCall {
    CniCall {
        args: None,
        ..CniCall::new(
            command,
            container_id,
            Some(Path::new("/run/netns/pod")),
            "net1",
        )
    }
}

fn netns_gone_with_a_real_nic() -> anyhow::Result<()> {
    let root = Path::new("/run/vm-cni");
    let state = root.join("state");
    let sys = fake_pf_with_real_vf(root, "eth0", "eth1");
    let settings = root.join("cni.json");
    fs::write(
        &settings,
        json!({"stateDir": state, "sysfsRoot": sys.root(), "recordVfRequestsTo": root.join("vf"), "roceInfoDir": root.join("roce")}).to_string(),
    )
    .unwrap();
    sh("ip netns add pod && ip link set eth1 up")?;
    let vf_pci = pci_address("eth1");
    let mac_before = sh("cat /sys/class/net/eth1/address")?;
    let conf = json!({"cniVersion": "1.1.0", "name": "rail0", "type": "spinel", "deviceID": vf_pci, "mtu": 1400,
                      "ipam": {"type": "static", "addresses": [{"address": "10.56.0.9/24"}]}});
    let add = real_nic_call("ADD", "real-nic");
    cni::run(spinel(&settings, &add), &conf).expect_ok("ADD of a real NIC");
    assert!(
        !Path::new("/sys/class/net/eth1").exists(),
        "the NIC left the host"
    );
    sh("ip netns del pod")?;
    // The kernel returns the physical device to the initial namespace by itself, though not
    // necessarily before `ip netns del` returns.
    let (back, _) = poll(Duration::from_secs(5), Duration::from_millis(50), || {
        let links = sh("ip -br link")?;
        Ok((links.contains("net1") || links.contains("dev")).then_some(links))
    })
    .context("the kernel did not return the NIC to the host")?;
    ok(&format!(
        "the kernel returned the NIC: {}",
        back.lines()
            .filter(|l| !l.starts_with("lo"))
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    // The runtime's DEL after the pod died carries no namespace.
    let del = CniCall {
        netns: None,
        ..add.with_command("DEL")
    };
    cni::run(spinel(&settings, &del), &conf).expect_ok("DEL after the pod died");
    assert!(
        Path::new("/sys/class/net/eth1").exists(),
        "restored under its original name"
    );
    assert_eq!(sh("cat /sys/class/net/eth1/address")?, mac_before);
    assert_eq!(
        sh("cat /sys/class/net/eth1/mtu")?.trim(),
        "1500",
        "MTU restored"
    );
    assert_eq!(
        sh("cat /sys/class/net/eth1/ifalias")?.trim(),
        "",
        "alias restored"
    );
    ok("DEL after the pod died: the real NIC is home as eth1 with its MTU and MAC");
    Ok(())
}

fn exclusive() -> anyhow::Result<()> {
    // In exclusive mode a device belongs to one namespace: spinel runs in the initial one, as on
    // a node, with a real NIC standing in for the VF and an rxe device on it.
    let root = Path::new("/run/vm-cni-x");
    let sys = fake_pf_with_real_vf(root, "eth0", "eth1");
    let vf_pci = pci_address("eth1");
    sh("rdma link add rxe_v type rxe netdev eth1")?;
    sys.add_rdma(&vf_pci, "rxe_v");
    link_real_rdma(sys.root());
    let settings = root.join("cni.json");
    fs::write(
        &settings,
        json!({"stateDir": root.join("state"), "sysfsRoot": sys.root(), "recordVfRequestsTo": root.join("vf")}).to_string(),
    )
    .unwrap();
    sh("ip netns add pod")?;
    let conf = json!({"cniVersion": "1.1.0", "name": "rail0", "type": "spinel", "deviceID": vf_pci,
                      "ipam": {"type": "static", "addresses": [{"address": "10.56.0.9/24"}]}});
    let out = cni::run(spinel(&settings, &real_nic_call("ADD", "excl")), &conf);
    let msg = out.expect_code(101, "ADD in exclusive mode").to_owned();
    let details = out.json["details"].as_str().unwrap_or_default().to_owned();
    assert!(
        msg.contains("cannot move RDMA device rxe_v into the pod"),
        "{msg}"
    );
    assert!(
        details.contains("not supported")
            || details.contains("EOPNOTSUPP")
            || details.contains("cannot change"),
        "{details}"
    );
    ok(&format!(
        "exclusive mode: rxe cannot move, ADD says so: {msg} ({details})"
    ));
    assert!(
        Path::new("/sys/class/net/eth1").exists(),
        "the NIC never left"
    );
    assert!(
        sh("ip -n pod -br link")?
            .lines()
            .all(|l| l.starts_with("lo")),
        "nothing in the pod"
    );
    let left: Vec<_> = fs::read_dir(root.join("state/attachments"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "no record left");
    ok("exclusive mode: the failed ADD left the VF as it found it");
    Ok(())
}

fn main() -> anyhow::Result<()> {
    match std::env::args().nth(1).as_deref() {
        Some("shared") => shared(),
        Some("exclusive") => exclusive(),
        other => panic!("usage: vm-cni shared|exclusive (got {other:?})"),
    }
}
