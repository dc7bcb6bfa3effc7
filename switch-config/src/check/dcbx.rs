//! What each leaf advertises (DCBX PFC, ETS, APP and the 802.3 frame size, as the host heard
//! it over LLDP) against the intent, and which host settings merely follow it.

use std::collections::BTreeSet;

use spinel_wire::neighbor::{AppSelector, Neighbor, NeighborTable, Tsa};

use super::{Finding, Kind, Known, Severity, Source, fix};
use crate::host::HostState;
use crate::intent::SwitchOs;
use crate::plan::{FabricPlan, NicPlan, SwitchPlan};
use crate::qos::comma_list;
use crate::render::nvue::ROCE_UDP_PORT;

/// Findings, and the host settings (NIC, kind) that equal a wrong advertisement on a willing
/// host: the switch's fault, already reported here.
#[derive(Default)]
pub(super) struct Advertised {
    /// What each NIC heard; [`merge`] makes one finding of what a switch advertised alike to
    /// many.
    pub heard: Vec<Heard>,
    pub followed: BTreeSet<(String, Kind)>,
}

/// One NIC's view of a switch's advertisement: a finding naming that host and NIC.
pub(super) struct Heard {
    pub finding: Finding,
    /// The willing host copied the wrong value.
    pub copied: bool,
}

/// One finding per switch fault: what a switch advertised alike on several ports (a wrong
/// global setting reaches every host) is one finding listing the ports and the hosts that heard
/// it. Cabling stays per NIC: each NIC hears its own neighbour.
pub(super) fn merge(heard: Vec<Heard>) -> Vec<Finding> {
    type Key = (Severity, Kind, Option<String>, String, String);
    let mut out = Vec::new();
    let mut groups: std::collections::BTreeMap<Key, Vec<Heard>> = Default::default();
    for h in heard {
        if h.finding.kind == Kind::Cabling {
            out.push(h.finding);
            continue;
        }
        let f = &h.finding;
        let key = (
            f.severity,
            f.kind,
            f.switch.clone(),
            f.expected.clone(),
            f.found.clone(),
        );
        groups.entry(key).or_default().push(h);
    }
    for group in groups.into_values() {
        let copied: Vec<String> = group
            .iter()
            .filter(|h| h.copied)
            .filter_map(|h| h.finding.heard_by.first().cloned())
            .collect();
        let mut ports: Vec<String> = Vec::new();
        let mut heard_by: Vec<String> = Vec::new();
        for h in &group {
            ports.extend(h.finding.ports.iter().cloned());
            heard_by.extend(h.finding.heard_by.iter().cloned());
        }
        ports.sort_by(|a, b| crate::plan::natural_cmp(a, b));
        ports.dedup();
        heard_by.sort();
        heard_by.dedup();
        let mut iter = group.into_iter();
        let Some(first) = iter.next() else { continue };
        let mut f = first.finding;
        if iter.next().is_some() {
            f.host = None;
            f.nic = None;
            f.ports = ports;
            f.heard_by = heard_by;
        }
        if !copied.is_empty() {
            f.message.push_str(&format!(
                "; the willing host{} {} copied it",
                if copied.len() > 1 { "s" } else { "" },
                copied.join(", ")
            ));
        }
        out.push(f);
    }
    out
}

struct Ctx<'p, 'a> {
    plan: &'p FabricPlan<'a>,
    sp: &'p SwitchPlan<'a>,
    host: &'p str,
    nic: &'p NicPlan<'a>,
}

impl Ctx<'_, '_> {
    fn finding(
        &self,
        severity: Severity,
        kind: Kind,
        expected: String,
        found: String,
        message: String,
    ) -> Heard {
        let ports = vec![self.nic.port.to_owned()];
        let found_pfc: Vec<u8> = if kind == Kind::Pfc {
            found.split(',').filter_map(|p| p.parse().ok()).collect()
        } else {
            Vec::new()
        };
        let finding = Finding {
            severity,
            kind,
            source: Source::Advertised,
            switch: Some(self.sp.switch.name.clone()),
            fix: fix::switch(self.plan, self.sp, kind, &ports, &found_pfc),
            ports,
            host: Some(self.host.to_owned()),
            nic: Some(self.nic.nic.to_owned()),
            heard_by: vec![format!("{} {}", self.host, self.nic.nic)],
            expected,
            found,
            message,
        };
        Heard {
            finding,
            copied: false,
        }
    }
}

