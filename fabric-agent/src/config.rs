//! The agent's configuration: a YAML file (a ConfigMap in the DaemonSet) and flags, flags
//! winning. Everything is validated before the agent touches anything.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use spinel_api::labels::{KeyMode, LabelOptions};
use spinel_node::nics::NicSelection;
use spinel_wire::lldp::TxTiming;

use crate::config_error::{ConfigError, invalid};
use crate::device_plugin::{DEVICE_INFO_DIR, DevicePluginConfig, RailResource};
use crate::kubelet_plugin::PLUGINS_REGISTRY;
use crate::settings::{
    Duties, DutiesFile, DutyFlags, GarpFile, HealthFile, MetricsFile, RoutingFile,
};

/// Command-line flags.
#[derive(clap::Parser, Debug)]
#[command(name = "spinel-agent", version, about = "Spinel's node agent")]
pub struct Flags {
    /// Configuration file (YAML); flags override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// This node's name (the DaemonSet passes it from the downward API).
    #[arg(long, env = "NODE_NAME")]
    pub node_name: Option<String>,
    /// kubeconfig to use instead of the in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The network namespace holding the node's NICs (default: the agent's own; the
    /// DaemonSet runs with hostNetwork).
    #[arg(long)]
    pub netns: Option<PathBuf>,
    /// RoCE NICs: `auto` (physical functions with an RDMA device), a comma-separated list, or
    /// `pattern:GLOB`.
    #[arg(long)]
    pub nics: Option<String>,
    /// Root of the sysfs tree describing the NICs.
    #[arg(long)]
    pub sysfs_root: Option<PathBuf>,
    /// Prefix of the labels Spinel owns.
    #[arg(long)]
    pub label_prefix: Option<String>,
    /// Write NVIDIA Topograph's tier keys instead of Spinel's.
    #[arg(long)]
    pub topograph_keys: bool,
    /// Also advertise this node over LLDP (system name = node name).
    #[arg(long)]
    pub lldp_transmit: bool,
    /// Print the iproute2 equivalent of each host routing change instead of making it.
    #[arg(long)]
    pub dry_run_routes: bool,
    /// Serve /metrics, /healthz and /readyz here (HOST:PORT, or `off`).
    #[arg(long)]
    pub metrics_address: Option<String>,
    /// Taint the node fabric.spinel.dev/degraded:NoSchedule while its RoCE fabric is unhealthy.
    #[arg(long)]
    pub taint_degraded: bool,
    /// Publish the node's RoCE devices for Dynamic Resource Allocation (`dra:` in the file).
    #[arg(long)]
    pub dra: bool,
    /// Logging.
    #[command(flatten)]
    pub log: spinel_kube::logging::LogArgs,
}

/// The file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
struct FileConfig {
    nics: Option<String>,
    sysfs_root: Option<PathBuf>,
    label_prefix: Option<String>,
    topograph_keys: Option<bool>,
    lldp: LldpFile,
    report_debounce_ms: Option<u64>,
    resync_seconds: Option<u64>,
    routing: RoutingFile,
    garp: GarpFile,
    health: HealthFile,
    metrics: MetricsFile,
    dra: crate::dra::settings::DraFile,
    device_plugin: Option<DevicePluginFile>,
}

