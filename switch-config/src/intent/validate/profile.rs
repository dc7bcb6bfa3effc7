//! The RoCE profile, the ARP policy and the rails: the lossless chain must hold together before
//! any switch is looked at.

use std::collections::HashSet;

use super::{Issues, valid_nic_name, valid_switch_name};
use crate::intent::{Intent, RoceProfile};
use crate::qos::{QosPlan, ROCE_HEADER_BYTES, comma_list};

pub(super) fn check(intent: &Intent, issues: &mut Issues) {
    let p = &intent.roce;
    names(p, issues);
    classes(p, issues);
    pfc(p, issues);
    ecn_and_scheduler(p, issues);
    buffer_and_mtu(p, issues);
    arp(intent, issues);
    rails(intent, issues);
}

fn names(p: &RoceProfile, issues: &mut Issues) {
    // SONiC names the WRED profile `<name>_LOSSLESS` and its key pattern allows 32 characters.
    let ok = !p.name.is_empty()
        && p.name.len() <= 20
        && p.name.as_bytes()[0].is_ascii_alphanumeric()
        && p.name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    if !ok {
        issues.error(
            "roce.name",
            None,
            format!(
                "{}: use 1-20 letters, digits, '_' or '-', starting with a letter or digit",
                crate::intent::cut(&p.name)
            ),
        );
    }
}

fn classes(p: &RoceProfile, issues: &mut Issues) {
    if p.data.dscp.is_empty() {
        issues.error(
            "roce.data.dscp",
            None,
            "RoCE data needs at least one DSCP".into(),
        );
    }
    for d in p.data.dscp.iter().chain([&p.cnp.dscp]) {
        if *d > 63 {
            issues.error(
                "roce.data.dscp",
                None,
                format!("DSCP {d} is out of range 0-63"),
            );
        }
    }
    if p.data.dscp.contains(&p.cnp.dscp) {
        issues.error(
            "roce.cnp.dscp",
            None,
            format!("DSCP {} is both RoCE data and CNP", p.cnp.dscp),
        );
    }
    let mut seen = HashSet::new();
    for d in &p.data.dscp {
        if !seen.insert(d) {
            issues.warning("roce.data.dscp", None, format!("DSCP {d} is listed twice"));
        }
    }
    for (field, v) in [
        ("roce.data.priority", Some(p.data.priority)),
        ("roce.cnp.priority", Some(p.cnp.priority)),
        ("roce.data.traffic_class", p.data.traffic_class),
        ("roce.cnp.traffic_class", p.cnp.traffic_class),
    ] {
        if let Some(v) = v.filter(|v| *v > 7) {
            issues.error(field, None, format!("{v} is out of range 0-7"));
        }
    }
    if p.data.priority == p.cnp.priority {
        issues.error(
            "roce.cnp.priority",
            None,
            format!(
                "CNP shares priority {} with RoCE data: CNPs would wait behind the data they \
                 throttle",
                p.cnp.priority
            ),
        );
    }
    let data_tc = p.data.traffic_class.unwrap_or(p.data.priority);
    let cnp_tc = p.cnp.traffic_class.unwrap_or(p.cnp.priority);
    if data_tc == 0 {
        issues.error(
            "roce.data.traffic_class",
            None,
            "traffic class 0 carries all other traffic; give RoCE data its own class (3)".into(),
        );
    }
    if cnp_tc == 0 || cnp_tc == data_tc {
        issues.error(
            "roce.cnp.traffic_class",
            None,
            format!("CNP needs its own strict-priority class, not {cnp_tc}"),
        );
    }
    if let Some(tos) = p.host.roce_tos
        && !p.data.dscp.contains(&(tos >> 2))
    {
        issues.error(
            "roce.host.roce_tos",
            None,
            format!(
                "ToS {tos} carries DSCP {}, which is not a RoCE data DSCP ({}): hosts would send \
                 RoCE into a lossy class",
                tos >> 2,
                comma_list(&p.data.dscp)
            ),
        );
    }
}