pub(super) fn check(
    plan: &FabricPlan<'_>,
    host: &str,
    table: &NeighborTable,
    state: Option<&HostState>,
    known: &Known,
) -> Advertised {
    let mut out = Advertised::default();
    let Some(nics) = plan.hosts.get(host) else {
        return out;
    };
    for nic in nics {
        let Some(sp) = plan.switch(nic.switch) else {
            continue;
        };
        let Some(port) = table.ports.iter().find(|p| p.port == nic.nic) else {
            continue;
        };
        let ctx = Ctx {
            plan,
            sp,
            host,
            nic,
        };
        let Some(neighbor) = neighbor_of(&ctx, &port.neighbors, &mut out.heard) else {
            continue;
        };
        let reported = |kind| known.contains(&sp.switch.name, nic.port, kind);
        pfc(&ctx, neighbor, state, &reported, &mut out);
        ets(&ctx, neighbor, &mut out.heard);
        app(&ctx, neighbor, &reported, &mut out.heard);
        frame_size(&ctx, neighbor, &reported, &mut out.heard);
        if neighbor.dcbx.pfc.is_none()
            && sp.switch.os != SwitchOs::Sonic
            && !reported(Kind::DcbxTlvs)
        {
            out.heard.push(ctx.finding(
                Severity::Warning,
                Kind::DcbxTlvs,
                "PFC TLV".into(),
                "none".into(),
                format!(
                    "{} advertises no DCBX PFC TLV: its PFC cannot be checked from the hosts",
                    sp.switch.name
                ),
            ));
        }
    }
    out
}

/// The neighbour the intent cables to this NIC; a cabling finding when it is another.
fn neighbor_of<'n>(
    ctx: &Ctx<'_, '_>,
    neighbors: &'n [Neighbor],
    out: &mut Vec<Heard>,
) -> Option<&'n Neighbor> {
    let leaf = &ctx.sp.switch.name;
    if let Some(n) = neighbors
        .iter()
        .find(|n| n.system_name.as_deref() == Some(leaf.as_str()))
    {
        return Some(n);
    }
    let seen: Vec<String> = neighbors
        .iter()
        .map(|n| {
            format!(
                "{} {}",
                n.system_name.as_deref().unwrap_or(&n.chassis_id.value),
                n.port_id.value
            )
        })
        .collect();
    let mut f = ctx.finding(
        if seen.is_empty() {
            Severity::Warning
        } else {
            Severity::Error
        },
        Kind::Cabling,
        format!("{leaf} {}", ctx.nic.port),
        if seen.is_empty() {
            "no neighbour".into()
        } else {
            seen.join(", ")
        },
        if seen.is_empty() {
            format!(
                "hears no LLDP neighbour; the intent cables it to {leaf} {}",
                ctx.nic.port
            )
        } else {
            format!(
                "hears {} where the intent cables {leaf} {}: recable, or correct the intent",
                seen.join(", "),
                ctx.nic.port
            )
        },
    );
    f.finding.fix = Vec::new();
    out.push(f);
    None
}

