//! The intent and the inferred fabric (topo-discovery's model): an intent generated from what
//! LLDP shows, so an existing cluster gets one without typing every port; and the inferred
//! fabric checked against a written intent (cabling as designed).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use topo_discovery::fabric::{Fabric, LinkKind};

use crate::check::{Finding, Kind, Report, Severity, Source};
use crate::intent::software::EosPlatform;
use crate::intent::{
    ArpPolicy, Intent, Network, Peer, Port, Ports, Rail, RoceProfile, SCHEMA, Switch, SwitchOs,
    SwitchRole,
};
use crate::plan::{FabricPlan, natural_cmp};

/// What the fabric cannot tell: OS, speeds, addressing, the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// Fabric name.
    pub fabric: String,
    /// The RoCE profile.
    pub roce: RoceProfile,
    /// The ARP policy.
    pub arp: ArpPolicy,
    /// OS of every leaf.
    pub leaf_os: SwitchOs,
    /// OS of spines and super-spines.
    pub spine_os: SwitchOs,
    /// OS release of the leaves (Cumulus, EOS).
    pub leaf_version: Option<String>,
    /// OS release of spines and super-spines (Cumulus, EOS).
    pub spine_version: Option<String>,
    /// EOS platform family of the leaves.
    pub leaf_platform: Option<EosPlatform>,
    /// EOS platform family of spines and super-spines.
    pub spine_platform: Option<EosPlatform>,
    /// Port speed, Gb/s.
    pub speed_gbps: Option<u32>,
    /// ASIC buffer, bytes (required for SONiC).
    pub buffer_bytes: Option<u64>,
    /// Rail networks are carved from here, one per leaf and rail, in switch order.
    pub subnet_pool: Ipv4Net,
    /// Prefix length of each rail network.
    pub subnet_prefix: u8,
    /// Switch links get /31s from here, when given.
    pub link_pool: Option<Ipv4Net>,
    /// VLAN of rail k is `vlan_base + k`.
    pub vlan_base: u16,
}

impl Default for Template {
    fn default() -> Self {
        Self {
            fabric: "fabric".into(),
            roce: RoceProfile::default(),
            arp: ArpPolicy::default(),
            leaf_os: SwitchOs::Sonic,
            spine_os: SwitchOs::Sonic,
            leaf_version: None,
            spine_version: None,
            leaf_platform: None,
            spine_platform: None,
            speed_gbps: None,
            buffer_bytes: Some(64 * 1024 * 1024),
            subnet_pool: Ipv4Net::new(Ipv4Addr::new(10, 0, 0, 0), 8).unwrap_or_default(),
            subnet_prefix: 24,
            link_pool: Ipv4Net::new(Ipv4Addr::new(10, 255, 0, 0), 16).ok(),
            vlan_base: 100,
        }
    }
}

/// Why no intent could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FromFabricError {
    /// A port is known only by its advertised ID, not by name.
    #[error(
        "switch {switch} port {port}: only the advertised Port ID is known, not the interface \
         name; add the switch's own LLDP table (lldpcli show interfaces) so ports resolve"
    )]
    UnresolvedPort {
        /// The switch.
        switch: String,
        /// The unresolved port.
        port: String,
    },
    /// An address pool ran out.
    #[error("{pool} has no room for {needed} more /{prefix} networks")]
    PoolExhausted {
        /// The pool.
        pool: Ipv4Net,
        /// The prefix.
        prefix: u8,
        /// How many were still needed.
        needed: usize,
    },
}

struct Carver {
    pool: Ipv4Net,
    prefix: u8,
    next: u64,
}

impl Carver {
    fn take(&mut self, needed: usize) -> Result<Ipv4Net, FromFabricError> {
        let size = 1u64 << (32 - u32::from(self.prefix));
        let start = u64::from(u32::from(self.pool.network())) + self.next * size;
        let end = u64::from(u32::from(self.pool.broadcast()));
        let exhausted = FromFabricError::PoolExhausted {
            pool: self.pool,
            prefix: self.prefix,
            needed,
        };
        if self.prefix < self.pool.prefix_len() || start + size - 1 > end {
            return Err(exhausted);
        }
        self.next += 1;
        let addr = u32::try_from(start).map_err(|_| exhausted.clone())?;
        Ipv4Net::new(Ipv4Addr::from(addr), self.prefix).map_err(|_| exhausted)
    }
}

