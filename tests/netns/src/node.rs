//! [`SimNode`]: a namespace-simulated SR-IOV node.
//!
//! - namespace `node` is the host: PF `pf0` (MTU 9000) and its VFs `pf0v<i>`, which are real
//!   macvlan interfaces on `pf0` (bridge mode, so VFs reach each other as through the NIC's
//!   embedded switch);
//! - namespace `leaf` is the top-of-rack switch: `pf0`'s veth peer `swp1` with the gateway
//!   address 10.56.0.1/24;
//! - a fake sysfs tree describes `pf0` as PF `0000:3b:00.0` and each `pf0v<i>` as its VF `i`;
//! - `spinel` runs inside `node`, configured through a settings file in the sandbox, with
//!   Debian's host-local, static, tuning and sbr plugins beside it on `CNI_PATH`.

use std::fs;
use std::os::fd::AsFd;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hostnet::netlink::{LinkChange, RouteSocket};
use hostnet::netns::NetNs;
use hostnet::sriov::fake::FakeSysfs;
use serde_json::{Value, json};

use crate::cni::{self, CniCall, CniOutput, DEBIAN_CNI_DIR};
use crate::sandbox::Sandbox;

/// PCI address of the simulated PF.
pub const PF_PCI: &str = "0000:3b:00.0";

/// One simulated VF.
#[derive(Debug, Clone)]
pub struct SimVf {
    /// PCI address.
    pub pci: String,
    /// Host netdev name.
    pub name: String,
    /// MAC in the host before any attachment.
    pub mac: String,
}

/// A network namespace and its links as iproute2 reports them, for before/after comparisons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    /// name, MAC, MTU, alias, up.
    pub links: Vec<(String, String, u64, String, bool)>,
}

/// A simulated SR-IOV node.
pub struct SimNode {
    /// The sandbox holding everything.
    pub sb: Sandbox,
    /// The VFs.
    pub vfs: Vec<SimVf>,
    /// The fake sysfs tree.
    pub sysfs: FakeSysfs,
    /// Journal directory.
    pub state_dir: PathBuf,
    /// host-local's data directory.
    pub ipam_dir: PathBuf,
    /// Directory holding spinel and Debian's plugins (the `CNI_PATH`).
    pub cni_path: PathBuf,
    /// Device-info directory (see [`SimNode::device_info_file`]).
    devinfo_dir: PathBuf,
    /// Where spinel records VF attribute requests (no kernel here implements them).
    pub vf_requests: PathBuf,
    /// Where spinel publishes each attachment's record (the node setting `roceInfoDir`).
    pub records_dir: PathBuf,
    settings: PathBuf,
}

/// Gives namespace `node` of `sb` a simulated SR-IOV NIC: PF `pf0` (MTU 9000), a veth whose
/// peer `swp1` is in a new namespace `leaf` (the top-of-rack switch, 10.56.0.1/24), and
/// `num_vfs` VFs `pf0v<i>` (macvlan on `pf0`, bridge mode), described as PF [`PF_PCI`] and
/// its VFs in a fake sysfs at `<sandbox>/sys`.
pub fn sriov_nic(sb: &Sandbox, num_vfs: u32) -> (FakeSysfs, Vec<SimVf>) {
    sb.netns("leaf");
    sb.run_in(
        "node",
        "ip",
        &[
            "link", "add", "pf0", "mtu", "9000", "type", "veth", "peer", "name", "swp1", "mtu",
            "9000",
        ],
    );
    move_link(sb, "node", "swp1", "leaf");
    sb.run_in("node", "ip", &["link", "set", "pf0", "up"]);
    sb.run_in("leaf", "ip", &["link", "set", "swp1", "up"]);
    sb.run_in(
        "leaf",
        "ip",
        &["addr", "add", "10.56.0.1/24", "dev", "swp1"],
    );

    let sysfs = FakeSysfs::at(sb.dir().join("sys"));
    sysfs.add_pf(PF_PCI, "pf0", num_vfs, num_vfs.max(8));
    let mut vfs = Vec::new();
    for i in 0..num_vfs {
        let name = format!("pf0v{i}");
        let mac = format!("02:5f:00:00:{:02x}:{:02x}", i / 256, i % 256);
        sb.run_in(
            "node",
            "ip",
            &[
                "link", "add", "link", "pf0", "name", &name, "address", &mac, "type", "macvlan",
                "mode", "bridge",
            ],
        );
        let pci = vf_pci(i);
        sysfs.add_vf(PF_PCI, i, &pci, Some(&name), "mlx5_core");
        vfs.push(SimVf { pci, name, mac });
    }
    (sysfs, vfs)
}

