//! Properties over random valid intents (random profile values, rails, leaf groups, spines,
//! OS per switch):
//! - render → parse back → exactly the state the intent requires, on every OS;
//! - the order of switches, ports and rails in the file never changes a rendered byte;
//! - intent → YAML → intent is the identity;
//! - the rendered configurations pass the checker, and their diffs are empty.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use proptest::prelude::*;
use spinel_switch_config::check::{self, Evidence};
use spinel_switch_config::diff;
use spinel_switch_config::intent::{
    self, ArpPolicy, Intent, Network, Peer, Port, Ports, Rail, RoceProfile, SCHEMA, Switch,
    SwitchOs, SwitchRole,
};
use spinel_switch_config::observe;
use spinel_switch_config::plan::FabricPlan;
use spinel_switch_config::render::{self, Running, nvue, sonic};
use spinel_switch_config::state;

#[derive(Debug, Clone)]
struct Shape {
    rails: usize,
    groups: usize,
    hosts_per_group: usize,
    spines: usize,
    oses: Vec<u8>,
}

fn os(n: u8) -> SwitchOs {
    [SwitchOs::Sonic, SwitchOs::Cumulus, SwitchOs::Eos][usize::from(n % 3)]
}

fn port(os: SwitchOs, i: usize) -> String {
    match os {
        SwitchOs::Sonic => format!("Ethernet{}", i * 8),
        SwitchOs::Cumulus => format!("swp{}", i + 1),
        SwitchOs::Eos => format!("Ethernet{}/1", i + 1),
    }
}

fn profile() -> impl Strategy<Value = RoceProfile> {
    (
        (
            0u8..64,
            0u8..64,
            1u8..8,
            1u8..8,
            proptest::option::of(1u8..8),
        ),
        (1_000u32..400_000, 1u32..4_000_000, 1u8..=100),
        (1u8..=60, 1u8..=40, 1u32..=5, 1u32..=3),
        (0usize..3, 1u16..=300, 1u16..=300, 1u8..=90),
    )
        .prop_filter("distinct classes", |((dd, cd, dp, cp, extra), ..)| {
            dd != cd && dp != cp && extra.is_none_or(|e| e != *dp && e != *cp)
        })
        .prop_map(
            |(
                (dd, cd, dp, cp, extra),
                (emin, espan, prob),
                (dw, fw, det, poll),
                (mtu, hc, uc, pool),
            )| {
                let mut p = RoceProfile::default();
                p.data.dscp = vec![dd];
                p.data.priority = dp;
                p.cnp.dscp = cd;
                p.cnp.priority = cp;
                p.pfc.priorities = std::iter::once(dp).chain(extra).collect();
                p.ecn.min_bytes = emin;
                p.ecn.max_bytes = emin + espan;
                p.ecn.mark_probability = prob;
                p.scheduler.data_percent = dw;
                p.scheduler.default_percent = fw;
                p.pfc.watchdog.poll_ms = 100 * poll;
                p.pfc.watchdog.detection_ms = 100 * poll * det;
                p.pfc.watchdog.restoration_ms = 100 * poll * (det + 1);
                p.buffer.host_cable_m = hc;
                p.buffer.uplink_cable_m = uc;
                p.buffer.lossless_pool_percent = pool;
                p.mtu.switch = [9100, 9000, 9214][mtu];
                p.mtu.host = [9000, 4200, 9000][mtu];
                p
            },
        )
}

fn shape() -> impl Strategy<Value = Shape> {
    (1usize..=3, 1usize..=3, 1usize..=4, 0usize..=2).prop_flat_map(
        |(rails, groups, hosts, spines)| {
            proptest::collection::vec(0u8..3, rails * groups + spines).prop_map(move |oses| Shape {
                rails,
                groups,
                hosts_per_group: hosts,
                spines,
                oses,
            })
        },
    )
}

