//! SONiC `config_db.json` fragments: the lossless chain as SONiC's tables, for `config load`
//! (which merges entries field by field) or as the target of `config apply-patch`.
//!
//! Table and field names follow sonic-yang-models (the kit in `tests/peers/sonic-yang`
//! validates every rendered file). References use bare names, as YANG-era SONiC does. The
//! buffer model is "traditional": lossless PG profiles are written here, not computed by
//! buffermgrd, so that what the checker compares is what the switch runs.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::intent::WatchdogAction;
use crate::plan::{FabricPlan, PortPeer, SwitchPlan};
use crate::qos::{comma_list, pfc_headroom_bytes, pfc_xon_bytes};

/// One config_db entry: field → value. Field names the renderer writes are static; those read
/// from a file are owned.
pub type Fields = BTreeMap<Cow<'static, str>, String>;

/// `TABLE → key → field → value`, every value a string, as config_db stores them.
pub type ConfigDb = BTreeMap<String, BTreeMap<String, Fields>>;

/// Names of the objects the renderer creates; the checker and the diff use them too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// QoS maps (DSCP_TO_TC_MAP, ...).
    pub map: String,
    /// WRED_PROFILE with ECN.
    pub wred: String,
    /// SCHEDULER of traffic class 0.
    pub sched_default: String,
    /// SCHEDULER of the lossless classes.
    pub sched_data: String,
    /// SCHEDULER of CNP.
    pub sched_cnp: String,
}

impl Names {
    /// The names for profile name `name`.
    pub fn new(name: &str) -> Self {
        Self {
            map: name.to_owned(),
            wred: format!("{name}_LOSSLESS"),
            sched_default: format!("{name}_DEFAULT"),
            sched_data: format!("{name}_DATA"),
            sched_cnp: format!("{name}_CNP"),
        }
    }
}

/// PORT fields this renderer owns; the rest (lanes, alias, index, fec...) is the platform's.
pub const OWNED_PORT_FIELDS: [&str; 4] = ["admin_status", "description", "mtu", "speed"];

/// The rendered fragment and what the operator should know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SonicRendering {
    /// The fragment.
    pub config_db: ConfigDb,
    /// Ports whose lanes were not known (no running configuration given): the fragment then
    /// merges onto the switch's PORT table but does not validate on its own.
    pub ports_without_lanes: Vec<String>,
}

/// Renders `sp`'s fragment. `running` (the switch's current config_db) supplies the platform
/// fields of PORT entries (lanes, alias, index, ...) that a merge must not lose.
pub fn render(
    plan: &FabricPlan<'_>,
    sp: &SwitchPlan<'_>,
    running: Option<&ConfigDb>,
) -> SonicRendering {
    let mut db = ConfigDb::new();
    let names = Names::new(&plan.qos.name);
    device_metadata(&mut db, sp);
    let ports_without_lanes = ports(&mut db, sp, running);
    maps(&mut db, plan, sp, &names);
    scheduling(&mut db, plan, sp, &names);
    buffers(&mut db, plan, sp);
    watchdog(&mut db, plan, sp);
    l3(&mut db, sp);
    SonicRendering {
        config_db: db,
        ports_without_lanes,
    }
}

/// The fragment as pretty JSON with a trailing newline (keys sorted: deterministic).
pub fn to_json(db: &ConfigDb) -> String {
    let mut s = serde_json::to_string_pretty(db).unwrap_or_default();
    s.push('\n');
    s
}

/// Runs `f` on the entry `table|key`, created when missing; names are allocated only then
/// (a large switch writes tens of thousands of fields).
fn with_entry(db: &mut ConfigDb, table: &str, key: &str, f: impl FnOnce(&mut Fields)) {
    let t = match db.get_mut(table) {
        Some(t) => t,
        None => db.entry(table.to_owned()).or_default(),
    };
    match t.get_mut(key) {
        Some(e) => f(e),
        None => {
            let mut e = Fields::new();
            f(&mut e);
            t.insert(key.to_owned(), e);
        }
    }
}