/// The PCI address of VF `i`: functions 2-7 of device 0, then 8 per device.
fn vf_pci(i: u32) -> String {
    let n = i + 2;
    format!("0000:3b:{:02x}.{}", n / 8, n % 8)
}

impl SimNode {
    /// Builds a node with `num_vfs` VFs.
    pub fn new(test: &str, num_vfs: u32) -> Self {
        cni::require_debian_plugin("host-local");
        let sb = Sandbox::new(test);
        sb.netns("node");
        let (sysfs, vfs) = sriov_nic(&sb, num_vfs);

        let state_dir = sb.dir().join("state");
        let ipam_dir = sb.dir().join("ipam");
        let devinfo_dir = sb.dir().join("devinfo");
        let vf_requests = sb.dir().join("vf-requests");
        let records_dir = sb.dir().join("roce");
        let cni_path = sb.dir().join("bin");
        fs::create_dir_all(&cni_path).unwrap();
        fs::create_dir_all(devinfo_dir.join("cni")).unwrap();
        symlink(cni::spinel_binary(), cni_path.join("spinel")).unwrap();
        for plugin in ["host-local", "static", "tuning", "sbr", "host-device"] {
            symlink(
                Path::new(DEBIAN_CNI_DIR).join(plugin),
                cni_path.join(plugin),
            )
            .unwrap();
        }
        let settings = sb.dir().join("spinel-cni.json");
        fs::write(
            &settings,
            json!({
                "stateDir": state_dir,
                "sysfsRoot": sysfs.root(),
                "deviceInfoDir": devinfo_dir,
                "lockTimeoutMs": 20000,
                "logLevel": "info",
                "recordVfRequestsTo": vf_requests,
                "roceInfoDir": records_dir,
            })
            .to_string(),
        )
        .unwrap();
        fs::set_permissions(&settings, fs::Permissions::from_mode(0o644)).unwrap();
        Self {
            sb,
            vfs,
            sysfs,
            state_dir,
            ipam_dir,
            cni_path,
            devinfo_dir,
            vf_requests,
            records_dir,
            settings,
        }
    }

    /// Creates a pod namespace and returns its path.
    pub fn pod(&self, name: &str) -> PathBuf {
        self.sb.netns(name)
    }

    /// A `spinel` network configuration for VF `vf`, with host-local IPAM on 10.56.0.0/24.
    pub fn conf(&self, version: &str, vf: Option<&SimVf>) -> Value {
        let mut conf = json!({
            "cniVersion": version,
            "name": "rail0",
            "type": "spinel",
            "ipam": {
                "type": "host-local",
                "dataDir": self.ipam_dir,
                "ranges": [[{"subnet": "10.56.0.0/24", "rangeStart": "10.56.0.10", "rangeEnd": "10.56.0.250", "gateway": "10.56.0.1"}]],
                "routes": [{"dst": "10.0.0.0/8"}],
            },
        });
        if let Some(vf) = vf {
            // As Multus does for a resource with the deviceID capability.
            conf["capabilities"] = json!({"deviceID": true});
            conf["runtimeConfig"] = json!({"deviceID": vf.pci});
        }
        conf
    }

    /// A command running `program` inside the node namespace, with a clean environment that
    /// points spinel at this node's settings.
    pub fn command(&self, program: &Path) -> std::process::Command {
        let mut cmd = self.sb.command_in("node", program.to_str().unwrap());
        cmd.env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("SPINEL_CNI_SETTINGS", &self.settings);
        cmd
    }

    /// Runs `spinel` for `call` with `conf` on stdin.
    pub fn spinel(&self, call: &CniCall, conf: &Value) -> CniOutput {
        self.plugin("spinel", call, conf)
    }

    /// Runs plugin `name` from the node's `CNI_PATH` inside the node namespace.
    pub fn plugin(&self, name: &str, call: &CniCall, conf: &Value) -> CniOutput {
        cni::run(self.plugin_command(name, call), conf)
    }

    /// The command [`SimNode::plugin`] runs, for callers that change its environment or
    /// collect its outcome themselves.
    pub fn plugin_command(&self, name: &str, call: &CniCall) -> std::process::Command {
        let mut cmd = self.command(&self.cni_path.join(name));
        call.apply(&mut cmd, &self.cni_path);
        cmd
    }