/// An intent describing `fabric` as inferred: every leaf's host ports, every switch link (on
/// its lower end), a rail network per leaf and rail. Deterministic.
pub fn intent_from_fabric(fabric: &Fabric, t: &Template) -> Result<Intent, FromFabricError> {
    let rails: Vec<Rail> = fabric
        .rails
        .iter()
        .map(|r| Rail {
            name: r.to_string(),
            nic: fabric
                .hosts
                .iter()
                .any(|h| h.nics.iter().any(|n| n.name == *r))
                .then(|| r.to_string()),
        })
        .collect();
    let mut ports: Vec<Vec<Port>> = vec![Vec::new(); fabric.switches.len()];
    for h in &fabric.hosts {
        for n in &h.nics {
            let Some(link) = &n.link else { continue };
            let sw = &fabric.switches[link.switch.0 as usize];
            ports[link.switch.0 as usize].push(Port {
                name: resolved(&sw.name, &link.port)?,
                peer: Peer {
                    system: h.name.clone(),
                    interface: n.name.to_string(),
                },
                speed_gbps: None,
                address: None,
            });
        }
    }
    let mut links = t.link_pool.map(|pool| Carver {
        pool,
        prefix: 31,
        next: 0,
    });
    for l in fabric.links.iter().filter(|l| l.kind == LinkKind::Uplink) {
        let upper = &fabric.switches[l.upper.switch.0 as usize];
        let lower = &fabric.switches[l.lower.switch.0 as usize];
        let address = links.as_mut().map(|c| c.take(1)).transpose()?;
        ports[l.lower.switch.0 as usize].push(Port {
            name: resolved(&lower.name, &l.lower.port)?,
            peer: Peer {
                system: upper.name.clone(),
                interface: resolved(&upper.name, &l.upper.port)?,
            },
            speed_gbps: None,
            address,
        });
    }
    let mut subnets = Carver {
        pool: t.subnet_pool,
        prefix: t.subnet_prefix,
        next: 0,
    };
    let mut switches = Vec::new();
    for (i, sw) in fabric.switches.iter().enumerate() {
        let Some(tier) = sw.tier else { continue };
        let role = match tier {
            1 => SwitchRole::Leaf,
            2 => SwitchRole::Spine,
            _ => SwitchRole::SuperSpine,
        };
        let mut networks = Vec::new();
        if role == SwitchRole::Leaf {
            for r in &sw.rails {
                let subnet = subnets.take(sw.rails.len())?;
                networks.push(Network {
                    rail: fabric
                        .rails
                        .get(usize::from(*r))
                        .map(|s| s.to_string())
                        .unwrap_or_default(),
                    vlan: t.vlan_base.saturating_add(*r),
                    subnet,
                    gateway: subnet.hosts().next().unwrap_or(subnet.addr()),
                });
            }
        }
        let mut p = std::mem::take(&mut ports[i]);
        p.sort_by(|a, b| natural_cmp(&a.name, &b.name));
        let leaf = role == SwitchRole::Leaf;
        let (os, version, platform) = if leaf {
            (t.leaf_os, &t.leaf_version, t.leaf_platform)
        } else {
            (t.spine_os, &t.spine_version, t.spine_platform)
        };
        switches.push(Switch {
            name: sw.name.clone(),
            role,
            os,
            version: (os != SwitchOs::Sonic).then(|| version.clone()).flatten(),
            platform: (os == SwitchOs::Eos).then_some(platform).flatten(),
            networks,
            ports: Ports(p),
            speed_gbps: t.speed_gbps,
            buffer_bytes: t.buffer_bytes,
            neighbor_capacity: None,
            mtu: None,
            pfc_priorities: None,
        });
    }
    Ok(Intent {
        schema: SCHEMA.into(),
        fabric: t.fabric.clone(),
        roce: t.roce.clone(),
        arp: t.arp.clone(),
        rails,
        switches,
    })
}

fn resolved(
    switch: &str,
    port: &topo_discovery::fabric::PortRef,
) -> Result<String, FromFabricError> {
    if port.resolved {
        Ok(port.name.to_string())
    } else {
        Err(FromFabricError::UnresolvedPort {
            switch: switch.to_owned(),
            port: port.to_string(),
        })
    }
}

