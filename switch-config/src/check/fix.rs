//! The commands that fix a finding, in the switch's own language or the host's tools.
//!
//! NVUE fixes are the rendered `nv set` lines for the item (then `nv config apply`); EOS fixes
//! are configuration lines; SONiC fixes use its CLI where one exists (MTU, PFC, watchdog) and
//! otherwise the patch `spinelctl fabric diff` prints, applied with `config apply-patch`.

use super::Kind;
use crate::intent::{SwitchOs, WatchdogAction};
use crate::plan::{FabricPlan, PortPeer, SwitchPlan};
use crate::render::nvue::{self, NvSet};

/// Fix for a switch finding of `kind` on `ports` (empty: switch-wide). `found_pfc`: the PFC
/// priorities seen (for a PFC finding), so extra ones are turned off.
pub(super) fn switch(
    plan: &FabricPlan<'_>,
    sp: &SwitchPlan<'_>,
    kind: Kind,
    ports: &[String],
    found_pfc: &[u8],
) -> Vec<String> {
    let extra: Vec<u8> = found_pfc
        .iter()
        .copied()
        .filter(|p| !sp.pfc.contains(p))
        .collect();
    match sp.switch.os {
        SwitchOs::Sonic => sonic(plan, sp, kind, ports, &extra),
        SwitchOs::Cumulus => cumulus(plan, sp, kind, ports, &extra),
        SwitchOs::Eos => eos(plan, sp, kind, ports, &extra),
    }
}

fn sonic_patch(sp: &SwitchPlan<'_>) -> Vec<String> {
    let name = &sp.switch.name;
    vec![
        format!(
            "spinelctl fabric diff INTENT --switch {name} --running {name}.config_db.json > {name}.patch.json"
        ),
        format!("config apply-patch {name}.patch.json   # on {name}, then: config save -y"),
    ]
}

fn sonic(
    plan: &FabricPlan<'_>,
    sp: &SwitchPlan<'_>,
    kind: Kind,
    ports: &[String],
    extra: &[u8],
) -> Vec<String> {
    let w = &plan.qos.watchdog;
    match kind {
        Kind::Mtu => vec![format!(
            "for p in {}; do config interface mtu $p {}; done",
            ports.join(" "),
            sp.mtu
        )],
        Kind::Pfc => {
            let mut steps: Vec<String> = extra
                .iter()
                .map(|p| format!("config interface pfc priority $p {p} off"))
                .collect();
            steps.extend(
                sp.pfc
                    .iter()
                    .map(|p| format!("config interface pfc priority $p {p} on")),
            );
            vec![format!(
                "for p in {}; do {}; done",
                ports.join(" "),
                steps.join("; ")
            )]
        }
        Kind::Watchdog => {
            let action = match w.action {
                WatchdogAction::Drop => "drop",
                WatchdogAction::Forward => "forward",
            };
            vec![format!(
                "pfcwd start --action {action} --restoration-time {} {} {}",
                w.restoration_ms,
                ports.join(","),
                w.detection_ms
            )]
        }
        _ => sonic_patch(sp),
    }
}

