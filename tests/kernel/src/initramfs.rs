//! The guest's initramfs: busybox, the modules the tests need, and a two-stage init.
//!
//! Stage 1 (in the initramfs) loads the modules in `modules.dep` order, mounts the host root
//! read-only over virtio-9p, puts tmpfs on the places programs write to, mounts the writable
//! 9p share that carries the command and its results, and switches root. Stage 2 runs as PID 1
//! on the host's root: it runs the command, writes its exit status and powers the VM off.
//!
//! The archive is cached under the cargo target directory, keyed by kernel version and a hash
//! of everything that goes into it, so only the first run after a change pays for the build.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::cpio::CpioWriter;
use crate::error::VmError;
use crate::kernel::Kernel;

/// Modules stage 1 needs to reach the host root and the NICs (Debian builds them as modules).
pub const BOOT_MODULES: &[&str] = &["virtio_pci", "virtio_net", "9pnet_virtio", "9p", "overlay"];

/// Modules loaded in every VM unless the builder says otherwise, in load order.
///
/// `crc32_generic` comes first: `rdma_rxe` asks the crypto API for "crc32" when a device is
/// created (its ICRC), which `modules.dep` does not express, and the guest has no usermode
/// helper able to load it on demand at that point.
pub const DEFAULT_MODULES: &[&str] = &[
    "crc32_generic",
    "rdma_rxe",
    "8021q",
    "dummy",
    "vrf",
    "macvlan",
    "veth",
    "bridge",
];

/// Module parameters stage 1 passes to `insmod`. (Parameters on the kernel command line reach
/// only built-in code; for modules it is `modprobe` that reads them from `/proc/cmdline`.)
///
/// `dummy numdummies=0`: the dummy module would otherwise create a `dummy0` nobody asked for,
/// and tests want to start from only `lo` and the NICs.
const MODULE_PARAMS: &[(&str, &str)] = &[("dummy", "numdummies=0")];

/// Where the static busybox comes from (Debian's `busybox-static`).
const BUSYBOX: &str = "/bin/busybox";

/// Stage 1: `/init` in the initramfs.
const STAGE1: &str = r#"#!/bin/busybox sh
# Spinel kernel tier, stage 1 (initramfs): modules, host root over 9p, tmpfs, switch_root.
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t sysfs sysfs /sys
$B mount -t devtmpfs devtmpfs /dev
fail() { echo "SPINEL-VM-FAIL: $*"; $B poweroff -f; }
while read -r m params; do
  $B insmod "/modules/$m.ko" $params || fail "insmod $m $params"
done < /modules/order
$B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose spinelroot /newroot \
  || fail "mount the host root (9p tag spinelroot)"
