//! Spinel's kernel test tier: boot Debian's kernel under QEMU and run a program inside it.
//!
//! The host kernel lacks what Spinel's RoCE paths need (`rdma_rxe`, `8021q`, `dummy`, `vrf`,
//! PCI NICs with real sysfs), so tests in this crate boot `/boot/vmlinuz-<ver>` under
//! `qemu-system-x86_64 -accel tcg` with a small initramfs built at test time. The host's root
//! file system is shared read-only over virtio-9p, so any host binary (ours, `ip`, `rdma`,
//! `strace`) runs in the VM unchanged; writable places are tmpfs overlays; a second, writable 9p share
//! carries the command in and its exit status and output back.
//!
//! ```no_run
//! use spinel_kernel_tests::Vm;
//! let out = Vm::builder().nics(2).run(&["/usr/sbin/ip", "-br", "link"]);
//! out.assert_success();
//! assert!(out.stdout.contains("eth1"));
//! ```
//!
//! See `docs/kernel-tier.md` for how it works and how to run one program by hand.

mod cpio;
mod error;
pub mod guest;
mod initramfs;
mod kernel;
mod vm;

pub use error::VmError;
pub use initramfs::{BOOT_MODULES, DEFAULT_MODULES, Initramfs};
pub use kernel::{Kernel, KernelError};
pub use vm::{NicModel, Vm, VmBuilder, VmOutput};
