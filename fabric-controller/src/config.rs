//! The controller's flags, validated before anything starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use spinel_api::labels::{KeyMode, LabelOptions, PrefixError};
use spinel_kube::lease::{LeaseArgs, LeaseConfig, LeaseConfigError, unique_identity};
use spinel_kube::logging::LogArgs;
use topo_discovery::fabric::RailKey;

use crate::desired::Settings;

/// Command-line flags.
#[derive(clap::Parser, Debug)]
#[command(
    name = "spinel-fabric-controller",
    version,
    about = "Spinel's fabric controller: every node's NodeFabric report and the switch tables \
             in; node labels (through the agents), Volcano HyperNodes, a Kueue Topology, \
             miswiring Events and the Fabric summary out"
)]
pub struct Flags {
    /// kubeconfig to use instead of the in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The controller's namespace: its Lease and its switch-table ConfigMap.
    #[arg(long, env = "POD_NAMESPACE", default_value = "spinel-system")]
    pub namespace: String,
    /// This replica's name in the Lease (a unique suffix is added).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// The Lease's name.
    #[arg(long, default_value = "spinel-fabric-controller")]
    pub lease_name: String,
    /// Lease timing.
    #[command(flatten)]
    pub lease: LeaseArgs,
    /// ConfigMap (in --namespace) whose entries are switch neighbour tables; empty: none.
    #[arg(long, default_value = "spinel-switch-tables")]
    pub switch_tables_configmap: String,
    /// Directory of switch neighbour tables (one file per box), read again every
    /// --switch-tables-poll seconds.
    #[arg(long)]
    pub switch_tables: Option<PathBuf>,
    /// Seconds between two reads of --switch-tables.
    #[arg(long, default_value_t = 10.0)]
    pub switch_tables_poll: f64,
    /// Prefix of Spinel's label keys (the agents' --label-prefix must be the same).
    #[arg(long, default_value = spinel_api::labels::DEFAULT_PREFIX)]
    pub label_prefix: String,
    /// Tier labels with Topograph's keys (fabric.topograph.run/tier-0 = closest).
    #[arg(long)]
    pub topograph_keys: bool,
    /// How NICs map to rails: by NIC name, or by NIC order per host.
    #[arg(long, value_enum, default_value = "name")]
    pub rail_key: RailKeyArg,
    /// Name of the Kueue Topology.
    #[arg(long, default_value = "spinel-fabric")]
    pub topology_name: String,
    /// Requests in flight at once when many objects change.
    #[arg(long, default_value_t = 16)]
    pub write_concurrency: usize,
    /// Seconds between two comparisons of the desired state with the server's, even unchanged.
    #[arg(long, default_value_t = 600.0)]
    pub resync: f64,
    /// Serve /metrics, /healthz and /readyz here (HOST:PORT, or `off`).
    #[arg(long, default_value = "0.0.0.0:9480")]
    pub metrics_address: String,
    /// Logging.
    #[command(flatten)]
    pub log: LogArgs,
}

/// `--rail-key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RailKeyArg {
    /// Same NIC name, same rail.
    Name,
    /// Same position in the host's NIC list, same rail.
    Order,
}

/// A flag that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `--label-prefix` / `--topograph-keys`.
    #[error(transparent)]
    Labels(#[from] PrefixError),
    /// The lease timing.
    #[error(transparent)]
    Lease(#[from] LeaseConfigError),
    /// A period that is not a positive number of seconds.
    #[error("{flag}: {value} is not a positive number of seconds")]
    NotSeconds {
        /// The flag.
        flag: &'static str,
        /// What it said.
        value: f64,
    },
    /// `--topology-name`.
    #[error("--topology-name: 1 to 253 characters")]
    TopologyName,
    /// `--metrics-address`.
    #[error("--metrics-address: {0:?} is neither HOST:PORT nor `off`")]
    MetricsAddress(String),
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Output naming.
    pub settings: Settings,
    /// NIC to rail mapping.
    pub rail_key: RailKey,
    /// The election.
    pub lease: LeaseConfig,
    /// Switch-table ConfigMap, if any.
    pub config_map: Option<String>,
    /// Switch-table directory and its poll period, if any.
    pub dir: Option<(PathBuf, Duration)>,
    /// Desired vs server comparison period.
    pub resync: Duration,
    /// Where the probes and metrics are served, if anywhere.
    pub metrics_address: Option<SocketAddr>,
}

fn seconds(flag: &'static str, value: f64) -> Result<Duration, ConfigError> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or(ConfigError::NotSeconds { flag, value })
}

impl Config {
    /// Validates `flags`.
    pub fn from_flags(flags: &Flags) -> Result<Self, ConfigError> {
        let labels = LabelOptions {
            prefix: flags.label_prefix.clone(),
            keys: if flags.topograph_keys {
                KeyMode::Topograph
            } else {
                KeyMode::Spinel
            },
        };
        labels.validate()?;
        if flags.topology_name.is_empty() || flags.topology_name.len() > 253 {
            return Err(ConfigError::TopologyName);
        }
        let base = flags
            .identity
            .clone()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "spinel-fabric-controller".into());
        let lease =
            flags
                .lease
                .config(&flags.namespace, &flags.lease_name, unique_identity(&base))?;
        let dir = match &flags.switch_tables {
            Some(d) => Some((
                d.clone(),
                seconds("--switch-tables-poll", flags.switch_tables_poll)?,
            )),
            None => None,
        };
        let metrics_address = match flags.metrics_address.as_str() {
            "off" => None,
            a => Some(
                a.parse()
                    .map_err(|_| ConfigError::MetricsAddress(a.to_owned()))?,
            ),
        };
        Ok(Self {
            settings: Settings {
                labels,
                topology_name: flags.topology_name.clone(),
            },
            rail_key: match flags.rail_key {
                RailKeyArg::Name => RailKey::NicName,
                RailKeyArg::Order => RailKey::NicOrder,
            },
            lease,
            config_map: (!flags.switch_tables_configmap.is_empty())
                .then(|| flags.switch_tables_configmap.clone()),
            dir,
            resync: seconds("--resync", flags.resync)?,
            metrics_address,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[test]
    fn flags_are_checked() {
        let ok = Flags::parse_from(["c", "--identity", "pod-a", "--switch-tables", "/x"]);
        let c = Config::from_flags(&ok).unwrap();
        assert!(c.lease.identity.starts_with("pod-a_"));
        assert_eq!(c.config_map.as_deref(), Some("spinel-switch-tables"));
        assert_eq!(c.dir.unwrap().1, Duration::from_secs(10));
        let other = Config::from_flags(&ok).unwrap();
        assert_ne!(
            c.lease.identity, other.lease.identity,
            "every process is unique"
        );
        for bad in [
            vec!["c", "--label-prefix", "Bad/"],
            vec!["c", "--renew-deadline", "20"],
            vec!["c", "--lease-duration=-1"],
            vec!["c", "--resync", "0"],
            vec!["c", "--metrics-address", "nowhere"],
        ] {
            assert!(
                Config::from_flags(&Flags::parse_from(&bad)).is_err(),
                "{bad:?}"
            );
        }
        let none = Flags::parse_from(["c", "--switch-tables-configmap", ""]);
        assert_eq!(Config::from_flags(&none).unwrap().config_map, None);
    }
}
