//! Intent vs a switch's running configuration.

use std::collections::BTreeMap;

use super::{Finding, Kind, Severity, Source, fix};
use crate::plan::{FabricPlan, SwitchPlan};
use crate::qos::comma_list;
use crate::state::{PortState, QueueState, Sched, SwitchState, expected};

/// A deviation on one port, before ports that deviate alike are merged.
struct Deviation {
    severity: Severity,
    kind: Kind,
    expected: String,
    found: String,
    message: String,
    /// For PFC deviations: the priorities seen, so the fix turns extra ones off.
    found_pfc: Vec<u8>,
}

/// Every disagreement between `sp`'s intent and `observed`.
pub fn compare(plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, observed: &SwitchState) -> Vec<Finding> {
    let want = expected(plan, sp);
    let lossless = plan.qos.lossless_tcs(&sp.pfc);
    let mut merged: BTreeMap<(Kind, String, String), (Deviation, Vec<String>)> = BTreeMap::new();
    for (name, w) in &want.ports {
        let deviations = match observed.ports.get(name) {
            None => vec![Deviation {
                severity: Severity::Error,
                kind: Kind::Missing,
                expected: "configured".into(),
                found: "absent".into(),
                message: "port missing from the running configuration".into(),
                found_pfc: Vec::new(),
            }],
            Some(o) => port(plan, w, o, &lossless),
        };
        for d in deviations {
            let key = (d.kind, d.expected.clone(), d.found.clone());
            merged
                .entry(key)
                .or_insert_with(|| (d, Vec::new()))
                .1
                .push(name.clone());
        }
    }
    let name = &sp.switch.name;
    let mut out: Vec<Finding> = merged
        .into_values()
        .map(|(d, mut ports)| {
            ports.sort_by(|a, b| crate::plan::natural_cmp(a, b));
            let fix = fix::switch(plan, sp, d.kind, &ports, &d.found_pfc);
            finding(name, ports, d, fix)
        })
        .collect();
    out.extend(globals(plan, sp, &want, observed));
    out
}

fn finding(switch: &str, ports: Vec<String>, d: Deviation, fix: Vec<String>) -> Finding {
    Finding {
        severity: d.severity,
        kind: d.kind,
        source: Source::SwitchConfig,
        switch: Some(switch.to_owned()),
        ports,
        host: None,
        nic: None,
        heard_by: Vec::new(),
        expected: d.expected,
        found: d.found,
        message: d.message,
        fix,
    }
}

fn dev(
    severity: Severity,
    kind: Kind,
    expected: String,
    found: String,
    message: String,
) -> Deviation {
    Deviation {
        severity,
        kind,
        expected,
        found,
        message,
        found_pfc: Vec::new(),
    }
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "unset".to_owned(), T::to_string)
}

fn port(plan: &FabricPlan<'_>, w: &PortState, o: &PortState, lossless: &[u8]) -> Vec<Deviation> {
    use Severity::{Error, Warning};
    let mut d = Vec::new();
    if o.description != w.description {
        d.push(dev(
            Warning,
            Kind::Description,
            opt(&w.description),
            opt(&o.description),
            format!(
                "described as {} but the intent cables {} here",
                opt(&o.description),
                opt(&w.description)
            ),
        ));
    }
    if o.mtu != w.mtu {
        d.push(dev(
            Error,
            Kind::Mtu,
            opt(&w.mtu),
            opt(&o.mtu),
            format!("MTU {} where the intent says {}", opt(&o.mtu), opt(&w.mtu)),
        ));
    }
    if !o.trust_dscp {
        d.push(dev(
            Error,
            Kind::Trust,
            "dscp".into(),
            "no DSCP classification".into(),
            "does not classify by DSCP: RoCE lands in the default (lossy) class".into(),
        ));
    } else if let Some(x) = dscp(plan, w, o, lossless) {
        d.push(x);
    }
    if o.pfc != w.pfc {
        d.push(Deviation {
            found_pfc: o.pfc.clone(),
            ..dev(
                Error,
                Kind::Pfc,
                comma_list(&w.pfc),
                comma_list(&o.pfc),
                format!(
                    "PFC on {} where the intent says {}",
                    none_if_empty(&comma_list(&o.pfc)),
                    comma_list(&w.pfc)
                ),
            )
        });
    }
    match (&w.watchdog, &o.watchdog) {
        (Some(_), None) => d.push(dev(
            Error,
            Kind::Watchdog,
            "on".into(),
            "off".into(),
            "PFC watchdog off: a pause storm from a broken NIC stalls the fabric".into(),
        )),
        (Some(a), Some(b)) if a != b => d.push(dev(
            Warning,
            Kind::Watchdog,
            format!("{a:?}"),
            format!("{b:?}"),
            format!(
                "PFC watchdog detection {} ms / restoration {} ms / poll {} ms / action {}, \
                 the intent says {} / {} / {} / {}",
                opt(&b.detection_ms),
                opt(&b.restoration_ms),
                opt(&b.poll_ms),
                opt(&b.action),
                opt(&a.detection_ms),
                opt(&a.restoration_ms),
                opt(&a.poll_ms),
                opt(&a.action)
            ),
        )),
        _ => {}
    }
    d.extend(queues(w, o, lossless));
    if let Some(x) = headroom(w, o) {
        d.push(x);
    }
    if o.access_vlan != w.access_vlan {
        d.push(dev(
            Error,
            Kind::Vlan,
            opt(&w.access_vlan),
            opt(&o.access_vlan),
            format!(
                "access VLAN {} where the intent says {}",
                opt(&o.access_vlan),
                opt(&w.access_vlan)
            ),
        ));
    }
    if o.address != w.address {
        d.push(dev(
            Error,
            Kind::Address,
            opt(&w.address),
            opt(&o.address),
            format!(
                "address {} where the intent says {}",
                opt(&o.address),
                opt(&w.address)
            ),
        ));
    }
    if w.dcbx_tlvs == Some(true) && o.dcbx_tlvs != Some(true) {
        d.push(dev(
            Warning,
            Kind::DcbxTlvs,
            "on".into(),
            "off".into(),
            "DCBX ETS/PFC TLVs not transmitted: hosts cannot see (or check) the switch's PFC"
                .into(),
        ));
    }
    d
}

