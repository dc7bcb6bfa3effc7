//! Booting the guest and running one command in it.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::error::{QEMU, VmError};
use crate::initramfs::{DEFAULT_MODULES, Initramfs};
use crate::kernel::Kernel;

/// A minimal firmware for booting a Linux kernel directly.
const QBOOT: &str = "/usr/share/qemu/qboot.rom";

/// Failed runs' directories older than this are removed when a new run starts.
const KEEP_FAILED_RUNS: Duration = Duration::from_secs(24 * 3600);

/// One VM at a time per test process: TCG is CPU-bound and the machine has two cores, so
/// parallel boots only make each other slower (and the timeouts flakier).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Distinguishes the output directories of runs in one process.
static RUN_COUNTER: AtomicU32 = AtomicU32::new(0);

/// What the command in the VM did.
#[derive(Debug, Clone)]
pub struct VmOutput {
    /// Its exit status (a shell-style status: 128+N for a signal, 126/127 for exec failures).
    pub status: i32,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// The serial console (kernel messages at warning level and above).
    pub console: String,
    /// Guest uptime when the command was about to start: the boot time as the kernel saw it.
    pub guest_boot: Option<Duration>,
    /// Host wall time from starting QEMU to its exit.
    pub wall: Duration,
}

impl VmOutput {
    /// True when the command exited with status 0.
    pub fn success(&self) -> bool {
        self.status == 0
    }

    /// Panics, showing everything the VM said, unless the command succeeded.
    #[track_caller]
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.success(),
            "command in the VM exited with {}\n--- stdout\n{}\n--- stderr\n{}\n--- console (tail)\n{}",
            self.status,
            self.stdout,
            self.stderr,
            tail(&self.console, 40)
        );
        self
    }
}

/// Starts a [`VmBuilder`].
pub struct Vm;

impl Vm {
    /// A VM with the defaults: 2 NICs, 1 GiB, 1 vCPU, [`DEFAULT_MODULES`], 5 minute limit.
    pub fn builder() -> VmBuilder {
        VmBuilder {
            nics: 2,
            memory_mib: 1024,
            cpus: 1,
            timeout: Duration::from_secs(300),
            modules: DEFAULT_MODULES.iter().map(|m| (*m).to_owned()).collect(),
            env: Vec::new(),
            append: Vec::new(),
            nic_model: NicModel::VirtioNet,
            module_params: Vec::new(),
        }
    }
}

/// The emulated NIC model.
///
/// With virtio-net the netdev hangs off the virtio device, one level below the PCI function
/// (`/sys/bus/pci/devices/<bdf>/virtio<N>/net/eth0`, and `/sys/class/net/eth0/device` points
/// at `virtio<N>`). With e1000e it sits where a hardware NIC's does
/// (`/sys/bus/pci/devices/<bdf>/net/eth0`), which is what code reading the SR-IOV model wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicModel {
    /// `virtio-net-pci` (the default: the fastest under TCG).
    VirtioNet,
    /// `e1000e` (Intel 82574L): a netdev directly under its PCI function.
    E1000e,
    /// `igb` (Intel 82576, QEMU 8.0 or newer) with SR-IOV: each NIC is a PF behind its own
    /// PCIe root port on a `q35` machine, with up to 7 VFs (`sriov_numvfs`) bound by `igbvf`.
    Igb,
}

impl NicModel {
    fn qemu_device(self) -> &'static str {
        match self {
            Self::VirtioNet => "virtio-net-pci",
            Self::E1000e => "e1000e",
            Self::Igb => "igb",
        }
    }

    /// The guest drivers to load beyond the boot modules.
    fn guest_drivers(self) -> &'static [&'static str] {
        match self {
            Self::VirtioNet => &[],
            Self::E1000e => &["e1000e"],
            Self::Igb => &["igb", "igbvf"],
        }
    }

    /// SR-IOV needs PCI Express: a `q35` machine with each NIC behind a root port.
    fn machine(self) -> &'static str {
        match self {
            Self::Igb => "q35",
            Self::VirtioNet | Self::E1000e => "pc",
        }
    }
}