fn pfc(p: &RoceProfile, issues: &mut Issues) {
    let pfc = &p.pfc.priorities;
    if let Some(bad) = pfc.iter().find(|v| **v > 7) {
        issues.error(
            "roce.pfc.priorities",
            None,
            format!("{bad} is out of range 0-7"),
        );
    }
    if !pfc.contains(&p.data.priority) {
        issues.error(
            "roce.pfc.priorities",
            None,
            format!(
                "PFC is not enabled on the RoCE data priority {}: RoCE would be lossy",
                p.data.priority
            ),
        );
    }
    if pfc.contains(&p.cnp.priority) {
        issues.error(
            "roce.pfc.priorities",
            None,
            format!(
                "PFC on the CNP priority {} lets pauses hold back congestion notifications",
                p.cnp.priority
            ),
        );
    }
    let distinct = crate::qos::sorted_unique(pfc);
    if distinct.len() > usize::from(p.buffer.lossless_groups) {
        issues.error(
            "roce.pfc.priorities",
            None,
            format!(
                "PFC on {} priorities ({}) but the buffer profile has headroom for {} lossless \
                 priority group(s) (roce.buffer.lossless_groups): a paused priority without \
                 headroom drops",
                distinct.len(),
                comma_list(&distinct),
                p.buffer.lossless_groups
            ),
        );
    }
    let qos = QosPlan::new(p);
    for prio in &distinct {
        if *prio != p.data.priority && !qos.dscp_to_priority.contains(prio) {
            issues.warning(
                "roce.pfc.priorities",
                None,
                format!("priority {prio} is lossless but no DSCP maps to it"),
            );
        }
    }
    let w = &p.pfc.watchdog;
    let range = |field: &str, v: u32, lo: u32, hi: u32, issues: &mut Issues| {
        if !(lo..=hi).contains(&v) {
            issues.error(field, None, format!("{v} ms is outside {lo}-{hi} ms"));
        }
    };
    range(
        "roce.pfc.watchdog.detection_ms",
        w.detection_ms,
        100,
        5000,
        issues,
    );
    range(
        "roce.pfc.watchdog.restoration_ms",
        w.restoration_ms,
        100,
        60000,
        issues,
    );
    range("roce.pfc.watchdog.poll_ms", w.poll_ms, 100, 1000, issues);
    if w.detection_ms < w.poll_ms || w.restoration_ms < w.poll_ms {
        issues.error(
            "roce.pfc.watchdog",
            None,
            format!(
                "detection ({} ms) and restoration ({} ms) must be at least the poll interval \
                 ({} ms)",
                w.detection_ms, w.restoration_ms, w.poll_ms
            ),
        );
    }
}

fn ecn_and_scheduler(p: &RoceProfile, issues: &mut Issues) {
    let e = &p.ecn;
    if e.min_bytes == 0 || e.min_bytes >= e.max_bytes {
        issues.error(
            "roce.ecn",
            None,
            format!(
                "min_bytes ({}) must be above 0 and below max_bytes ({})",
                e.min_bytes, e.max_bytes
            ),
        );
    }
    if !(1..=100).contains(&e.mark_probability) {
        issues.error(
            "roce.ecn.mark_probability",
            None,
            format!("{} is outside 1-100 percent", e.mark_probability),
        );
    }
    let s = &p.scheduler;
    for (field, v) in [
        ("roce.scheduler.data_percent", s.data_percent),
        ("roce.scheduler.default_percent", s.default_percent),
    ] {
        if !(1..=100).contains(&v) {
            issues.error(field, None, format!("{v} is outside 1-100 percent"));
        }
    }
    if u16::from(s.data_percent) + u16::from(s.default_percent) > 100 {
        issues.error(
            "roce.scheduler",
            None,
            format!(
                "data_percent + default_percent = {} is more than 100",
                u16::from(s.data_percent) + u16::from(s.default_percent)
            ),
        );
    }
}

