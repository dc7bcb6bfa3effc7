//! Sysctls under `/proc/sys`, which follow the calling thread's network namespace.
//!
//! Enter the namespace first (see [`crate::netns::NetNs::run`]), then read or write. Keys are
//! given as path components so an interface name with dots (`eth0.100`) stays one component,
//! and every component is checked before a path is built from it.

use std::fs;
use std::io;
use std::path::PathBuf;

/// A sysctl read or write failed, or its key was unsafe to use as a path.
#[derive(Debug, thiserror::Error)]
pub enum SysctlError {
    /// A key component is empty, `.`/`..`, or holds `/` or NUL.
    #[error("invalid sysctl key component {0:?}")]
    InvalidKey(String),
    /// The write or read failed.
    #[error("cannot {action} sysctl {key}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// Dotted key, for the message.
        key: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

fn path_of(components: &[&str]) -> Result<(PathBuf, String), SysctlError> {
    let mut path = PathBuf::from("/proc/sys");
    for c in components {
        if c.is_empty() || *c == "." || *c == ".." || c.contains(['/', '\0']) {
            return Err(SysctlError::InvalidKey((*c).to_owned()));
        }
        path.push(c);
    }
    Ok((path, components.join(".")))
}

/// Reads a sysctl in the calling thread's namespace, without the trailing newline.
pub fn read(components: &[&str]) -> Result<String, SysctlError> {
    let (path, key) = path_of(components)?;
    fs::read_to_string(&path)
        .map(|s| s.trim_end().to_owned())
        .map_err(|source| SysctlError::Io {
            action: "read",
            key,
            source,
        })
}

/// Writes a sysctl in the calling thread's namespace.
pub fn write(components: &[&str], value: &str) -> Result<(), SysctlError> {
    let (path, key) = path_of(components)?;
    fs::write(&path, value).map_err(|source| SysctlError::Io {
        action: "write",
        key,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netns::NetNs;

    #[test]
    fn rejects_components_that_would_escape() {
        for bad in ["", ".", "..", "a/b", "x\0"] {
            assert!(matches!(
                write(&["net", "ipv4", "conf", bad, "arp_notify"], "1"),
                Err(SysctlError::InvalidKey(_))
            ));
        }
    }

    #[test]
    fn writes_follow_the_thread_namespace() {
        assert!(nix::unistd::geteuid().is_root(), "needs root");
        let dir = tempfile::tempdir().unwrap();
        let ns = NetNs::create_at(dir.path().join("ns")).unwrap();
        let key = ["net", "ipv4", "conf", "lo", "arp_ignore"];
        let host_before = read(&key).unwrap();
        ns.run(|| write(&key, "2").unwrap()).unwrap();
        assert_eq!(ns.run(|| read(&key).unwrap()).unwrap(), "2");
        assert_eq!(
            read(&key).unwrap(),
            host_before,
            "the host's value must not change"
        );
        let err = ns
            .run(|| write(&["net", "ipv4", "conf", "nosuch0", "arp_ignore"], "1"))
            .unwrap()
            .unwrap_err();
        assert!(
            err.to_string().contains("net.ipv4.conf.nosuch0.arp_ignore"),
            "{err}"
        );
        drop(ns);
        NetNs::remove_at(dir.path().join("ns")).unwrap();
    }
}