fn build(shape: &Shape, roce: RoceProfile) -> Intent {
    let rails = (0..shape.rails)
        .map(|r| Rail {
            name: format!("rail{r}"),
            nic: Some(format!("eth{r}")),
        })
        .collect();
    let mut switches = Vec::new();
    let mut link = 0u32;
    let spine_os = |s: usize| os(shape.oses[shape.rails * shape.groups + s]);
    let mut spine_next = vec![0usize; shape.spines];
    for g in 0..shape.groups {
        for r in 0..shape.rails {
            let idx = g * shape.rails + r;
            let o = os(shape.oses[idx]);
            let mut ports = Vec::new();
            for h in 0..shape.hosts_per_group {
                ports.push(Port {
                    name: port(o, h),
                    peer: Peer {
                        system: format!("node-{g}-{h}"),
                        interface: format!("eth{r}"),
                    },
                    speed_gbps: None,
                    address: None,
                });
            }
            for (s, next) in spine_next.iter_mut().enumerate() {
                let addr = Ipv4Net::new(
                    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 254, 0, 0)) + 2 * link),
                    31,
                )
                .unwrap();
                link += 1;
                ports.push(Port {
                    name: port(o, shape.hosts_per_group + s),
                    peer: Peer {
                        system: format!("spine{s}"),
                        interface: port(spine_os(s), *next),
                    },
                    speed_gbps: Some(if s % 2 == 0 { 400 } else { 200 }),
                    address: Some(addr),
                });
                *next += 1;
            }
            let subnet = Ipv4Net::new(Ipv4Addr::new(10, g as u8, r as u8, 0), 24).unwrap();
            switches.push(Switch {
                name: format!("leaf{idx}"),
                role: SwitchRole::Leaf,
                os: o,
                version: spinel_switch_config::synthetic::release(o, idx),
                platform: spinel_switch_config::synthetic::platform(o, true),
                networks: vec![Network {
                    rail: format!("rail{r}"),
                    vlan: 100 + r as u16,
                    subnet,
                    gateway: Ipv4Addr::new(10, g as u8, r as u8, 1),
                }],
                ports: Ports(ports),
                speed_gbps: Some(400),
                buffer_bytes: Some(64 * 1024 * 1024),
                neighbor_capacity: None,
                mtu: None,
                pfc_priorities: None,
            });
        }
    }
    for s in 0..shape.spines {
        switches.push(Switch {
            name: format!("spine{s}"),
            role: SwitchRole::Spine,
            os: spine_os(s),
            version: spinel_switch_config::synthetic::release(spine_os(s), s),
            platform: spinel_switch_config::synthetic::platform(spine_os(s), false),
            networks: Vec::new(),
            ports: Ports::default(),
            speed_gbps: None,
            buffer_bytes: Some(64 * 1024 * 1024),
            neighbor_capacity: None,
            mtu: None,
            pfc_priorities: None,
        });
    }
    Intent {
        schema: SCHEMA.into(),
        fabric: "prop".into(),
        roce,
        arp: ArpPolicy::default(),
        rails,
        switches,
    }
}

/// A deterministic shuffle (xorshift) for the order-independence property.
fn shuffle<T>(v: &mut [T], seed: &mut u64) {
    for i in (1..v.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        v.swap(i, (*seed % (i as u64 + 1)) as usize);
    }
}

fn all_files(i: &Intent) -> Vec<(String, String)> {
    let plan = FabricPlan::new(i);
    render::all(&plan, &Running::default())
        .0
        .into_iter()
        .map(|f| (f.name, f.text))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn render_parse_back_order_and_yaml(shape in shape(), roce in profile(), seed in 1u64..u64::MAX) {
        let i = build(&shape, roce);
        let errors: Vec<_> = intent::validate(&i).into_iter().filter(|x| x.is_error()).collect();
        prop_assert!(errors.is_empty(), "generator made an invalid intent: {errors:#?}");
        let plan = FabricPlan::new(&i);
        let mut evidence = Evidence::default();
        for sp in &plan.switches {
            let r = render::switch(&plan, sp, &Running::default());
            let want = state::expected(&plan, sp);
            let got = match sp.switch.os {
                SwitchOs::Cumulus => {
                    let from_json = observe::parse(SwitchOs::Cumulus, &nvue::to_tree(&nvue::commands(&plan, sp, nvue::syntax(sp).unwrap())).to_string()).unwrap();
                    prop_assert_eq!(&from_json, &want);
                    let tree = observe::nvue::parse_tree(&r.files[1].text).unwrap();
                    prop_assert!(diff::nvue::commands(&nvue::commands(&plan, sp, nvue::syntax(sp).unwrap()), &tree).is_empty());
                    observe::parse(SwitchOs::Cumulus, &r.files[1].text).unwrap()
                }
                SwitchOs::Sonic => {
                    let db = sonic::render(&plan, sp, None).config_db;
                    prop_assert!(diff::sonic::patch(&db, &db).is_empty());
                    observe::parse(SwitchOs::Sonic, &r.files[0].text).unwrap()
                }
                SwitchOs::Eos => observe::parse(SwitchOs::Eos, &r.files[0].text).unwrap(),
            };
            prop_assert_eq!(&got, &want, "{}", sp.switch.name);
            evidence.switches.insert(sp.switch.name.clone(), got);
        }
        let report = check::check(&plan, &evidence);
        prop_assert!(report.findings.is_empty(), "{:#?}", report.findings);

        let mut shuffled = i.clone();
        let mut s = seed;
        shuffle(&mut shuffled.switches, &mut s);
        shuffle(&mut shuffled.rails, &mut s);
        for sw in &mut shuffled.switches {
            shuffle(&mut sw.ports.0, &mut s);
        }
        prop_assert_eq!(all_files(&shuffled), all_files(&i));

        let yaml = intent::to_yaml(&i).unwrap();
        prop_assert_eq!(Intent::parse(&yaml, "prop.yaml").unwrap(), i);
    }
}