fn buffer_and_mtu(p: &RoceProfile, issues: &mut Issues) {
    let b = &p.buffer;
    if !(1..=8).contains(&b.lossless_groups) {
        issues.error(
            "roce.buffer.lossless_groups",
            None,
            format!("{} is outside 1-8", b.lossless_groups),
        );
    }
    if b.host_cable_m == 0 || b.uplink_cable_m == 0 {
        issues.error(
            "roce.buffer",
            None,
            "cable lengths must be at least 1 m (headroom depends on them)".into(),
        );
    }
    if !(1..=90).contains(&b.lossless_pool_percent) {
        issues.error(
            "roce.buffer.lossless_pool_percent",
            None,
            format!("{} is outside 1-90 percent", b.lossless_pool_percent),
        );
    }
    let m = &p.mtu;
    if ![256, 512, 1024, 2048, 4096].contains(&m.roce_payload) {
        issues.error(
            "roce.mtu.roce_payload",
            None,
            format!(
                "{} is not an IB MTU (256, 512, 1024, 2048, 4096)",
                m.roce_payload
            ),
        );
    }
    let needed = m.roce_payload.saturating_add(ROCE_HEADER_BYTES);
    if m.host < needed {
        issues.error(
            "roce.mtu.host",
            None,
            format!(
                "{} is below the RoCE payload {} plus {ROCE_HEADER_BYTES} bytes of headers: the \
                 RDMA core would fall back to {} and large messages would need more packets; use \
                 at least {needed}",
                m.host,
                m.roce_payload,
                crate::qos::roce_active_mtu(m.host).map_or_else(
                    || "nothing".to_owned(),
                    |v| format!("{v}-byte RoCE messages")
                ),
            ),
        );
    }
    if m.switch < m.host {
        issues.error(
            "roce.mtu.switch",
            None,
            format!(
                "switch MTU {} is below the host MTU {}: full-size RoCE packets would be dropped \
                 (\"transport retry counter exceeded\")",
                m.switch, m.host
            ),
        );
    }
    if m.switch > 9216 {
        issues.error(
            "roce.mtu.switch",
            None,
            format!(
                "{} is above 9216, the most any supported NOS accepts",
                m.switch
            ),
        );
    }
}

fn arp(intent: &Intent, issues: &mut Issues) {
    let a = &intent.arp;
    if !(60..=14_400).contains(&a.aging_seconds) {
        issues.error(
            "arp.aging_seconds",
            None,
            format!(
                "{} s is outside 60-14400 s (longer keeps a reused pod address black-holed for \
                 hours when a gratuitous ARP is lost)",
                a.aging_seconds
            ),
        );
    }
    if a.pods_per_host > 4096 {
        issues.error(
            "arp.pods_per_host",
            None,
            format!("{} is more than 4096", a.pods_per_host),
        );
    }
    if a.headroom_percent > 1000 {
        issues.error(
            "arp.headroom_percent",
            None,
            format!("{} is more than 1000", a.headroom_percent),
        );
    }
}

fn rails(intent: &Intent, issues: &mut Issues) {
    if intent.rails.is_empty() {
        issues.error("rails", None, "at least one rail is needed".into());
    }
    let mut names = HashSet::new();
    let mut nics = HashSet::new();
    for r in &intent.rails {
        let field = format!("rails[{}]", r.name);
        if !valid_switch_name(&r.name) {
            issues.error(
                &field,
                None,
                format!("{} is not a valid rail name", crate::intent::cut(&r.name)),
            );
        }
        if !names.insert(r.name.as_str()) {
            issues.error(&field, None, "duplicate rail name".into());
        }
        if let Some(nic) = &r.nic {
            if !valid_nic_name(nic) {
                issues.error(
                    format!("{field}.nic"),
                    None,
                    format!("{} is not a Linux interface name", crate::intent::cut(nic)),
                );
            }
            if !nics.insert(nic.as_str()) {
                issues.error(
                    format!("{field}.nic"),
                    None,
                    format!("NIC {nic} is named by two rails"),
                );
            }
        }
        let served = intent
            .switches
            .iter()
            .any(|s| s.networks.iter().any(|n| n.rail == r.name));
        if !served {
            issues.error(
                field,
                None,
                format!(
                    "no leaf serves rail {}: add a network for it to the rail's leaves",
                    r.name
                ),
            );
        }
    }
}
