//! Inputs of `topo infer`: files, directories and stdin, read and added to the builder one at
//! a time, so a fleet's captures are never all in memory.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use spinel_wire::neighbor::NeighborTable;
use topo_discovery::fabric::FabricBuilder;
use topo_discovery::sources::{self, ParseOptions};

/// One file to read.
struct Source {
    /// `NAME=` given on the command line.
    observer: Option<String>,
    path: PathBuf,
    /// Found by listing a directory (stray files there are skipped, not fatal).
    listed: bool,
}

/// Reads every argument into `builder`; returns warnings for people. Files are read by up to
/// `threads` workers, each filling its own builder, merged at the end (inference does not
/// depend on the order tables come in); warnings and the first error come in argument order.
pub fn load(
    args: &[String],
    builder: &mut FabricBuilder,
    threads: usize,
) -> anyhow::Result<Vec<String>> {
    let mut sources = Vec::new();
    for arg in args {
        sources.extend(expand(arg)?);
    }
    let from_stdin = sources.iter().any(|s| s.path == Path::new("-"));
    let workers = if from_stdin {
        1
    } else {
        threads.clamp(1, sources.len().div_ceil(256).max(1))
    };
    if workers == 1 {
        let done = read_share(&sources, 0, 1, builder);
        return finish(done.warnings, done.error);
    }
    let shares: Vec<Share> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let sources = &sources;
                scope.spawn(move || {
                    let mut b = FabricBuilder::new();
                    let done = read_share(sources, w, workers, &mut b);
                    (b, done)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok((b, done)) => Share {
                    builder: Some(b),
                    ..done
                },
                Err(_) => Share {
                    builder: None,
                    warnings: Vec::new(),
                    error: Some((0, anyhow::anyhow!("a reader thread panicked"))),
                },
            })
            .collect()
    });
    let mut warnings = Vec::new();
    let mut error: Option<(usize, anyhow::Error)> = None;
    for share in shares {
        if let Some(b) = share.builder {
            builder.merge(b);
        }
        warnings.extend(share.warnings);
        if let Some((i, e)) = share.error
            && error.as_ref().is_none_or(|(j, _)| i < *j)
        {
            error = Some((i, e));
        }
    }
    finish(warnings, error)
}

fn finish(
    mut warnings: Vec<(usize, String)>,
    error: Option<(usize, anyhow::Error)>,
) -> anyhow::Result<Vec<String>> {
    if let Some((_, e)) = error {
        return Err(e);
    }
    warnings.sort_by_key(|w| w.0);
    Ok(warnings.into_iter().map(|w| w.1).collect())
}

/// What one reader did: warnings and the first error, each with its source's index.
struct Share {
    builder: Option<FabricBuilder>,
    warnings: Vec<(usize, String)>,
    error: Option<(usize, anyhow::Error)>,
}

/// Reads every `workers`-th source starting at `first` into `builder`, stopping at an error.
fn read_share(
    sources: &[Source],
    first: usize,
    workers: usize,
    builder: &mut FabricBuilder,
) -> Share {
    let mut share = Share {
        builder: None,
        warnings: Vec::new(),
        error: None,
    };
    // One buffer per reader, grown as needed and reused: no allocation per file.
    let mut buf = vec![0u8; 1 << 16];
    for (i, source) in sources.iter().enumerate().skip(first).step_by(workers) {
        match read_one(source, &mut buf, builder) {
            Ok(warnings) => share.warnings.extend(warnings.into_iter().map(|w| (i, w))),
            Err(e) => {
                share.error = Some((i, e));
                break;
            }
        }
    }
    share
}

