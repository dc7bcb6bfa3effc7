//! Renderers: one intent, every switch OS and every host. Output is deterministic (the same
//! intent gives the same bytes, whatever order it lists things in) and carries no timestamps.

pub mod eos;
pub mod host;
pub mod nvue;
pub mod sonic;
mod yaml;

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::intent::SwitchOs;
use crate::plan::{FabricPlan, SwitchPlan};

/// One rendered file: a name (built only from validated switch and host names) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedFile {
    /// File name, relative to the output directory.
    pub name: String,
    /// Contents.
    pub text: String,
}

/// What rendering a switch produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchRendering {
    /// The files.
    pub files: Vec<RenderedFile>,
    /// What the operator should know (ports without lanes, knobs an OS lacks, ...).
    pub notes: Vec<String>,
}

/// Running configurations the renderers may draw platform facts from (SONiC PORT lanes).
#[derive(Debug, Clone, Default)]
pub struct Running {
    /// SONiC config_db.json per switch name.
    pub sonic: BTreeMap<String, sonic::ConfigDb>,
}

/// The header every file starts with.
pub fn header(plan: &FabricPlan<'_>, what: &str) -> String {
    format!(
        "{what}: rendered by spinelctl from fabric intent {} ({}).\n\
         Change the intent and render again rather than editing this file.",
        plan.intent.fabric,
        crate::intent::SCHEMA
    )
}

/// Renders one switch for its OS.
pub fn switch(plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, running: &Running) -> SwitchRendering {
    let name = &sp.switch.name;
    let mut notes = Vec::new();
    let mut files = Vec::new();
    match sp.switch.os {
        SwitchOs::Sonic => {
            let r = sonic::render(plan, sp, running.sonic.get(name.as_str()));
            if !r.ports_without_lanes.is_empty() {
                notes.push(format!(
                    "{name}: PORT lanes unknown for {} (no running config_db given): the fragment \
                     merges onto the switch's PORT table with `config load`, but validates on its \
                     own only with lanes",
                    r.ports_without_lanes.join(", ")
                ));
            }
            files.push(RenderedFile {
                name: format!("{name}.config_db.json"),
                text: sonic::to_json(&r.config_db),
            });
            files.push(RenderedFile {
                name: format!("{name}.sysctl.conf"),
                text: sonic::arp_sysctl(plan, sp),
            });
        }
        SwitchOs::Cumulus => {
            let Some(syntax) = nvue::syntax(sp) else {
                notes.push(unknown_release(sp));
                return SwitchRendering { files, notes };
            };
            let commands = nvue::commands(plan, sp, syntax);
            let unsets = nvue::roce_default_unsets(plan, sp);
            let version = sp.switch.version.as_deref().unwrap_or_default();
            let head = header(plan, &format!("{name} (Cumulus Linux {version} NVUE)"));
            files.push(RenderedFile {
                name: format!("{name}.nvue.sh"),
                text: nvue::to_cli(&head, &commands, &unsets),
            });
            let mut apply = String::from("Apply: nv config patch <this file>");
            for u in &unsets {
                apply.push_str("; nv unset ");
                apply.push_str(&u.join(" "));
            }
            apply.push_str("; nv config apply");
            if !unsets.is_empty() {
                apply.push_str(
                    "\n(the unsets remove what `qos roce mode lossless` sets and the intent does \
                     not have: PFC and ECN exactly as intended)",
                );
            }
            files.push(RenderedFile {
                name: format!("{name}.nvue.yaml"),
                text: nvue::to_yaml(&format!("{head}\n{apply}"), &commands),
            });
            if plan.qos.watchdog.action != crate::intent::WatchdogAction::Drop {
                notes.push(format!(
                    "{name}: NVUE's PFC watchdog always drops; the intent's forward action \
                     cannot be rendered"
                ));
            }
        }
        SwitchOs::Eos => {
            let Some(platform) = sp
                .software
                .and_then(crate::intent::software::Software::eos_platform)
            else {
                notes.push(unknown_release(sp));
                return SwitchRendering { files, notes };
            };
            let version = sp.switch.version.as_deref().unwrap_or_default();
            let head = header(
                plan,
                &format!(
                    "{name} (Arista EOS {version}, {} platform)",
                    platform.as_str()
                ),
            );
            files.push(RenderedFile {
                name: format!("{name}.eos.cfg"),
                text: eos::render(plan, sp, platform, &head),
            });
        }
    }
    SwitchRendering { files, notes }
}