fn cumulus(
    plan: &FabricPlan<'_>,
    sp: &SwitchPlan<'_>,
    kind: Kind,
    ports: &[String],
    extra: &[u8],
) -> Vec<String> {
    let Some(syntax) = nvue::syntax(sp) else {
        return Vec::new();
    };
    let on_port = |c: &NvSet, leaf: &[&str]| {
        c.path.len() > 2
            && c.path[0] == "interface"
            && ports.contains(&c.path[1])
            && leaf.iter().any(|l| c.path[2..].join(" ").starts_with(l))
    };
    let global = |c: &NvSet, prefix: &[&str]| {
        c.path.iter().zip(prefix).all(|(a, b)| a == b) && c.path.len() >= prefix.len()
    };
    let select: Box<dyn Fn(&NvSet) -> bool> = match kind {
        Kind::Mtu => Box::new(move |c| on_port(c, &["link mtu"])),
        Kind::Description => Box::new(move |c| on_port(c, &["description"])),
        Kind::Vlan => Box::new(move |c| on_port(c, &["bridge"]) || global(c, &["bridge"])),
        Kind::Address => {
            let address = format!("{} address", syntax.ipv4);
            Box::new(move |c| on_port(c, &[address.as_str()]))
        }
        Kind::Pfc => {
            let profiles = pfc_profiles(plan, sp, ports);
            Box::new(move |c| {
                (global(c, &["qos", "pfc"]) && c.path.get(2).is_some_and(|p| profiles.contains(p)))
                    || global(c, &["qos", "traffic-pool"])
                    || on_port(c, &["qos pfc profile"])
            })
        }
        Kind::Watchdog => Box::new(move |c| {
            global(c, &["qos", "pfc-watchdog"]) || on_port(c, &["qos pfc-watchdog"])
        }),
        Kind::Trust | Kind::DscpMap => Box::new(move |c| {
            global(c, &["qos", "mapping"]) || global(c, &["qos", "egress-queue-mapping"])
        }),
        Kind::Scheduler => Box::new(move |c| global(c, &["qos", "egress-scheduler"])),
        Kind::Ecn => Box::new(move |c| global(c, &["qos", "congestion-control"])),
        Kind::DcbxTlvs => Box::new(move |c| on_port(c, &["lldp dcbx"])),
        Kind::AppPriority => Box::new(move |c| global(c, &[syntax.lldp_root, "lldp"])),
        Kind::ArpAging => Box::new(move |c| global(c, &["system", "global", "arp"])),
        Kind::Svi => {
            let svis: Vec<String> = ports.iter().map(|p| p.to_ascii_lowercase()).collect();
            Box::new(move |c| {
                c.path.len() > 1 && c.path[0] == "interface" && svis.contains(&c.path[1])
            })
        }
        _ => {
            Box::new(move |c| c.path.first().is_some_and(|s| s == "interface") && on_port(c, &[""]))
        }
    };
    let commands: Vec<NvSet> = nvue::commands(plan, sp, syntax)
        .into_iter()
        .filter(|c| select(c))
        .collect();
    let mut out: Vec<String> = Vec::new();
    if kind == Kind::Pfc {
        for profile in pfc_profiles(plan, sp, ports) {
            for p in extra {
                out.push(format!("nv unset qos pfc {profile} switch-priority {p}"));
            }
        }
    }
    out.extend(nvue::to_cli("", &commands, &[]).lines().map(str::to_owned));
    out
}

/// The NVUE PFC profiles `ports` use: host ports the default, switch links their own.
fn pfc_profiles(plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, ports: &[String]) -> Vec<String> {
    let mut v = Vec::new();
    for p in ports {
        let profile = match sp.port(p).map(|pp| &pp.peer) {
            Some(PortPeer::Switch { .. }) => nvue::uplink_pfc_profile(plan),
            _ => "default-global".to_owned(),
        };
        if !v.contains(&profile) {
            v.push(profile);
        }
    }
    v
}

