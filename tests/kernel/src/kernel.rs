//! Locating the guest kernel: Debian's `linux-image-amd64`, as installed in `/boot`.

use std::fs;
use std::path::{Path, PathBuf};

/// A kernel image with its module tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// The release string (`uname -r` in the guest), e.g. `6.1.0-56-amd64`.
    pub version: String,
    /// `/boot/vmlinuz-<version>`.
    pub image: PathBuf,
    /// `/lib/modules/<version>`.
    pub modules: PathBuf,
}

/// No usable guest kernel.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// No `/boot/vmlinuz-*` has a module tree with `rdma_rxe`.
    #[error(
        "no kernel in {boot} has rdma_rxe in {modules}/<version>/modules.dep; \
         install Debian's kernel: apt-get install linux-image-amd64"
    )]
    NotFound {
        /// Where images were looked for.
        boot: PathBuf,
        /// Where module trees were looked for.
        modules: PathBuf,
    },
}

impl Kernel {
    /// The newest kernel in `/boot` whose `/lib/modules/<ver>` has `rdma_rxe`.
    pub fn find() -> Result<Self, KernelError> {
        Self::find_in(Path::new("/boot"), Path::new("/lib/modules"))
    }

    /// As [`Kernel::find`], with other directories (for tests of the search itself).
    pub fn find_in(boot: &Path, modules: &Path) -> Result<Self, KernelError> {
        let mut found: Vec<Kernel> = fs::read_dir(boot)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let version = name.strip_prefix("vmlinuz-")?.to_owned();
                let tree = modules.join(&version);
                let dep = fs::read_to_string(tree.join("modules.dep")).ok()?;
                dep.lines()
                    .any(|l| l.contains("/rdma_rxe.ko"))
                    .then(|| Kernel {
                        image: entry.path(),
                        modules: tree,
                        version,
                    })
            })
            .collect();
        found.sort_by_key(|k| version_key(&k.version));
        found.pop().ok_or_else(|| KernelError::NotFound {
            boot: boot.to_owned(),
            modules: modules.to_owned(),
        })
    }
}

/// Orders `6.1.0-56-amd64` after `6.1.0-9-amd64`: numbers compare as numbers.
fn version_key(version: &str) -> Vec<u64> {
    version
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap_or(u64::MAX))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn newest_kernel_with_rdma_rxe_wins() {
        let dir = std::env::temp_dir().join(format!("spinel-kernel-find-{}", std::process::id()));
        let (boot, mods) = (dir.join("boot"), dir.join("modules"));
        for (ver, rxe) in [
            ("6.1.0-9-amd64", true),
            ("6.1.0-56-amd64", true),
            ("6.12.0-1-amd64", false),
        ] {
            fs::create_dir_all(mods.join(ver)).unwrap();
            fs::create_dir_all(&boot).unwrap();
            fs::write(boot.join(format!("vmlinuz-{ver}")), b"").unwrap();
            let dep = if rxe {
                "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko: kernel/drivers/infiniband/core/ib_core.ko\n"
            } else {
                "kernel/drivers/net/dummy.ko:\n"
            };
            fs::write(mods.join(ver).join("modules.dep"), dep).unwrap();
        }
        let k = Kernel::find_in(&boot, &mods).unwrap();
        assert_eq!(k.version, "6.1.0-56-amd64");
        assert_eq!(k.image, boot.join("vmlinuz-6.1.0-56-amd64"));
        fs::remove_dir_all(&dir).unwrap();
        let err = Kernel::find_in(&boot, &mods).unwrap_err().to_string();
        assert!(err.contains("apt-get install linux-image-amd64"), "{err}");
    }
}
