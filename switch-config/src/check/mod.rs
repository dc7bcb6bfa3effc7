//! The checker: the intent, each switch's running configuration, what each switch advertises
//! over LLDP (DCBX) and each host's kernel, compared so that every disagreement is reported
//! once, with the switch, port, host and NIC it concerns and the command that fixes it.
//!
//! - [`check`] takes whatever evidence was collected ([`Evidence`]) and checks it all;
//! - [`check_host`] is the node-local call (the fabric agent's health findings): this host's
//!   kernel state and the LLDP table it heard, against the intent.
//!
//! Dedup rules: a setting that differs identically on many ports of a switch is one finding
//! listing the ports; a switch fault seen both in its configuration and in what it advertises
//! is reported from the configuration only; a host that copied a wrong setting from its
//! switch through willing DCBX is the switch's fault, reported once at the switch. A value
//! that cannot be read is a "cannot read" warning, never agreement.

mod dcbx;
mod fix;
mod host;
mod switch;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;
use spinel_wire::neighbor::NeighborTable;

use crate::host::HostState;
use crate::plan::FabricPlan;
use crate::state::SwitchState;

pub use switch::compare as compare_switch;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// RoCE is (or will be) lossy, slow or broken here.
    Error,
    /// Not as intended, or not provable (a value that cannot be read).
    Warning,
}

/// Where the disagreeing value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A switch's running configuration.
    SwitchConfig,
    /// What a switch advertised over LLDP, as a host heard it.
    Advertised,
    /// A host's kernel.
    Host,
    /// The fabric inferred from LLDP tables (cabling).
    Inferred,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A port (or NIC) the intent has is not in the evidence.
    Missing,
    /// Port description / cabling label.
    Description,
    /// The LLDP neighbour is not the one the intent cables.
    Cabling,
    /// MTU.
    Mtu,
    /// PFC priorities.
    Pfc,
    /// Trust mode / DSCP classification on a NIC.
    Trust,
    /// DSCP → traffic class map.
    DscpMap,
    /// Traffic class of a priority (ETS), as advertised.
    Ets,
    /// Egress scheduling.
    Scheduler,
    /// ECN marking (switch queue or host DCQCN).
    Ecn,
    /// PFC watchdog.
    Watchdog,
    /// PFC headroom.
    Headroom,
    /// Access VLAN.
    Vlan,
    /// Routed address.
    Address,
    /// Rail VLAN interface (gateway, MTU).
    Svi,
    /// ARP aging.
    ArpAging,
    /// ARP / neighbour capacity.
    ArpCapacity,
    /// DCBX Application Priority (RoCE's priority).
    AppPriority,
    /// DCBX TLV transmission.
    DcbxTlvs,
    /// DCBX willing host.
    Willing,
    /// RoCE ToS / traffic class on the host.
    RoceTos,
    /// Something that could not be read.
    CannotRead,
}

impl Kind {
    fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// One disagreement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// What it is about.
    pub kind: Kind,
    /// Where the wrong value was seen.
    pub source: Source,
    /// The switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
    /// Its ports (several when one setting differs alike on many).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<String>,
    /// The host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The host's NIC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic: Option<String>,
    /// For what a switch advertises: the hosts and NICs that heard it (`node03 ens1f1np1`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub heard_by: Vec<String>,
    /// What the intent says.
    pub expected: String,
    /// What was found.
    pub found: String,
    /// The sentence for humans.
    pub message: String,
    /// Commands that fix it, in order.
    pub fix: Vec<String>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{severity}[{}]", self.kind.name())?;
        let mut at = Vec::new();
        if let Some(s) = &self.switch {
            at.push(match self.ports.as_slice() {
                [] => s.clone(),
                ports if ports.len() <= 4 => format!("{s} {}", ports.join(",")),
                ports => format!("{s} {} (+{} more)", ports[..3].join(","), ports.len() - 3),
            });
        }
        if let Some(h) = &self.host {
            at.push(match &self.nic {
                Some(n) => format!("{h} {n}"),
                None => h.clone(),
            });
        } else if !self.heard_by.is_empty() {
            let heard = match self.heard_by.as_slice() {
                h if h.len() <= 4 => h.join(", "),
                h => format!("{} (+{} more)", h[..3].join(", "), h.len() - 3),
            };
            at.push(format!("heard by {heard}"));
        }
        if !at.is_empty() {
            write!(f, " {}", at.join(" / "))?;
        }
        write!(f, ": {}", self.message)?;
        for line in &self.fix {
            write!(f, "\n    fix: {line}")?;
        }
        Ok(())
    }
}

