//! Cumulus Linux NVUE: `nv set` commands, and the same configuration as the YAML that
//! `nv config patch` takes and the JSON tree `nv config show -o json` prints.
//!
//! One list of commands is the source of all three forms. A command is a path and an optional
//! leaf value: `nv set interface swp1 link mtu 9100` is the path `interface swp1 link mtu`
//! with value 9100 and the tree `{"interface": {"swp1": {"link": {"mtu": 9100}}}}`; a command
//! without value (`nv set qos pfc default-global switch-priority 3`) adds a collection member
//! (`{"3": {}}`). The RoCE mode comes first (`nv set qos roce mode lossless`, which sets
//! NVIDIA's defaults), then every knob explicitly, as NVIDIA's "Change RoCE Configuration"
//! examples do, so the switch runs the intent and not whatever the release's defaults are.

use serde_json::{Map, Value};

use crate::intent::software::NvueSyntax;
use crate::plan::{FabricPlan, PortPeer, SwitchPlan};

/// RoCE v2's UDP port, advertised in the DCBX Application Priority TLV.
pub const ROCE_UDP_PORT: u16 = 4791;

/// The bridge NVUE puts VLAN-aware ports in by default.
pub const BRIDGE: &str = "br_default";

/// One `nv set`: a path and, for leaves, a value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NvSet {
    /// Path segments after `nv set`.
    pub path: Vec<String>,
    /// The leaf's value; `None` for a collection member (rendered as `{}`).
    pub value: Option<String>,
}

impl NvSet {
    fn new(path: &[&str], value: impl Into<Option<String>>) -> Self {
        Self {
            path: path.iter().map(|s| (*s).to_owned()).collect(),
            value: value.into(),
        }
    }
}

/// Name of the PFC profile for switch links (longer cables, more headroom).
pub fn uplink_pfc_profile(plan: &FabricPlan<'_>) -> String {
    format!("{}-uplink", plan.qos.name.to_ascii_lowercase())
}

/// The NVUE syntax of `sp`'s release; `None` when the release is unknown (nothing is rendered).
pub fn syntax(sp: &SwitchPlan<'_>) -> Option<NvueSyntax> {
    sp.software
        .and_then(crate::intent::software::Software::nvue)
}

/// The switch priority `nv set qos roce mode lossless` makes lossless (PFC, the RoCE lossless
/// traffic pool) and whose traffic class it gives ECN, with traffic class 0 (NVIDIA's "Default
/// RoCE Configuration").
pub const ROCE_MODE_PRIORITY: u8 = 3;

/// The lossless traffic pool `qos roce mode lossless` assigns its priority to.
pub const ROCE_LOSSLESS_POOL: &str = "roce-lossless";

/// Every `nv set` for `sp` in `syntax`, in a fixed order.
pub fn commands(plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, syntax: NvueSyntax) -> Vec<NvSet> {
    let mut c = Vec::new();
    qos(&mut c, plan, sp);
    lldp_app(&mut c, plan, syntax);
    interfaces(&mut c, plan, sp, syntax);
    c.push(NvSet::new(
        &["system", "global", "arp", "base-reachable-time"],
        plan.intent.arp.aging_seconds.to_string(),
    ));
    c
}