fn read_one(
    source: &Source,
    buf: &mut Vec<u8>,
    builder: &mut FabricBuilder,
) -> anyhow::Result<Vec<String>> {
    let len = read(&source.path, buf)?;
    let bytes = &buf[..len];
    if source.listed && !looks_like_json(bytes) {
        return Ok(vec![format!(
            "{}: not JSON, skipped (a directory may hold only captures; this one is not a \
             neighbour table)",
            source.path.display()
        )]);
    }
    sources::ingest(bytes, &parse_options(source), builder)
        .with_context(|| format!("{}", source.path.display()))?;
    // What became of captures of neighbours only is said once their boxes are decided.
    Ok(Vec::new())
}

/// Parse settings for one source: `NAME=` names the observer; else a capture of neighbours
/// only stands under its file's name until its cabling says which box it is.
fn parse_options(source: &Source) -> ParseOptions {
    let file_name = source
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|_| source.path != Path::new("-"))
        .unwrap_or_default();
    ParseOptions {
        observer: source.observer.clone(),
        ..ParseOptions::for_file(&source.path.display().to_string(), file_name)
    }
}

/// Every neighbour table in `args`, named and skipped by the same rules as [`load`], for
/// commands that look at the tables themselves rather than infer a fabric from them.
pub fn tables(args: &[String]) -> anyhow::Result<Vec<NeighborTable>> {
    let mut buf = vec![0u8; 1 << 16];
    let mut out = Vec::new();
    for arg in args {
        for source in expand(arg)? {
            let len = read(&source.path, &mut buf)?;
            let bytes = &buf[..len];
            if source.listed && !looks_like_json(bytes) {
                continue;
            }
            let text = std::str::from_utf8(bytes)
                .with_context(|| format!("{}: not UTF-8 text", source.path.display()))?;
            let captures = sources::parse(text, &parse_options(&source))
                .with_context(|| format!("{}", source.path.display()))?;
            out.extend(captures.into_iter().map(|c| c.table));
        }
    }
    Ok(out)
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
    // The entry's type comes with the listing; only symlinks cost a stat.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
        .with_context(|| format!("listing {}", path.display()))?
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| {
            e.file_type()
                .is_ok_and(|t| t.is_file() || (t.is_symlink() && e.path().is_file()))
        })
        .map(|e| e.path())
        .collect();
    // One directory: comparing the bytes orders the names as comparing paths would, faster.
    files.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
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

/// Whether a file starts like a JSON document (after whitespace and a byte-order mark).
fn looks_like_json(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    matches!(
        bytes.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{' | b'[')
    )
}

/// Reads `path` (`-`: stdin) into `buf`, growing it when needed; returns the length. Plain
/// reads into a reused buffer: no size query per file, which costs as much as the read on a
/// directory of 100k small tables.
fn read(path: &Path, buf: &mut Vec<u8>) -> anyhow::Result<usize> {
    if path == Path::new("-") {
        return fill(&mut std::io::stdin().lock(), buf).context("reading stdin");
    }
    let mut file =
        std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    fill(&mut file, buf).with_context(|| format!("reading {}", path.display()))
}

fn fill(from: &mut impl Read, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len().max(1 << 16) * 2, 0);
        }
        match from.read(&mut buf[len..]) {
            Ok(0) => return Ok(len),
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_stand_under_their_file_names() {
        let named = |p: &str| {
            parse_options(&Source {
                observer: None,
                path: PathBuf::from(p),
                listed: false,
            })
            .fallback_observer
        };
        assert_eq!(named("t/leaf01.json").as_deref(), Some("leaf01"));
        assert_eq!(
            named("h1.fab.example.json0").as_deref(),
            Some("h1.fab.example")
        );
        assert_eq!(named("t/lf1a.json0.json").as_deref(), Some("lf1a"));
        assert_eq!(named("leaf02").as_deref(), Some("leaf02"));
        assert_eq!(named("-"), None);
    }

    #[test]
    fn stray_files_are_told_from_json() {
        assert!(looks_like_json("\u{feff}  {\"lldp\": []}".as_bytes()));
        assert!(looks_like_json(b"\n[{}]"));
        assert!(!looks_like_json(b"# notes\n"));
        assert!(!looks_like_json(b""));
    }
}
