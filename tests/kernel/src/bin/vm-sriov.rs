//! Runs inside the test VM: the spinel CNI on a real SR-IOV PF driver.
//!
//! QEMU's `igb` (Intel 82576) is the PF `eth0`; the guest's `igb` driver creates 4 VFs through
//! `sriov_numvfs` and `igbvf` binds them. The real `spinel` binary runs against the real sysfs
//! and sends VF attributes to the real PF driver (no fake sysfs, no recording double).
//!
//! `vm-sriov SCENARIO...` runs the scenarios in order in one boot (`all`: every one):
//! `attributes` (ADD with VLAN, QoS, MAC, spoof check, trust and a rate, read back through
//! `RTM_GETLINK` and `ip -d link show`, the igbvf netdev in the pod with its address and
//! routes, CHECK, DEL restoring everything), `refusals` (what igb refuses and spinel's answer),
//! `pod-death` (the pod namespace deleted with the VF inside, then DEL), `crash` (kill -9 at
//! every netlink request of ADD and DEL, then DEL and the next ADD), `rdma-exclusive` and
//! `rdma-shared` (rdma_rxe on an igbvf netdev: exclusive mode, GID, NCCL hints), `agent` (the
//! agent's NIC discovery, health and metrics through its library, no API server).
//! Prints `ok <step>` per passed step and `igb <attribute>: ...` per observed answer.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test program fails loudly

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use hostnet::netlink::{RouteSocket, VfAttributes, VfLinkMode, VfSettings, VlanProto};
use serde_json::{Value, json};
use spinel_kernel_tests::guest::{ok, poll, sh};
use spinel_netns_tests::cni::{self, CniCall, CniOutput, DEBIAN_CNI_DIR, with_prev_result};

/// The PF: the guest's only NIC.
const PF: &str = "eth0";
/// VFs created on it.
const NUM_VFS: u32 = 4;
const ROOT: &str = "/run/vm-sriov";

/// One VF as the guest created it.
#[derive(Debug, Clone)]
struct Vf {
    index: u32,
    pci: String,
    name: String,
}

struct Guest {
    settings: PathBuf,
    vfs: Vec<Vf>,
}