fn qos(c: &mut Vec<NvSet>, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>) {
    let q = &plan.qos;
    c.push(NvSet::new(&["qos", "roce", "mode"], "lossless".to_owned()));
    c.push(NvSet::new(
        &["qos", "mapping", "default-global", "trust"],
        "l3".to_owned(),
    ));
    for (d, p) in q.dscp_to_priority.iter().enumerate() {
        c.push(NvSet::new(
            &[
                "qos",
                "mapping",
                "default-global",
                "dscp",
                &d.to_string(),
                "switch-priority",
            ],
            p.to_string(),
        ));
    }
    for (p, tc) in q.priority_to_tc.iter().enumerate() {
        c.push(NvSet::new(
            &[
                "qos",
                "egress-queue-mapping",
                "default-global",
                "switch-priority",
                &p.to_string(),
                "traffic-class",
            ],
            tc.to_string(),
        ));
    }
    let sched = |c: &mut Vec<NvSet>, tc: u8, mode: &str, bw: Option<u8>| {
        let tc = tc.to_string();
        let base = [
            "qos",
            "egress-scheduler",
            "default-global",
            "traffic-class",
            tc.as_str(),
        ];
        c.push(NvSet::new(
            &[&base[..], &["mode"]].concat(),
            mode.to_owned(),
        ));
        if let Some(bw) = bw {
            c.push(NvSet::new(
                &[&base[..], &["bw-percent"]].concat(),
                bw.to_string(),
            ));
        }
    };
    sched(c, 0, "dwrr", Some(q.scheduler.default_percent));
    let lossless = q.lossless_tcs(&sp.pfc);
    for tc in &lossless {
        sched(c, *tc, "dwrr", Some(q.scheduler.data_percent));
    }
    sched(c, q.cnp.traffic_class, "strict", None);
    let host_cable = plan.intent.roce.buffer.host_cable_m;
    let uplink_cable = plan.intent.roce.buffer.uplink_cable_m;
    pfc_profile(c, "default-global", &sp.pfc, host_cable);
    if sp
        .ports
        .iter()
        .any(|p| matches!(p.peer, PortPeer::Switch { .. }))
    {
        pfc_profile(c, &uplink_pfc_profile(plan), &sp.pfc, uplink_cable);
    }
    for p in &sp.pfc {
        c.push(NvSet::new(
            &[
                "qos",
                "traffic-pool",
                ROCE_LOSSLESS_POOL,
                "switch-priority",
                &p.to_string(),
            ],
            None,
        ));
    }
    for tc in &lossless {
        let tc = tc.to_string();
        let base = [
            "qos",
            "congestion-control",
            "default-global",
            "traffic-class",
            tc.as_str(),
        ];
        let e = &q.ecn;
        for (leaf, value) in [
            ("ecn", "enable".to_owned()),
            ("max-threshold", e.max_bytes.to_string()),
            ("min-threshold", e.min_bytes.to_string()),
            ("probability", e.mark_probability.to_string()),
            ("red", "disable".to_owned()),
        ] {
            c.push(NvSet::new(&[&base[..], &[leaf]].concat(), value));
        }
    }
    // NVUE's watchdog acts after `robustness` polls without progress; restoration is the
    // switch's own (not configurable), and the action is always drop.
    let w = &q.watchdog;
    c.push(NvSet::new(
        &["qos", "pfc-watchdog", "polling-interval"],
        w.poll_ms.to_string(),
    ));
    c.push(NvSet::new(
        &["qos", "pfc-watchdog", "robustness"],
        w.detection_ms.div_ceil(w.poll_ms.max(1)).to_string(),
    ));
}

fn pfc_profile(c: &mut Vec<NvSet>, name: &str, pfc: &[u8], cable_m: u16) {
    for p in pfc {
        c.push(NvSet::new(
            &["qos", "pfc", name, "switch-priority", &p.to_string()],
            None,
        ));
    }
    c.push(NvSet::new(
        &["qos", "pfc", name, "cable-length"],
        cable_m.to_string(),
    ));
    c.push(NvSet::new(&["qos", "pfc", name, "rx"], "enable".to_owned()));
    c.push(NvSet::new(&["qos", "pfc", name, "tx"], "enable".to_owned()));
}

fn lldp_app(c: &mut Vec<NvSet>, plan: &FabricPlan<'_>, syntax: NvueSyntax) {
    c.push(NvSet::new(
        &[
            syntax.lldp_root,
            "lldp",
            "application-tlv",
            "udp-port",
            &ROCE_UDP_PORT.to_string(),
            "priority",
        ],
        plan.qos.data.priority.to_string(),
    ));
}

