//! Inputs of `topo infer`: files, directories and stdin, read and added to the builder one at
//! a time, so a fleet's captures are never all in memory.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use topo_discovery::fabric::FabricBuilder;
use topo_discovery::sources::{self, NamedBy, ParseOptions};

/// One file to read.
struct Source {
    /// `NAME=` given on the command line.
    observer: Option<String>,
    path: PathBuf,
    /// Found by listing a directory (stray files there are skipped, not fatal).
    listed: bool,
}

/// Reads every argument into `builder`; returns warnings for people.
pub fn load(args: &[String], builder: &mut FabricBuilder) -> anyhow::Result<Vec<String>> {
    let mut warnings = Vec::new();
    for arg in args {
        for source in expand(arg)? {
            let text = read(&source.path)?;
            if source.listed && !looks_like_json(&text) {
                warnings.push(format!(
                    "{}: not JSON, skipped (a directory may hold only captures; this one is \
                     not a neighbour table)",
                    source.path.display()
                ));
                continue;
            }
            let options = ParseOptions {
                observer: source.observer.clone(),
                fallback_observer: fallback_name(&source.path),
            };
            let captures = sources::parse(&text, &options)
                .with_context(|| format!("{}", source.path.display()))?;
            for c in &captures {
                if c.observer_named_by == NamedBy::Fallback {
                    warnings.push(format!(
                        "{}: lldpd output without the system's own chassis (neighbours only): \
                         named {} after the file; capture `show interfaces details` into it too, \
                         or name it with {}=FILE",
                        source.path.display(),
                        c.table.observer.name,
                        c.table.observer.name
                    ));
                }
                c.add_to(builder);
            }
        }
    }
    Ok(warnings)
}

/// `NAME=FILE` or `FILE`; a directory expands to its files (sorted, hidden ones skipped).
fn expand(arg: &str) -> anyhow::Result<Vec<Source>> {
    let (observer, path) = match arg.split_once('=') {
        Some((name, path)) if !Path::new(arg).exists() && !name.is_empty() => {
            (Some(name.to_owned()), PathBuf::from(path))
        }
        _ => (None, PathBuf::from(arg)),
    };
    if arg == "-" || !path.is_dir() {
        return Ok(vec![Source {
            observer,
            path,
            listed: false,
        }]);
    }
    if observer.is_some() {
        bail!(
            "{arg}: NAME= names one lldpd capture, not a directory (a directory's captures are \
             named after their files)"
        );
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
    if files.is_empty() {
        bail!("{}: directory has no files", path.display());
    }
    Ok(files
        .into_iter()
        .map(|path| Source {
            observer: None,
            path,
            listed: true,
        })
        .collect())
}

/// The name a neighbours-only capture takes from its file: `leaf01.json` gives `leaf01`.
fn fallback_name(path: &Path) -> Option<String> {
    if path == Path::new("-") {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    let stem = match name.rsplit_once('.') {
        Some((stem, "json" | "json0" | "txt" | "lldp")) => stem,
        _ => name,
    };
    (!stem.is_empty()).then(|| stem.to_owned())
}

/// Whether a file starts like a JSON document (after whitespace and a byte-order mark).
fn looks_like_json(text: &str) -> bool {
    matches!(
        text.trim_start_matches('\u{feff}')
            .trim_start()
            .as_bytes()
            .first(),
        Some(b'{' | b'[')
    )
}

fn read(path: &Path) -> anyhow::Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading stdin")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_are_named_after_their_files() {
        assert_eq!(
            fallback_name(Path::new("t/leaf01.json")).as_deref(),
            Some("leaf01")
        );
        assert_eq!(
            fallback_name(Path::new("h1.fab.example.json0")).as_deref(),
            Some("h1.fab.example")
        );
        assert_eq!(
            fallback_name(Path::new("leaf02")).as_deref(),
            Some("leaf02")
        );
        assert_eq!(fallback_name(Path::new("-")), None);
    }

    #[test]
    fn stray_files_are_told_from_json() {
        assert!(looks_like_json("\u{feff}  {\"lldp\": []}"));
        assert!(looks_like_json("\n[{}]"));
        assert!(!looks_like_json("# notes\n"));
        assert!(!looks_like_json(""));
    }
}