/// `devicePlugin`: the rails' VFs as extended resources (see [`crate::device_plugin`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DevicePluginFile {
    resource_prefix: Option<String>,
    resources: Vec<DeviceResourceFile>,
    plugin_registry: Option<PathBuf>,
    device_info_dir: Option<PathBuf>,
    dev_dir: Option<PathBuf>,
    rescan_seconds: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DeviceResourceFile {
    name: String,
    pf_names: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
struct LldpFile {
    transmit: Option<bool>,
    tx_interval_seconds: Option<u16>,
    tx_hold: Option<u16>,
    max_neighbors: Option<usize>,
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// This node.
    pub node_name: String,
    /// kubeconfig, if not in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// Namespace of the NICs, if not ours.
    pub netns: Option<PathBuf>,
    /// Which NICs are RoCE NICs.
    pub nics: NicSelection,
    /// sysfs root.
    pub sysfs_root: PathBuf,
    /// Label keys.
    pub labels: LabelOptions,
    /// Advertise over LLDP, with these timers.
    pub transmit: Option<TxTiming>,
    /// Most neighbours per port.
    pub max_neighbors: usize,
    /// Quiet time before a changed report is published (changes arriving together go at once).
    pub debounce: Duration,
    /// The report is applied again at least this often, even unchanged (it may have been
    /// deleted or edited by hand).
    pub resync: Duration,
    /// The node duties: host routing, announcements, health, metrics.
    pub duties: Duties,
    /// The DRA driver, when enabled.
    pub dra: Option<crate::dra::settings::Dra>,
    /// The device plugin, when configured.
    pub device_plugin: Option<DevicePluginConfig>,
}

/// Parses `--nics`.
pub fn parse_nics(text: &str) -> Result<NicSelection, ConfigError> {
    let text = text.trim();
    if text == "auto" {
        return Ok(NicSelection::Auto);
    }
    if let Some(p) = text.strip_prefix("pattern:") {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_graphic() && b != b'/') {
            invalid!("nics: pattern {p:?} must be a non-empty interface-name pattern");
        }
        return Ok(NicSelection::Pattern(p.to_owned()));
    }
    let mut names = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match name.parse() {
            Ok(n) => names.push(n),
            Err(e) => invalid!("nics: {e}"),
        }
    }
    if names.is_empty() {
        invalid!("nics: expected auto, pattern:GLOB or a list of interfaces");
    }
    Ok(NicSelection::Names(names))
}

impl AgentConfig {
    /// Reads the file (if any) and applies the flags.
    pub fn load(flags: &Flags) -> Result<Self, ConfigError> {
        let file: FileConfig = match &flags.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.clone(),
                    source,
                })?;
                serde_saphyr::from_str(&text).map_err(|source| ConfigError::Parse {
                    path: path.clone(),
                    source: Box::new(source),
                })?
            }
            None => FileConfig::default(),
        };
        let Some(node_name) = flags.node_name.clone() else {
            invalid!("the node name is unknown: pass --node-name or set NODE_NAME");
        };
        if node_name.is_empty()
            || node_name.len() > 253
            || !node_name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        {
            invalid!("node name {node_name:?} is not a Kubernetes node name");
        }
        let labels = LabelOptions {
            prefix: flags
                .label_prefix
                .clone()
                .or(file.label_prefix)
                .unwrap_or_else(|| spinel_api::labels::DEFAULT_PREFIX.to_owned()),
            keys: if flags.topograph_keys || file.topograph_keys == Some(true) {
                KeyMode::Topograph
            } else {
                KeyMode::Spinel
            },
        };
        labels.validate()?;
        let nics = parse_nics(
            flags
                .nics
                .as_deref()
                .or(file.nics.as_deref())
                .unwrap_or("auto"),
        )?;
        let transmit =
            (flags.lldp_transmit || file.lldp.transmit == Some(true)).then(|| TxTiming {
                tx_interval: file.lldp.tx_interval_seconds.unwrap_or(30),
                tx_hold: file.lldp.tx_hold.unwrap_or(4),
                ..TxTiming::default()
            });
        if let Some(t) = &transmit {
            t.validate().map_err(ConfigError::Timers)?;
        }
        let dra = file.dra.resolve(flags.dra)?;
        let duties = DutiesFile {
            routing: file.routing,
            garp: file.garp,
            health: file.health,
            metrics: file.metrics,
        }
        .resolve(&DutyFlags {
            dry_run_routes: flags.dry_run_routes,
            metrics_address: flags.metrics_address.clone(),
            taint: flags.taint_degraded,
        })?;
        Ok(Self {
            node_name,
            kubeconfig: flags.kubeconfig.clone(),
            netns: flags.netns.clone(),
            nics,
            sysfs_root: flags
                .sysfs_root
                .clone()
                .or(file.sysfs_root)
                .unwrap_or_else(|| PathBuf::from("/sys")),
            labels,
            transmit,
            // The NodeFabric schema holds at most this many per port.
            max_neighbors: file
                .lldp
                .max_neighbors
                .unwrap_or(spinel_api::crd::MAX_NEIGHBORS_PER_PORT)
                .clamp(1, spinel_api::crd::MAX_NEIGHBORS_PER_PORT),
            debounce: Duration::from_millis(file.report_debounce_ms.unwrap_or(500).min(60_000)),
            resync: Duration::from_secs(file.resync_seconds.unwrap_or(600).clamp(10, 86_400)),
            duties,
            dra,
            device_plugin: file.device_plugin.map(device_plugin).transpose()?,
        })
    }
}

