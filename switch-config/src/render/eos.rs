//! Arista EOS CLI: global DSCP/CoS maps and PFC watchdog timers, one `qos profile` with the
//! lossless chain (trust, tx-queue scheduling and ECN, PFC no-drop priorities, watchdog)
//! applied to every fabric port with `service-profile`, rail VLANs with their SVIs, routed
//! switch links, ARP aging and neighbour capacity. Shaped after Arista AVD's
//! `eos_cli_config_gen` templates and AMD's ROCm multi-node guide (research notes §5.4); the
//! queue command is the platform family's (`uc-tx-queue` on Trident/Tomahawk, `tx-queue` on
//! Arad/Jericho). The test suite renders through AVD's own templates to compare.

use std::fmt::Write;

use crate::intent::WatchdogAction;
use crate::intent::software::EosPlatform;
use crate::plan::{FabricPlan, PortPeer, SwitchPlan};

/// EOS's RoCE ECN thresholds are given in bytes here (EOS also takes segments, kbytes, ...).
pub const ECN_UNITS: &str = "bytes";

/// The configuration text, with the queue command of `platform`.
pub fn render(
    plan: &FabricPlan<'_>,
    sp: &SwitchPlan<'_>,
    platform: EosPlatform,
    header: &str,
) -> String {
    let mut out = String::new();
    for line in header.lines() {
        let _ = writeln!(out, "! {line}");
    }
    let _ = writeln!(out, "hostname {}", sp.switch.name);
    let _ = writeln!(out, "!");
    maps(&mut out, plan);
    watchdog(&mut out, plan);
    let _ = writeln!(
        out,
        "dcbx application udp {} priority {}",
        super::nvue::ROCE_UDP_PORT,
        plan.qos.data.priority
    );
    let _ = writeln!(
        out,
        "arp aging timeout default {}",
        plan.intent.arp.aging_seconds
    );
    let _ = writeln!(out, "!");
    profile(&mut out, plan, sp, platform);
    vlans(&mut out, sp);
    ports(&mut out, plan, sp);
    svis(&mut out, plan, sp);
    let _ = writeln!(out, "end");
    out
}

fn maps(out: &mut String, plan: &FabricPlan<'_>) {
    let q = &plan.qos;
    for tc in 0..8u8 {
        let dscps: Vec<String> = (0..64)
            .filter(|d| q.dscp_to_tc[*d] == tc)
            .map(|d| d.to_string())
            .collect();
        if !dscps.is_empty() {
            let _ = writeln!(
                out,
                "qos map dscp {} to traffic-class {tc}",
                dscps.join(" ")
            );
        }
    }
    for tc in 0..8u8 {
        let cos: Vec<String> = (0..8)
            .filter(|p| q.priority_to_tc[*p] == tc)
            .map(|p| p.to_string())
            .collect();
        if !cos.is_empty() {
            let _ = writeln!(out, "qos map cos {} to traffic-class {tc}", cos.join(" "));
        }
    }
    // PFC frames carry the priority a traffic class maps back to.
    for class in [&q.data, &q.cnp] {
        let _ = writeln!(
            out,
            "qos map traffic-class {} to cos {}",
            class.traffic_class, class.priority
        );
    }
    let _ = writeln!(out, "!");
}

