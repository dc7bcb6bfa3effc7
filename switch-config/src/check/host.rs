//! Intent vs a host's kernel: MTU, PFC, DSCP trust, DCBX willing, RoCE ToS, DCQCN ECN.

use std::collections::BTreeSet;

use super::{Finding, Kind, Severity, Source, fix};
use crate::host::{HostState, NicState, Reading};
use crate::plan::FabricPlan;
use crate::qos::comma_list;

/// What one NIC must have: its names, and the fabric-wide values (computed once per host).
struct Want<'a> {
    nic: &'a str,
    switch: &'a str,
    port: &'a str,
    mtu: u16,
    pfc: &'a [u8],
    dscp_priority: &'a [(u8, u8)],
    roce_tos: u8,
    ecn: &'a [u8],
}

struct Nic<'a> {
    host: &'a str,
    profile: &'a Want<'a>,
}

impl Nic<'_> {
    fn finding(
        &self,
        severity: Severity,
        kind: Kind,
        expected: String,
        found: String,
        message: String,
        fix: Vec<String>,
    ) -> Finding {
        Finding {
            severity,
            kind,
            source: Source::Host,
            switch: Some(self.profile.switch.to_owned()),
            ports: vec![self.profile.port.to_owned()],
            host: Some(self.host.to_owned()),
            nic: Some(self.profile.nic.to_owned()),
            heard_by: Vec::new(),
            expected,
            found,
            message,
            fix,
        }
    }
}

