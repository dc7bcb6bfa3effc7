//! File-system calls the standard library lacks.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Swaps `a` and `b` atomically (`renameat2(RENAME_EXCHANGE)`): both must exist; each name then
/// holds what the other held, with no moment where either is missing. A raw system call, as musl
/// (the libc of Spinel's static image) has no `renameat2` wrapper.
pub fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    let a = CString::new(a.as_os_str().as_bytes())?;
    let b = CString::new(b.as_os_str().as_bytes())?;
    #[allow(unsafe_code)]
    // SAFETY: both paths are NUL-terminated strings that outlive the call, which only reads
    // them; AT_FDCWD needs no descriptor.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn exchange_swaps_two_directories_and_refuses_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::create_dir(&a).unwrap();
        fs::write(a.join("old"), "").unwrap();
        fs::create_dir(&b).unwrap();
        fs::write(b.join("new"), "").unwrap();
        exchange(&a, &b).unwrap();
        assert!(a.join("new").exists() && b.join("old").exists());
        let err = exchange(&a, &dir.path().join("missing")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(a.join("new").exists(), "a failed exchange changed nothing");
    }
}
