//! A writer for the `newc` cpio format, the one the kernel unpacks as an initramfs.
//!
//! Small enough to write here rather than shell out to `cpio`: a 110-byte ASCII header per
//! entry, the name, then the data, each padded to 4 bytes (Linux
//! `Documentation/driver-api/early-userspace/buffer-format.rst`).

use std::io::{self, Write};

/// Accumulates entries and writes the archive, trailer included.
pub(crate) struct CpioWriter<W: Write> {
    out: W,
    written: usize,
    next_ino: u32,
}

impl<W: Write> CpioWriter<W> {
    pub(crate) fn new(out: W) -> Self {
        Self {
            out,
            written: 0,
            next_ino: 1,
        }
    }

    /// A directory (`mode` holds the permission bits only).
    pub(crate) fn dir(&mut self, name: &str, mode: u32) -> io::Result<()> {
        self.entry(name, libc::S_IFDIR | mode, &[], (0, 0))
    }

    /// A regular file.
    pub(crate) fn file(&mut self, name: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        self.entry(name, libc::S_IFREG | mode, data, (0, 0))
    }

    /// A character device node.
    pub(crate) fn char_device(
        &mut self,
        name: &str,
        mode: u32,
        major: u32,
        minor: u32,
    ) -> io::Result<()> {
        self.entry(name, libc::S_IFCHR | mode, &[], (major, minor))
    }

    /// Writes the trailer and returns the sink.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, &[], (0, 0))?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) -> io::Result<()> {
        let size = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large for cpio"))?;
        let ino = self.next_ino;
        self.next_ino += 1;
        let nlink = if mode & libc::S_IFMT == libc::S_IFDIR {
            2
        } else {
            1
        };
        let name_size = name.len() + 1;
        let header = format!(
            "070701{ino:08x}{mode:08x}{uid:08x}{gid:08x}{nlink:08x}{mtime:08x}{size:08x}\
             {dmaj:08x}{dmin:08x}{rmaj:08x}{rmin:08x}{name_size:08x}{check:08x}",
            uid = 0,
            gid = 0,
            mtime = 0,
            dmaj = 0,
            dmin = 0,
            rmaj = rdev.0,
            rmin = rdev.1,
            check = 0,
        );
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len();
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let pad = self.written.next_multiple_of(4) - self.written;
        self.put(&[0u8; 3][..pad])
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entries_are_aligned_and_the_archive_ends_with_the_trailer() {
        let mut w = CpioWriter::new(Vec::new());
        w.dir("bin", 0o755).unwrap();
        w.file("init", 0o755, b"#!/bin/sh\n").unwrap();
        w.char_device("dev/console", 0o600, 5, 1).unwrap();
        let out = w.finish().unwrap();
        assert_eq!(out.len() % 4, 0);
        assert!(out.starts_with(b"070701"));
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("TRAILER!!!"));
        // The file's data begins on a 4-byte boundary right after its padded name.
        let at = text.find("init\0").unwrap();
        let data = (at + 5).next_multiple_of(4);
        assert_eq!(&out[data..data + 10], b"#!/bin/sh\n");
        // Device numbers sit in the rdevmajor/rdevminor fields (the 10th and 11th).
        let dev_hdr = text.find("dev/console").unwrap() - 110;
        assert_eq!(
            &out[dev_hdr + 6 + 8 * 9..dev_hdr + 6 + 8 * 11],
            b"0000000500000001"
        );
    }
}