/// How to boot the VM and what to run in it.
#[derive(Debug, Clone)]
pub struct VmBuilder {
    nics: u8,
    memory_mib: u32,
    cpus: u8,
    timeout: Duration,
    modules: Vec<String>,
    env: Vec<(String, String)>,
    append: Vec<String>,
    nic_model: NicModel,
    module_params: Vec<(String, String)>,
}

impl VmBuilder {
    /// The NIC model (default [`NicModel::VirtioNet`]).
    pub fn nic_model(mut self, model: NicModel) -> Self {
        self.nic_model = model;
        self
    }

    /// Number of virtio-net PCI NICs (`eth0`, `eth1`, ...), all on one QEMU hub, so they share
    /// one L2 segment.
    pub fn nics(mut self, n: u8) -> Self {
        self.nics = n;
        self
    }

    /// Guest memory in MiB.
    pub fn memory_mib(mut self, mib: u32) -> Self {
        self.memory_mib = mib;
        self
    }

    /// Guest vCPUs.
    pub fn cpus(mut self, n: u8) -> Self {
        self.cpus = n.max(1);
        self
    }

    /// How long the whole run (boot, command, power-off) may take.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Replaces the modules loaded at boot (after the boot modules), in load order.
    pub fn modules(mut self, modules: &[&str]) -> Self {
        self.modules = modules.iter().map(|m| (*m).to_owned()).collect();
        self
    }

    /// Sets an environment variable for the command.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Passes `param` (`netns_mode=0`) when stage 1 loads `module` (`ib_core`), as
    /// `options ib_core netns_mode=0` in modprobe.d does on a real host.
    pub fn module_param(mut self, module: impl Into<String>, param: impl Into<String>) -> Self {
        self.module_params.push((module.into(), param.into()));
        self
    }

    /// Appends a word to the kernel command line (built-in code only: parameters of modules
    /// go through [`VmBuilder::module_param`]).
    pub fn kernel_arg(mut self, arg: impl Into<String>) -> Self {
        self.append.push(arg.into());
        self
    }

    /// Runs `argv` in the VM; panics with a clear message if the VM cannot be run at all
    /// (QEMU or the kernel missing, boot failure, timeout). The command's own failure is in
    /// [`VmOutput::status`].
    #[track_caller]
    pub fn run<S: AsRef<OsStr>>(&self, argv: &[S]) -> VmOutput {
        match self.try_run(argv) {
            Ok(out) => out,
            Err(e) => panic!("kernel tier: {e}"),
        }
    }

    /// Runs a shell script (`/bin/sh -c script`) in the VM; panics as [`VmBuilder::run`].
    #[track_caller]
    pub fn run_script(&self, script: &str) -> VmOutput {
        self.run(&["/bin/sh", "-c", script])
    }

