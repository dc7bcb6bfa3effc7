//! What kubelet, Multus and the SR-IOV device plugin do for a placed pod, done by the lab: a
//! pod network namespace, and on every rail a VF the device plugin would pick, attached by
//! the real `spinel` CNI plugin (with Debian's host-local for addresses) run in the node's
//! namespace as a runtime runs it; and DEL, which gives everything back.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, bail};
use hostnet::netns::NetNs;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::layout::{FABRIC_MTU, Nic, Node, Plan, Vf};
use crate::nodes::NodeDirs;
use crate::state::StateDir;

/// Debian's host-local IPAM plugin (containernetworking-plugins).
const HOST_LOCAL: &str = "/usr/lib/cni/host-local";

/// The environment variable naming the CNI's node settings file (the runtime's, never a
/// pod's; `spinel-cni`'s `settings::PATH_ENV`).
const SETTINGS_ENV: &str = "SPINEL_CNI_SETTINGS";

/// Every rail subnet of the lab, routed through each pod interface's own leaf.
const FABRIC_ROUTE: &str = "10.100.0.0/13";

/// One pod interface on one rail.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// Pod.
    pub pod: String,
    /// Node.
    pub node: String,
    /// Rail.
    pub rail: u32,
    /// Interface in the pod.
    pub ifname: String,
    /// The VF's PCI address.
    pub vf_pci: String,
    /// Its netdev name on the node.
    pub vf_ifname: String,
    /// Container ID the runtime used.
    pub container_id: String,
    /// Address.
    pub ip: Ipv4Addr,
    /// MAC in the pod.
    pub mac: String,
}

/// Runs the CNI for the lab's pods.
pub struct Cni {
    state: StateDir,
    /// CNI_PATH: `spinel` and `host-local`.
    path: PathBuf,
    /// VFs in use, `(node, pci)`.
    used: BTreeSet<(String, String)>,
}

impl Cni {
    /// Prepares CNI_PATH with the lab's `spinel` build and Debian's host-local.
    pub fn new(state: &StateDir, spinel: &Path) -> anyhow::Result<Self> {
        if !Path::new(HOST_LOCAL).is_file() {
            bail!("{HOST_LOCAL} is missing: apt-get install containernetworking-plugins");
        }
        let path = state.pods().join("cni-bin");
        std::fs::create_dir_all(&path)?;
        for (name, target) in [("spinel", spinel), ("host-local", Path::new(HOST_LOCAL))] {
            let link = path.join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(target, &link)?;
        }
        Ok(Self {
            state: state.clone(),
            path,
            used: BTreeSet::new(),
        })
    }

    /// The pod's network namespace (created on first use) under the lab's namespace directory.
    pub fn pod_netns(&self, pod: &str) -> anyhow::Result<PathBuf> {
        let path = self.state.netns().join(format!("pod-{pod}"));
        if !path.exists() {
            NetNs::create_at(&path).with_context(|| format!("create {}", path.display()))?;
        }
        Ok(path)
    }

    /// Removes the pod's namespace (after its DELs).
    pub fn remove_pod_netns(&self, pod: &str) -> anyhow::Result<()> {
        let path = self.state.netns().join(format!("pod-{pod}"));
        NetNs::remove_at(&path).with_context(|| format!("remove {}", path.display()))
    }

    /// Marks a VF in use (or not) without attaching it, as a device plugin holding a device
    /// for another pod would.
    pub fn hold(&mut self, node: &str, pci: &str, held: bool) {
        let key = (node.to_owned(), pci.to_owned());
        if held {
            self.used.insert(key);
        } else {
            self.used.remove(&key);
        }
    }

