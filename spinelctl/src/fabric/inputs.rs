//! Reading the checker's inputs: bounded, every file named in errors, switch files matched to
//! the intent's switches by name.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use spinel_switch_config::host::{HostState, STATE_SCHEMA};
use spinel_switch_config::intent::Intent;
use spinel_switch_config::observe;
use spinel_switch_config::render::Running;
use spinel_switch_config::state::SwitchState;
use spinel_wire::neighbor::NeighborTable;

/// Largest input file: a 2,000-port SONiC config_db is a few MiB.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a file (`-` is stdin), refusing more than [`MAX_INPUT_BYTES`].
pub fn read(path: &Path) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    let limit = MAX_INPUT_BYTES + 1;
    if path == Path::new("-") {
        std::io::stdin()
            .take(limit)
            .read_to_end(&mut bytes)
            .context("reading stdin")?;
    } else {
        // Only regular files: a FIFO nobody writes to would block the open forever.
        let meta =
            std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
        if !meta.is_file() {
            bail!(
                "{}: not a regular file (a FIFO, device or directory); give a file, or - for \
                 standard input",
                path.display()
            );
        }
        let file =
            std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        // A regular file's size is known before reading a byte of it.
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        if size > MAX_INPUT_BYTES {
            bail!(
                "{}: {size} bytes, larger than {MAX_INPUT_BYTES}",
                path.display()
            );
        }
        file.take(limit)
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading {}", path.display()))?;
    }
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        bail!("{}: larger than {MAX_INPUT_BYTES} bytes", path.display());
    }
    String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8 text", path.display()))
}

/// `NAME=FILE` or `FILE`; a directory stands for its files (sorted, hidden ones skipped).
pub fn expand(arg: &str) -> anyhow::Result<Vec<(Option<String>, PathBuf)>> {
    let (name, path) = match arg.split_once('=') {
        Some((n, p)) if !Path::new(arg).exists() && !n.is_empty() => {
            (Some(n.to_owned()), PathBuf::from(p))
        }
        _ => (None, PathBuf::from(arg)),
    };
    if !path.is_dir() {
        return Ok(vec![(name, path)]);
    }
    if name.is_some() {
        bail!("{arg}: NAME= names one file, not a directory");
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
        .with_context(|| format!("listing {}", path.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files.into_iter().map(|p| (None, p)).collect())
}

/// The switch a running-configuration file belongs to: its explicit name, else the longest
/// intent switch name its file name starts with, followed by `.`.
fn switch_of<'a>(intent: &'a Intent, name: Option<&str>, path: &Path) -> anyhow::Result<&'a str> {
    if let Some(n) = name {
        return intent
            .switch(n)
            .map(|s| s.name.as_str())
            .with_context(|| format!("{}: no switch {n} in the intent", path.display()));
    }
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    intent
        .switches
        .iter()
        .map(|s| s.name.as_str())
        .filter(|s| file.starts_with(&format!("{s}.")))
        .max_by_key(|s| s.len())
        .with_context(|| {
            format!(
                "{}: cannot tell which switch this is; name the file after the switch \
                 (leaf01.config_db.json) or pass NAME=FILE",
                path.display()
            )
        })
}

/// Running configurations by switch, read with each switch's OS.
pub fn switch_configs(
    intent: &Intent,
    args: &[String],
) -> anyhow::Result<BTreeMap<String, SwitchState>> {
    let mut out = BTreeMap::new();
    for arg in args {
        for (name, path) in expand(arg)? {
            let switch = switch_of(intent, name.as_deref(), &path)?;
            let os = intent
                .switch(switch)
                .map(|s| s.os)
                .context("switch vanished")?;
            let state = observe::parse(os, &read(&path)?).with_context(|| {
                format!("{}: not a {} configuration", path.display(), os.as_str())
            })?;
            if out.insert(switch.to_owned(), state).is_some() {
                bail!("{}: a second configuration for {switch}", path.display());
            }
        }
    }
    Ok(out)
}

/// SONiC running configurations for rendering (PORT lanes).
pub fn running(intent: &Intent, args: &[String]) -> anyhow::Result<Running> {
    let mut r = Running::default();
    for arg in args {
        for (name, path) in expand(arg)? {
            let file = path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.is_none() && !file.contains("config_db") {
                continue;
            }
            let switch = switch_of(intent, name.as_deref(), &path)?;
            let db = observe::sonic::parse_config_db(&read(&path)?)
                .with_context(|| format!("{}: not a config_db.json", path.display()))?;
            r.sonic.insert(switch.to_owned(), db);
        }
    }
    Ok(r)
}

/// Host states by host name.
pub fn host_states(args: &[String]) -> anyhow::Result<BTreeMap<String, HostState>> {
    let mut out = BTreeMap::new();
    for arg in args {
        for (_, path) in expand(arg)? {
            let state: HostState = serde_json::from_str(&read(&path)?)
                .with_context(|| format!("{}: not a {STATE_SCHEMA} document", path.display()))?;
            if state.schema != STATE_SCHEMA {
                bail!(
                    "{}: schema {:?}, expected {STATE_SCHEMA:?}",
                    path.display(),
                    state.schema
                );
            }
            out.insert(state.host.clone(), state);
        }
    }
    Ok(out)
}

/// Neighbour tables (Spinel's or lldpd's), read as `spinelctl topo infer` reads them.
pub fn tables(args: &[String]) -> anyhow::Result<Vec<NeighborTable>> {
    crate::topo::inputs::tables(args)
}

/// The fabric inferred from neighbour tables, as `spinelctl topo infer` infers it.
pub fn fabric(args: &[String]) -> anyhow::Result<topo_discovery::fabric::Fabric> {
    let mut builder = topo_discovery::fabric::FabricBuilder::new();
    for warning in crate::topo::inputs::load(args, &mut builder, 2)? {
        eprintln!("spinelctl: {warning}");
    }
    if builder.table_count() == 0 {
        bail!("no neighbour tables in {}", args.join(" "));
    }
    Ok(builder.infer(&topo_discovery::fabric::InferOptions::default()))
}