/// Cabling as designed: every host NIC and switch link of the intent against the inferred
/// fabric. Errors for a NIC or link cabled elsewhere or missing; warnings for what the fabric
/// has and the intent does not, and for hosts not observed.
pub fn check_cabling(intent: &Intent, fabric: &Fabric) -> Report {
    let plan = FabricPlan::new(intent);
    let mut findings = Vec::new();
    let observed = observed_nics(fabric);
    for (host, nics) in &plan.hosts {
        for n in nics {
            match observed.get(&(host.to_string(), n.nic.to_owned())) {
                Some((sw, port)) if sw == n.switch && port == n.port => {}
                Some((sw, port)) => findings.push(cabling(
                    Severity::Error,
                    Some(n.switch),
                    n.port,
                    Some((host, n.nic)),
                    format!("{} {}", n.switch, n.port),
                    format!("{sw} {port}"),
                    format!(
                        "{host} {} is cabled to {sw} {port}; the intent says {} {}",
                        n.nic, n.switch, n.port
                    ),
                )),
                None if fabric.hosts.iter().any(|h| h.name == **host) => findings.push(cabling(
                    Severity::Error,
                    Some(n.switch),
                    n.port,
                    Some((host, n.nic)),
                    format!("{} {}", n.switch, n.port),
                    "no link".into(),
                    format!(
                        "{host} {} has no link to any switch; the intent cables it to {} {}",
                        n.nic, n.switch, n.port
                    ),
                )),
                None => {}
            }
        }
        if !fabric.hosts.iter().any(|h| h.name == **host) {
            findings.push(cabling(
                Severity::Warning,
                None,
                "",
                Some((host, "")),
                "observed".into(),
                "no table".into(),
                format!("{host} is in the intent but not in the inferred fabric: its cabling is unproven"),
            ));
        }
    }
    for ((host, nic), (sw, port)) in &observed {
        if plan.nic(host, nic).is_none() {
            findings.push(cabling(
                Severity::Warning,
                Some(sw),
                port,
                Some((host, nic)),
                "not in the intent".into(),
                format!("{sw} {port}"),
                format!("{host} {nic} is cabled to {sw} {port}, which the intent does not have"),
            ));
        }
    }
    findings.extend(switch_links(&plan, fabric));
    let mut r = Report { findings };
    r.findings.sort_by(|a, b| {
        (a.severity, &a.switch, &a.ports, &a.host).cmp(&(b.severity, &b.switch, &b.ports, &b.host))
    });
    r
}

fn observed_nics(fabric: &Fabric) -> BTreeMap<(String, String), (String, String)> {
    let mut out = BTreeMap::new();
    for h in &fabric.hosts {
        for n in &h.nics {
            if let Some(link) = &n.link {
                let sw = &fabric.switches[link.switch.0 as usize];
                out.insert(
                    (h.name.clone(), n.name.to_string()),
                    (sw.name.clone(), link.port.name.to_string()),
                );
            }
        }
    }
    out
}

fn switch_links(plan: &FabricPlan<'_>, fabric: &Fabric) -> Vec<Finding> {
    let norm = |a: (&str, &str), b: (&str, &str)| {
        let (x, y) = if a <= b { (a, b) } else { (b, a) };
        (
            x.0.to_owned(),
            x.1.to_owned(),
            y.0.to_owned(),
            y.1.to_owned(),
        )
    };
    let mut intended = BTreeSet::new();
    for sp in &plan.switches {
        for p in &sp.ports {
            if let crate::plan::PortPeer::Switch { switch, port } = p.peer {
                intended.insert(norm((&sp.switch.name, p.name), (switch, port)));
            }
        }
    }
    let mut seen = BTreeSet::new();
    for l in &fabric.links {
        let a = &fabric.switches[l.lower.switch.0 as usize].name;
        let b = &fabric.switches[l.upper.switch.0 as usize].name;
        seen.insert(norm((a, &l.lower.port.name), (b, &l.upper.port.name)));
    }
    let mut out = Vec::new();
    for (a, pa, b, pb) in intended.difference(&seen) {
        out.push(cabling(
            Severity::Error,
            Some(a),
            pa,
            None,
            format!("{b} {pb}"),
            "not seen".into(),
            format!("the link {a} {pa} — {b} {pb} is not in the inferred fabric (down, miscabled, or LLDP off)"),
        ));
    }
    for (a, pa, b, pb) in seen.difference(&intended) {
        out.push(cabling(
            Severity::Warning,
            Some(a),
            pa,
            None,
            "no link".into(),
            format!("{b} {pb}"),
            format!("{a} {pa} is linked to {b} {pb}, which the intent does not have"),
        ));
    }
    out
}

fn cabling(
    severity: Severity,
    switch: Option<&str>,
    port: &str,
    host: Option<(&str, &str)>,
    expected: String,
    found: String,
    message: String,
) -> Finding {
    Finding {
        severity,
        kind: Kind::Cabling,
        source: Source::Inferred,
        switch: switch.map(str::to_owned),
        ports: if port.is_empty() {
            Vec::new()
        } else {
            vec![port.to_owned()]
        },
        host: host.map(|h| h.0.to_owned()),
        nic: host
            .map(|h| h.1)
            .filter(|n| !n.is_empty())
            .map(str::to_owned),
        heard_by: Vec::new(),
        expected,
        found,
        message,
        fix: Vec::new(),
    }
}