fn pfc(
    ctx: &Ctx<'_, '_>,
    n: &Neighbor,
    state: Option<&HostState>,
    reported: &dyn Fn(Kind) -> bool,
    out: &mut Advertised,
) {
    let Some(adv) = &n.dcbx.pfc else {
        return;
    };
    let mut advertised = adv.enabled_priorities.clone();
    advertised.sort_unstable();
    if advertised == ctx.sp.pfc {
        return;
    }
    let nic_state = state.and_then(|s| s.nics.iter().find(|x| x.nic == ctx.nic.nic));
    let host_follows = nic_state
        .is_some_and(|s| s.pfc.value() == Some(&advertised) && s.willing.value() == Some(&true));
    if host_follows {
        out.followed.insert((ctx.nic.nic.to_owned(), Kind::Pfc));
    }
    if reported(Kind::Pfc) {
        return;
    }
    let mut heard = ctx.finding(
        Severity::Error,
        Kind::Pfc,
        comma_list(&ctx.sp.pfc),
        comma_list(&advertised),
        format!(
            "{} advertises PFC on {} over DCBX, the intent says {}",
            ctx.sp.switch.name,
            if advertised.is_empty() {
                "no priority".to_owned()
            } else {
                comma_list(&advertised)
            },
            comma_list(&ctx.sp.pfc),
        ),
    );
    heard.copied = host_follows;
    out.heard.push(heard);
}

fn ets(ctx: &Ctx<'_, '_>, n: &Neighbor, out: &mut Vec<Heard>) {
    let Some(ets) = &n.dcbx.ets_configuration else {
        return;
    };
    let q = &ctx.plan.qos;
    let mut wrong = Vec::new();
    for class in [&q.data, &q.cnp] {
        let got = ets.priority_tc[usize::from(class.priority)];
        if got != class.traffic_class {
            wrong.push(format!(
                "priority {}→TC{got} (intent TC{})",
                class.priority, class.traffic_class
            ));
        }
    }
    let cnp_tsa = ets.tsa[usize::from(q.cnp.traffic_class)];
    if cnp_tsa != Tsa::Strict {
        wrong.push(format!(
            "CNP TC{} scheduled {cnp_tsa:?} (intent strict)",
            q.cnp.traffic_class
        ));
    }
    if !wrong.is_empty() {
        out.push(ctx.finding(
            Severity::Error,
            Kind::Ets,
            "intent ETS".into(),
            wrong.join(", "),
            format!("{} advertises ETS {}", ctx.sp.switch.name, wrong.join(", ")),
        ));
    }
}

fn app(ctx: &Ctx<'_, '_>, n: &Neighbor, reported: &dyn Fn(Kind) -> bool, out: &mut Vec<Heard>) {
    let Some(apps) = &n.dcbx.application_priority else {
        return;
    };
    let q = &ctx.plan.qos;
    let mut wrong = Vec::new();
    for a in apps {
        let want = match a.selector {
            AppSelector::UdpPort | AppSelector::AnyPort if a.protocol == ROCE_UDP_PORT => {
                Some(q.data.priority)
            }
            AppSelector::Dscp => {
                let d = u8::try_from(a.protocol).unwrap_or(u8::MAX);
                if q.data.dscp.contains(&d) {
                    Some(q.data.priority)
                } else if q.cnp.dscp.contains(&d) {
                    Some(q.cnp.priority)
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some(w) = want
            && w != a.priority
        {
            wrong.push(format!(
                "{:?} {}→{} (intent {w})",
                a.selector, a.protocol, a.priority
            ));
        }
    }
    if !wrong.is_empty() && !reported(Kind::AppPriority) {
        out.push(ctx.finding(
            Severity::Error,
            Kind::AppPriority,
            format!("RoCE on priority {}", q.data.priority),
            wrong.join(", "),
            format!(
                "{} advertises application priorities {}: willing hosts classify RoCE there",
                ctx.sp.switch.name,
                wrong.join(", ")
            ),
        ));
    }
}

fn frame_size(
    ctx: &Ctx<'_, '_>,
    n: &Neighbor,
    reported: &dyn Fn(Kind) -> bool,
    out: &mut Vec<Heard>,
) {
    let host_mtu = ctx.plan.intent.roce.mtu.host;
    if let Some(mfs) = n.max_frame_size
        && mfs < host_mtu
        && !reported(Kind::Mtu)
    {
        out.push(ctx.finding(
            Severity::Error,
            Kind::Mtu,
            format!("at least {host_mtu}"),
            mfs.to_string(),
            format!(
                "{} advertises a maximum frame size of {mfs}, below the host MTU {host_mtu}: \
                 full-size RoCE packets are dropped",
                ctx.sp.switch.name
            ),
        ));
    }
}