/// Everything collected for a check. Any part may be empty.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// Running switch configurations by switch name.
    pub switches: BTreeMap<String, SwitchState>,
    /// Host kernel states by host name.
    pub hosts: BTreeMap<String, HostState>,
    /// LLDP neighbour tables (hosts' tables carry the DCBX their leaves advertise).
    pub lldp: Vec<NeighborTable>,
}

/// The findings of a check, errors first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Every finding.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Number of errors.
    pub fn errors(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count()
    }

    /// Number of warnings.
    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }

    fn finish(mut findings: Vec<Finding>) -> Self {
        findings.sort_by(|a, b| {
            (a.severity, &a.switch, &a.host, &a.ports, &a.nic, a.kind)
                .cmp(&(b.severity, &b.switch, &b.host, &b.ports, &b.nic, b.kind))
        });
        Self { findings }
    }
}

/// Switch faults already reported from configurations: switch → port → kinds (looked up by
/// borrowed names, once per NIC and kind).
#[derive(Default)]
struct Known(BTreeMap<String, BTreeMap<String, BTreeSet<Kind>>>);

impl Known {
    fn insert(&mut self, switch: &str, port: &str, kind: Kind) {
        self.0
            .entry(switch.to_owned())
            .or_default()
            .entry(port.to_owned())
            .or_default()
            .insert(kind);
    }

    fn contains(&self, switch: &str, port: &str, kind: Kind) -> bool {
        self.0
            .get(switch)
            .and_then(|ports| ports.get(port))
            .is_some_and(|kinds| kinds.contains(&kind))
    }
}

/// Checks all the evidence against the intent.
pub fn check(plan: &FabricPlan<'_>, evidence: &Evidence) -> Report {
    let mut known = Known::default();
    let switches: Vec<(&String, &SwitchState)> = evidence.switches.iter().collect();
    let per_switch = crate::render::parallel(&switches, |(name, observed)| {
        plan.switch(name)
            .map(|sp| switch::compare(plan, sp, observed))
            .unwrap_or_default()
    });
    let mut findings: Vec<Finding> = per_switch.into_iter().flatten().collect();
    for f in &findings {
        if let Some(name) = &f.switch {
            for port in &f.ports {
                known.insert(name, port, f.kind);
            }
        }
    }
    let tables: BTreeMap<&str, &NeighborTable> = evidence
        .lldp
        .iter()
        .map(|t| (t.observer.name.as_str(), t))
        .collect();
    let mut hosts: BTreeSet<&str> = evidence.hosts.keys().map(String::as_str).collect();
    hosts.extend(tables.keys().filter(|h| plan.hosts.contains_key(**h)));
    let hosts: Vec<&str> = hosts.into_iter().collect();
    let per_host = crate::render::parallel(&hosts, |host| {
        host_findings(
            plan,
            host,
            evidence.hosts.get(*host),
            tables.get(host).copied(),
            &known,
        )
    });
    let mut heard = Vec::new();
    for (host, advertised) in per_host {
        findings.extend(host);
        heard.extend(advertised);
    }
    // What one switch advertised alike to many hosts is one finding (with every hearer).
    findings.extend(dcbx::merge(heard));
    Report::finish(findings)
}

/// Checks one host, node-locally: its kernel state and the LLDP table it heard (with its
/// leaves' DCBX) against the intent. This is the call the fabric agent makes for its node's
/// health findings.
pub fn check_host(
    plan: &FabricPlan<'_>,
    state: &HostState,
    lldp: Option<&NeighborTable>,
) -> Report {
    let (mut findings, heard) =
        host_findings(plan, &state.host, Some(state), lldp, &Known::default());
    findings.extend(dcbx::merge(heard));
    Report::finish(findings)
}

/// A host's kernel findings, and what its NICs heard their switches advertise (merged across
/// hosts by the caller).
fn host_findings(
    plan: &FabricPlan<'_>,
    host: &str,
    state: Option<&HostState>,
    lldp: Option<&NeighborTable>,
    known: &Known,
) -> (Vec<Finding>, Vec<dcbx::Heard>) {
    let advertised = lldp
        .map(|t| dcbx::check(plan, host, t, state, known))
        .unwrap_or_default();
    let mut out = Vec::new();
    if let Some(state) = state {
        out.extend(host::check(plan, host, state, &advertised.followed));
    }
    (out, advertised.heard)
}