# /run starts empty (the host's sockets and netns mounts mean nothing here). The other
# writable places are overlays: the host's files stay visible (a checkout or target directory
# under /tmp or /root still runs), writes go to tmpfs. Plain tmpfs if overlay is refused.
$B mount -t tmpfs -o mode=0755 tmpfs /newroot/run || fail "tmpfs on /run"
for d in tmp var/tmp var/lib root; do
  ov=/newroot/run/spinel/overlay/$(echo "$d" | $B tr / _)
  $B mkdir -p "$ov/upper" "$ov/work"
  # The merged directory takes its mode from the upper one: keep the host's (1777 on /tmp).
  $B chmod "$($B stat -c %a "/newroot/$d")" "$ov/upper"
  $B mount -t overlay overlay -o "lowerdir=/newroot/$d,upperdir=$ov/upper,workdir=$ov/work" \
    "/newroot/$d" \
    || { echo "SPINEL-VM: overlay on /$d refused, using an empty tmpfs"; \
         $B mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d"; } || fail "writable /$d"
done
$B mkdir -p /newroot/run/spinel/out /newroot/var/lib/spinel /newroot/run/netns
$B mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 spinelout /newroot/run/spinel/out \
  || fail "mount the output share (9p tag spinelout)"
$B cp /bin/busybox /stage2 /newroot/run/spinel/
for d in proc sys dev; do $B mount --move "/$d" "/newroot/$d" || fail "move /$d"; done
exec $B switch_root /newroot /run/spinel/busybox sh /run/spinel/stage2
fail "switch_root"
"#;

/// Stage 2: PID 1 on the host's root.
const STAGE2: &str = r#"# Spinel kernel tier, stage 2 (PID 1 on the host root): run the command, report, power off.
B=/run/spinel/busybox
O=/run/spinel/out
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp
$B mkdir -p /dev/pts /dev/shm
$B mount -t devpts devpts /dev/pts
$B mount -t tmpfs tmpfs /dev/shm
$B cat /proc/uptime > $O/boot-uptime
$B ip link set lo up
$B sh $O/cmd.sh > $O/stdout 2> $O/stderr < /dev/null
echo $? > $O/status.tmp && $B mv $O/status.tmp $O/status
$B sync
$B poweroff -f
"#;

/// A built (or cached) initramfs.
#[derive(Debug, Clone)]
pub struct Initramfs {
    /// The `newc` cpio archive to pass to `-initrd`.
    pub path: PathBuf,
    /// Module names in the order stage 1 loads them.
    pub load_order: Vec<String>,
}

impl Initramfs {
    /// Builds the initramfs for `kernel` with `modules` (plus [`BOOT_MODULES`]) into
    /// `cache_dir`, or reuses the one already there.
    ///
    /// `params` adds module parameters (`("ib_core", "netns_mode=0")`) to the built-in ones;
    /// parameters on the kernel command line do not reach modules loaded by `insmod`.
    pub fn build(
        kernel: &Kernel,
        modules: &[&str],
        params: &[(&str, &str)],
        cache_dir: &Path,
    ) -> Result<Self, VmError> {
        let dep_path = kernel.modules.join("modules.dep");
        let dep = fs::read_to_string(&dep_path).map_err(|source| VmError::Io {
            what: "read modules.dep",
            path: dep_path.clone(),
            source,
        })?;
        let wanted: Vec<&str> = BOOT_MODULES.iter().chain(modules).copied().collect();
        let order = load_order(&dep, &wanted).map_err(|module| VmError::ModuleNotFound {
            module,
            dep: dep_path.clone(),
        })?;
        let busybox_len = fs::metadata(BUSYBOX)
            .map_err(|_| VmError::BusyboxMissing)?
            .len();

        let mut key = Fnv::new();
        for part in [kernel.version.as_str(), STAGE1, STAGE2] {
            key.add(part.as_bytes());
        }
        let params: Vec<(&str, &str)> = MODULE_PARAMS.iter().chain(params).copied().collect();
        for (module, p) in &params {
            key.add(module.as_bytes());
            key.add(p.as_bytes());
        }
        for (name, path) in &order {
            key.add(name.as_bytes());
            key.add(path.as_bytes());
        }
        key.add(&busybox_len.to_le_bytes());
        let path = cache_dir.join(format!("initramfs-{}-{:016x}.cpio", kernel.version, key.0));
        let load_order: Vec<String> = order.iter().map(|(n, _)| n.clone()).collect();
        if path.is_file() {
            return Ok(Self { path, load_order });
        }

        fs::create_dir_all(cache_dir).map_err(|source| VmError::Io {
            what: "create the cache directory",
            path: cache_dir.to_owned(),
            source,
        })?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let io = |source| VmError::Io {
            what: "write the initramfs",
            path: tmp.clone(),
            source,
        };
        let file = fs::File::create(&tmp).map_err(io)?;
        let mut w = CpioWriter::new(BufWriter::new(file));
        for dir in ["bin", "dev", "proc", "sys", "newroot", "modules"] {
            w.dir(dir, 0o755).map_err(io)?;
        }
        w.char_device("dev/console", 0o600, 5, 1).map_err(io)?;
        w.char_device("dev/null", 0o666, 1, 3).map_err(io)?;
        let busybox = fs::read(BUSYBOX).map_err(|_| VmError::BusyboxMissing)?;
        w.file("bin/busybox", 0o755, &busybox).map_err(io)?;
        w.file("init", 0o755, STAGE1.as_bytes()).map_err(io)?;
        w.file("stage2", 0o644, STAGE2.as_bytes()).map_err(io)?;
        let mut order_file = String::new();
        for (name, rel) in &order {
            let src = kernel.modules.join(rel);
            let data = fs::read(&src).map_err(|source| VmError::Io {
                what: "read a kernel module",
                path: src.clone(),
                source,
            })?;
            w.file(&format!("modules/{name}.ko"), 0o644, &data)
                .map_err(io)?;
            order_file.push_str(name);
            for (_, p) in params.iter().filter(|(m, _)| m.replace('-', "_") == *name) {
                order_file.push(' ');
                order_file.push_str(p);
            }
            order_file.push('\n');
        }
        w.file("modules/order", 0o644, order_file.as_bytes())
            .map_err(io)?;
        w.finish()
            .map_err(io)?
            .into_inner()
            .map_err(|e| io(e.into_error()))?;
        fs::rename(&tmp, &path).map_err(io)?;
        Ok(Self { path, load_order })
    }
}

/// The modules to load, dependencies first, as `(name, path relative to the module tree)`.
///
/// `modules.dep` lists each module's full dependency closure ordered so that loading it
/// backwards works (that is what `modprobe` does). Names compare with `-` read as `_`, as the
/// kernel does. Returns the name that has no entry on failure.
pub(crate) fn load_order(dep: &str, wanted: &[&str]) -> Result<Vec<(String, String)>, String> {
    let mut table: HashMap<String, (&str, Vec<&str>)> = HashMap::new();
    for line in dep.lines() {
        let Some((path, deps)) = line.split_once(':') else {
            continue;
        };
        table.insert(module_name(path), (path, deps.split_whitespace().collect()));
    }
    let mut seen = HashSet::new();
    let mut order = Vec::new();
    for want in wanted {
        let name = want.replace('-', "_");
        let (path, deps) = table.get(&name).ok_or_else(|| want.to_string())?;
        for dep in deps.iter().rev().chain(std::iter::once(path)) {
            let dep_name = module_name(dep);
            if seen.insert(dep_name.clone()) {
                order.push((dep_name, (*dep).to_owned()));
            }
        }
    }
    Ok(order)
}

/// `kernel/net/9p/9pnet_virtio.ko` → `9pnet_virtio`.
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

/// FNV-1a, 64 bit: a cache key stable across Rust releases (unlike `DefaultHasher`).
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, bytes: &[u8]) {
        for b in bytes.iter().chain(&[0xff]) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const DEP: &str = "\
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/crypto/crc32_generic.ko:
kernel/sound/drivers/snd-dummy.ko: kernel/sound/core/snd.ko
";

    #[test]
    fn dependencies_load_first_and_once() {
        let order = load_order(DEP, &["virtio_pci", "virtio_net", "crc32_generic"]).unwrap();
        let names: Vec<&str> = order.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "virtio_ring",
                "virtio",
                "virtio_pci_modern_dev",
                "virtio_pci_legacy_dev",
                "virtio_pci",
                "failover",
                "net_failover",
                "virtio_net",
                "crc32_generic"
            ]
        );
        assert_eq!(order[4].1, "kernel/drivers/virtio/virtio_pci.ko");
    }

    #[test]
    fn dashes_and_underscores_name_the_same_module() {
        let order = load_order(DEP, &["snd_dummy"]).unwrap();
        assert_eq!(order.last().unwrap().0, "snd_dummy");
        assert_eq!(load_order(DEP, &["vrf"]).unwrap_err(), "vrf");
    }
}