fn interfaces(c: &mut Vec<NvSet>, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, syntax: NvueSyntax) {
    let mtu = sp.mtu.to_string();
    for n in sp.networks() {
        c.push(NvSet::new(
            &["bridge", "domain", BRIDGE, "vlan", &n.vlan.to_string()],
            None,
        ));
    }
    let uplink_profile = uplink_pfc_profile(plan);
    for p in &sp.ports {
        let port = p.name;
        c.push(NvSet::new(&["interface", port, "type"], "swp".to_owned()));
        c.push(NvSet::new(
            &["interface", port, "description"],
            super::sonic::peer_text(&p.peer),
        ));
        c.push(NvSet::new(&["interface", port, "link", "mtu"], mtu.clone()));
        c.push(NvSet::new(
            &["interface", port, "link", "speed"],
            format!("{}G", p.speed_gbps),
        ));
        match &p.peer {
            PortPeer::Host { network, .. } => {
                if let Some(n) = network {
                    c.push(NvSet::new(
                        &["interface", port, "bridge", "domain", BRIDGE, "access"],
                        n.vlan.to_string(),
                    ));
                }
                c.push(NvSet::new(
                    &[
                        "interface",
                        port,
                        "lldp",
                        "application-tlv",
                        "udp-port",
                        &ROCE_UDP_PORT.to_string(),
                    ],
                    None,
                ));
            }
            PortPeer::Switch { .. } => {
                if let Some(addr) = p.address {
                    c.push(NvSet::new(
                        &["interface", port, syntax.ipv4, "address", &addr.to_string()],
                        None,
                    ));
                }
                c.push(NvSet::new(
                    &["interface", port, "qos", "pfc", "profile"],
                    uplink_profile.clone(),
                ));
            }
        }
        c.push(NvSet::new(
            &["interface", port, "lldp", "dcbx-ets-config-tlv"],
            syntax.on.to_owned(),
        ));
        c.push(NvSet::new(
            &["interface", port, "lldp", "dcbx-pfc-tlv"],
            syntax.on.to_owned(),
        ));
        c.push(NvSet::new(
            &["interface", port, "qos", "pfc-watchdog", "state"],
            "enable".to_owned(),
        ));
    }
    for n in sp.networks() {
        let svi = format!("vlan{}", n.vlan);
        c.push(NvSet::new(&["interface", &svi, "type"], "svi".to_owned()));
        c.push(NvSet::new(&["interface", &svi, "vlan"], n.vlan.to_string()));
        c.push(NvSet::new(
            &["interface", &svi, "base-interface"],
            BRIDGE.to_owned(),
        ));
        c.push(NvSet::new(
            &[
                "interface",
                &svi,
                syntax.ipv4,
                "address",
                &format!("{}/{}", n.gateway, n.subnet.prefix_len()),
            ],
            None,
        ));
        c.push(NvSet::new(&["interface", &svi, "link", "mtu"], mtu.clone()));
    }
}

/// What `qos roce mode lossless` configures that the intent does not have: NVIDIA's lossless
/// defaults for priority 3 (PFC, the lossless pool) and ECN on traffic classes 0 and 3. Paths
/// for `nv unset`, so PFC and ECN end up exactly where the intent says.
pub fn roce_default_unsets(plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let p = ROCE_MODE_PRIORITY.to_string();
    if !sp.pfc.contains(&ROCE_MODE_PRIORITY) {
        out.push(path(&[
            "qos",
            "pfc",
            "default-global",
            "switch-priority",
            &p,
        ]));
        out.push(path(&[
            "qos",
            "traffic-pool",
            ROCE_LOSSLESS_POOL,
            "switch-priority",
            &p,
        ]));
    }
    let ecn = plan.qos.lossless_tcs(&sp.pfc);
    for tc in [0, ROCE_MODE_PRIORITY] {
        if !ecn.contains(&tc) {
            let tc = tc.to_string();
            out.push(path(&[
                "qos",
                "congestion-control",
                "default-global",
                "traffic-class",
                &tc,
            ]));
        }
    }
    out
}