fn unknown_release(sp: &SwitchPlan<'_>) -> String {
    let why = crate::intent::software::Software::of(sp.switch)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    format!("{}: not rendered: {why}", sp.switch.name)
}

/// Renders one host's profile: the JSON the agent applies or checks, and the commands.
pub fn host(plan: &FabricPlan<'_>, host: &str) -> Vec<RenderedFile> {
    let Some(profile) = crate::host::profile(plan, host) else {
        return Vec::new();
    };
    let mut json = serde_json::to_string_pretty(&profile).unwrap_or_default();
    json.push('\n');
    vec![
        RenderedFile {
            name: format!("hosts/{host}.json"),
            text: json,
        },
        RenderedFile {
            name: format!("hosts/{host}.sh"),
            text: host::script(
                &profile,
                &header(plan, &format!("{host} RoCE host profile")),
            ),
        },
    ]
}

/// Every file of the fabric, switches in name order, then hosts, in memory (see [`each`] for
/// fabrics whose files do not fit).
pub fn all(plan: &FabricPlan<'_>, running: &Running) -> (Vec<RenderedFile>, Vec<String>) {
    let mut files = Vec::new();
    let notes = each(plan, running, |f| {
        files.push(f);
        Ok::<(), std::convert::Infallible>(())
    });
    let notes = match notes {
        Ok(n) => n,
        Err(never) => match never {},
    };
    (files, notes)
}

/// Renders every file of the fabric and hands each to `sink`, in the order of [`all`]. Work is
/// spread over the machine's cores a batch at a time, so memory holds one batch of files, not
/// the fabric's (a 32,000-host fabric renders to hundreds of MiB). Stops at the sink's first
/// error. Returns the notes.
pub fn each<E>(
    plan: &FabricPlan<'_>,
    running: &Running,
    mut sink: impl FnMut(RenderedFile) -> Result<(), E>,
) -> Result<Vec<String>, E> {
    const BATCH: usize = 256;
    let mut order: Vec<&SwitchPlan<'_>> = plan.switches.iter().collect();
    order.sort_by(|a, b| crate::plan::natural_cmp(&a.switch.name, &b.switch.name));
    let mut notes = Vec::new();
    for batch in order.chunks(BATCH) {
        for r in parallel(batch, |sp| switch(plan, sp, running)) {
            notes.extend(r.notes);
            for f in r.files {
                sink(f)?;
            }
        }
    }
    let hosts: Vec<&str> = plan.hosts.keys().copied().collect();
    for batch in hosts.chunks(BATCH * 8) {
        for files in parallel(batch, |h| host(plan, h)) {
            for f in files {
                sink(f)?;
            }
        }
    }
    Ok(notes)
}

/// `f` over `items` on up to `available_parallelism` threads, results in `items`' order.
pub fn parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(16);
    if threads <= 1 || items.len() < 64 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// Switch-kernel ARP settings as a sysctl.d file: aging (base reachable time) and neighbour
/// thresholds sized for the leaf's rail networks.
pub(crate) fn arp_sysctl_text(plan: &FabricPlan<'_>, sp: &SwitchPlan<'_>, where_: &str) -> String {
    let mut out = String::new();
    for line in header(plan, &format!("{} ARP", sp.switch.name)).lines() {
        let _ = writeln!(out, "# {line}");
    }
    let _ = writeln!(out, "# {where_}");
    let _ = writeln!(
        out,
        "net.ipv4.neigh.default.base_reachable_time_ms = {}",
        u64::from(plan.intent.arp.aging_seconds) * 1000
    );
    // Never below SONiC's image defaults (1024/2048/4096); gc_thresh2 (the soft limit) must
    // hold every entry the pods need.
    let gc3 = (sp.neighbor_entries * 2).next_multiple_of(1024).max(4096);
    let _ = writeln!(out, "net.ipv4.neigh.default.gc_thresh1 = {}", gc3 / 4);
    let _ = writeln!(out, "net.ipv4.neigh.default.gc_thresh2 = {}", gc3 / 2);
    let _ = writeln!(out, "net.ipv4.neigh.default.gc_thresh3 = {gc3}");
    out
}
