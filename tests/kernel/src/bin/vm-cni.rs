//! Runs inside the test VM: the spinel CNI against a real kernel with `rdma_rxe`.
//!
//! `vm-cni shared`: VF and macvlan attachments whose RoCE v2 GID index spinel finds in real
//! GID tables (checked entry by entry against sysfs), STATUS refusing an exclusive-mode
//! network on a shared-mode node, and DEL after a pod dies with a real PCI NIC standing in for
//! the VF (the kernel returns it to the host itself).
//! `vm-cni exclusive`: the node runs RDMA in exclusive mode; rxe cannot change namespaces, so
//! ADD must fail clearly and leave everything as it was.
//! Prints `ok <step>` per passed step; panics with the reason otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test program fails loudly

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{CniCall, first_ip, with_prev_result};

fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

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

/// The fake sysfs describes the PCI side; the RDMA devices are the kernel's real ones.
fn link_real_rdma(node: &SimNode) {
    let class = node.sysfs.root().join("class");
    fs::create_dir_all(&class).unwrap();
    std::os::unix::fs::symlink("/sys/class/infiniband", class.join("infiniband")).unwrap();
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

fn shared() {
    // rxe unregisters its device when its own netdev changes namespace, so it cannot back a VF
    // netdev that moves. It sits on the PF stand-in instead: the VF stand-ins are its uppers,
    // so their addresses land in its table with the pod interface as ndev, which is what the
    // lookup has to get right.
    let node = SimNode::new("vm-cni-vf", 2);
    link_real_rdma(&node);
    node.sb.run_in(
        "node",
        "rdma",
        &["link", "add", "rxe_pf", "type", "rxe", "netdev", "pf0"],
    );
    for vf in &node.vfs {
        node.sysfs.add_rdma(&vf.pci, "rxe_pf");
    }
    node.sysfs
        .add_rdma(spinel_netns_tests::node::PF_PCI, "rxe_pf");
    let netns = node.pod("p0");
    let call = CniCall::new("ADD", "gid0", Some(&netns), "net1");
    let conf = node.conf("1.1.0", Some(&node.vfs[0]));
    let result = node.spinel(&call, &conf).expect_ok("ADD").clone();
    let index = assert_gid(&result, "rxe_pf", "net1");
    println!(
        "ok VF mode: RoCE v2 GID index {index} of the pod's address found and checked in sysfs"
    );
    let info_dir = Path::new("/run/spinel/roce/gid0");
    let env = fs::read_to_string(info_dir.join("net1.env")).unwrap();
    assert!(
        env.contains(&format!("NCCL_IB_GID_INDEX={index}\n"))
            && env.contains("NCCL_IB_HCA==rxe_pf:1"),
        "{env}"
    );
    println!("ok GID and NCCL hints published in /run/spinel/roce");
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
    println!("ok CHECK notices the GID is gone");
    node.spinel(&call.with_command("DEL"), &prev)
        .expect_ok("DEL");
    assert!(!info_dir.join("net1.env").exists());
    println!("ok DEL removes the published details");

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
    println!("ok STATUS: an exclusive-mode network on a shared-mode node is not available");

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
    println!(
        "ok macvlan mode: three pods, three GID indices {indices:?}, each the pod's own address"
    );
    // Inside each pod, nccl-env reads the same index from what the kernel shows there.
    for (pod, index) in ["m0", "m1", "m2"].iter().zip(&indices) {
        let out = Command::new(std::env::var("SPINELCTL_BIN").unwrap())
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
    println!("ok spinelctl nccl-env in each pod prints that pod's own GID index");
    drop(node);

    // A real PCI NIC stands in for the VF: when the pod dies the kernel itself returns it.
    netns_gone_with_a_real_nic();
}

fn netns_gone_with_a_real_nic() {
    let root = Path::new("/run/vm-cni");
    let state = root.join("state");
    let sys = spinel_netns_tests::node::fake_pf_with_real_vf(root, "eth0", "eth1");
    fs::write(
        root.join("cni.json"),
        json!({"stateDir": state, "sysfsRoot": sys.root(), "recordVfRequestsTo": root.join("vf"), "roceInfoDir": root.join("roce")}).to_string(),
    )
    .unwrap();
    sh("ip netns add pod && ip link set eth1 up");
    let vf_pci = fs::read_link("/sys/class/net/eth1/device")
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mac_before = sh("cat /sys/class/net/eth1/address");
    let conf = json!({"cniVersion": "1.1.0", "name": "rail0", "type": "spinel", "deviceID": vf_pci, "mtu": 1400,
                      "ipam": {"type": "static", "addresses": [{"address": "10.56.0.9/24"}]}});
    let run = |command: &str, netns: &str| {
        let mut cmd = Command::new(std::env::var("SPINEL_BIN").unwrap());
        cmd.env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("SPINEL_CNI_SETTINGS", root.join("cni.json"))
            .env("CNI_COMMAND", command)
            .env("CNI_CONTAINERID", "real-nic")
            .env("CNI_IFNAME", "net1")
            .env("CNI_NETNS", netns)
            .env("CNI_PATH", "/usr/lib/cni");
        spinel_netns_tests::cni::run(cmd, &conf)
    };
    run("ADD", "/run/netns/pod").expect_ok("ADD of a real NIC");
    assert!(
        !Path::new("/sys/class/net/eth1").exists(),
        "the NIC left the host"
    );
    sh("ip netns del pod");
    // The kernel returns the physical device to the initial namespace by itself, though not
    // necessarily before `ip netns del` returns.
    let (back, _) = spinel_kernel_tests::guest::poll(
        std::time::Duration::from_secs(5),
        std::time::Duration::from_millis(50),
        || {
            let links = sh("ip -br link");
            Ok((links.contains("net1") || links.contains("dev")).then_some(links))
        },
    )
    .expect("the kernel did not return the NIC to the host");
    println!(
        "ok the kernel returned the NIC: {}",
        back.lines()
            .filter(|l| !l.starts_with("lo"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    run("DEL", "").expect_ok("DEL after the pod died");
    assert!(
        Path::new("/sys/class/net/eth1").exists(),
        "restored under its original name"
    );
    assert_eq!(sh("cat /sys/class/net/eth1/address"), mac_before);
    assert_eq!(
        sh("cat /sys/class/net/eth1/mtu").trim(),
        "1500",
        "MTU restored"
    );
    assert_eq!(
        sh("cat /sys/class/net/eth1/ifalias").trim(),
        "",
        "alias restored"
    );
    println!("ok DEL after the pod died: the real NIC is home as eth1 with its MTU and MAC");
}

fn exclusive() {
    // In exclusive mode a device belongs to one namespace: spinel runs in the initial one, as on
    // a node, with a real NIC standing in for the VF and an rxe device on it.
    let root = Path::new("/run/vm-cni-x");
    let sys = spinel_netns_tests::node::fake_pf_with_real_vf(root, "eth0", "eth1");
    let vf_pci = fs::read_link("/sys/class/net/eth1/device")
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    sh("rdma link add rxe_v type rxe netdev eth1");
    sys.add_rdma(&vf_pci, "rxe_v");
    fs::create_dir_all(sys.root().join("class")).unwrap();
    std::os::unix::fs::symlink("/sys/class/infiniband", sys.root().join("class/infiniband"))
        .unwrap();
    fs::write(
        root.join("cni.json"),
        json!({"stateDir": root.join("state"), "sysfsRoot": sys.root(), "recordVfRequestsTo": root.join("vf")}).to_string(),
    )
    .unwrap();
    sh("ip netns add pod");
    let conf = json!({"cniVersion": "1.1.0", "name": "rail0", "type": "spinel", "deviceID": vf_pci,
                      "ipam": {"type": "static", "addresses": [{"address": "10.56.0.9/24"}]}});
    let mut cmd = Command::new(std::env::var("SPINEL_BIN").unwrap());
    cmd.env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("SPINEL_CNI_SETTINGS", root.join("cni.json"))
        .env("CNI_COMMAND", "ADD")
        .env("CNI_CONTAINERID", "excl")
        .env("CNI_IFNAME", "net1")
        .env("CNI_NETNS", "/run/netns/pod")
        .env("CNI_PATH", "/usr/lib/cni");
    let out = spinel_netns_tests::cni::run(cmd, &conf);
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
    println!("ok exclusive mode: rxe cannot move, ADD says so: {msg} ({details})");
    assert!(
        Path::new("/sys/class/net/eth1").exists(),
        "the NIC never left"
    );
    assert!(
        sh("ip -n pod -br link")
            .lines()
            .all(|l| l.starts_with("lo")),
        "nothing in the pod"
    );
    let left: Vec<_> = fs::read_dir(root.join("state/attachments"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "no record left");
    println!("ok exclusive mode: the failed ADD left the VF as it found it");
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("shared") => shared(),
        Some("exclusive") => exclusive(),
        other => panic!("usage: vm-cni shared|exclusive (got {other:?})"),
    }
}