/// Seconds with up to three decimals, as EOS's watchdog timers take them.
fn seconds(ms: u32) -> String {
    let s = format!("{}.{:03}", ms / 1000, ms % 1000);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

fn watchdog(out: &mut String, plan: &FabricPlan<'_>) {
    let w = &plan.qos.watchdog;
    let _ = writeln!(
        out,
        "priority-flow-control pause watchdog default timeout {}",
        seconds(w.detection_ms)
    );
    let _ = writeln!(
        out,
        "priority-flow-control pause watchdog default polling-interval {}",
        seconds(w.poll_ms)
    );
    let _ = writeln!(
        out,
        "priority-flow-control pause watchdog default recovery-time {}",
        seconds(w.restoration_ms)
    );
    // EOS acts by drop, errdisable or notify-only; validation refuses forward for EOS.
    match w.action {
        WatchdogAction::Drop => {
            let _ = writeln!(out, "priority-flow-control pause watchdog action drop");
        }
        WatchdogAction::Forward => {
            let _ = writeln!(
                out,
                "! no EOS watchdog action forwards: the intent cannot be met"
            );
        }
    }
}

fn profile(out: &mut String, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, platform: EosPlatform) {
    let q = &plan.qos;
    let lossless = q.lossless_tcs(&sp.pfc);
    let _ = writeln!(out, "qos profile {}", q.name);
    let _ = writeln!(out, "   qos trust dscp");
    let mut queues: Vec<u8> = vec![0, q.cnp.traffic_class];
    queues.extend(&lossless);
    queues.sort_unstable();
    queues.dedup();
    for tc in queues {
        let _ = writeln!(out, "   !");
        let _ = writeln!(out, "   {} {tc}", platform.tx_queue());
        if tc == q.cnp.traffic_class {
            let _ = writeln!(out, "      priority strict");
            continue;
        }
        let share = if lossless.contains(&tc) {
            q.scheduler.data_percent
        } else {
            q.scheduler.default_percent
        };
        let _ = writeln!(out, "      no priority");
        let _ = writeln!(out, "      bandwidth percent {share}");
        if lossless.contains(&tc) {
            let e = &q.ecn;
            let _ = writeln!(
                out,
                "      random-detect ecn minimum-threshold {} {ECN_UNITS} maximum-threshold {} \
                 {ECN_UNITS} max-mark-probability {}",
                e.min_bytes, e.max_bytes, e.mark_probability
            );
        }
    }
    let _ = writeln!(out, "   !");
    let _ = writeln!(out, "   priority-flow-control on");
    for p in &sp.pfc {
        let _ = writeln!(out, "   priority-flow-control priority {p} no-drop");
    }
    let _ = writeln!(out, "   priority-flow-control pause watchdog");
    let _ = writeln!(out, "!");
}

fn vlans(out: &mut String, sp: &SwitchPlan<'_>) {
    for n in sp.networks() {
        let _ = writeln!(out, "vlan {}", n.vlan);
        let _ = writeln!(out, "   name {}", n.rail);
        let _ = writeln!(out, "!");
    }
}

fn ports(out: &mut String, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>) {
    for p in &sp.ports {
        let _ = writeln!(out, "interface {}", p.name);
        let _ = writeln!(out, "   description {}", super::sonic::peer_text(&p.peer));
        let _ = writeln!(out, "   mtu {}", sp.mtu);
        match &p.peer {
            PortPeer::Host { network, .. } => {
                if let Some(n) = network {
                    let _ = writeln!(out, "   switchport access vlan {}", n.vlan);
                }
            }
            PortPeer::Switch { .. } => {
                let _ = writeln!(out, "   no switchport");
                if let Some(addr) = p.address {
                    let _ = writeln!(out, "   ip address {addr}");
                }
            }
        }
        let _ = writeln!(out, "   service-profile {}", plan.qos.name);
        let _ = writeln!(out, "   dcbx mode ieee");
        let _ = writeln!(out, "!");
    }
}

fn svis(out: &mut String, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>) {
    for n in sp.networks() {
        let _ = writeln!(out, "interface Vlan{}", n.vlan);
        let _ = writeln!(out, "   mtu {}", sp.mtu);
        let _ = writeln!(out, "   ip address {}/{}", n.gateway, n.subnet.prefix_len());
        let _ = writeln!(
            out,
            "   arp aging timeout {}",
            plan.intent.arp.aging_seconds
        );
        let entries = sp.network_entries(plan.intent, &n.rail);
        if entries > 0 {
            let _ = writeln!(out, "   arp cache dynamic capacity {entries}");
        }
        // Learn from gratuitous ARP, so a pod's announcement replaces a stale entry at once.
        let _ = writeln!(out, "   arp gratuitous accept");
        let _ = writeln!(out, "!");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn seconds_as_eos_writes_them() {
        assert_eq!(super::seconds(200), "0.2");
        assert_eq!(super::seconds(1000), "1");
        assert_eq!(super::seconds(1250), "1.25");
        assert_eq!(super::seconds(5), "0.005");
    }
}
