//! Render and check at scale: the benchmark intent (2,000 switches, 32,000 hosts, 256,000 host
//! ports; see `synthetic::Spec::benchmark`).
//!
//! `cargo bench -p spinel-switch-config --bench fabric_scale [-- HOSTS]` (default 32000). Each
//! run is a fresh child process, so its peak RSS (VmHWM in /proc/self/status) belongs to that
//! run alone; three runs, the median time of each stage is printed. Stages:
//! - load: read the intent YAML from disk, parse it (bounded) and validate it;
//! - render: resolve the plan and render every switch (SONiC, NVUE commands + YAML, EOS) and
//!   every host profile (JSON + commands), all in memory;
//! - read running: parse every switch's running configuration (here: what was rendered, in
//!   each OS's own format) into the OS-neutral state;
//! - check: intent vs 2,000 switch states, 32,000 host kernel states and 32,000 hosts' LLDP
//!   tables (each NIC's leaf advertising DCBX PFC).
//!
//! The YAML file and the evidence are generated before timing starts.

// A benchmark harness fails loudly: panicking on setup errors is its contract.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use spinel_switch_config::check::{self, Evidence};
use spinel_switch_config::host::{HostState, NicState, Reading, STATE_SCHEMA};
use spinel_switch_config::intent::{self, SwitchOs};
use spinel_switch_config::observe;
use spinel_switch_config::plan::FabricPlan;
use spinel_switch_config::render::{self, Running, nvue};
use spinel_switch_config::synthetic::{self, Spec};
use spinel_wire::neighbor::{
    ChassisId, ChassisIdSubtype, Neighbor, NeighborTable, Observer, PfcConfiguration, PortId,
    PortIdSubtype, PortNeighbors, Role, SCHEMA,
};

const CHILD_ENV: &str = "SPINEL_FABRIC_SCALE_CHILD";

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn host_evidence(plan: &FabricPlan<'_>) -> (BTreeMap<String, HostState>, Vec<NeighborTable>) {
    let mut states = BTreeMap::new();
    let mut tables = Vec::new();
    for (host, nics) in &plan.hosts {
        let nic_states = nics
            .iter()
            .map(|n| NicState {
                nic: n.nic.to_owned(),
                mtu: Reading::Value(9000),
                pfc: Reading::Value(vec![3]),
                dscp_priority: Reading::Value(vec![(26, 3), (48, 6)]),
                trust: None,
                dcbx: Reading::Value(vec!["host".into(), "ieee".into()]),
                willing: Reading::Value(false),
                roce_tos: Reading::Value(106),
                ecn: Reading::Value(vec![3]),
            })
            .collect();
        states.insert(
            host.to_string(),
            HostState {
                schema: STATE_SCHEMA.into(),
                host: host.to_string(),
                nics: nic_states,
            },
        );
        let ports = nics
            .iter()
            .map(|n| {
                let mut nb = Neighbor::new(
                    ChassisId {
                        subtype: ChassisIdSubtype::Local,
                        value: n.switch.into(),
                    },
                    PortId {
                        subtype: PortIdSubtype::InterfaceName,
                        value: n.port.into(),
                    },
                    120,
                );
                nb.system_name = Some(n.switch.into());
                nb.dcbx.pfc = Some(PfcConfiguration {
                    willing: false,
                    mbc: false,
                    capability: 8,
                    enabled_priorities: vec![3],
                });
                PortNeighbors {
                    port: n.nic.into(),
                    neighbors: vec![nb],
                    counters: None,
                }
            })
            .collect();
        tables.push(NeighborTable {
            schema: SCHEMA.into(),
            observer: Observer {
                name: host.to_string(),
                chassis_id: None,
                role: Some(Role::Host),
            },
            ports,
        });
    }
    (states, tables)
}

/// CPU time of this process (user + system), from /proc/self/stat (clock ticks of 10 ms).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or_default();
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime); after the command name they are the 12th and 13th.
    let field = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    let ticks = field(11) + field(12);
    Duration::from_millis(ticks * 10)
}

struct Stage {
    wall: Duration,
    cpu: Duration,
}

fn stage<T>(f: impl FnOnce() -> T) -> (T, Stage) {
    let (w, c) = (Instant::now(), cpu());
    let out = f();
    (
        out,
        Stage {
            wall: w.elapsed(),
            cpu: cpu().saturating_sub(c),
        },
    )
}