fn path(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// The commands as a shell script of `nv set` lines, then `nv unset` for `unsets`, ending in
/// `nv config apply`. Runs of commands that differ only in one numeric segment share a line
/// (`dscp 0,1,2 ...`).
pub fn to_cli(header: &str, commands: &[NvSet], unsets: &[Vec<String>]) -> String {
    let mut out = String::new();
    for line in header.lines() {
        out.push_str("# ");
        out.push_str(line);
        out.push('\n');
    }
    for group in group_numeric(commands) {
        out.push_str("nv set ");
        out.push_str(&group.join(" "));
        out.push('\n');
    }
    for u in unsets {
        out.push_str("nv unset ");
        out.push_str(&u.join(" "));
        out.push('\n');
    }
    out.push_str("nv config apply\n");
    out
}

/// The words of a command line: the path, then the (quoted) value.
fn words(c: &NvSet) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    c.path
        .iter()
        .map(|p| std::borrow::Cow::Borrowed(p.as_str()))
        .chain(c.value.as_deref().map(quote))
}

fn quote(v: &str) -> std::borrow::Cow<'_, str> {
    if v.bytes()
        .all(|b| b.is_ascii_graphic() && !b"'\"\\$`;&|<>(){}*?!#~".contains(&b))
    {
        std::borrow::Cow::Borrowed(v)
    } else {
        std::borrow::Cow::Owned(format!("'{}'", v.replace('\'', "'\\''")))
    }
}

/// Merges adjacent commands equal but for one all-digit word at the same position.
fn group_numeric(commands: &[NvSet]) -> Vec<Vec<String>> {
    let mut out: Vec<(Vec<String>, Option<usize>)> = Vec::new();
    for c in commands {
        if let Some((last, pos)) = out.last_mut()
            && last.len() == c.path.len() + usize::from(c.value.is_some())
        {
            let mut diff = None;
            let mut more = false;
            for (i, w) in words(c).enumerate() {
                if last[i] != *w {
                    more |= diff.is_some();
                    diff = Some((i, w));
                }
            }
            if let (Some((i, w)), false) = (diff, more)
                && pos.is_none_or(|p| p == i)
                && w.bytes().all(|b| b.is_ascii_digit())
                && last[i].bytes().all(|b| b.is_ascii_digit() || b == b',')
                && i + 1 < last.len()
            {
                last[i].push(',');
                last[i].push_str(&w);
                *pos = Some(i);
                continue;
            }
        }
        out.push((words(c).map(|w| w.into_owned()).collect(), None));
    }
    out.into_iter().map(|(w, _)| w).collect()
}

/// The configuration tree (what `nv config show -o json` shows under `set`).
pub fn to_tree(commands: &[NvSet]) -> Value {
    let mut root = Map::new();
    for c in commands {
        let value = match &c.value {
            None => Value::Object(Map::new()),
            Some(v) => typed(v),
        };
        insert(&mut root, &c.path, value);
    }
    Value::Object(root)
}

fn insert(node: &mut Map<String, Value>, path: &[String], value: Value) {
    match path {
        [] => {}
        [last] => {
            // A collection member never replaces what is already below it.
            let keep = value.is_object() && node.get(last).is_some_and(Value::is_object);
            if !keep {
                node.insert(last.clone(), value);
            }
        }
        [first, rest @ ..] => {
            // Look up before inserting: the key is cloned only for a new node.
            if !node.get(first).is_some_and(Value::is_object) {
                node.insert(first.clone(), Value::Object(Map::new()));
            }
            if let Some(Value::Object(map)) = node.get_mut(first) {
                insert(map, rest, value);
            }
        }
    }
}

/// NVUE's JSON types numbers as numbers.
fn typed(v: &str) -> Value {
    match v.parse::<u64>() {
        Ok(n) if !v.starts_with('0') || v == "0" => Value::from(n),
        _ => Value::from(v),
    }
}

/// The `nv config patch` YAML: a one-item list with the tree under `set`.
pub fn to_yaml(header: &str, commands: &[NvSet]) -> String {
    let mut out = String::new();
    for line in header.lines() {
        out.push_str("# ");
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("- set:\n");
    // A tree borrowing the commands' words: no key is copied, each level is one lookup.
    let mut root = super::yaml::Node::default();
    for c in commands {
        root.insert(&c.path, c.value.as_deref().map(|v| (v, is_number(v))));
    }
    root.write(&mut out, 4);
    out
}

/// NVUE's JSON and YAML type all-digit values as numbers (`mtu: 9100`).
fn is_number(v: &str) -> bool {
    v.parse::<u64>().is_ok() && (!v.starts_with('0') || v == "0")
}