    /// As [`VmBuilder::run`], returning the harness's failures instead of panicking.
    pub fn try_run<S: AsRef<OsStr>>(&self, argv: &[S]) -> Result<VmOutput, VmError> {
        let qemu = find_in_path(QEMU).ok_or(VmError::QemuMissing)?;
        let kernel = Kernel::find()?;
        let cache = cache_dir();
        let mut modules: Vec<&str> = self.modules.iter().map(String::as_str).collect();
        modules.extend(self.nic_model.guest_drivers());
        if self.nic_model == NicModel::Igb {
            require_device(&qemu, "igb")?;
        }
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let params: Vec<(&str, &str)> = self
            .module_params
            .iter()
            .map(|(m, p)| (m.as_str(), p.as_str()))
            .collect();
        let initramfs = Initramfs::build(&kernel, &modules, &params, &cache)?;

        prune_old_runs(&cache.join("runs"));
        let dir = cache.join("runs").join(format!(
            "{}-{}",
            std::process::id(),
            RUN_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let io = |what, path: &Path| {
            let path = path.to_owned();
            move |source| VmError::Io { what, path, source }
        };
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(io("create the run directory", &dir))?;
        // The caller's working directory, visible read-only in the VM.
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let script = command_script(&cwd, &self.env, argv);
        fs::write(dir.join("cmd.sh"), script).map_err(io("write cmd.sh", &dir))?;

        let console = dir.join("console.log");
        let mut cmd = Command::new(qemu);
        cmd.args([
            "-accel",
            "tcg",
            "-machine",
            self.nic_model.machine(),
            "-cpu",
            "max",
        ]);
        // qboot (shipped with Debian's QEMU) starts the kernel sooner than SeaBIOS: about
        // 0.4 s of a 6 s run under TCG on this machine.
        if Path::new(QBOOT).is_file() {
            cmd.args(["-bios", QBOOT]);
        }
        cmd.args(["-m", &self.memory_mib.to_string()])
            .args(["-smp", &self.cpus.to_string()])
            .args([
                "-nodefaults",
                "-no-user-config",
                "-display",
                "none",
                "-no-reboot",
            ])
            .args(["-monitor", "none"])
            .arg("-serial")
            .arg(format!("file:{}", console.display()))
            .arg("-kernel")
            .arg(&kernel.image)
            .arg("-initrd")
            .arg(&initramfs.path);
        let mut append = String::from("console=ttyS0 panic=-1 loglevel=4 quiet");
        for a in &self.append {
            append.push(' ');
            append.push_str(a);
        }
        cmd.args(["-append", &append]);
        // The host root, read-only; `multidevs=remap` keeps inode numbers unique across the
        // host's mounts (without it QEMU warns and the guest may see colliding inodes).
        cmd.args([
            "-fsdev",
            "local,id=spinelroot,path=/,security_model=none,readonly=on,multidevs=remap",
            "-device",
            "virtio-9p-pci,fsdev=spinelroot,mount_tag=spinelroot",
        ]);
        cmd.arg("-fsdev")
            .arg(format!(
                "local,id=spinelout,path={},security_model=none",
                dir.display()
            ))
            .args([
                "-device",
                "virtio-9p-pci,fsdev=spinelout,mount_tag=spinelout",
            ]);
        for i in 0..self.nics {
            // A root port per NIC: VFs are routed through the port's bus (ARI), and QEMU's igb
            // refuses SR-IOV on the root complex itself.
            let bus = if self.nic_model == NicModel::Igb {
                cmd.arg("-device")
                    .arg(format!("pcie-root-port,id=rp{i},chassis={},slot=0", i + 1));
                format!(",bus=rp{i}")
            } else {
                String::new()
            };
            cmd.arg("-netdev")
                .arg(format!("hubport,id=nic{i},hubid=0"))
                .arg("-device")
                .arg(format!(
                    "{},netdev=nic{i},mac=52:54:00:00:00:{:02x}{bus}",
                    self.nic_model.qemu_device(),
                    i + 1
                ));
        }
        let qemu_err = dir.join("qemu.stderr");
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&qemu_err).map_err(io("create qemu.stderr", &dir))?);

        let start = Instant::now();
        let mut child = cmd.spawn().map_err(io("start qemu", Path::new(QEMU)))?;
        let qemu_status = loop {
            if let Some(status) = child.try_wait().map_err(io("wait for qemu", &dir))? {
                break status;
            }
            if start.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                return Err(VmError::Timeout {
                    timeout: self.timeout,
                    dir: dir.clone(),
                    console_tail: tail(&read_lossy(&console), 30),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let wall = start.elapsed();

        let console_text = read_lossy(&console);
        let Some(status) = fs::read_to_string(dir.join("status"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
        else {
            return Err(VmError::NoStatus {
                qemu_status: qemu_status.to_string(),
                qemu_stderr: read_lossy(&qemu_err),
                dir: dir.clone(),
                console_tail: tail(&console_text, 30),
            });
        };
        let guest_boot = fs::read_to_string(dir.join("boot-uptime"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
            .map(Duration::from_secs_f64);
        let out = VmOutput {
            status,
            stdout: read_lossy(&dir.join("stdout")),
            stderr: read_lossy(&dir.join("stderr")),
            console: console_text,
            guest_boot,
            wall,
        };
        // Keep a failed run's files for a look; a passing one leaves nothing behind.
        if out.success() {
            let _ = fs::remove_dir_all(&dir);
        }
        Ok(out)
    }
}

/// Fails with [`VmError::QemuLacksDevice`] unless this QEMU emulates `device`.
fn require_device(qemu: &Path, device: &str) -> Result<(), VmError> {
    let out = Command::new(qemu)
        .args(["-machine", "none", "-device", "help"])
        .stdin(Stdio::null())
        .output()
        .map_err(|source| VmError::Io {
            what: "ask qemu for its devices",
            path: qemu.to_owned(),
            source,
        })?;
    // `-device help` lists `name "igb", bus PCI, desc "..."` lines on stdout.
    let listed = String::from_utf8_lossy(&out.stdout).contains(&format!("name \"{device}\""));
    if listed {
        return Ok(());
    }
    let version = Command::new(qemu)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .unwrap_or_default();
    Err(VmError::QemuLacksDevice {
        device: device.to_owned(),
        version,
    })
}

/// The script stage 2 runs: `cd`, the environment, then `exec` of the quoted argv.
fn command_script<S: AsRef<OsStr>>(cwd: &Path, env: &[(String, String)], argv: &[S]) -> String {
    let mut s = String::from("# written by spinel-kernel-tests\n");
    let _ = writeln!(s, "cd {} || exit 125", quote(cwd.as_os_str()));
    for (k, v) in env {
        let _ = writeln!(s, "export {k}={}", quote(OsStr::new(v)));
    }
    s.push_str("exec");
    for a in argv {
        s.push(' ');
        s.push_str(&quote(a.as_ref()));
    }
    s.push('\n');
    s
}

/// Single-quotes a word for `sh`.
fn quote(word: &OsStr) -> String {
    format!("'{}'", word.to_string_lossy().replace('\'', r"'\''"))
}

/// Removes run directories (kept because their run failed) older than [`KEEP_FAILED_RUNS`].
fn prune_old_runs(runs: &Path) {
    let Ok(entries) = fs::read_dir(runs) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > KEEP_FAILED_RUNS);
        if old {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn read_lossy(path: &Path) -> String {
    fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `$SPINEL_KERNEL_CACHE`, else `<cargo target dir>/spinel-kernel`, found by walking up from
/// the running executable to the directory cargo marks with `CACHEDIR.TAG`.
fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SPINEL_KERNEL_CACHE") {
        return PathBuf::from(dir);
    }
    let target = std::env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .find(|d| d.join("CACHEDIR.TAG").is_file())
            .map(Path::to_path_buf)
    });
    target
        .unwrap_or_else(std::env::temp_dir)
        .join("spinel-kernel")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_script_quotes_every_word() {
        let s = command_script(
            Path::new("/work/it's"),
            &[("A".into(), "x y".into())],
            &["/bin/echo", "a'b", "$HOME"],
        );
        assert!(s.contains("cd '/work/it'\\''s' || exit 125\n"), "{s}");
        assert!(s.contains("export A='x y'\n"), "{s}");
        assert!(s.ends_with("exec '/bin/echo' 'a'\\''b' '$HOME'\n"), "{s}");
    }

    #[test]
    fn missing_tools_name_the_package_to_install() {
        assert!(
            VmError::QemuMissing
                .to_string()
                .contains("apt-get install qemu-system-x86")
        );
        assert!(
            VmError::BusyboxMissing
                .to_string()
                .contains("apt-get install busybox-static")
        );
        assert_eq!(find_in_path("surely-no-such-binary-spinel"), None);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("", 3), "");
    }
}
