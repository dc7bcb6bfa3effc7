//! `spinelctl nccl-env`: NCCL settings for a pod's RoCE interfaces, from what the kernel shows
//! inside the pod (its interfaces and addresses, and the GID tables of the RDMA devices it
//! sees), not from anything spinel recorded.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::rdma::RdmaSocket;
use spinel_node::roce_info::{RoceInfo, discover, nccl_env_for};

/// Output format.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// `NAME=value` lines.
    Env,
    /// `export NAME=value` lines, for `eval`.
    Export,
    /// JSON with the interfaces found and the settings.
    Json,
}

/// `spinelctl nccl-env` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Look at this network namespace (a path) instead of the current one.
    #[arg(long)]
    netns: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "env")]
    format: Format,
}

/// Prints the settings; fails when the pod has no RoCE interface.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let ns = match &args.netns {
        Some(path) => NetNs::open(path).with_context(|| format!("open {}", path.display()))?,
        None => NetNs::current().context("open the current network namespace")?,
    };
    let mut nl = RouteSocket::open_in(&ns).context("open a netlink socket in the namespace")?;
    let links = nl.links().context("list interfaces")?;
    let mut addresses: Vec<(String, IpAddr)> = Vec::new();
    for a in nl.addresses(None).context("list addresses")? {
        let ip = a.net.addr();
        let link_local = matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80);
        if ip.is_loopback() || link_local {
            continue;
        }
        if let Some(link) = links.iter().find(|l| l.index == a.index) {
            addresses.push((link.name.clone(), ip));
        }
    }
    // IPv4 first: NCCL's default address family.
    addresses.sort_by_key(|(name, ip)| (ip.is_ipv6(), name.clone()));
    let mode = RdmaSocket::open_in(&ns)
        .and_then(|mut s| s.netns_mode())
        .ok();
    // sysfs describes the namespace that mounted it: read one mounted from inside.
    let found: Vec<RoceInfo> = ns
        .with_sysfs(|root: &Path| discover(root, &addresses, mode))
        .context("mount a sysfs for the namespace")?
        .context("read the GID tables")?;
    if found.is_empty() {
        eprintln!(
            "spinelctl: no RoCE v2 interface here (no address of this namespace has a RoCE v2 GID)"
        );
        return Ok(ExitCode::FAILURE);
    }
    let env = nccl_env_for(&found);
    match args.format {
        Format::Env => env.iter().for_each(|(k, v)| println!("{k}={v}")),
        Format::Export => env.iter().for_each(|(k, v)| println!("export {k}='{v}'")),
        Format::Json => {
            let map: serde_json::Map<String, serde_json::Value> = env
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect();
            println!("{}", serde_json::json!({"interfaces": found, "env": map}));
        }
    }
    Ok(ExitCode::SUCCESS)
}
