//! The inferred fabric: switches in tiers, hosts with their NICs and rails, nested domains and
//! the miswiring report. Every output (labels, HyperNodes, Kueue, Slurm, DOT, JSON) reads this.

use std::sync::Arc;

use serde::Serialize;

use spinel_wire::neighbor::ChassisId;

/// Index into [`Fabric::switches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SwitchIdx(pub u32);

/// Index into [`Fabric::hosts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostIdx(pub u32);

/// Index into [`Fabric::domains`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DomainIdx(pub u32);

/// The one model of the fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fabric {
    /// Rail keys in rail order: rail `k` is `rails[k]` (a NIC name, or `nic<k>` when rails are
    /// keyed by NIC order).
    pub rails: Vec<Arc<str>>,
    /// Whether the hosts are cabled rail-optimised (NIC k of every host of a group on the
    /// group's rail-k leaf). Rail miswiring checks run only then.
    pub rail_optimized: bool,
    /// Number of switch tiers (1 when only leaves are known).
    pub depth: u8,
    /// Every switch, ordered by name (natural order), then chassis ID.
    pub switches: Vec<Switch>,
    /// Every host, ordered by name (natural order).
    pub hosts: Vec<Host>,
    /// Every domain, tier 1 first; each domain's parent is at the next tier.
    pub domains: Vec<Domain>,
    /// Links between switches.
    pub links: Vec<SwitchLink>,
    /// The miswiring report, errors first.
    pub findings: Vec<Finding>,
}

/// A switch, identified by its chassis ID (or its system name when no chassis ID is known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    /// Unique, path-qualified id: the id of its domain when it is the domain's only switch,
    /// else `<domain id>.<name>`. A valid label value.
    pub id: String,
    /// System name (or the chassis ID value when it advertises none).
    pub name: String,
    /// Chassis ID, when any source reported one.
    pub chassis_id: Option<ChassisId>,
    /// 1 for leaves (switches with hosts), 2 for spines, 3 for super-spines; `None` when the
    /// switch is not connected to any leaf.
    pub tier: Option<u8>,
    /// The domain at the switch's own tier.
    pub domain: Option<DomainIdx>,
    /// For leaves: the rails it serves (indices into [`Fabric::rails`]).
    pub rails: Vec<u16>,
    /// Ports the switch's own table lists without any neighbour: where a missing cable goes.
    pub free_ports: Vec<Arc<str>>,
    /// A management (out-of-band) switch: only hosts' management NICs reach it, so it is left
    /// out of the fabric (no tier, no rail, no domain).
    pub management: bool,
}

/// A host (a Kubernetes node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// Node name.
    pub name: String,
    /// Its tier-1 domain.
    pub domain: Option<DomainIdx>,
    /// NICs in natural name order.
    pub nics: Vec<Nic>,
    /// True when no table of its own was given and its links come from switch tables.
    pub seen_from_switches_only: bool,
}

/// One RoCE NIC of a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nic {
    /// Interface name.
    pub name: Arc<str>,
    /// Rail index into [`Fabric::rails`].
    pub rail: u16,
    /// The switch port it is cabled to, when it sees one.
    pub link: Option<NicLink>,
    /// What it sees when that is not a switch (another host's NIC, a server).
    pub peer: Option<NicPeer>,
}

/// A system a host NIC sees that is not a switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicPeer {
    /// Its System Name, else its chassis ID.
    pub system: String,
    /// Its port as it advertises it (for a host: its NIC).
    pub port: String,
    /// The host, when it is one of this fabric's hosts.
    pub host: Option<HostIdx>,
}

/// A NIC's link to a leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicLink {
    /// The switch.
    pub switch: SwitchIdx,
    /// The switch's port.
    pub port: PortRef,
}

/// A switch port as far as the sources know it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortRef {
    /// The local interface name when known (ifname Port ID, alias map or port description);
    /// else the advertised Port ID as `<subtype>:<value>`, for example `local:Eth1/1`.
    pub name: Arc<str>,
    /// Whether `name` is the switch's own interface name.
    pub resolved: bool,
    /// Port Description TLV, shown next to unresolved ports.
    pub description: Option<Arc<str>>,
}

impl std::fmt::Display for PortRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.description, self.resolved) {
            (Some(d), false) => write!(f, "{} ({d})", self.name),
            _ => f.write_str(&self.name),
        }
    }
}

/// A fabric domain: the hosts below a leaf group (tier 1), a spine domain (tier 2), ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    /// Unique, path-qualified id (`<parent id>.<name>`, hashed beyond 63 characters); used as
    /// the label value and the HyperNode name.
    pub id: String,
    /// Unqualified name made from its switches' names.
    pub name: String,
    /// Tier: 1 closest to the hosts.
    pub tier: u8,
    /// The enclosing domain at the next tier.
    pub parent: Option<DomainIdx>,
    /// Enclosed domains at the tier below.
    pub children: Vec<DomainIdx>,
    /// The switches at this domain's tier (the leaves of a leaf group, the spines of a spine
    /// domain), in natural name order.
    pub switches: Vec<SwitchIdx>,
    /// For tier 1: the hosts, in natural name order.
    pub hosts: Vec<HostIdx>,
}

/// A link between two switches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchLink {
    /// The end at the lower tier (or the lesser switch for peers and unplaced links).
    pub lower: LinkEnd,
    /// The end at the higher tier.
    pub upper: LinkEnd,
    /// What the link is in the tree.
    pub kind: LinkKind,
}