/// Headroom on the priorities the intent makes lossless (not on what the port's `pfc_enable`
/// says: a wrong PFC list is its own finding, and its priorities may have no lossless group).
fn headroom(w: &PortState, o: &PortState) -> Option<Deviation> {
    let short: Vec<(u8, u64, Option<u64>)> = w
        .headroom_xoff
        .iter()
        .map(|(p, want)| (*p, *want, o.headroom_xoff.get(p).copied()))
        .filter(|(_, want, got)| got.is_none_or(|g| g < *want))
        .collect();
    let (_, want, _) = *short.first()?;
    let found: Vec<String> = short
        .iter()
        .map(|(p, _, got)| format!("priority {p}: {}", opt(got)))
        .collect();
    let prios: Vec<u8> = short.iter().map(|(p, _, _)| *p).collect();
    Some(dev(
        Severity::Error,
        Kind::Headroom,
        format!("priority {}: {want}", comma_list(&prios)),
        found.join(", "),
        format!(
            "lossless PG headroom (xoff) {} bytes, below the {want} bytes the port's speed and \
             cable need: pauses come too late and packets drop despite PFC",
            found.join(", ")
        ),
    ))
}

fn none_if_empty(s: &str) -> &str {
    if s.is_empty() { "no priority" } else { s }
}

/// A wrong DSCP entry: (not RoCE/CNP, DSCP, intended TC, found TC) — sorts RoCE's first.
type Wrong = (bool, u8, u8, Option<u8>);

/// DSCP map differences; an error when RoCE or CNP, or a lossless class, is involved. The
/// message shows RoCE's and CNP's DSCPs first and at most eight entries.
fn dscp(plan: &FabricPlan<'_>, w: &PortState, o: &PortState, lossless: &[u8]) -> Option<Deviation> {
    let q = &plan.qos;
    let mut wrong: Vec<Wrong> = Vec::new();
    let mut severe = false;
    for (d, tc) in w.dscp_to_tc.entries() {
        let got = o.dscp_to_tc.get(d);
        if got != Some(tc) {
            let roce = q.data.dscp.contains(&d) || q.cnp.dscp.contains(&d);
            severe |= roce || lossless.contains(&tc) || got.is_some_and(|g| lossless.contains(&g));
            wrong.push((!roce, d, tc, got));
        }
    }
    if wrong.is_empty() {
        return None;
    }
    wrong.sort();
    let show = |f: &dyn Fn(&Wrong) -> String| {
        let mut items: Vec<String> = wrong.iter().take(8).map(f).collect();
        if wrong.len() > 8 {
            items.push(format!("and {} more", wrong.len() - 8));
        }
        items.join(" ")
    };
    let found = show(&|(_, d, _, got)| {
        format!(
            "{d}→{}",
            got.map_or_else(|| "default".to_owned(), |g| g.to_string())
        )
    });
    let expected = show(&|(_, d, tc, _)| format!("{d}→{tc}"));
    let message = if severe {
        format!(
            "DSCP → traffic class {found}, the intent says {expected}: RoCE or CNP lands in the \
             wrong class, or other traffic shares the lossless one"
        )
    } else {
        format!("DSCP → traffic class {found} (the OS default), the intent says {expected}")
    };
    Some(dev(
        if severe {
            Severity::Error
        } else {
            Severity::Warning
        },
        Kind::DscpMap,
        expected,
        found,
        message,
    ))
}