pub(super) fn check(
    plan: &FabricPlan<'_>,
    host: &str,
    state: &HostState,
    followed: &BTreeSet<(String, Kind)>,
) -> Vec<Finding> {
    let Some(nics) = plan.hosts.get(host) else {
        return Vec::new();
    };
    let q = &plan.qos;
    let mut dscp_priority: Vec<(u8, u8)> =
        q.data.dscp.iter().map(|d| (*d, q.data.priority)).collect();
    dscp_priority.extend(q.cnp.dscp.iter().map(|d| (*d, q.cnp.priority)));
    dscp_priority.sort_unstable();
    let ecn = if q.host_ecn {
        vec![q.data.priority]
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    for n in nics {
        let p = &Want {
            nic: n.nic,
            switch: n.switch,
            port: n.port,
            mtu: plan.intent.roce.mtu.host,
            pfc: &q.pfc,
            dscp_priority: &dscp_priority,
            roce_tos: q.roce_tos,
            ecn: &ecn,
        };
        let nic = Nic { host, profile: p };
        match state.nics.iter().find(|n| n.nic == p.nic) {
            None => out.push(nic.finding(
                Severity::Warning,
                Kind::Missing,
                "read".into(),
                "not in the host state".into(),
                format!(
                    "{} was not read on {host}: nothing about it is proven",
                    p.nic
                ),
                Vec::new(),
            )),
            Some(s) => out.extend(nic_findings(&nic, s, followed)),
        }
    }
    out
}

fn nic_findings(nic: &Nic<'_>, s: &NicState, followed: &BTreeSet<(String, Kind)>) -> Vec<Finding> {
    let p = nic.profile;
    let mut out = Vec::new();
    let mut unreadable: Vec<(&'static str, String)> = Vec::new();
    match &s.mtu {
        Reading::Value(m) if *m != u32::from(p.mtu) => out.push(nic.finding(
            Severity::Error,
            Kind::Mtu,
            p.mtu.to_string(),
            m.to_string(),
            format!(
                "MTU {m}, the intent says {}: {}",
                p.mtu,
                if *m < u32::from(p.mtu) {
                    "RoCE messages use a smaller path MTU and peers with the larger MTU see drops"
                } else {
                    "packets larger than the switches carry are dropped (retry counter exceeded)"
                }
            ),
            fix::host::mtu(p.nic, p.mtu),
        )),
        Reading::CannotRead(why) => unreadable.push(("MTU", why.clone())),
        Reading::Value(_) => {}
    }
    match &s.pfc {
        Reading::Value(v) if *v != p.pfc && !followed.contains(&(p.nic.to_owned(), Kind::Pfc)) => {
            out.push(nic.finding(
                Severity::Error,
                Kind::Pfc,
                comma_list(p.pfc),
                comma_list(v),
                format!(
                    "PFC on {} where the intent says {}: {}",
                    if v.is_empty() {
                        "no priority".to_owned()
                    } else {
                        comma_list(v)
                    },
                    comma_list(p.pfc),
                    "the NIC neither pauses nor honours pauses on the RoCE priority"
                ),
                fix::host::pfc(p.nic, p.pfc),
            ));
        }
        Reading::CannotRead(why) => unreadable.push(("PFC", why.clone())),
        Reading::Value(_) => {}
    }
    trust(nic, s, &mut out, &mut unreadable);
    match &s.willing {
        Reading::Value(true) => out.push(nic.finding(
            Severity::Warning,
            Kind::Willing,
            "not willing".into(),
            "willing".into(),
            "DCBX willing: the NIC adopts whatever its switch advertises, silently".into(),
            fix::host::willing(p.nic),
        )),
        Reading::CannotRead(why) => unreadable.push(("DCBX willing", why.clone())),
        Reading::Value(false) => {}
    }
    match &s.roce_tos {
        Reading::Value(t) if *t != p.roce_tos => out.push(nic.finding(
            Severity::Error,
            Kind::RoceTos,
            p.roce_tos.to_string(),
            t.to_string(),
            format!(
                "RoCE ToS {t} (DSCP {}), the intent says {} (DSCP {}): RoCE rides another class",
                t >> 2,
                p.roce_tos,
                p.roce_tos >> 2
            ),
            fix::host::tos(p.nic, p.roce_tos),
        )),
        Reading::CannotRead(why) => unreadable.push(("RoCE ToS", why.clone())),
        Reading::Value(_) => {}
    }
    match &s.ecn {
        Reading::Value(v) if !p.ecn.iter().all(|e| v.contains(e)) => out.push(nic.finding(
            Severity::Error,
            Kind::Ecn,
            comma_list(p.ecn),
            comma_list(v),
            format!(
                "DCQCN ECN on {} where the intent says {}: the switches mark, the sender never \
                 slows, PFC storms follow",
                if v.is_empty() {
                    "no priority".to_owned()
                } else {
                    comma_list(v)
                },
                comma_list(p.ecn)
            ),
            fix::host::ecn(p.nic, p.ecn),
        )),
        Reading::CannotRead(why) if !p.ecn.is_empty() => {
            unreadable.push(("DCQCN ECN", why.clone()))
        }
        _ => {}
    }
    if !unreadable.is_empty() {
        out.push(cannot_read(nic, &unreadable));
    }
    out
}

fn trust(
    nic: &Nic<'_>,
    s: &NicState,
    out: &mut Vec<Finding>,
    unreadable: &mut Vec<(&'static str, String)>,
) {
    let p = nic.profile;
    let entries = match &s.dscp_priority {
        Reading::Value(v) => v,
        Reading::CannotRead(why) => {
            unreadable.push(("DSCP trust (APP table)", why.clone()));
            return;
        }
    };
    let missing: Vec<(u8, u8)> = p
        .dscp_priority
        .iter()
        .filter(|e| !entries.contains(e))
        .copied()
        .collect();
    let trusts_pcp_first = s
        .trust
        .as_ref()
        .is_some_and(|t| t.first().map(String::as_str) != Some("dscp"));
    if !missing.is_empty() || trusts_pcp_first {
        let shown = |v: &[(u8, u8)]| {
            v.iter()
                .map(|(d, q)| format!("{d}:{q}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        out.push(nic.finding(
            Severity::Error,
            Kind::Trust,
            format!("trust dscp, dscp-prio {}", shown(p.dscp_priority)),
            format!(
                "{}dscp-prio {}",
                s.trust.as_ref().map(|t| format!("trust {}, ", t.join(" "))).unwrap_or_default(),
                if entries.is_empty() { "none".to_owned() } else { shown(entries) }
            ),
            format!(
                "does not classify RoCE by DSCP ({} missing): received RoCE lands on priority 0, \
                 so the NIC never sends PFC for it",
                shown(&missing)
            ),
            fix::host::trust(p.nic, p.dscp_priority, s.trust.is_some()),
        ));
    }
    let lossless: Vec<u8> = p.pfc.to_vec();
    let intruders: Vec<String> = entries
        .iter()
        .filter(|(d, prio)| lossless.contains(prio) && !p.dscp_priority.iter().any(|(x, _)| x == d))
        .map(|(d, prio)| format!("{d}:{prio}"))
        .collect();
    if !intruders.is_empty() {
        out.push(nic.finding(
            Severity::Warning,
            Kind::Trust,
            "only RoCE DSCPs on lossless priorities".into(),
            intruders.join(" "),
            format!(
                "other DSCPs share the lossless priority ({}): their traffic is paused with RoCE's",
                intruders.join(" ")
            ),
            vec![format!(
                "dcb app del dev {} dscp-prio {}",
                p.nic,
                intruders.join(" ")
            )],
        ));
    }
}

fn cannot_read(nic: &Nic<'_>, what: &[(&str, impl AsRef<str>)]) -> Finding {
    let items: Vec<&str> = what.iter().map(|(w, _)| *w).collect();
    let mut reasons: Vec<&str> = Vec::new();
    for (_, r) in what {
        if !reasons.contains(&r.as_ref()) {
            reasons.push(r.as_ref());
        }
    }
    nic.finding(
        Severity::Warning,
        Kind::CannotRead,
        "readable".into(),
        items.join(", "),
        format!(
            "cannot read {} — not proven to agree with the intent: {}",
            items.join(", "),
            reasons.join("; ")
        ),
        Vec::new(),
    )
}