fn eos(
    plan: &FabricPlan<'_>,
    sp: &SwitchPlan<'_>,
    kind: Kind,
    ports: &[String],
    extra: &[u8],
) -> Vec<String> {
    let q = &plan.qos;
    let Some(platform) = sp
        .software
        .and_then(crate::intent::software::Software::eos_platform)
    else {
        return Vec::new();
    };
    let rendered = crate::render::eos::render(plan, sp, platform, "");
    let profile_head = format!("qos profile {}", q.name);
    let profile = block(&rendered, &profile_head);
    let in_profile = |pred: &dyn Fn(&str) -> bool| -> Vec<String> {
        std::iter::once(profile_head.clone())
            .chain(profile.iter().skip(1).filter(|l| pred(l)).cloned())
            .collect()
    };
    let mut out = vec!["configure".to_owned()];
    let per_port = |out: &mut Vec<String>, line: &dyn Fn(&str) -> Option<String>| {
        for p in ports {
            if let Some(l) = line(p) {
                out.push(format!("interface {p}"));
                out.push(format!("   {l}"));
            }
        }
    };
    let service_profile = |_: &str| Some(format!("service-profile {}", q.name));
    match kind {
        Kind::Mtu => per_port(&mut out, &|_| Some(format!("mtu {}", sp.mtu))),
        Kind::Description => per_port(&mut out, &|p| {
            sp.port(p)
                .map(|pp| format!("description {}", crate::render::sonic::peer_text(&pp.peer)))
        }),
        Kind::Vlan => per_port(&mut out, &|p| match sp.port(p).map(|pp| &pp.peer) {
            Some(PortPeer::Host {
                network: Some(n), ..
            }) => Some(format!("switchport access vlan {}", n.vlan)),
            _ => None,
        }),
        Kind::Address => per_port(&mut out, &|p| {
            sp.port(p)
                .and_then(|pp| pp.address)
                .map(|a| format!("ip address {a}"))
        }),
        Kind::Pfc => {
            out.push(profile_head.clone());
            out.extend(
                extra
                    .iter()
                    .map(|p| format!("   no priority-flow-control priority {p} no-drop")),
            );
            out.extend(
                in_profile(&|l| l.trim_start().starts_with("priority-flow-control"))
                    .into_iter()
                    .skip(1),
            );
            per_port(&mut out, &service_profile);
        }
        Kind::Trust => {
            out.extend(in_profile(&|l| l.contains("qos trust")));
            per_port(&mut out, &service_profile);
        }
        Kind::Scheduler | Kind::Ecn => {
            out.extend(
                profile
                    .iter()
                    .filter(|l| {
                        !l.trim_start().starts_with("priority-flow-control")
                            && !l.contains("qos trust")
                    })
                    .cloned(),
            );
            per_port(&mut out, &service_profile);
        }
        Kind::Watchdog => {
            out.extend(section(&rendered, "priority-flow-control pause watchdog"));
            out.extend(in_profile(&|l| l.contains("pause watchdog")));
            per_port(&mut out, &service_profile);
        }
        Kind::DscpMap => out.extend(section(&rendered, "qos map")),
        Kind::DcbxTlvs => per_port(&mut out, &|_| Some("dcbx mode ieee".to_owned())),
        Kind::AppPriority => out.extend(section(&rendered, "dcbx application")),
        Kind::ArpAging => out.extend(section(&rendered, "arp aging timeout default")),
        _ => {
            for p in ports {
                out.extend(block(&rendered, &format!("interface {p}")));
            }
        }
    }
    out.push("end".to_owned());
    out
}

/// Top-level lines starting with `prefix`.
fn section(config: &str, prefix: &str) -> Vec<String> {
    config
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

/// The block whose first line is `head`, through its indented lines.
fn block(config: &str, head: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for l in config.lines() {
        if l == head {
            inside = true;
            out.push(l.to_owned());
        } else if inside && l.starts_with(' ') {
            out.push(l.to_owned());
        } else if inside {
            break;
        }
    }
    out
}

/// Fixes on the host.
pub(super) mod host {
    use crate::render::host::{app_command, ecn_command, mtu_command, pfc_command, tos_command};

    /// `ip link set ... mtu`.
    pub fn mtu(nic: &str, mtu: u16) -> Vec<String> {
        vec![mtu_command(nic, mtu)]
    }

    /// `dcb pfc set ...`.
    pub fn pfc(nic: &str, pfc: &[u8]) -> Vec<String> {
        vec![pfc_command(nic, pfc)]
    }

    /// `dcb app add ...` (and, with an apptrust-capable driver, the trust order).
    pub fn trust(nic: &str, entries: &[(u8, u8)], trust_table: bool) -> Vec<String> {
        let mut v = vec![app_command(nic, entries)];
        if trust_table {
            v.push(format!("dcb apptrust set dev {nic} order dscp pcp"));
        }
        v
    }

    /// The rdma_cm default ToS, and NCCL's.
    pub fn tos(nic: &str, tos: u8) -> Vec<String> {
        vec![
            tos_command(nic, tos),
            format!("export NCCL_IB_TC={tos}   # in the jobs' environment"),
        ]
    }

    /// DCQCN on the data priority.
    pub fn ecn(nic: &str, priorities: &[u8]) -> Vec<String> {
        priorities.iter().map(|p| ecn_command(nic, *p)).collect()
    }

    /// Stop accepting the switch's DCBX configuration.
    pub fn willing(nic: &str) -> Vec<String> {
        vec![
            format!("dcb ets set dev {nic} willing off"),
            format!("dcb dcbx set dev {nic} host ieee"),
        ]
    }
}