fn child(hosts: usize) {
    let spec = Spec {
        hosts,
        ..Spec::benchmark()
    };
    let dir = std::env::temp_dir().join(format!("spinel-fabric-scale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join("intent.yaml");
    let intent_bytes;
    // Setup, not measured: the intent file, and each switch's running configuration as an
    // operator collects it (SONiC config_db.json, EOS running-config, NVUE `nv config show -o
    // json`), here equal to what the intent renders.
    {
        let intent = synthetic::intent(&spec);
        let yaml = intent::to_yaml(&intent).expect("serialise");
        intent_bytes = yaml.len();
        std::fs::write(&path, yaml).expect("write intent");
        let plan = FabricPlan::new(&intent);
        for sp in &plan.switches {
            let r = render::switch(&plan, sp, &Running::default());
            let text = match sp.switch.os {
                SwitchOs::Cumulus => {
                    let tree = nvue::to_tree(&nvue::commands(
                        &plan,
                        sp,
                        nvue::syntax(sp).expect("a known release"),
                    ));
                    serde_json::json!([{"header": {}}, {"set": tree}]).to_string()
                }
                _ => r.files[0].text.clone(),
            };
            std::fs::write(dir.join(&sp.switch.name), text).expect("write running");
        }
    }
    let base = status_kib("VmHWM:");

    let (loaded, load) = stage(|| intent::load(&path).expect("valid intent"));
    let plan = FabricPlan::new(&loaded);
    let mut files = 0usize;
    let mut bytes = 0usize;
    let (_, render_stage) = stage(|| {
        render::each(&plan, &Running::default(), |f| {
            files += 1;
            bytes += f.text.len();
            Ok::<(), ()>(())
        })
        .expect("rendered")
    });

    let switches: Vec<(SwitchOs, String)> = plan
        .switches
        .iter()
        .map(|sp| (sp.switch.os, sp.switch.name.clone()))
        .collect();
    let (parsed, read) = stage(|| {
        render::parallel(&switches, |(os, name)| {
            let text = std::fs::read_to_string(dir.join(name)).expect("read running");
            (name.clone(), observe::parse(*os, &text).expect("parses"))
        })
    });
    let _ = std::fs::remove_dir_all(&dir);
    let (hosts_ev, lldp) = host_evidence(&plan);
    let evidence = Evidence {
        switches: parsed.into_iter().collect(),
        hosts: hosts_ev,
        lldp,
    };
    let (report, check_stage) = stage(|| check::check(&plan, &evidence));
    assert!(report.findings.is_empty(), "{:?}", report.findings.first());
    let peak = status_kib("VmHWM:");
    let f = |s: &Stage| format!("{:.1} {:.1}", ms(s.wall), ms(s.cpu));
    println!(
        "{} {} {files} {bytes} {intent_bytes} {} {} {} {} {:.0} {:.0}",
        loaded.switches.len(),
        plan.hosts.len(),
        f(&load),
        f(&render_stage),
        f(&read),
        f(&check_stage),
        base as f64 / 1024.0,
        peak as f64 / 1024.0
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let hosts: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(32_000);
    if std::env::var_os(CHILD_ENV).is_some() {
        child(hosts);
        return;
    }
    let me = std::env::current_exe().expect("own path");
    let mut runs: Vec<Vec<f64>> = Vec::new();
    let mut head = String::new();
    for _ in 0..3 {
        let out = Command::new(&me)
            .arg(hosts.to_string())
            .env(CHILD_ENV, "1")
            .output()
            .expect("run child");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let fields: Vec<&str> = line.split(' ').collect();
        head = fields[..5].join(" ");
        runs.push(
            fields[5..]
                .iter()
                .map(|f| f.parse().unwrap_or(0.0))
                .collect(),
        );
    }
    let median = |i: usize| {
        let mut v: Vec<f64> = runs.iter().map(|r| r[i]).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let h: Vec<&str> = head.split(' ').collect();
    println!(
        "fabric_scale: {} switches, {} hosts (intent {} bytes); {} files, {} bytes rendered",
        h[0], h[1], h[4], h[2], h[3]
    );
    let pair = |i: usize| format!("{:.0} ms (CPU {:.0} ms)", median(i), median(i + 1));
    println!("  load+validate   {}", pair(0));
    println!("  render          {}", pair(2));
    println!("  read running    {}", pair(4));
    println!("  check           {}", pair(6));
    println!(
        "  render + check  {:.0} ms; with reading every running config {:.0} ms",
        median(2) + median(6),
        median(2) + median(4) + median(6)
    );
    println!(
        "  peak RSS {:.0} MiB (process baseline {:.0} MiB); median of 3 runs",
        median(9),
        median(8)
    );
}