/// One end of a switch link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkEnd {
    /// The switch.
    pub switch: SwitchIdx,
    /// Its port.
    pub port: PortRef,
}

/// Role of a switch link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// From a tier-k switch to a tier-(k+1) switch.
    Uplink,
    /// Between two switches of one tier (MLAG peer links, or a miswire).
    Peer,
    /// At least one end has no tier.
    Unplaced,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Must be fixed: traffic takes the wrong path or a link is missing.
    Error,
    /// Worth a look: the fabric works, but not as designed or not as observed everywhere.
    Warning,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A NIC is on a leaf of its group that serves another rail.
    SwappedRail,
    /// Two NICs of one host are on one leaf that serves only one of their rails.
    SharedLeaf,
    /// A NIC is on a leaf outside the host's leaf group.
    WrongGroup,
    /// A host lacks a rail its group has (NIC absent, or NIC sees no neighbour).
    MissingRail,
    /// A host NIC's neighbour is not a switch.
    NotASwitch,
    /// A host has no NIC that sees a switch.
    HostUnconnected,
    /// A NIC sees more than one neighbour (a hub, a firmware agent, a stale neighbour).
    MultipleNeighbors,
    /// A switch lacks an uplink its peers have.
    MissingUplink,
    /// A switch's downlinks differ from its peers' beyond what missing uplinks explain.
    AsymmetricFanout,
    /// A switch is not connected to any leaf, so it has no tier.
    UnplacedSwitch,
    /// A table's observer could not be matched to one switch.
    AmbiguousObserver,
    /// A switch that only hosts' management NICs reach, left out of the fabric.
    ManagementSwitch,
    /// A host the caller named appears in no table.
    HostNotSeen,
    /// No host could be placed in the fabric: the outputs would be empty.
    NoHostsPlaced,
    /// A node's report disagrees with what the other observers see (a switch's name, a
    /// chassis it claims, a NIC on a switch that is no leaf, a NIC no other node has): the
    /// node is placed by what the others see.
    DisputedReport,
}

/// One entry of the miswiring report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// What it is about.
    pub kind: FindingKind,
    /// The host, for host-side findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The host's NIC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic: Option<String>,
    /// The switch (system name) where the cable to fix is plugged in, or lacks one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
    /// The switch port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// Where it should go, or what its peers have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// One sentence for people.
    pub message: String,
}

impl Severity {
    /// The name used in reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl FindingKind {
    /// The name used in reports and JSON (`swapped_rail`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::SwappedRail => "swapped_rail",
            FindingKind::SharedLeaf => "shared_leaf",
            FindingKind::WrongGroup => "wrong_group",
            FindingKind::MissingRail => "missing_rail",
            FindingKind::NotASwitch => "not_a_switch",
            FindingKind::HostUnconnected => "host_unconnected",
            FindingKind::MultipleNeighbors => "multiple_neighbors",
            FindingKind::MissingUplink => "missing_uplink",
            FindingKind::AsymmetricFanout => "asymmetric_fanout",
            FindingKind::UnplacedSwitch => "unplaced_switch",
            FindingKind::AmbiguousObserver => "ambiguous_observer",
            FindingKind::ManagementSwitch => "management_switch",
            FindingKind::HostNotSeen => "host_not_seen",
            FindingKind::NoHostsPlaced => "no_hosts_placed",
            FindingKind::DisputedReport => "disputed_report",
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}[{}]: {}",
            self.severity.as_str(),
            self.kind.as_str(),
            self.message
        )
    }
}

impl Fabric {
    /// The switch at `idx`.
    pub fn switch(&self, idx: SwitchIdx) -> &Switch {
        &self.switches[idx.0 as usize]
    }

    /// The host at `idx`.
    pub fn host(&self, idx: HostIdx) -> &Host {
        &self.hosts[idx.0 as usize]
    }

    /// The domain at `idx`.
    pub fn domain(&self, idx: DomainIdx) -> &Domain {
        &self.domains[idx.0 as usize]
    }

    /// The domains enclosing a host, tier 1 first.
    pub fn host_path(&self, idx: HostIdx) -> Vec<&Domain> {
        let mut path = Vec::new();
        let mut next = self.host(idx).domain;
        while let Some(d) = next {
            let domain = self.domain(d);
            path.push(domain);
            next = domain.parent;
        }
        path
    }

    /// Number of error findings.
    pub fn error_count(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count()
    }

    /// Number of hosts placed in a domain (the ones that get labels and HyperNode membership).
    pub fn placed_hosts(&self) -> usize {
        self.hosts.iter().filter(|h| h.domain.is_some()).count()
    }

    /// Number of warning findings.
    pub fn warning_count(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count()
    }

    /// The host named `name`, if any.
    pub fn host_by_name(&self, name: &str) -> Option<HostIdx> {
        self.hosts
            .binary_search_by(|h| super::names::natural_cmp(&h.name, name))
            .ok()
            .map(|i| HostIdx(i as u32))
    }

    /// The switch with system name `name`, if exactly one has it.
    pub fn switch_by_name(&self, name: &str) -> Option<SwitchIdx> {
        let mut found = self
            .switches
            .iter()
            .enumerate()
            .filter(|(_, s)| s.name == name);
        match (found.next(), found.next()) {
            (Some((i, _)), None) => Some(SwitchIdx(i as u32)),
            _ => None,
        }
    }
}