fn read(path: impl AsRef<Path>) -> String {
    fs::read_to_string(path.as_ref())
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// The VF netdev's sysfs-visible state in the host: its name (if in the host), MAC and MTU.
fn host_netdev(pci: &str) -> Option<String> {
    fs::read_dir(format!("/sys/bus/pci/devices/{pci}/net"))
        .ok()?
        .flatten()
        .next()
        .map(|e| e.file_name().to_string_lossy().into_owned())
}

impl Guest {
    /// Brings the PF up, waits for its carrier (igb refuses rates without link), creates the
    /// VFs and waits for igbvf's netdevs.
    fn setup() -> anyhow::Result<Self> {
        let start = Instant::now();
        sh(&format!("ip link set {PF} up"))?;
        wait_carrier(PF)?;
        fs::write(
            format!("/sys/class/net/{PF}/device/sriov_numvfs"),
            NUM_VFS.to_string(),
        )
        .context("create the VFs")?;
        let mut vfs = Vec::new();
        for index in 0..NUM_VFS {
            let link = format!("/sys/class/net/{PF}/device/virtfn{index}");
            let pci = fs::read_link(&link)
                .with_context(|| link.clone())?
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let (name, _) = poll(Duration::from_secs(30), Duration::from_millis(100), || {
                Ok(host_netdev(&pci))
            })
            .with_context(|| format!("igbvf did not create a netdev for VF {index} ({pci})"))?;
            vfs.push(Vf { index, pci, name });
        }
        // sriov_numvfs reinitialises the PF: wait for its link again.
        wait_carrier(PF)?;
        let driver = fs::read_link(format!("/sys/bus/pci/devices/{}/driver", vfs[0].pci))?;
        ensure!(driver.ends_with("igbvf"), "VF driver is {driver:?}");
        ok(&format!(
            "{NUM_VFS} VFs on igb PF {PF} bound to igbvf ({}) in {:.1} s",
            vfs.iter()
                .map(|v| format!("vf {} {} {}", v.index, v.pci, v.name))
                .collect::<Vec<_>>()
                .join(", "),
            start.elapsed().as_secs_f64()
        ));
        let root = Path::new(ROOT);
        fs::create_dir_all(root)?;
        let settings = root.join("cni.json");
        fs::write(
            &settings,
            json!({"stateDir": root.join("state"), "roceInfoDir": root.join("roce"), "logLevel": "info"})
                .to_string(),
        )?;
        Ok(Self { settings, vfs })
    }

    fn command(&self, program: &Path, call: &CniCall) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("SPINEL_CNI_SETTINGS", &self.settings);
        call.apply(&mut cmd, Path::new(DEBIAN_CNI_DIR));
        cmd
    }

    fn spinel(&self, call: &CniCall, conf: &Value) -> CniOutput {
        cni::run(self.command(cni::spinel_binary(), call), conf)
    }

    /// spinel under strace, killed on entry to its `n`-th `syscall`.
    fn spinel_killed_at(&self, call: &CniCall, conf: &Value, syscall: &str, n: usize) -> CniOutput {
        let mut cmd = self.command(Path::new("/usr/bin/strace"), call);
        cmd.args([
            "-qq",
            "-o",
            "/dev/null",
            "-e",
            &format!("inject={syscall}:signal=KILL:when={n}"),
        ])
        .arg(cni::spinel_binary());
        cni::run(cmd, conf)
    }

    fn conf(&self, vf: &Vf, extra: Value) -> Value {
        let mut conf = json!({
            "cniVersion": "1.1.0", "name": "rail0", "type": "spinel", "deviceID": vf.pci,
            "ipam": {"type": "static",
                     "addresses": [{"address": "10.56.0.9/24", "gateway": "10.56.0.1"}],
                     "routes": [{"dst": "10.0.0.0/8"}]},
            "garp": {"count": 1, "carrierTimeoutMs": 0},
            "rdma": {"gid": "off"}
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            conf[k] = v.clone();
        }
        conf
    }
}

fn wait_carrier(dev: &str) -> anyhow::Result<()> {
    poll(Duration::from_secs(20), Duration::from_millis(100), || {
        Ok((read(format!("/sys/class/net/{dev}/carrier")) == "1").then_some(()))
    })
    .with_context(|| format!("{dev} has no carrier"))
    .map(drop)
}

/// A call without `CNI_ARGS` (no Multus here).
fn call(command: &str, container_id: &str, netns: Option<&str>) -> CniCall {
    CniCall {
        args: None,
        ..CniCall::new(command, container_id, netns.map(Path::new), "net1")
    }
}

/// What igb reports for VF `index`, through hostnet's `RTM_GETLINK` with `IFLA_VFINFO_LIST`.
fn pf_reports(index: u32) -> VfSettings {
    let mut nl = RouteSocket::open().unwrap();
    let pf = nl.link_by_name(PF).unwrap().unwrap();
    nl.vf_settings(pf.index)
        .unwrap()
        .into_iter()
        .find(|s| s.index == index)
        .unwrap()
}

/// iproute2's line for VF `index` in `ip -d link show PF`.
fn ip_vf_line(index: u32) -> String {
    let out = sh(&format!("ip -d link show {PF}")).unwrap();
    out.lines()
        .find(|l| l.trim_start().starts_with(&format!("vf {index} ")))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Everything the host shows about a VF that DEL must restore.
fn host_state(vf: &Vf) -> (Option<String>, String, String, String, VfSettings) {
    let name = host_netdev(&vf.pci);
    let attr = |a: &str| {
        name.as_ref()
            .map(|n| read(format!("/sys/class/net/{n}/{a}")))
            .unwrap_or_default()
    };
    (
        name.clone(),
        attr("address"),
        attr("mtu"),
        attr("ifalias"),
        pf_reports(vf.index),
    )
}

fn attributes(g: &Guest) -> anyhow::Result<()> {
    let vf = &g.vfs[1];
    sh("ip netns add pod")?;
    let before = host_state(vf);
    ensure!(
        before.4 == VfSettings::factory_default(vf.index),
        "VF {} starts at the factory default: {:?}",
        vf.index,
        before.4
    );
    let conf = g.conf(
        vf,
        json!({"vlan": 100, "vlanQoS": 3, "spoofchk": "off", "trust": "on", "maxTxRate": 100,
               "mtu": 1400, "runtimeConfig": {"mac": "0a:58:0a:38:00:09"}}),
    );
    let add = call("ADD", "attrs", Some("/run/netns/pod"));
    let result = g
        .spinel(&add, &conf)
        .expect_ok("ADD with VF attributes")
        .clone();

    let want = VfSettings {
        index: vf.index,
        mac: "0a:58:0a:38:00:09".parse()?,
        attributes: VfAttributes {
            vlan: 100,
            qos: 3,
            proto: VlanProto::Dot1Q,
            spoofchk: false,
            trust: true,
            link_state: VfLinkMode::Auto,
            min_tx_rate: 0,
            max_tx_rate: 100,
        },
    };
    ensure!(
        pf_reports(vf.index) == want,
        "IFLA_VFINFO_LIST: {:?}",
        pf_reports(vf.index)
    );
    ok(&format!(
        "RTM_GETLINK IFLA_VFINFO_LIST reports what was asked: {want}"
    ));
    let line = ip_vf_line(vf.index);
    for part in [
        "link/ether 0a:58:0a:38:00:09",
        "vlan 100, qos 3",
        "spoof checking off",
        "trust on",
        "max_tx_rate 100Mbps",
    ] {
        ensure!(
            line.contains(part),
            "ip -d link show: {part:?} not in {line:?}"
        );
    }
    ok(&format!("ip -d link show {PF}: {line}"));

    let driver = sh("ip netns exec pod ethtool -i net1")?;
    ensure!(driver.contains("driver: igbvf"), "{driver}");
    let link = sh("ip -n pod -d link show net1")?;
    ensure!(
        link.contains("mtu 1400") && link.contains("0a:58:0a:38:00:09"),
        "{link}"
    );
    let addr = sh("ip -n pod -4 addr show net1")?;
    ensure!(addr.contains("inet 10.56.0.9/24"), "{addr}");
    let routes = sh("ip -n pod route show table 101")?;
    ensure!(
        routes.contains("default via 10.56.0.1 dev net1")
            && routes.contains("10.0.0.0/8 via 10.56.0.1 dev net1"),
        "{routes}"
    );
    let rules = sh("ip -n pod rule")?;
    ensure!(rules.contains("from 10.56.0.9 lookup 101"), "{rules}");
    ensure!(host_netdev(&vf.pci).is_none(), "the VF left the host");
    ok(
        "the igbvf netdev is net1 in the pod: MAC, MTU 1400, 10.56.0.9/24, routes in table 101, its rule",
    );

    let prev = with_prev_result(&conf, &result);
    g.spinel(&add.with_command("CHECK"), &prev)
        .expect_ok("CHECK");
    // Drift on the PF side is the PF's report, not a cache: change the VLAN behind spinel.
    sh(&format!("ip link set {PF} vf {} vlan 200", vf.index))?;
    let msg = g
        .spinel(&add.with_command("CHECK"), &prev)
        .expect_code(104, "CHECK after the VLAN changed")
        .to_owned();
    ensure!(msg.contains("vlan (asked 100, PF reports 200)"), "{msg}");
    ok("CHECK passes, then reports the VLAN changed behind its back through the PF");

    g.spinel(&add.with_command("DEL"), &prev).expect_ok("DEL");
    let after = host_state(vf);
    ensure!(
        after == before,
        "DEL restores everything: {before:?} -> {after:?}"
    );
    ok(&format!(
        "DEL restores the VF: {} MAC {} MTU {} no alias, PF reports {}",
        vf.name,
        after.1,
        after.2,
        ip_vf_line(vf.index)
    ));
    sh("ip netns del pod")?;
    Ok(())
}

/// Each attribute igb does not take, alone, and spinel's answer; then the accepted ones.
fn refusals(g: &Guest) -> anyhow::Result<()> {
    let vf = &g.vfs[2];
    sh("ip netns add pod")?;
    let before = host_state(vf);
    let cases = [
        (
            "linkState",
            json!({"linkState": "enable"}),
            "linkState",
            "Operation not supported",
        ),
        (
            "linkState",
            json!({"linkState": "disable"}),
            "linkState",
            "Operation not supported",
        ),
        (
            "vlanProto",
            json!({"vlan": 10, "vlanProto": "802.1ad"}),
            "vlan/vlanQoS/vlanProto",
            "Protocol not supported",
        ),
        (
            "minTxRate",
            json!({"minTxRate": 10, "maxTxRate": 100}),
            "minTxRate/maxTxRate",
            "Invalid argument",
        ),
        (
            "maxTxRate",
            json!({"maxTxRate": 2000}),
            "minTxRate/maxTxRate",
            "Invalid argument",
        ),
    ];
    for (name, extra, key, errno) in cases {
        let text = extra.to_string();
        let out = g.spinel(
            &call("ADD", "refused", Some("/run/netns/pod")),
            &g.conf(vf, extra),
        );
        let msg = out.expect_code(100, &format!("ADD with {text}")).to_owned();
        let details = out.json["details"].as_str().unwrap_or_default().to_owned();
        ensure!(
            msg.contains(&format!(
                "PF {PF} (driver igb) refuses VF {} {key}",
                vf.index
            )) && details.contains(errno),
            "{text}: {msg} / {details}"
        );
        let after = host_state(vf);
        ensure!(
            after == before,
            "{text}: nothing changed: {before:?} -> {after:?}"
        );
        println!("igb {name}: refused ({errno}); spinel answers 100: {msg}");
    }
    ok(
        "every attribute igb refuses fails the ADD with 100, names the attribute and igb, and changes nothing",
    );

    // Accepted: everything else, together (the attributes scenario reads each back).
    let conf = g.conf(
        vf,
        json!({"vlan": 4094, "vlanQoS": 7, "spoofchk": "off", "trust": "on", "maxTxRate": 1000,
               "linkState": "auto"}),
    );
    let add = call("ADD", "accepted", Some("/run/netns/pod"));
    let result = g
        .spinel(&add, &conf)
        .expect_ok("ADD with the accepted attributes")
        .clone();
    println!("igb accepts: {}", ip_vf_line(vf.index));
    g.spinel(&add.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("DEL");
    ensure!(host_state(vf) == before);
    ok(
        "igb takes mac, vlan 4094 qos 7, spoofchk, trust, maxTxRate up to the link speed; linkState auto is never sent",
    );

    // igb refuses every rate while the PF has no link, the restore to 0 too. DEL must not
    // wedge on that: a refused restore is logged and DEL succeeds; the next ADD resets it.
    let conf = g.conf(vf, json!({"maxTxRate": 100}));
    let add = call("ADD", "rate", Some("/run/netns/pod"));
    let result = g.spinel(&add, &conf).expect_ok("ADD with a rate").clone();
    sh(&format!("ip link set {PF} down"))?;
    let refused = sh(&format!(
        "ip link set {PF} vf {} max_tx_rate 0 2>&1 || echo refused",
        vf.index
    ))?;
    ensure!(
        refused.contains("refused"),
        "igb took a rate without link: {refused}"
    );
    let reported = pf_reports(vf.index).attributes.max_tx_rate;
    println!(
        "igb rate with the PF link down: refused ({}); it reports max_tx_rate {reported}",
        refused.lines().next().unwrap_or("")
    );
    let del = g.spinel(&add.with_command("DEL"), &with_prev_result(&conf, &result));
    del.expect_ok("DEL while the PF is down");
    let warned = del.stderr.contains("the PF refuses rate");
    let after = pf_reports(vf.index).attributes.max_tx_rate;
    println!(
        "igb after DEL with the PF link down: reports max_tx_rate {after}; spinel {}",
        if warned {
            "logged the refused restore"
        } else {
            "had nothing to restore"
        }
    );
    ensure!(
        after == 0 || warned,
        "a rate left on the VF comes with a warning: {}",
        del.stderr
    );
    ensure!(
        host_netdev(&vf.pci).as_deref() == Some(vf.name.as_str()),
        "VF home"
    );
    sh(&format!("ip link set {PF} up"))?;
    wait_carrier(PF)?;
    let add = call("ADD", "after", Some("/run/netns/pod"));
    let conf = g.conf(vf, json!({}));
    let result = g.spinel(&add, &conf).expect_ok("next ADD").clone();
    ensure!(
        pf_reports(vf.index).attributes.max_tx_rate == 0,
        "the next ADD reset the rate"
    );
    g.spinel(&add.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("DEL");
    ensure!(host_state(vf) == before);
    ok(
        "a restore igb refuses (rate, PF link down) is logged and DEL succeeds; the next ADD resets the rate",
    );
    sh("ip netns del pod")?;
    Ok(())
}

fn pod_death(g: &Guest) -> anyhow::Result<()> {
    let vf = &g.vfs[3];
    sh("ip netns add pod")?;
    let before = host_state(vf);
    let conf = g.conf(vf, json!({"vlan": 30, "trust": "on", "mtu": 1400}));
    let add = call("ADD", "dies", Some("/run/netns/pod"));
    g.spinel(&add, &conf).expect_ok("ADD");
    ensure!(host_netdev(&vf.pci).is_none());
    sh("ip netns del pod")?;
    let (name, _) = poll(Duration::from_secs(10), Duration::from_millis(50), || {
        Ok(host_netdev(&vf.pci))
    })
    .context("the kernel did not return the VF")?;
    let alias = read(format!("/sys/class/net/{name}/ifalias"));
    ok(&format!(
        "the kernel returned the VF from the dead pod as {name} (alias {alias:?}), PF still reports {}",
        ip_vf_line(vf.index)
    ));
    let del = CniCall {
        netns: None,
        ..add.with_command("DEL")
    };
    g.spinel(&del, &conf).expect_ok("DEL after the pod died");
    let after = host_state(vf);
    ensure!(after == before, "{before:?} -> {after:?}");
    ok(&format!(
        "DEL after the pod died: {} home with its MAC, MTU, no alias, PF attributes restored",
        vf.name
    ));
    Ok(())
}

/// kill -9 at every other netlink request of ADD and at every one of DEL (after a good ADD),
/// then recovery: DEL, then the next ADD of the same VF, which must find it as it was. (TCG
/// makes each kill cost seconds; the namespace tier kills at every system call.)
fn crash(g: &Guest) -> anyhow::Result<()> {
    let vf = &g.vfs[0];
    sh("ip netns add pod")?;
    let before = host_state(vf);
    let conf = g.conf(vf, json!({"vlan": 40, "spoofchk": "off", "maxTxRate": 200}));
    let mut kills = 0;
    for (phase, stride) in [("ADD", 2), ("DEL", 1)] {
        for (phase_kills, n) in (1..).step_by(stride).enumerate() {
            let add = call("ADD", &format!("crash-{phase}-{n}"), Some("/run/netns/pod"));
            let out = if phase == "ADD" {
                g.spinel_killed_at(&add, &conf, "sendto", n)
            } else {
                g.spinel(&add, &conf).expect_ok("ADD before a killed DEL");
                g.spinel_killed_at(&add.with_command("DEL"), &conf, "sendto", n)
            };
            let killed = out.signal == Some(9);
            g.spinel(&add.with_command("DEL"), &conf)
                .expect_ok(&format!("DEL after {phase} killed at request {n}"));
            let after = host_state(vf);
            ensure!(
                after == before,
                "{phase} killed at request {n}, then DEL: {before:?} -> {after:?}"
            );
            if !killed {
                ok(&format!(
                    "{phase} killed at {} of its netlink requests ({phase_kills} kills), then DEL: VF home, attributes restored",
                    if stride == 1 { "each" } else { "every other" },
                ));
                break;
            }
            kills += 1;
        }
    }
    // The next ADD of the same VF finds it as it was.
    let add = call("ADD", "after-crashes", Some("/run/netns/pod"));
    let result = g.spinel(&add, &conf).expect_ok("the next ADD").clone();
    g.spinel(&add.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("its DEL");
    ensure!(host_state(vf) == before);
    ensure!(
        fs::read_dir(Path::new(ROOT).join("state/attachments"))?.count() == 0,
        "no record left"
    );
    ok(&format!(
        "{kills} kills, no VF stuck, the next ADD and DEL work"
    ));
    sh("ip netns del pod")?;
    Ok(())
}

/// The GID table entry at `index` of `dev` port 1, as sysfs shows it: (gid, type, ndev).
fn gid_entry(dev: &str, index: u64) -> (String, String, String) {
    let base = format!("/sys/class/infiniband/{dev}/ports/1");
    (
        read(format!("{base}/gids/{index}")),
        read(format!("{base}/gid_attrs/types/{index}")),
        read(format!("{base}/gid_attrs/ndevs/{index}")),
    )
}

/// Writes a device-info file as Multus does for the SR-IOV device plugin, naming the VF's
/// RDMA device (rxe is a virtual device: it never appears under the VF's PCI function).
fn device_info(vf: &Vf, rdma: &str) -> anyhow::Result<PathBuf> {
    let dir = Path::new("/var/run/k8s.cni.cncf.io/devinfo/cni");
    fs::create_dir_all(dir)?;
    let path = dir.join(format!("rdma-{}.json", vf.index));
    fs::write(
        &path,
        json!({"type": "pci", "version": "1.1.0",
               "pci": {"pci-address": vf.pci, "rdma-device": rdma}})
        .to_string(),
    )?;
    Ok(path)
}

/// Exclusive RDMA namespace mode, switched at run time while no namespace but the initial one
/// exists (the kernel refuses otherwise): rxe on a VF's netdev cannot follow it into a pod,
/// so ADD fails before the netdev moves and leaves the VF as it was.
fn rdma_exclusive(g: &Guest) -> anyhow::Result<()> {
    let vf = &g.vfs[0];
    sh("rdma system set netns exclusive")?;
    ensure!(sh("rdma system show")?.contains("netns exclusive"));
    sh(&format!("rdma link add rxe_x type rxe netdev {}", vf.name))?;
    sh("ip netns add pod")?;
    let before = host_state(vf);
    let mut conf = g.conf(vf, json!({"rdma": {"netnsMode": "exclusive"}}));
    conf["runtimeConfig"] = json!({"CNIDeviceInfoFile": device_info(vf, "rxe_x")?});
    let out = g.spinel(&call("ADD", "excl", Some("/run/netns/pod")), &conf);
    let msg = out.expect_code(101, "ADD in exclusive mode").to_owned();
    let details = out.json["details"].as_str().unwrap_or_default().to_owned();
    ensure!(
        msg.contains("cannot move RDMA device rxe_x into the pod"),
        "{msg} / {details}"
    );
    ensure!(host_state(vf) == before, "the VF never left");
    ok(&format!(
        "exclusive mode: rxe on an igbvf netdev cannot move, ADD says so and leaves the VF: {msg} ({details})"
    ));
    sh("rdma link delete rxe_x && ip netns del pod")?;
    // The dead namespace is freed asynchronously; the mode change waits for it.
    poll(Duration::from_secs(10), Duration::from_millis(50), || {
        Ok(sh("rdma system set netns shared").is_ok().then_some(()))
    })
    .context("back to shared mode")?;
    Ok(())
}

/// Shared mode: rxe on the VF's netdev in the pod gives the VF a real RoCE v2 GID table; the
/// GID index and NCCL hints of the pod are read from what the kernel shows.
fn rdma_shared(g: &Guest) -> anyhow::Result<()> {
    let vf = &g.vfs[0];
    sh("ip netns add pod")?;
    let before = host_state(vf);
    // rxe names the VF's RDMA device; it follows its netdev nowhere: moving the netdev
    // unregisters it. ADD then cannot find the GID and says so.
    sh(&format!("rdma link add rxe_vf type rxe netdev {}", vf.name))?;
    let mut conf = g.conf(
        vf,
        json!({"rdma": {"gid": "required", "gidTimeoutMs": 500}}),
    );
    conf["runtimeConfig"] = json!({"CNIDeviceInfoFile": device_info(vf, "rxe_vf")?});
    let out = g.spinel(&call("ADD", "rxe-moves", Some("/run/netns/pod")), &conf);
    out.expect_code(100, "ADD whose rxe device died with the move");
    let msg = out.json["details"].as_str().unwrap_or_default().to_owned();
    ensure!(msg.contains("RDMA device rxe_vf not found"), "{}", out.json);
    ensure!(
        !sh("rdma link")?.contains("rxe_vf"),
        "rxe unregistered its device when the VF netdev moved"
    );
    ensure!(
        host_state(vf) == before,
        "the failed ADD left the VF as it was"
    );
    ok(&format!(
        "rxe on an igbvf netdev unregisters when the VF moves; ADD answers 100 and rolls back: {msg}"
    ));

    // rxe created on the VF inside the pod: the pod's GID, found as spinel and NCCL would.
    let conf = g.conf(vf, json!({}));
    let add = call("ADD", "rxe-pod", Some("/run/netns/pod"));
    let result = g.spinel(&add, &conf).expect_ok("ADD").clone();
    sh("ip netns exec pod rdma link add rxe_pod type rxe netdev net1")?;
    let out = Command::new(cni::spinelctl_binary())
        .args(["nccl-env", "--netns", "/run/netns/pod"])
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    ensure!(
        out.status.success(),
        "nccl-env: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("NCCL_IB_GID_INDEX="))
        .context("no NCCL_IB_GID_INDEX")?
        .trim()
        .parse()?;
    let (gid, kind, ndev) = gid_entry("rxe_pod", index);
    ensure!(
        gid == "0000:0000:0000:0000:0000:ffff:0a38:0009" && kind == "RoCE v2" && ndev == "net1",
        "GID {index}: {gid} {kind} {ndev}"
    );
    ensure!(
        text.contains("NCCL_IB_HCA==rxe_pod:1") && text.contains("NCCL_SOCKET_IFNAME==net1"),
        "{text}"
    );
    ok(&format!(
        "rxe on the VF in the pod: spinelctl nccl-env finds RoCE v2 GID index {index} of 10.56.0.9 on net1: {}",
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    ));
    g.spinel(&add.with_command("DEL"), &with_prev_result(&conf, &result))
        .expect_ok("DEL");
    ensure!(host_state(vf) == before);
    ensure!(
        !sh("rdma link")?.contains("rxe_pod"),
        "rxe_pod left with the VF"
    );
    ok("DEL: the VF is home and its rxe device went with the pod-side netdev");
    sh("ip netns del pod")?;
    Ok(())
}

/// A sysfs root that is the real one plus the PF's `infiniband/` entry an mlx5 PF has: rxe is
/// a virtual device and never sits under a PCI function, and the agent takes only PCI
/// functions with an RDMA device as RoCE NICs. Everything else (`class/net` with carrier,
/// speed and MTU, the RDMA devices' counters) is the kernel's own.
fn sysfs_with_pf_rdma(pf_pci: &str, rdma: &str) -> anyhow::Result<PathBuf> {
    let root = Path::new(ROOT).join("agent-sys");
    fs::create_dir_all(root.join("class"))?;
    std::os::unix::fs::symlink("/sys/class/net", root.join("class/net"))?;
    std::os::unix::fs::symlink("/sys/class/infiniband", root.join("class/infiniband"))?;
    fs::create_dir_all(
        root.join("bus/pci/devices")
            .join(pf_pci)
            .join("infiniband")
            .join(rdma),
    )?;
    Ok(root)
}

/// The agent's duties on the PCI NIC with VFs, through its library (no API server here):
/// NIC discovery from the real sysfs, RoCE health (carrier, speed, MTU) and the metrics.
fn agent(g: &Guest) -> anyhow::Result<()> {
    use hostnet::sriov::Sysfs;
    use spinel_agent::metrics::Metrics;
    use spinel_agent::roce_health::{Readings, findings, is_informational};
    use spinel_agent::settings::Health;
    use spinel_node::nics::{NicSelection, discover};

    let mut host = RouteSocket::open()?;
    let names: Vec<String> = std::iter::once(PF.to_owned())
        .chain(g.vfs.iter().map(|v| v.name.clone()))
        .collect();
    let selection = NicSelection::Names(names.iter().map(|n| n.parse()).collect::<Result<_, _>>()?);
    let (nics, refused) = discover(&Sysfs::new("/sys"), &mut host, &selection)?;
    ensure!(
        nics.is_empty(),
        "no RoCE NIC without an RDMA device: {nics:?}"
    );
    let pf_pci = read(format!("/sys/class/net/{PF}/device/uevent"))
        .lines()
        .find_map(|l| l.strip_prefix("PCI_SLOT_NAME=").map(str::to_owned))
        .context("PF PCI address")?;
    let reason = |name: &str| {
        refused
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.reason.clone())
            .unwrap_or_default()
    };
    ensure!(
        reason(PF) == format!("PCI function {pf_pci} has no RDMA device"),
        "{refused:?}"
    );
    for vf in &g.vfs {
        ensure!(reason(&vf.name) == "a VF belongs to a pod", "{refused:?}");
    }
    // igb has no switchdev mode: no netdev here is a representor.
    let real = Sysfs::new("/sys");
    ensure!(names.iter().all(|n| !real.is_representor(n)));
    ok(&format!(
        "agent discovery on the real sysfs: {PF} refused ({}), its {} VFs refused ({}), no representors",
        reason(PF),
        g.vfs.len(),
        reason(&g.vfs[0].name)
    ));

    sh(&format!("rdma link add rxe_pf type rxe netdev {PF}"))?;
    let root = sysfs_with_pf_rdma(&pf_pci, "rxe_pf")?;
    let sysfs = Sysfs::new(&root);
    let (nics, _) = discover(&sysfs, &mut host, &selection)?;
    ensure!(nics.len() == 1 && nics[0].name == PF, "{nics:?}");
    let nic = &nics[0];
    ensure!(
        nic.carrier && nic.speed_mbps == Some(1000) && nic.mtu == 1500,
        "{nic:?}"
    );
    ensure!(nic.rdma_device.as_deref() == Some("rxe_pf") && nic.pci.as_str() == pf_pci);
    let health = |min_speed: u32, min_mtu: u32| Health {
        min_speed_mbps: Some(min_speed),
        min_mtu: Some(min_mtu),
        require_neighbor: false,
        taint: false,
        unhealthy_after: Duration::ZERO,
        healthy_after: Duration::ZERO,
        period: Duration::from_secs(1),
        neighbor_grace: Duration::ZERO,
        dcb_replay_dir: None,
    };
    let reasons = |h: &Health, nics: &[spinel_node::nics::RoceNic]| -> Vec<String> {
        findings(h, nics, None, &[], &Readings::default(), false)
            .into_iter()
            .filter(|f| !is_informational(&f.reason))
            .map(|f| f.reason)
            .collect()
    };
    ensure!(reasons(&health(1000, 1500), &nics).is_empty());
    ensure!(
        reasons(&health(25_000, 9000), &nics) == ["SpeedBelowExpected", "MtuBelowExpected"],
        "{:?}",
        reasons(&health(25_000, 9000), &nics)
    );
    ok(&format!(
        "agent: {PF} is a RoCE NIC at {} Mb/s, MTU {}, carrier; healthy at 1000/1500, SpeedBelowExpected and MtuBelowExpected against 25000/9000",
        nic.speed_mbps.unwrap_or(0),
        nic.mtu
    ));

    let metrics = Metrics::new(root.clone(), None);
    metrics.set_nics(&nics);
    let text = metrics.encode();
    for line in [
        "spinel_nic_carrier{nic=\"eth0\"} 1",
        "spinel_nic_speed_bytes{nic=\"eth0\"} 125000000",
        "spinel_nic_mtu_bytes{nic=\"eth0\"} 1500",
    ] {
        ensure!(text.contains(line), "{line} not in\n{text}");
    }
    let rdma: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("rxe_pf") && !l.starts_with('#'))
        .collect();
    ensure!(!rdma.is_empty(), "no RDMA port counters of rxe_pf:\n{text}");
    ok(&format!(
        "agent metrics: carrier, speed and MTU of {PF}, and {} series of rxe_pf's port counters",
        rdma.len()
    ));

    // Carrier lost: the agent's next look sees it (the VFs follow their PF's link).
    sh(&format!("ip link set {PF} down"))?;
    let (down, _) = discover(&sysfs, &mut host, &selection)?;
    ensure!(reasons(&health(1000, 1500), &down) == ["LinkDown"]);
    metrics.set_nics(&down);
    ensure!(
        metrics
            .encode()
            .contains("spinel_nic_carrier{nic=\"eth0\"} 0")
    );
    ok("agent: the PF's link down is LinkDown and spinel_nic_carrier 0");
    sh(&format!("ip link set {PF} up && rdma link delete rxe_pf"))?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // rdma-exclusive first: the mode can change only while no other namespace exists.
    let all = [
        "rdma-exclusive",
        "attributes",
        "refusals",
        "pod-death",
        "rdma-shared",
        "crash",
        "agent",
    ];
    let wanted: Vec<&str> = if args.iter().any(|a| a == "all") {
        all.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };
    if wanted.is_empty() {
        bail!("usage: vm-sriov all|SCENARIO... ({})", all.join(" "));
    }
    let g = Guest::setup()?;
    for s in wanted {
        let start = Instant::now();
        match s {
            "attributes" => attributes(&g),
            "refusals" => refusals(&g),
            "pod-death" => pod_death(&g),
            "crash" => crash(&g),
            "rdma-exclusive" => rdma_exclusive(&g),
            "rdma-shared" => rdma_shared(&g),
            "agent" => agent(&g),
            other => bail!("unknown scenario {other}"),
        }
        .with_context(|| format!("scenario {s}"))?;
        println!("time {s} {:.1} s", start.elapsed().as_secs_f64());
    }
    Ok(())
}
