//! What can go wrong when booting the VM (a leaf module: the initramfs builder and the VM
//! runner both report it).

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::kernel::KernelError;

/// The QEMU binary, looked up in `PATH`.
pub(crate) const QEMU: &str = "qemu-system-x86_64";

/// The harness could not boot the VM or get the command's result back.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// QEMU is not installed.
    #[error("{QEMU} not found in PATH; install it: apt-get install qemu-system-x86")]
    QemuMissing,
    /// This QEMU does not emulate a device a test asked for (`igb` needs QEMU 8.0 or newer).
    #[error(
        "{QEMU} ({version}) has no {device} device; install QEMU 10 from Debian's \
         bookworm-backports: scripts/install-deps.sh test (or apt-get install -t \
         bookworm-backports qemu-system-x86)"
    )]
    QemuLacksDevice {
        /// The `-device` name.
        device: String,
        /// QEMU's `--version` line.
        version: String,
    },
    /// No usable kernel.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// No static busybox for the initramfs.
    #[error("/bin/busybox not found; install it: apt-get install busybox-static")]
    BusyboxMissing,
    /// A requested module is not in the kernel's module tree.
    #[error("module {module} has no entry in {dep}")]
    ModuleNotFound {
        /// The module's name.
        module: String,
        /// The `modules.dep` searched.
        dep: PathBuf,
    },
    /// A file operation of the harness failed.
    #[error("{what} ({path}): {source}")]
    Io {
        /// What the harness was doing.
        what: &'static str,
        /// The file involved.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The VM did not power off in time.
    #[error(
        "the VM did not finish within {timeout:?}; console and output kept in {dir}\n{console_tail}"
    )]
    Timeout {
        /// The limit.
        timeout: Duration,
        /// The run's directory (console log, stdout, stderr).
        dir: PathBuf,
        /// The last lines of the serial console.
        console_tail: String,
    },
    /// The VM powered off without reporting the command's exit status.
    #[error(
        "the VM stopped without reporting an exit status (qemu: {qemu_status}); \
         console and output kept in {dir}\n{qemu_stderr}{console_tail}"
    )]
    NoStatus {
        /// How QEMU exited.
        qemu_status: String,
        /// QEMU's own error output.
        qemu_stderr: String,
        /// The run's directory.
        dir: PathBuf,
        /// The last lines of the serial console.
        console_tail: String,
    },
}
