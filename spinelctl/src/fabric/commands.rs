//! The `fabric` commands.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use spinel_switch_config::check::{self, Evidence, Report};
use spinel_switch_config::diff;
use spinel_switch_config::host::kernel::{self, Roots};
use spinel_switch_config::inferred::{Template, check_cabling, intent_from_fabric};
use spinel_switch_config::intent::software::{CUMULUS_RELEASES, EOS_RELEASES, EosPlatform};
use spinel_switch_config::intent::{self, Intent, Issue, SwitchOs};
use spinel_switch_config::observe;
use spinel_switch_config::plan::FabricPlan;
use spinel_switch_config::render::{self, nvue, sonic};

use super::{
    CablingArgs, CheckArgs, DiffArgs, EXIT_FINDINGS, HostStateArgs, IntentArgs, RenderArgs,
    ValidateArgs,
};
use super::{inputs, outdir};

fn load(path: &Path) -> anyhow::Result<Intent> {
    Ok(intent::load(path)?)
}

fn code(errors: bool) -> ExitCode {
    if errors {
        ExitCode::from(EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    }
}

pub fn validate(a: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let name = a.intent.display().to_string();
    // Parse errors are exit 1 (unreadable); semantic issues are findings (exit 2).
    let parsed = intent::read(&a.intent, &intent::Limits::default())?;
    let issues = intent::validate(&parsed);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&issues)?);
    } else {
        for i in &issues {
            println!("{i}");
        }
    }
    let errors = issues.iter().filter(|i| i.is_error()).count();
    eprintln!(
        "{name}: {} switches, {} rails: {errors} error(s), {} warning(s)",
        parsed.switches.len(),
        parsed.rails.len(),
        issues.len() - errors
    );
    Ok(code(errors > 0))
}

pub fn render(a: &RenderArgs) -> anyhow::Result<ExitCode> {
    let i = load(&a.intent)?;
    let plan = FabricPlan::new(&i);
    let running = inputs::running(&i, &a.running)?;
    let mut written = 0usize;
    let notes = if a.switches.is_empty() {
        // Streamed into a new tree that replaces --out only when complete: a large fabric's
        // files never all sit in memory, and a failure leaves the previous output whole.
        outdir::replace_whole(&a.out, |sink| {
            render::each(&plan, &running, |f| {
                written += 1;
                sink(f)
            })
        })?
    } else {
        let mut notes = Vec::new();
        let mut files = Vec::new();
        for name in &a.switches {
            let sp = plan
                .switch(name)
                .with_context(|| format!("no switch {name} in the intent"))?;
            let r = render::switch(&plan, sp, &running);
            files.extend(r.files);
            notes.extend(r.notes);
        }
        written = files.len();
        outdir::replace_files(&a.out, &files)?;
        notes
    };
    for n in &notes {
        eprintln!("note: {n}");
    }
    eprintln!("wrote {written} files to {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}

pub fn diff(a: &DiffArgs) -> anyhow::Result<ExitCode> {
    let i = load(&a.intent)?;
    let plan = FabricPlan::new(&i);
    let sp = plan
        .switch(&a.switch)
        .with_context(|| format!("no switch {} in the intent", a.switch))?;
    let text = inputs::read(&a.running)?;
    let changes = match sp.switch.os {
        SwitchOs::Sonic => {
            let running = observe::sonic::parse_config_db(&text)
                .with_context(|| format!("{}: not a config_db.json", a.running.display()))?;
            let rendered = sonic::render(&plan, sp, Some(&running)).config_db;
            let ops = diff::sonic::patch(&rendered, &running);
            print!("{}", diff::sonic::to_json(&ops));
            ops.len()
        }
        SwitchOs::Cumulus => {
            let tree = observe::nvue::parse_tree(&text)
                .with_context(|| format!("{}: not an NVUE configuration", a.running.display()))?;
            let syntax = nvue::syntax(sp)
                .with_context(|| format!("{}: unknown Cumulus Linux release", a.switch))?;
            let lines = diff::nvue::commands(&nvue::commands(&plan, sp, syntax), &tree);
            for l in &lines {
                println!("{l}");
            }
            lines.len().saturating_sub(1)
        }
        SwitchOs::Eos => bail!(
            "{}: diff supports SONiC and NVUE; for EOS, `fabric check` names each difference \
             and its configuration lines",
            a.switch
        ),
    };
    eprintln!("{}: {changes} change(s)", a.switch);
    Ok(if a.exit_code && changes > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_report(report: &Report, json: bool) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        serde_json::to_writer_pretty(&mut out, report)?;
        writeln!(out)?;
    } else {
        for f in &report.findings {
            writeln!(out, "{f}")?;
        }
    }
    out.flush()?;
    Ok(())
}

pub fn check(a: &CheckArgs) -> anyhow::Result<ExitCode> {
    let i = load(&a.intent)?;
    let plan = FabricPlan::new(&i);
    let evidence = Evidence {
        switches: inputs::switch_configs(&i, &a.switch_configs)?,
        hosts: inputs::host_states(&a.host_states)?,
        lldp: inputs::tables(&a.lldp)?,
    };
    if evidence.switches.is_empty() && evidence.hosts.is_empty() && evidence.lldp.is_empty() {
        bail!("nothing to check: give --switch-config, --host-state or --lldp");
    }
    let report = check::check(&plan, &evidence);
    print_report(&report, a.json)?;
    eprintln!(
        "checked {} switch configuration(s), {} host(s), {} LLDP table(s): {} error(s), {} warning(s)",
        evidence.switches.len(),
        evidence.hosts.len(),
        evidence.lldp.len(),
        report.errors(),
        report.warnings()
    );
    Ok(code(
        report.errors() > 0 || (a.strict && report.warnings() > 0),
    ))
}

pub fn host_state(a: &HostStateArgs) -> anyhow::Result<ExitCode> {
    let ns = match &a.netns {
        None => None,
        Some(s) => {
            let path = if s.contains('/') {
                Path::new(s).to_owned()
            } else {
                Path::new("/run/netns").join(s)
            };
            Some(hostnet::netns::NetNs::open(&path).with_context(|| {
                format!(
                    "--netns {}: give a namespace path or a name under /run/netns",
                    path.display()
                )
            })?)
        }
    };
    let host = a.node_name.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_default()
    });
    let roots = Roots {
        sysfs: a.sysfs.clone(),
        configfs: a.configfs.clone(),
    };
    let state = kernel::read(ns.as_ref(), &host, &a.ifaces, &roots)?;
    println!("{}", serde_json::to_string_pretty(&state)?);
    Ok(ExitCode::SUCCESS)
}