fn set(
    db: &mut ConfigDb,
    table: &str,
    key: &str,
    fields: impl IntoIterator<Item = (&'static str, String)>,
) {
    with_entry(db, table, key, |e| {
        for (f, v) in fields {
            e.insert(Cow::Borrowed(f), v);
        }
    });
}

fn device_metadata(db: &mut ConfigDb, sp: &SwitchPlan<'_>) {
    set(
        db,
        "DEVICE_METADATA",
        "localhost",
        [
            ("hostname", sp.switch.name.clone()),
            ("buffer_model", "traditional".into()),
            ("default_pfcwd_status", "enable".into()),
        ],
    );
}

fn ports(db: &mut ConfigDb, sp: &SwitchPlan<'_>, running: Option<&ConfigDb>) -> Vec<String> {
    let mut missing = Vec::new();
    for p in &sp.ports {
        // The platform's fields (lanes, alias, index, ...) come from the running PORT entry.
        let platform: Vec<(Cow<'static, str>, String)> = running
            .and_then(|r| r.get("PORT"))
            .and_then(|t| t.get(p.name))
            .into_iter()
            .flatten()
            .filter(|(f, _)| !OWNED_PORT_FIELDS.contains(&f.as_ref()))
            .map(|(f, v)| (f.clone(), v.clone()))
            .collect();
        if !platform.iter().any(|(f, _)| f == "lanes") {
            missing.push(p.name.to_owned());
        }
        with_entry(db, "PORT", p.name, |e| e.extend(platform));
        set(
            db,
            "PORT",
            p.name,
            [
                ("admin_status", "up".to_owned()),
                ("description", peer_text(&p.peer)),
                ("mtu", sp.mtu.to_string()),
                ("speed", (u64::from(p.speed_gbps) * 1000).to_string()),
            ],
        );
    }
    missing
}

/// `host/nic` or `switch/port`: the intent's own spelling, so the checker can read it back.
pub fn peer_text(peer: &PortPeer<'_>) -> String {
    match peer {
        PortPeer::Host { host, nic, .. } => format!("{host}/{nic}"),
        PortPeer::Switch { switch, port } => format!("{switch}/{port}"),
    }
}

fn maps(db: &mut ConfigDb, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, names: &Names) {
    let q = &plan.qos;
    let n = &names.map;
    let dscp: Vec<(String, String)> = (0..64)
        .map(|d| (d.to_string(), q.dscp_to_tc[d].to_string()))
        .collect();
    set_map(db, "DSCP_TO_TC_MAP", n, &dscp);
    let identity: Vec<(String, String)> = (0..8).map(|i| (i.to_string(), i.to_string())).collect();
    set_map(db, "TC_TO_QUEUE_MAP", n, &identity);
    let tc_to_pg = q.tc_to_pg(&sp.pfc);
    let pg: Vec<(String, String)> = (0..8)
        .map(|t| (t.to_string(), tc_to_pg[t].to_string()))
        .collect();
    set_map(db, "TC_TO_PRIORITY_GROUP_MAP", n, &pg);
    let pfc_queue: Vec<(String, String)> = (0..8)
        .map(|p| (p.to_string(), q.priority_to_tc[p].to_string()))
        .collect();
    set_map(db, "MAP_PFC_PRIORITY_TO_QUEUE", n, &pfc_queue);
    let pfc_pg: Vec<(String, String)> = sp
        .pfc
        .iter()
        .map(|p| {
            let tc = q.priority_to_tc[usize::from(*p & 7)];
            (p.to_string(), tc_to_pg[usize::from(tc)].to_string())
        })
        .collect();
    set_map(db, "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", n, &pfc_pg);
    for p in &sp.ports {
        set(
            db,
            "PORT_QOS_MAP",
            p.name,
            [
                ("dscp_to_tc_map", n.clone()),
                ("tc_to_queue_map", n.clone()),
                ("tc_to_pg_map", n.clone()),
                ("pfc_to_queue_map", n.clone()),
                ("pfc_to_pg_map", n.clone()),
                ("pfc_enable", comma_list(&sp.pfc)),
                ("pfcwd_sw_enable", comma_list(&sp.pfc)),
            ],
        );
    }
}

fn set_map(db: &mut ConfigDb, table: &str, name: &str, entries: &[(String, String)]) {
    with_entry(db, table, name, |map| {
        for (k, v) in entries {
            map.insert(Cow::Owned(k.clone()), v.clone());
        }
    });
}

fn scheduling(db: &mut ConfigDb, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, names: &Names) {
    let q = &plan.qos;
    let s = &q.scheduler;
    set(
        db,
        "SCHEDULER",
        &names.sched_default,
        [
            ("type", "DWRR".into()),
            ("weight", s.default_percent.to_string()),
        ],
    );
    set(
        db,
        "SCHEDULER",
        &names.sched_data,
        [
            ("type", "DWRR".into()),
            ("weight", s.data_percent.to_string()),
        ],
    );
    set(
        db,
        "SCHEDULER",
        &names.sched_cnp,
        [("type", "STRICT".into())],
    );
    let e = &q.ecn;
    let (min, max, prob) = (
        e.min_bytes.to_string(),
        e.max_bytes.to_string(),
        e.mark_probability.to_string(),
    );
    let mut wred = vec![("ecn", "ecn_all".to_owned())];
    for (enable, min_f, max_f, prob_f) in WRED_FIELDS {
        wred.push((enable, "true".into()));
        wred.push((min_f, min.clone()));
        wred.push((max_f, max.clone()));
        wred.push((prob_f, prob.clone()));
    }
    set(db, "WRED_PROFILE", &names.wred, wred);
    let lossless = q.lossless_tcs(&sp.pfc);
    for p in &sp.ports {
        set(
            db,
            "QUEUE",
            &format!("{}|0", p.name),
            [("scheduler", names.sched_default.clone())],
        );
        for tc in &lossless {
            set(
                db,
                "QUEUE",
                &format!("{}|{tc}", p.name),
                [
                    ("scheduler", names.sched_data.clone()),
                    ("wred_profile", names.wred.clone()),
                ],
            );
        }
        set(
            db,
            "QUEUE",
            &format!("{}|{}", p.name, q.cnp.traffic_class),
            [("scheduler", names.sched_cnp.clone())],
        );
    }
}

/// WRED_PROFILE fields per colour: enable, min, max, probability. ECN marks all three alike.
const WRED_FIELDS: [(&str, &str, &str, &str); 3] = [
    (
        "wred_green_enable",
        "green_min_threshold",
        "green_max_threshold",
        "green_drop_probability",
    ),
    (
        "wred_yellow_enable",
        "yellow_min_threshold",
        "yellow_max_threshold",
        "yellow_drop_probability",
    ),
    (
        "wred_red_enable",
        "red_min_threshold",
        "red_max_threshold",
        "red_drop_probability",
    ),
];

/// Buffer pool sizes for a switch: (ingress lossless pool, its shared headroom xoff, egress
/// lossless pool, egress lossy pool).
pub fn pool_sizes(plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>) -> (u64, u64, u64, u64) {
    let buffer = sp.switch.buffer_bytes.unwrap_or(0);
    let groups = plan.qos.lossless_tcs(&sp.pfc).len() as u64;
    let xoff: u64 = sp
        .ports
        .iter()
        .map(|p| pfc_headroom_bytes(p.speed_gbps, p.cable_m, sp.mtu) * groups)
        .sum();
    let ingress = buffer * u64::from(plan.intent.roce.buffer.lossless_pool_percent) / 100;
    let egress_lossless = (ingress + xoff).min(buffer);
    let egress_lossy = buffer.saturating_sub(egress_lossless);
    (ingress, xoff, egress_lossless, egress_lossy)
}

/// SONiC's name for a lossless PG profile.
pub fn pg_profile_name(speed_gbps: u32, cable_m: u16) -> String {
    format!(
        "pg_lossless_{}_{cable_m}m_profile",
        u64::from(speed_gbps) * 1000
    )
}

fn buffers(db: &mut ConfigDb, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>) {
    let (ingress, xoff, egress_lossless, egress_lossy) = pool_sizes(plan, sp);
    set(
        db,
        "BUFFER_POOL",
        "ingress_lossless_pool",
        [
            ("type", "ingress".into()),
            ("mode", "dynamic".into()),
            ("size", ingress.to_string()),
            ("xoff", xoff.to_string()),
        ],
    );
    set(
        db,
        "BUFFER_POOL",
        "egress_lossless_pool",
        [
            ("type", "egress".into()),
            ("mode", "static".into()),
            ("size", egress_lossless.to_string()),
        ],
    );
    set(
        db,
        "BUFFER_POOL",
        "egress_lossy_pool",
        [
            ("type", "egress".into()),
            ("mode", "dynamic".into()),
            ("size", egress_lossy.to_string()),
        ],
    );
    set(
        db,
        "BUFFER_PROFILE",
        "ingress_lossy_profile",
        [
            ("pool", "ingress_lossless_pool".into()),
            ("size", "0".into()),
            ("dynamic_th", "3".into()),
        ],
    );
    set(
        db,
        "BUFFER_PROFILE",
        "egress_lossless_profile",
        [
            ("pool", "egress_lossless_pool".into()),
            ("size", "0".into()),
            ("static_th", egress_lossless.to_string()),
        ],
    );
    set(
        db,
        "BUFFER_PROFILE",
        "egress_lossy_profile",
        [
            ("pool", "egress_lossy_pool".into()),
            ("size", "1518".into()),
            ("dynamic_th", "3".into()),
        ],
    );
    let q = &plan.qos;
    let lossless_pgs: Vec<u8> = q.lossless_tcs(&sp.pfc);
    let lossless_queues = lossless_pgs.clone();
    let xon = pfc_xon_bytes(sp.mtu);
    for p in &sp.ports {
        let profile = pg_profile_name(p.speed_gbps, p.cable_m);
        // Ports of one speed and cable share the profile: write it once.
        let known = db
            .get("BUFFER_PROFILE")
            .is_some_and(|t| t.contains_key(&profile));
        if !known {
            set(
                db,
                "BUFFER_PROFILE",
                &profile,
                [
                    ("pool", "ingress_lossless_pool".into()),
                    ("size", xon.to_string()),
                    ("xon", xon.to_string()),
                    (
                        "xoff",
                        pfc_headroom_bytes(p.speed_gbps, p.cable_m, sp.mtu).to_string(),
                    ),
                    ("dynamic_th", "0".into()),
                ],
            );
        }
        set(
            db,
            "BUFFER_PG",
            &format!("{}|0", p.name),
            [("profile", "ingress_lossy_profile".into())],
        );
        for range in ranges(&lossless_pgs) {
            set(
                db,
                "BUFFER_PG",
                &format!("{}|{range}", p.name),
                [("profile", profile.clone())],
            );
        }
        let lossy: Vec<u8> = (0..8).filter(|i| !lossless_queues.contains(i)).collect();
        for range in ranges(&lossless_queues) {
            set(
                db,
                "BUFFER_QUEUE",
                &format!("{}|{range}", p.name),
                [("profile", "egress_lossless_profile".into())],
            );
        }
        for range in ranges(&lossy) {
            set(
                db,
                "BUFFER_QUEUE",
                &format!("{}|{range}", p.name),
                [("profile", "egress_lossy_profile".into())],
            );
        }
    }
}

/// Contiguous runs as SONiC writes them: `0-2`, `3`, `5-7`.
pub fn ranges(values: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut iter = values.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out
}

fn watchdog(db: &mut ConfigDb, plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>) {
    let w = &plan.qos.watchdog;
    set(
        db,
        "PFC_WD",
        "GLOBAL",
        [("POLL_INTERVAL", w.poll_ms.to_string())],
    );
    let action = match w.action {
        WatchdogAction::Drop => "drop",
        WatchdogAction::Forward => "forward",
    };
    for p in &sp.ports {
        set(
            db,
            "PFC_WD",
            p.name,
            [
                ("action", action.into()),
                ("detection_time", w.detection_ms.to_string()),
                ("restoration_time", w.restoration_ms.to_string()),
            ],
        );
    }
}

/// SONiC's VLAN key.
pub fn vlan_name(vlan: u16) -> String {
    format!("Vlan{vlan}")
}

fn l3(db: &mut ConfigDb, sp: &SwitchPlan<'_>) {
    for n in sp.networks() {
        let vlan = vlan_name(n.vlan);
        set(
            db,
            "VLAN",
            &vlan,
            [
                ("vlanid", n.vlan.to_string()),
                ("mtu", sp.mtu.to_string()),
                ("admin_status", "up".into()),
            ],
        );
        // grat_arp: accept gratuitous ARP, so a pod's announcement replaces a stale entry.
        set(
            db,
            "VLAN_INTERFACE",
            &vlan,
            [
                ("grat_arp", "enabled".into()),
                ("proxy_arp", "disabled".into()),
            ],
        );
        set(
            db,
            "VLAN_INTERFACE",
            &format!("{vlan}|{}/{}", n.gateway, n.subnet.prefix_len()),
            [],
        );
    }
    for p in &sp.ports {
        match &p.peer {
            PortPeer::Host {
                network: Some(n), ..
            } => set(
                db,
                "VLAN_MEMBER",
                &format!("{}|{}", vlan_name(n.vlan), p.name),
                [("tagging_mode", "untagged".into())],
            ),
            PortPeer::Switch { .. } => {
                if let Some(addr) = p.address {
                    set(db, "INTERFACE", p.name, std::iter::empty());
                    set(
                        db,
                        "INTERFACE",
                        &format!("{}|{addr}", p.name),
                        std::iter::empty(),
                    );
                }
            }
            PortPeer::Host { network: None, .. } => {}
        }
    }
}

/// The switch-kernel ARP settings SONiC keeps outside config_db (its image ships them in
/// `/etc/sysctl.d`): aging and the neighbour-table thresholds.
pub fn arp_sysctl(plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>) -> String {
    super::arp_sysctl_text(
        plan,
        sp,
        "SONiC: /etc/sysctl.d/90-spinel-arp.conf, then `sysctl --system`",
    )
}