/// True for a DNS-1123 subdomain (what an extended resource's prefix must be).
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn device_plugin(file: DevicePluginFile) -> Result<DevicePluginConfig, ConfigError> {
    let prefix = file.resource_prefix.unwrap_or_else(|| "spinel.dev".into());
    if !is_dns_subdomain(&prefix)
        || prefix == "kubernetes.io"
        || prefix.ends_with(".kubernetes.io")
        || prefix == "k8s.io"
        || prefix.ends_with(".k8s.io")
    {
        invalid!(
            "devicePlugin.resourcePrefix {prefix:?} must be a DNS subdomain outside kubernetes.io"
        );
    }
    if file.resources.is_empty() {
        invalid!("devicePlugin.resources: name at least one resource");
    }
    let mut resources: Vec<RailResource> = Vec::new();
    for r in file.resources {
        let ok_name = !r.name.is_empty()
            && r.name.len() <= 63
            && r.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && r.name.as_bytes()[0].is_ascii_alphanumeric()
            && r.name.as_bytes()[r.name.len() - 1].is_ascii_alphanumeric();
        if !ok_name {
            invalid!(
                "devicePlugin.resources: {:?} is not a resource name",
                r.name
            );
        }
        let name = format!("{prefix}/{}", r.name);
        if resources.iter().any(|x| x.name == name) {
            invalid!("devicePlugin.resources: {name} is named twice");
        }
        if r.pf_names.is_empty() {
            invalid!("devicePlugin.resources: {name} has no pfNames");
        }
        let mut pfs = Vec::new();
        for pf in r.pf_names {
            match pf.parse() {
                Ok(n) => pfs.push(n),
                Err(e) => invalid!("devicePlugin.resources: {name}: {e}"),
            }
        }
        resources.push(RailResource { name, pfs });
    }
    let dir = |value: Option<PathBuf>, default: &str, key: &str| {
        let path = value.unwrap_or_else(|| PathBuf::from(default));
        if path.is_absolute() {
            Ok(path)
        } else {
            Err(ConfigError::Invalid(format!(
                "devicePlugin.{key} must be an absolute path: {}",
                path.display()
            )))
        }
    };
    Ok(DevicePluginConfig {
        resources,
        registry_dir: dir(file.plugin_registry, PLUGINS_REGISTRY, "pluginRegistry")?,
        device_info_dir: dir(file.device_info_dir, DEVICE_INFO_DIR, "deviceInfoDir")?,
        dev_dir: dir(file.dev_dir, "/dev", "devDir")?,
        rescan: Duration::from_secs(file.rescan_seconds.unwrap_or(10).clamp(1, 3600)),
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn nic_selections_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_nics("auto").unwrap(), NicSelection::Auto);
        assert_eq!(
            parse_nics("ens1f0np0, ens1f1np1").unwrap(),
            NicSelection::Names(vec![
                "ens1f0np0".parse().unwrap(),
                "ens1f1np1".parse().unwrap()
            ])
        );
        assert_eq!(
            parse_nics("pattern:ens*np*").unwrap(),
            NicSelection::Pattern("ens*np*".into())
        );
        for bad in ["", ",", "pattern:", "pattern:a/b", "../x", "all"] {
            assert!(parse_nics(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn file_then_flags() {
        let dir = std::env::temp_dir().join(format!("agent-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("agent.yaml");
        std::fs::write(
            &file,
            "nics: pattern:ens*\nlabelPrefix: fabric.example.com/\nlldp:\n  transmit: true\n  txIntervalSeconds: 5\n",
        )
        .unwrap();
        let flags = Flags::parse_from([
            "spinel-agent",
            "--config",
            file.to_str().unwrap(),
            "--node-name",
            "gpu-node-01",
            "--nics",
            "ens1f0np0",
        ]);
        let c = AgentConfig::load(&flags).unwrap();
        assert_eq!(
            c.nics,
            NicSelection::Names(vec!["ens1f0np0".parse().unwrap()])
        );
        assert_eq!(c.labels.prefix, "fabric.example.com/");
        assert_eq!(c.transmit.unwrap().tx_interval, 5);
        std::fs::write(&file, "bogus: 1\n").unwrap();
        let err = anyhow::Error::new(AgentConfig::load(&flags).unwrap_err());
        assert!(format!("{err:#}").contains("bogus"), "{err:#}");
        let no_name = Flags::parse_from(["spinel-agent", "--node-name", "Bad_Name"]);
        assert!(AgentConfig::load(&no_name).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The ConfigMap in deploy/agent/daemonset.yaml loads, and serves on the port its probes
    /// use, reading the records where the CNI writes them by default.
    #[test]
    fn the_shipped_configuration_loads_and_matches_the_daemonset() {
        let manifest = include_str!("../../deploy/agent/daemonset.yaml");
        let config_map = manifest.split("\n---\n").next().unwrap();
        let doc: serde_json::Value = serde_saphyr::from_str(config_map).unwrap();
        let text = doc["data"]["agent.yaml"].as_str().unwrap();
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        let flags = Flags::parse_from([
            "spinel-agent",
            "--config",
            file.path().to_str().unwrap(),
            "--node-name",
            "gpu-node-01",
        ]);
        let c = AgentConfig::load(&flags).unwrap();
        let address = c.duties.metrics.address.expect("metrics served");
        assert_eq!(address.port(), 9479);
        for probe in ["path: /healthz, port: 9479", "path: /readyz, port: 9479"] {
            assert!(manifest.contains(probe), "{probe}");
        }
        assert_eq!(
            c.duties.garp.records_dir(),
            PathBuf::from("/run/spinel/roce")
        );
        assert!(!c.duties.health.taint, "shielding is opt-in");
        assert!(c.duties.routing.enabled && !c.duties.routing.dry_run);
    }

    fn load_yaml(text: &str) -> Result<AgentConfig, ConfigError> {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        let flags = Flags::parse_from([
            "spinel-agent",
            "--config",
            file.path().to_str().unwrap(),
            "--node-name",
            "gpu-node-01",
        ]);
        AgentConfig::load(&flags)
    }

    #[test]
    fn the_device_plugin_is_off_unless_configured_and_its_resources_are_checked() {
        assert_eq!(load_yaml("nics: auto\n").unwrap().device_plugin, None);
        let c = load_yaml(
            "devicePlugin:\n  resources:\n  - {name: rail0, pfNames: [ens1f0np0]}\n  - {name: rail1, pfNames: [ens1f1np1, ens2f1np1]}\n",
        )
        .unwrap()
        .device_plugin
        .unwrap();
        assert_eq!(c.resources[0].name, "spinel.dev/rail0");
        assert_eq!(c.resources[1].pfs.len(), 2);
        assert_eq!(
            c.registry_dir,
            PathBuf::from("/var/lib/kubelet/plugins_registry")
        );
        assert_eq!(
            c.device_info_dir,
            PathBuf::from("/var/run/k8s.cni.cncf.io/devinfo/dp")
        );
        assert_eq!(c.rescan, Duration::from_secs(10));
        for (bad, says) in [
            ("devicePlugin:\n  resources: []\n", "at least one"),
            (
                "devicePlugin:\n  resources:\n  - {name: rail0, pfNames: []}\n",
                "no pfNames",
            ),
            (
                "devicePlugin:\n  resources:\n  - {name: rail0, pfNames: [../x]}\n",
                "rail0",
            ),
            (
                "devicePlugin:\n  resources:\n  - {name: r/0, pfNames: [a]}\n",
                "resource name",
            ),
            (
                "devicePlugin:\n  resources:\n  - {name: r, pfNames: [a]}\n  - {name: r, pfNames: [b]}\n",
                "twice",
            ),
            (
                "devicePlugin:\n  resourcePrefix: k8s.io\n  resources:\n  - {name: r, pfNames: [a]}\n",
                "kubernetes.io",
            ),
            (
                "devicePlugin:\n  resourcePrefix: Spinel\n  resources:\n  - {name: r, pfNames: [a]}\n",
                "DNS",
            ),
            (
                "devicePlugin:\n  pluginRegistry: plugins\n  resources:\n  - {name: r, pfNames: [a]}\n",
                "absolute",
            ),
        ] {
            let err = anyhow::Error::new(load_yaml(bad).unwrap_err());
            assert!(format!("{err:#}").contains(says), "{bad}: {err:#}");
        }
    }
}
