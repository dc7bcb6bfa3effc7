//! The render output directory, written as a whole or not at all.
//!
//! A full render goes into a temporary directory next to the target and is swapped into place
//! with one `renameat2(RENAME_EXCHANGE)`: a failure half way leaves the previous output as it
//! was, and files of a switch or host that is gone disappear with the old tree. Only a directory
//! this command owns (it holds the marker file [`MARKER`]) or an empty one is replaced; anything
//! else is refused before a byte is written, so a mistyped `--out` never deletes someone's files.
//! A render of some switches (`--switch`) replaces only their files, each atomically, after
//! every target was checked.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use spinel_switch_config::render::RenderedFile;

/// The file that marks a directory as spinelctl's render output.
pub const MARKER: &str = ".spinel-render";

const MARKER_TEXT: &str = "This directory is written by `spinelctl fabric render`, which replaces it whole on every \
render: keep nothing else in it.\n";

/// What `--out` is now.
enum Target {
    /// Nothing there yet.
    Absent,
    /// An empty directory, or one a previous render owns.
    Owned,
}

/// Checks that `out` may be (re)written: absent, empty, or marked as ours.
fn inspect(out: &Path) -> anyhow::Result<Target> {
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Absent),
        Err(e) => return Err(e).with_context(|| format!("--out {}", out.display())),
    };
    if meta.file_type().is_symlink() {
        bail!(
            "--out {} is a symbolic link: give the directory itself",
            out.display()
        );
    }
    if !meta.is_dir() {
        bail!("--out {} exists and is not a directory", out.display());
    }
    if out.join(MARKER).is_file() {
        return Ok(Target::Owned);
    }
    let mut entries =
        std::fs::read_dir(out).with_context(|| format!("listing {}", out.display()))?;
    if entries.next().is_some() {
        bail!(
            "--out {} has files that no render of spinelctl wrote (no {MARKER} marker): \
             render into a new or empty directory; nothing was written",
            out.display()
        );
    }
    Ok(Target::Owned)
}

