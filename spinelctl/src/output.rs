//! Writing an output file: whole or not at all when it is a file, straight through when it is
//! something else (a device such as `/dev/null`, a FIFO, a terminal): renaming a temporary over
//! those would replace the device node with a regular file.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

/// Writes `path` with `fill`: through a temporary file renamed into place when `path` is a
/// regular file or does not exist yet; directly otherwise.
pub fn write_file(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let regular_or_new = match std::fs::metadata(path) {
        Ok(m) => m.is_file(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", path.display())),
    };
    if !regular_or_new {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
        fill(&mut out)?;
        return out
            .flush()
            .with_context(|| format!("writing {}", path.display()));
    }
    let name = path
        .file_name()
        .with_context(|| format!("{} is not a file name", path.display()))?;
    let tmp = path.with_file_name(format!(
        ".{}.tmp.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let file = std::fs::File::create(&tmp)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
        fill(&mut out)?;
        // Renamed, not synced: an output is regenerated from its inputs, never recovered.
        out.into_inner().map_err(|e| e.into_error())?;
        std::fs::rename(&tmp, path)?;
        anyhow::Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_stays_a_device_and_a_file_is_replaced_whole() {
        write_file(Path::new("/dev/null"), |out| Ok(out.write_all(b"gone")?)).unwrap();
        let meta = std::fs::metadata("/dev/null").unwrap();
        assert!(!meta.is_file(), "/dev/null must still be a device");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.yaml");
        write_file(&path, |out| Ok(out.write_all(b"a: 1\n")?)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a: 1\n");
        let failed = write_file(&path, |_| anyhow::bail!("half way"));
        assert!(failed.is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "a: 1\n",
            "kept whole"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }
}