    /// The first VF of `nic` on `node` no pod uses, as the device plugin would hand it out.
    fn pick_vf<'a>(&self, node: &Node, nic: &'a Nic) -> anyhow::Result<&'a Vf> {
        nic.vfs
            .iter()
            .find(|vf| !self.used.contains(&(node.name.clone(), vf.pci.clone())))
            .with_context(|| format!("{}: every VF of {} is in use", node.name, nic.ifname))
    }

    /// Attaches `pod` on `node` to rail `rail` as `net<rail+1>`, with `ip` when the pod asks
    /// for a fixed address.
    pub async fn add(
        &mut self,
        pod: &str,
        container_id: &str,
        node: &Node,
        rail: u32,
        ip: Option<Ipv4Addr>,
    ) -> anyhow::Result<Attachment> {
        let nic = node
            .nics
            .iter()
            .find(|n| n.rail == rail)
            .with_context(|| format!("{} has no NIC on rail {rail}", node.name))?;
        let vf = self.pick_vf(node, nic)?.clone();
        let ifname = format!("net{}", rail + 1);
        let netns = self.pod_netns(pod)?;
        let args = ip.map(|ip| format!("IP={ip}"));
        let conf = self.config(node, nic, &vf);
        let result = self
            .call(
                "ADD",
                node,
                container_id,
                &netns,
                &ifname,
                args.as_deref(),
                &conf,
            )
            .await
            .with_context(|| format!("ADD {pod} {ifname} on {}", node.name))?;
        self.used.insert((node.name.clone(), vf.pci.clone()));
        let (ip, mac) = parse_result(&result, &ifname)?;
        Ok(Attachment {
            pod: pod.to_owned(),
            node: node.name.clone(),
            rail,
            ifname,
            vf_pci: vf.pci,
            vf_ifname: vf.ifname,
            container_id: container_id.to_owned(),
            ip,
            mac,
        })
    }

    /// DEL of one attachment: the VF goes home, the address back to the pool.
    pub async fn del(&mut self, plan: &Plan, att: &Attachment) -> anyhow::Result<()> {
        let node = plan.node(&att.node).context("unknown node")?;
        let nic = node
            .nics
            .iter()
            .find(|n| n.rail == att.rail)
            .context("unknown rail")?;
        let vf = nic
            .vfs
            .iter()
            .find(|v| v.pci == att.vf_pci)
            .context("unknown VF")?;
        let conf = self.config(node, nic, vf);
        let netns = self.state.netns().join(format!("pod-{}", att.pod));
        self.call(
            "DEL",
            node,
            &att.container_id,
            &netns,
            &att.ifname,
            None,
            &conf,
        )
        .await
        .with_context(|| format!("DEL {} {} on {}", att.pod, att.ifname, node.name))?;
        self.used.remove(&(node.name.clone(), att.vf_pci.clone()));
        Ok(())
    }

    /// The network configuration of `nic`'s rail on `node`, with the VF the device plugin
    /// picked (as Multus passes it, through the deviceID capability).
    fn config(&self, node: &Node, nic: &Nic, vf: &Vf) -> Value {
        let dirs = NodeDirs::new(&self.state.nodes(), &node.name);
        json!({
            "cniVersion": "1.1.0",
            "name": format!("rail{}", nic.rail),
            "type": "spinel",
            "capabilities": {"deviceID": true},
            "runtimeConfig": {"deviceID": vf.pci},
            "mtu": FABRIC_MTU,
            // No RDMA in this kernel: no RoCE v2 GID to wait for (the kernel tier checks it).
            "rdma": {"gid": "off"},
            "ipam": {
                "type": "host-local",
                "dataDir": dirs.ipam(),
                "ranges": [[{
                    "subnet": nic.address.trunc().to_string(),
                    "rangeStart": nic.pod_range.0.to_string(),
                    "rangeEnd": nic.pod_range.1.to_string(),
                    "gateway": nic.gateway.to_string(),
                }]],
                "routes": [{"dst": FABRIC_ROUTE}],
            },
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn call(
        &self,
        command: &str,
        node: &Node,
        container_id: &str,
        netns: &Path,
        ifname: &str,
        cni_args: Option<&str>,
        conf: &Value,
    ) -> anyhow::Result<Value> {
        let dirs = NodeDirs::new(&self.state.nodes(), &node.name);
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!(
            "--net={}",
            self.state.netns().join(&node.name).display()
        ))
        .arg(self.path.join("spinel"))
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", container_id)
        .env("CNI_NETNS", netns)
        .env("CNI_IFNAME", ifname)
        .env("CNI_PATH", &self.path)
        .env(SETTINGS_ENV, dirs.cni_settings())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        if let Some(args) = cni_args {
            cmd.env("CNI_ARGS", args);
        }
        let mut child = cmd.spawn().context("run spinel through nsenter")?;
        let mut stdin = child.stdin.take().context("no stdin")?;
        stdin.write_all(conf.to_string().as_bytes()).await?;
        drop(stdin);
        let out = child.wait_with_output().await?;
        let stdout: Value = if out.stdout.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&out.stdout).context("the plugin's output is not JSON")?
        };
        if !out.status.success() {
            bail!(
                "spinel answered {} ({}): {}",
                stdout["code"],
                stdout["msg"].as_str().unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(stdout)
    }
}

/// The pod interface's IPv4 address and MAC from an ADD result.
fn parse_result(result: &Value, ifname: &str) -> anyhow::Result<(Ipv4Addr, String)> {
    let interfaces = result["interfaces"].as_array().context("no interfaces")?;
    let (index, iface) = interfaces
        .iter()
        .enumerate()
        .find(|(_, i)| i["name"] == ifname && i["sandbox"].is_string())
        .with_context(|| format!("the result has no sandbox interface {ifname}"))?;
    let ip = result["ips"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|ip| ip["interface"].as_u64() == Some(index as u64))
        .find_map(|ip| ip["address"].as_str()?.split('/').next()?.parse().ok())
        .context("the result has no IPv4 address for the interface")?;
    let mac = iface["mac"].as_str().context("no MAC")?.to_owned();
    Ok((ip, mac))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_gives_the_sandbox_interface_its_address() {
        let r = json!({"cniVersion": "1.1.0",
            "interfaces": [{"name": "net1", "mac": "02:00:00:00:00:01", "sandbox": "/x"}],
            "ips": [{"address": "10.100.0.18/22", "interface": 0, "gateway": "10.100.0.1"}]});
        let (ip, mac) = parse_result(&r, "net1").unwrap();
        assert_eq!(ip, Ipv4Addr::new(10, 100, 0, 18));
        assert_eq!(mac, "02:00:00:00:00:01");
        assert!(parse_result(&r, "net2").is_err());
    }
}