fn queues(w: &PortState, o: &PortState, lossless: &[u8]) -> Vec<Deviation> {
    let mut d = Vec::new();
    let empty = QueueState::default();
    for (tc, want) in &w.queues {
        let got = o.queues.get(tc).unwrap_or(&empty);
        let important = lossless.contains(tc) || want.scheduler == Some(Sched::Strict);
        if got.scheduler != want.scheduler {
            d.push(dev(
                if important {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                Kind::Scheduler,
                format!("tc{tc} {:?}", want.scheduler),
                format!("tc{tc} {:?}", got.scheduler),
                format!(
                    "traffic class {tc} scheduled {} where the intent says {}",
                    sched(got.scheduler),
                    sched(want.scheduler)
                ),
            ));
        }
        if got.ecn != want.ecn {
            d.push(dev(
                Severity::Error,
                Kind::Ecn,
                format!("tc{tc} {:?}", want.ecn),
                format!("tc{tc} {:?}", got.ecn),
                format!(
                    "traffic class {tc} ECN {} where the intent says {}: DCQCN {}",
                    ecn(&got.ecn),
                    ecn(&want.ecn),
                    if got.ecn.is_none() {
                        "never slows senders and PFC storms follow"
                    } else {
                        "reacts at other queue depths than the rest of the fabric"
                    }
                ),
            ));
        }
    }
    d
}

fn sched(s: Option<Sched>) -> String {
    match s {
        None => "unset".into(),
        Some(Sched::Strict) => "strict".into(),
        Some(Sched::Dwrr(w)) => format!("DWRR {w}%"),
    }
}

fn ecn(e: &Option<crate::state::EcnState>) -> String {
    match e {
        None => "off".into(),
        Some(e) => format!(
            "{}-{} bytes at {}%",
            e.min_bytes, e.max_bytes, e.probability
        ),
    }
}

fn globals(
    plan: &FabricPlan<'_>,
    sp: &SwitchPlan<'_>,
    w: &SwitchState,
    o: &SwitchState,
) -> Vec<Finding> {
    use Severity::{Error, Warning};
    let name = &sp.switch.name;
    let mut out = Vec::new();
    let mut push = |d: Deviation, ports: Vec<String>| {
        let fix = fix::switch(plan, sp, d.kind, &ports, &d.found_pfc);
        out.push(finding(name, ports, d, fix));
    };
    if w.arp_aging_seconds.is_some() && o.arp_aging_seconds != w.arp_aging_seconds {
        push(
            dev(
                Warning,
                Kind::ArpAging,
                opt(&w.arp_aging_seconds),
                opt(&o.arp_aging_seconds),
                format!(
                    "ARP aging {} s, the intent says {} s (a stale entry for a reused pod address \
                     lives that long when a gratuitous ARP is lost)",
                    opt(&o.arp_aging_seconds),
                    opt(&w.arp_aging_seconds)
                ),
            ),
            Vec::new(),
        );
    }
    if w.lldp_app_priority.is_some() && o.lldp_app_priority != w.lldp_app_priority {
        push(
            dev(
                Error,
                Kind::AppPriority,
                opt(&w.lldp_app_priority),
                opt(&o.lldp_app_priority),
                format!(
                    "advertises RoCE (UDP 4791) on priority {}, the intent says {}: willing hosts \
                     adopt it",
                    opt(&o.lldp_app_priority),
                    opt(&w.lldp_app_priority)
                ),
            ),
            Vec::new(),
        );
    }
    for (vlan, want) in &w.vlans {
        let got = o.vlans.get(vlan).cloned().unwrap_or_default();
        let label = format!("Vlan{vlan}");
        if got.gateway != want.gateway || got.mtu != want.mtu {
            push(
                dev(
                    Error,
                    Kind::Svi,
                    format!("{} mtu {}", opt(&want.gateway), opt(&want.mtu)),
                    format!("{} mtu {}", opt(&got.gateway), opt(&got.mtu)),
                    format!(
                        "rail VLAN interface {label}: gateway {} MTU {}, the intent says {} MTU {}",
                        opt(&got.gateway),
                        opt(&got.mtu),
                        opt(&want.gateway),
                        opt(&want.mtu)
                    ),
                ),
                vec![label.clone()],
            );
        }
        if let Some(cap) = want.arp_capacity
            && got.arp_capacity.is_none_or(|g| g < cap)
        {
            push(
                dev(
                    Error,
                    Kind::ArpCapacity,
                    cap.to_string(),
                    opt(&got.arp_capacity),
                    format!(
                        "{label} holds {} dynamic ARP entries, the pods need {cap}",
                        opt(&got.arp_capacity)
                    ),
                ),
                vec![label],
            );
        }
    }
    out
}