/// A sibling of `out` named for this process.
fn sibling(out: &Path, what: &str) -> anyhow::Result<PathBuf> {
    let name = out
        .file_name()
        .with_context(|| format!("--out {} has no directory name", out.display()))?;
    Ok(out.with_file_name(format!(
        ".{}.{what}.{}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Writes one file below `dir` (its name comes from validated switch and host names).
fn write_into(dir: &Path, f: &RenderedFile) -> anyhow::Result<()> {
    let path = dir.join(&f.name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    crate::output::write_file(&path, |w| Ok(w.write_all(f.text.as_bytes())?))
        .with_context(|| format!("writing {}", path.display()))
}

/// A full render: `fill` hands every file to the sink; the tree replaces `out` only when all
/// were written. Returns what `fill` returned.
pub fn replace_whole<T>(
    out: &Path,
    fill: impl FnOnce(&mut dyn FnMut(RenderedFile) -> anyhow::Result<()>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let target = inspect(out)?;
    let tmp = sibling(out, "spinel-new")?;
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let result = (|| {
        std::fs::write(tmp.join(MARKER), MARKER_TEXT)?;
        let value = fill(&mut |f| write_into(&tmp, &f))?;
        match target {
            Target::Absent => std::fs::rename(&tmp, out)
                .with_context(|| format!("moving the output to {}", out.display()))?,
            Target::Owned => {
                hostnet::fs::exchange(&tmp, out)
                    .with_context(|| format!("swapping the new output into {}", out.display()))?;
            }
        }
        anyhow::Ok(value)
    })();
    // After the swap `tmp` holds the previous output (ours or empty); before it, the partial new
    // one. Either way it is this command's to remove.
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// A render of some switches: every target checked first, then each file replaced atomically.
pub fn replace_files(out: &Path, files: &[RenderedFile]) -> anyhow::Result<()> {
    if let Target::Absent = inspect(out)? {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    }
    for f in files {
        let path = out.join(&f.name);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if !m.is_file() => bail!(
                "{} exists and is not a regular file; nothing was written",
                path.display()
            ),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("inspecting {}", path.display())),
        }
    }
    std::fs::write(out.join(MARKER), MARKER_TEXT)
        .with_context(|| format!("marking {}", out.display()))?;
    for f in files {
        write_into(out, f)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> RenderedFile {
        RenderedFile {
            name: name.into(),
            text: text.into(),
        }
    }

    fn render(out: &Path, files: &[RenderedFile]) -> anyhow::Result<usize> {
        replace_whole(out, |sink| {
            for f in files {
                sink(f.clone())?;
            }
            Ok(files.len())
        })
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = walk(dir)
            .into_iter()
            .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
            .collect();
        v.sort();
        v
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn a_render_replaces_its_own_output_whole() {
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("rendered");
        render(
            &out,
            &[file("leaf01.cfg", "a"), file("hosts/node01.json", "b")],
        )
        .unwrap();
        assert_eq!(listing(&out), [MARKER, "hosts/node01.json", "leaf01.cfg"]);
        // node01 left the intent: its file goes with the old tree.
        render(&out, &[file("leaf01.cfg", "c")]).unwrap();
        assert_eq!(listing(&out), [MARKER, "leaf01.cfg"]);
        assert_eq!(
            std::fs::read_to_string(out.join("leaf01.cfg")).unwrap(),
            "c"
        );
        assert_eq!(
            std::fs::read_dir(parent.path()).unwrap().count(),
            1,
            "no temporary left next to it"
        );
    }

    #[test]
    fn a_failure_half_way_leaves_the_previous_output_whole() {
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("rendered");
        render(&out, &[file("leaf01.cfg", "old")]).unwrap();
        let failed: anyhow::Result<()> = replace_whole(&out, |sink| {
            sink(file("leaf01.cfg", "new"))?;
            sink(file("leaf02.cfg", "new"))?;
            anyhow::bail!("disk full")
        });
        assert!(failed.is_err());
        assert_eq!(listing(&out), [MARKER, "leaf01.cfg"]);
        assert_eq!(
            std::fs::read_to_string(out.join("leaf01.cfg")).unwrap(),
            "old"
        );
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_directory_not_ours_is_refused_before_anything_is_written() {
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("somewhere");
        std::fs::create_dir(&out).unwrap();
        // `hosts` is a regular file: the operator's, not a render's.
        std::fs::write(out.join("hosts"), "keep me").unwrap();
        let e = render(
            &out,
            &[file("leaf01.cfg", "a"), file("hosts/node01.json", "b")],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no .spinel-render marker"), "{e}");
        assert_eq!(listing(&out), ["hosts"]);
        assert_eq!(
            std::fs::read_to_string(out.join("hosts")).unwrap(),
            "keep me"
        );
        let e = replace_files(&out, &[file("leaf01.cfg", "a")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("nothing was written"), "{e}");
        assert_eq!(listing(&out), ["hosts"]);
        // A file, or a link, as --out is refused too.
        let e = render(&out.join("hosts"), &[file("a", "b")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a directory"), "{e}");
        std::os::unix::fs::symlink(&out, parent.path().join("link")).unwrap();
        let e = render(&parent.path().join("link"), &[file("a", "b")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(listing(&out), ["hosts"]);
    }

    #[test]
    fn some_switches_replace_only_their_files_after_every_target_is_checked() {
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("rendered");
        render(&out, &[file("leaf01.cfg", "a"), file("leaf02.cfg", "b")]).unwrap();
        replace_files(&out, &[file("leaf02.cfg", "c")]).unwrap();
        assert_eq!(listing(&out), [MARKER, "leaf01.cfg", "leaf02.cfg"]);
        assert_eq!(
            std::fs::read_to_string(out.join("leaf02.cfg")).unwrap(),
            "c"
        );
        std::fs::create_dir(out.join("leaf03.cfg")).unwrap();
        let e = replace_files(&out, &[file("leaf01.cfg", "x"), file("leaf03.cfg", "y")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert_eq!(
            std::fs::read_to_string(out.join("leaf01.cfg")).unwrap(),
            "a",
            "nothing written"
        );
    }
}