pub fn intent(a: &IntentArgs) -> anyhow::Result<ExitCode> {
    let fabric = inputs::fabric(&a.tables)?;
    let (leaf_version, leaf_platform) =
        assumed("leaves", a.leaf_os, &a.leaf_version, a.leaf_platform);
    let (spine_version, spine_platform) =
        assumed("spines", a.spine_os, &a.spine_version, a.spine_platform);
    let t = Template {
        fabric: a.fabric.clone(),
        leaf_os: a.leaf_os.into(),
        spine_os: a.spine_os.into(),
        leaf_version,
        spine_version,
        leaf_platform,
        spine_platform,
        speed_gbps: a.speed_gbps,
        buffer_bytes: Some(a.buffer_bytes),
        subnet_pool: a.subnet_pool,
        subnet_prefix: a.subnet_prefix,
        link_pool: Some(a.link_pool),
        vlan_base: a.vlan_base,
        ..Template::default()
    };
    let generated = intent_from_fabric(&fabric, &t)?;
    print!("{}", intent::to_yaml(&generated)?);
    let issues: Vec<Issue> = intent::validate(&generated);
    for i in &issues {
        eprintln!("{i}");
    }
    let errors = issues.iter().filter(|i| i.is_error()).count();
    eprintln!(
        "generated an intent for {} switches and {} hosts: {errors} error(s) to fix before rendering",
        generated.switches.len(),
        fabric.hosts.len()
    );
    Ok(code(errors > 0))
}

/// The release (and EOS platform family) of generated switches: as given, else the newest this
/// renderer knows, said on stderr so the operator corrects it where the switches run another.
fn assumed(
    what: &str,
    os: super::OsArg,
    version: &Option<String>,
    platform: Option<super::PlatformArg>,
) -> (Option<String>, Option<EosPlatform>) {
    let os: SwitchOs = os.into();
    let newest = match os {
        SwitchOs::Sonic => return (None, None),
        SwitchOs::Cumulus => CUMULUS_RELEASES.last(),
        SwitchOs::Eos => EOS_RELEASES.last(),
    };
    let version = version.clone().or_else(|| {
        let v = newest.map(|v| (*v).to_owned());
        eprintln!(
            "note: {what}: assuming {} {}; say the release they run with --{}-version",
            os.as_str(),
            v.as_deref().unwrap_or_default(),
            if what == "leaves" { "leaf" } else { "spine" }
        );
        v
    });
    let platform = (os == SwitchOs::Eos).then(|| {
        platform.map(EosPlatform::from).unwrap_or_else(|| {
            eprintln!(
                "note: {what}: assuming the strata platform family (uc-tx-queue); say it with \
                 --{}-platform",
                if what == "leaves" { "leaf" } else { "spine" }
            );
            EosPlatform::Strata
        })
    });
    (version, platform)
}

pub fn cabling(a: &CablingArgs) -> anyhow::Result<ExitCode> {
    let i = load(&a.intent)?;
    let fabric = inputs::fabric(&a.tables)?;
    let report = check_cabling(&i, &fabric);
    print_report(&report, a.json)?;
    eprintln!(
        "cabling: {} host(s), {} switch(es) inferred: {} error(s), {} warning(s)",
        fabric.hosts.len(),
        fabric.switches.len(),
        report.errors(),
        report.warnings()
    );
    Ok(code(report.errors() > 0))
}