    /// Links of namespace `ns` as iproute2 reports them.
    pub fn links(&self, ns: &str) -> LinkState {
        let out = self.sb.run_in(ns, "ip", &["-j", "-d", "link", "show"]);
        let parsed: Value = serde_json::from_str(&out).unwrap();
        let mut links: Vec<_> = parsed
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["ifname"].as_str().unwrap_or_default().to_owned(),
                    l["address"].as_str().unwrap_or_default().to_owned(),
                    l["mtu"].as_u64().unwrap_or_default(),
                    l["ifalias"].as_str().unwrap_or_default().to_owned(),
                    l["flags"]
                        .as_array()
                        .is_some_and(|f| f.iter().any(|x| x == "UP")),
                )
            })
            .collect();
        links.sort();
        LinkState { links }
    }

    /// Every file under the state and IPAM directories, for before/after comparisons.
    pub fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        for root in [&self.state_dir, &self.ipam_dir] {
            walk(root, &mut out);
        }
        out.sort();
        out
    }

    /// Addresses host-local holds for network `rail0` (the network of [`SimNode::conf`]).
    pub fn leased_ips(&self) -> Vec<String> {
        self.leased_ips_in("rail0")
    }

    /// Addresses host-local holds for network `network`: its store is `<dataDir>/<network>`.
    pub fn leased_ips_in(&self, network: &str) -> Vec<String> {
        let dir = self.ipam_dir.join(network);
        let mut ips: Vec<String> = fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
                    .collect()
            })
            .unwrap_or_default();
        ips.sort();
        ips
    }

    /// Journal records and VF claims in the state directory, sorted.
    pub fn journal_entries(&self) -> Vec<String> {
        let mut out = Vec::new();
        for sub in ["attachments", "vfs"] {
            walk(&self.state_dir.join(sub), &mut out);
        }
        out.sort();
        out
    }

    /// Asserts that nothing is leaked: every VF is back in the node namespace under its
    /// original name, MAC, MTU and (empty) alias, and [`SimNode::assert_nothing_held`].
    #[track_caller]
    pub fn assert_all_home(&self) {
        let links = self.links("node");
        for vf in &self.vfs {
            assert_vf_home(&links, vf);
        }
        self.assert_nothing_held();
    }

    /// Asserts that `vf` (which need not be one of [`SimNode::vfs`]) is back in the node
    /// namespace under its original name, MAC, MTU 9000 and an empty alias.
    #[track_caller]
    pub fn assert_vf_home(&self, vf: &SimVf) {
        assert_vf_home(&self.links("node"), vf);
    }

    /// Asserts that no journal record or VF claim remains and host-local holds no address
    /// for `rail0` (for tests whose VFs legitimately come home under other names).
    #[track_caller]
    pub fn assert_nothing_held(&self) {
        let journal = self.journal_entries();
        assert!(journal.is_empty(), "journal entries left: {journal:?}");
        let leased = self.leased_ips();
        assert!(leased.is_empty(), "IPAM still holds {leased:?}");
    }

    /// Deletes pod namespace `pod` the way a dying namespace behaves on real hardware: the
    /// kernel pushes physical netdevs (VFs) back to the initial namespace as `dev<ifindex>`,
    /// down and without addresses. macvlan stand-ins would be destroyed instead, so the
    /// harness performs that one kernel step itself, then deletes the namespace. (The kernel
    /// tier proves the real behaviour with PCI NICs.)
    pub fn kill_pod_like_kernel(&self, pod: &str) {
        let pod_ns = NetNs::open(self.sb.netns_path(pod)).unwrap();
        let node_ns = NetNs::open(self.sb.netns_path("node")).unwrap();
        let mut nl = RouteSocket::open_in(&pod_ns).unwrap();
        for link in nl.links().unwrap() {
            if link.kind.as_deref() == Some("macvlan") {
                nl.set_link(link.index, &LinkChange::new().up(false))
                    .unwrap();
                let name = format!("dev{}", link.index);
                nl.set_link(
                    link.index,
                    &LinkChange::new().netns(node_ns.as_fd()).name(&name),
                )
                .unwrap();
            }
        }
        drop(nl);
        drop(pod_ns);
        self.sb.delete_netns(pod);
    }

    /// Changes this node's spinel settings file (it stays root-owned, mode 0644).
    pub fn edit_settings(&self, edit: impl FnOnce(&mut Value)) {
        let mut v: Value =
            serde_json::from_str(&fs::read_to_string(&self.settings).unwrap()).unwrap();
        edit(&mut v);
        fs::write(&self.settings, v.to_string()).unwrap();
    }

    /// The PF-side state of VF `index` as the recording double holds it.
    pub fn vf_state(&self, index: u32) -> Option<Value> {
        let text = fs::read_to_string(self.vf_requests.join("pf0.state.json")).ok()?;
        let state: Value = serde_json::from_str(&text).ok()?;
        state.get(index.to_string()).cloned()
    }

    /// Requests recorded for `pf0`: (encoded bytes, `ip link set` arguments).
    pub fn vf_requests(&self) -> Vec<(Vec<u8>, String)> {
        fs::read_to_string(self.vf_requests.join("pf0.requests"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let (hex, args) = l.split_once('\t').unwrap();
                (crate::iproute2::from_hex(hex), args.to_owned())
            })
            .collect()
    }

    /// Plants a stale entry for `ip` with `mac` in the leaf's neighbour table on `swp1`, as a
    /// deleted pod leaves behind.
    pub fn plant_stale_leaf_neighbour(&self, ip: &str, mac: &str) {
        self.sb.run_in(
            "leaf",
            "ip",
            &[
                "neigh", "replace", ip, "lladdr", mac, "dev", "swp1", "nud", "stale",
            ],
        );
    }

    /// The MAC the leaf holds for `ip` on `swp1`, if any.
    pub fn leaf_neighbour_mac(&self, ip: &str) -> Option<String> {
        let out = self
            .sb
            .run_in("leaf", "ip", &["-j", "neigh", "show", ip, "dev", "swp1"]);
        let entries: Value = serde_json::from_str(&out).ok()?;
        entries
            .as_array()?
            .first()?
            .get("lladdr")?
            .as_str()
            .map(str::to_owned)
    }

    /// Polls the leaf every 200 µs until it holds `mac` for `ip`; returns how long that took,
    /// or `None` if it did not within `timeout`. The clock starts at the call, so call it right
    /// after the event being timed (ADD's return).
    pub fn wait_leaf_neighbour_mac(
        &self,
        ip: &str,
        mac: &str,
        timeout: Duration,
    ) -> Option<Duration> {
        let start = Instant::now();
        loop {
            if self.leaf_neighbour_mac(ip).as_deref() == Some(mac) {
                return Some(start.elapsed());
            }
            if start.elapsed() > timeout {
                return None;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Writes a device-info file as Multus does and returns its path.
    pub fn device_info_file(&self, name: &str, vf: &SimVf) -> PathBuf {
        let path = self.devinfo_dir.join("cni").join(name);
        fs::write(
            &path,
            json!({"type": "pci", "version": "1.1.0", "pci": {"pci-address": vf.pci}}).to_string(),
        )
        .unwrap();
        path
    }
}

/// A fake sysfs at `root/sys` describing the real NIC `pf` as a PF whose VF 0 is the real NIC
/// `vf`, using their real PCI addresses (for tests that run on real PCI devices, where the
/// kernel itself returns a device from a dying namespace).
pub fn fake_pf_with_real_vf(root: &Path, pf: &str, vf: &str) -> FakeSysfs {
    let sysfs = FakeSysfs::at(root.join("sys"));
    sysfs.add_pf(&pci_address(pf), pf, 1, 8);
    sysfs.add_vf(&pci_address(pf), 0, &pci_address(vf), Some(vf), "e1000e");
    sysfs
}

/// The PCI address of the real netdev `name`, from the machine's own sysfs.
pub fn pci_address(name: &str) -> String {
    fs::read_link(format!("/sys/class/net/{name}/device"))
        .unwrap_or_else(|e| panic!("{name} is not a PCI device: {e}"))
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[track_caller]
fn assert_vf_home(links: &LinkState, vf: &SimVf) {
    let found = links.links.iter().find(|l| l.0 == vf.name);
    let Some((_, mac, mtu, alias, _)) = found else {
        panic!(
            "VF {} ({}) is not back in the host: {links:?}",
            vf.name, vf.pci
        );
    };
    assert_eq!(mac, &vf.mac, "VF {} MAC not restored", vf.name);
    assert_eq!(*mtu, 9000, "VF {} MTU not restored", vf.name);
    assert!(
        alias.is_empty(),
        "VF {} alias not restored: {alias:?}",
        vf.name
    );
}

fn move_link(sb: &Sandbox, from: &str, name: &str, to: &str) {
    let from_ns = NetNs::open(sb.netns_path(from)).unwrap();
    let to_ns = NetNs::open(sb.netns_path(to)).unwrap();
    let mut nl = RouteSocket::open_in(&from_ns).unwrap();
    let link = nl.link_by_name(name).unwrap().unwrap();
    nl.set_link(link.index, &LinkChange::new().netns(to_ns.as_fd()))
        .unwrap();
}

fn walk(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path.display().to_string());
        }
    }
}
