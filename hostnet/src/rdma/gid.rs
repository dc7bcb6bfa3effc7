//! The RoCE GID table, read from sysfs, and the resolver that picks a RoCE v2 GID index.
//!
//! Layout relied on, under `<root>/class/infiniband/<dev>/ports/<port>/` (Linux
//! `drivers/infiniband/core/sysfs.c`; research notes §7.1):
//! - `gids/<i>`: `%pI6`, eight groups of four lowercase hex digits, never compressed; an empty
//!   or reserved entry reads as the zero GID.
//! - `gid_attrs/types/<i>`: `IB/RoCE v1` or `RoCE v2`; reading an empty entry fails with
//!   EINVAL ("for user space compatibility reasons").
//! - `gid_attrs/ndevs/<i>`: the netdev's name; EINVAL when empty or without a netdev.
//!
//! The kernel fills the table from netdev addresses on a workqueue (`roce_gid_mgmt.c`), so an
//! address added a moment ago may not have its GID yet: [`RdmaSysfs::resolve_wait`] polls for a
//! bounded time and returns [`GidError::NotYetPopulated`], which a CNI maps to "try again
//! later". Entries come and go with addresses, leaving holes; indices are never assumed.
//!
//! Sysfs shows the RDMA devices visible to the namespace it was mounted in: in exclusive mode,
//! read the table of a device moved into a pod through a sysfs mounted inside that namespace.
//! `ndevs/<i>` is a bare name, not namespace-qualified: in shared mode every pod's `net1`
//! appears as `net1` in the one table (seen in the kernel tier, 6.1), so the resolver always
//! matches the address too, never the name alone.

use std::fmt;
use std::fs;
use std::io;
use std::net::{IpAddr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The type of a GID entry (`gid_attrs/types/<i>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GidType {
    /// `IB/RoCE v1`: InfiniBand, or RoCE v1 (Ethernet, not routable).
    IbRoceV1,
    /// `RoCE v2`: RoCE over UDP/IP, what a routed RoCE fabric needs.
    RoceV2,
    /// Anything else the kernel prints.
    Other(String),
}

impl GidType {
    /// Parses the sysfs text (trailing newline allowed).
    pub fn parse(text: &str) -> Self {
        match text.trim_end() {
            "IB/RoCE v1" => Self::IbRoceV1,
            "RoCE v2" => Self::RoceV2,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for GidType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::IbRoceV1 => f.write_str("IB/RoCE v1"),
            Self::RoceV2 => f.write_str("RoCE v2"),
            Self::Other(s) => f.write_str(s),
        }
    }
}

/// One populated entry of a port's GID table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GidEntry {
    /// The index (what `NCCL_IB_GID_INDEX` and `ibv_query_gid` take).
    pub index: u32,
    /// The GID (IPv4 addresses appear IPv4-mapped, `::ffff:a.b.c.d`).
    pub gid: Ipv6Addr,
    /// The type, when readable.
    pub gid_type: Option<GidType>,
    /// The netdev the entry belongs to, when readable.
    pub ndev: Option<String>,
}

/// Parses a `gids/<i>` line: `fe80:0000:0000:0000:5054:00ff:fe00:0001`.
pub fn parse_gid(text: &str) -> Option<Ipv6Addr> {
    text.trim_end().parse().ok()
}

/// The GID a RoCE v2 entry carries for `addr`: IPv4-mapped for IPv4, the address for IPv6.
pub fn gid_of(addr: IpAddr) -> Ipv6Addr {
    match addr {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

/// The lowest-indexed RoCE v2 entry for `addr` on `netdev`, among `entries`.
pub fn find_roce_v2<'a>(
    entries: &'a [GidEntry],
    netdev: &str,
    addr: IpAddr,
) -> Option<&'a GidEntry> {
    let gid = gid_of(addr);
    entries
        .iter()
        .filter(|e| {
            e.gid == gid && e.gid_type == Some(GidType::RoceV2) && e.ndev.as_deref() == Some(netdev)
        })
        .min_by_key(|e| e.index)
}

/// A port of an RDMA device, named as sysfs names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RdmaPortRef {
    /// The RDMA device (`mlx5_0`, `rxe0`).
    pub device: String,
    /// The port number, from 1.
    pub port: u32,
}

/// What to resolve: the RoCE v2 GID of `addr` on `netdev`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GidQuery {
    /// The RDMA device to search; `None` searches every device.
    pub device: Option<String>,
    /// The netdev the GID must belong to: the pod's interface, or its VLAN sub-interface when
    /// VLAN tagging happens in the pod (VGT); the entries of a VLAN upper carry its name.
    pub netdev: String,
    /// The interface's address (IPv4 or IPv6).
    pub addr: IpAddr,
}

/// A resolved GID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GidMatch {
    /// Where it is.
    pub port: RdmaPortRef,
    /// The index.
    pub index: u32,
    /// The GID.
    pub gid: Ipv6Addr,
}

/// A failure reading or resolving the GID table.
#[derive(Debug, thiserror::Error)]
pub enum GidError {
    /// A directory listing failed.
    #[error("read {path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A name that cannot be part of a sysfs path.
    #[error("{name:?} is not a valid {kind} name")]
    InvalidName {
        /// The name (truncated).
        name: String,
        /// `RDMA device` or `netdev`.
        kind: &'static str,
    },
    /// The RDMA device is not in this sysfs.
    #[error(
        "RDMA device {device} not found at {path}; is it in another network namespace (then \
         read a sysfs mounted inside that namespace), or not created yet?"
    )]
    NoSuchDevice {
        /// The device.
        device: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The GID has not appeared within the wait: the kernel fills the table asynchronously.
    #[error(
        "no RoCE v2 GID for {addr} on {netdev} in the GID table of {devices} after {} ms; the \
         kernel adds GIDs asynchronously after an address is added: try again later",
        waited.as_millis()
    )]
    NotYetPopulated {
        /// The address looked for.
        addr: IpAddr,
        /// The netdev looked for.
        netdev: String,
        /// The devices searched (`rxe0`, or `every RDMA device`).
        devices: String,
        /// How long the resolver waited.
        waited: Duration,
    },
}

impl GidError {
    /// True when asking again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::NotYetPopulated { .. })
    }
}

/// The RDMA part of a sysfs tree (`/sys` in production, a fake tree in tests).
#[derive(Debug, Clone)]
pub struct RdmaSysfs {
    root: PathBuf,
}

impl Default for RdmaSysfs {
    fn default() -> Self {
        Self::new("/sys")
    }
}

impl RdmaSysfs {
    /// The tree at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn class(&self) -> PathBuf {
        self.root.join("class/infiniband")
    }

    fn device_dir(&self, device: &str) -> Result<PathBuf, GidError> {
        check_name(device, "RDMA device")?;
        let dir = self.class().join(device);
        if dir.is_dir() {
            Ok(dir)
        } else {
            Err(GidError::NoSuchDevice {
                device: device.to_owned(),
                path: dir,
            })
        }
    }

    /// The RDMA devices in this sysfs (empty when there is no `class/infiniband`).
    pub fn devices(&self) -> Result<Vec<String>, GidError> {
        let mut names: Vec<String> = list(&self.class())?
            .into_iter()
            .filter(|n| check_name(n, "RDMA device").is_ok())
            .collect();
        names.sort();
        Ok(names)
    }

    /// The sysfs directory of `device`'s port `port`.
    pub(crate) fn port_dir(&self, device: &str, port: u32) -> Result<PathBuf, GidError> {
        Ok(self
            .device_dir(device)?
            .join("ports")
            .join(port.to_string()))
    }

    /// The port numbers of `device`.
    pub fn ports(&self, device: &str) -> Result<Vec<u32>, GidError> {
        let dir = self.device_dir(device)?.join("ports");
        let mut ports: Vec<u32> = list(&dir)?.iter().filter_map(|n| n.parse().ok()).collect();
        ports.sort_unstable();
        Ok(ports)
    }

    /// The populated entries of a port's GID table, by index. Zero GIDs are left out, and so
    /// are entries whose GID cannot be read; a type or netdev that cannot be read (EINVAL on an
    /// entry being removed, or hidden from this namespace) is `None`.
    pub fn gid_entries(&self, device: &str, port: u32) -> Result<Vec<GidEntry>, GidError> {
        let port_dir = self
            .device_dir(device)?
            .join("ports")
            .join(port.to_string());
        let gids_dir = port_dir.join("gids");
        let mut indices: Vec<u32> = list(&gids_dir)?
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        indices.sort_unstable();
        let mut entries = Vec::new();
        for index in indices {
            let i = index.to_string();
            let Some(gid) = read_text(&gids_dir.join(&i)).and_then(|t| parse_gid(&t)) else {
                continue;
            };
            if gid.is_unspecified() {
                continue;
            }
            let gid_type =
                read_text(&port_dir.join("gid_attrs/types").join(&i)).map(|t| GidType::parse(&t));
            let ndev = read_text(&port_dir.join("gid_attrs/ndevs").join(&i))
                .map(|t| t.trim_end().to_owned())
                .filter(|n| !n.is_empty());
            entries.push(GidEntry {
                index,
                gid,
                gid_type,
                ndev,
            });
        }
        Ok(entries)
    }

    /// The RDMA ports with at least one GID entry on `netdev` (how a netdev's RDMA device is
    /// found without PCI information: a VLAN or macvlan upper's entries name the upper).
    pub fn ports_of_netdev(&self, netdev: &str) -> Result<Vec<RdmaPortRef>, GidError> {
        check_name(netdev, "netdev")?;
        let mut found = Vec::new();
        for device in self.devices()? {
            for port in self.ports(&device)? {
                let entries = self.gid_entries(&device, port)?;
                if entries.iter().any(|e| e.ndev.as_deref() == Some(netdev)) {
                    found.push(RdmaPortRef {
                        device: device.clone(),
                        port,
                    });
                }
            }
        }
        Ok(found)
    }

    /// One look at the tables: the lowest RoCE v2 index for the query, if present now.
    pub fn resolve(&self, query: &GidQuery) -> Result<Option<GidMatch>, GidError> {
        check_name(&query.netdev, "netdev")?;
        let devices = match &query.device {
            Some(d) => vec![d.clone()],
            None => self.devices()?,
        };
        for device in devices {
            for port in self.ports(&device)? {
                let entries = self.gid_entries(&device, port)?;
                if let Some(e) = find_roce_v2(&entries, &query.netdev, query.addr) {
                    return Ok(Some(GidMatch {
                        port: RdmaPortRef {
                            device: device.clone(),
                            port,
                        },
                        index: e.index,
                        gid: e.gid,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// Resolves the query, polling every `interval` for at most `timeout`, because the kernel
    /// populates the table asynchronously after an address is added.
    pub fn resolve_wait(
        &self,
        query: &GidQuery,
        timeout: Duration,
        interval: Duration,
    ) -> Result<GidMatch, GidError> {
        let start = Instant::now();
        loop {
            if let Some(found) = self.resolve(query)? {
                return Ok(found);
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(GidError::NotYetPopulated {
                    addr: query.addr,
                    netdev: query.netdev.clone(),
                    devices: query
                        .device
                        .clone()
                        .unwrap_or_else(|| "every RDMA device".to_owned()),
                    waited,
                });
            }
            std::thread::sleep(interval.min(timeout - waited));
        }
    }
}

/// Names that may become one path component: no `/`, NUL, `.` or `..`, at most 64 bytes
/// (`IB_DEVICE_NAME_MAX`; netdev names are shorter still).
fn check_name(name: &str, kind: &'static str) -> Result<(), GidError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name != "."
        && name != ".."
        && !name.contains(['/', '\0']);
    if ok {
        Ok(())
    } else {
        Err(GidError::InvalidName {
            name: name.chars().take(64).collect(),
            kind,
        })
    }
}

/// Entry names of `dir`; a missing directory is empty.
fn list(dir: &Path) -> Result<Vec<String>, GidError> {
    match fs::read_dir(dir) {
        Ok(rd) => Ok(rd
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(GidError::Io {
            path: dir.to_owned(),
            source,
        }),
    }
}

/// A sysfs attribute's text, or `None` on any read error (EINVAL for empty GID entries).
fn read_text(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::net::Ipv4Addr;

    /// A fake `class/infiniband` tree. Entries written as `None` exist as files that cannot be
    /// read as text (a directory in their place), standing in for the kernel's EINVAL.
    struct Tree(tempfile::TempDir);

    impl Tree {
        fn new() -> Self {
            Self(tempfile::tempdir().unwrap())
        }

        fn sysfs(&self) -> RdmaSysfs {
            RdmaSysfs::new(self.0.path())
        }

        fn entry(
            &self,
            dev: &str,
            port: u32,
            i: u32,
            gid: &str,
            ty: Option<&str>,
            ndev: Option<&str>,
        ) {
            let p = self
                .0
                .path()
                .join(format!("class/infiniband/{dev}/ports/{port}"));
            for d in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
                fs::create_dir_all(p.join(d)).unwrap();
            }
            fs::write(p.join(format!("gids/{i}")), format!("{gid}\n")).unwrap();
            for (dir, val) in [("gid_attrs/types", ty), ("gid_attrs/ndevs", ndev)] {
                let f = p.join(dir).join(i.to_string());
                match val {
                    Some(v) => fs::write(f, format!("{v}\n")).unwrap(),
                    None => fs::create_dir_all(f).unwrap(),
                }
            }
        }
    }

    const ZERO: &str = "0000:0000:0000:0000:0000:0000:0000:0000";
    const LL: &str = "fe80:0000:0000:0000:5054:00ff:fe00:0001";
    const V4: &str = "0000:0000:0000:0000:0000:ffff:c000:0201";

    fn rxe_table(t: &Tree) {
        t.entry("rxe0", 1, 0, LL, Some("IB/RoCE v1"), Some("eth0"));
        t.entry("rxe0", 1, 1, LL, Some("RoCE v2"), Some("eth0"));
        t.entry("rxe0", 1, 2, ZERO, None, None);
        t.entry("rxe0", 1, 3, ZERO, None, None);
        t.entry("rxe0", 1, 4, V4, Some("IB/RoCE v1"), Some("eth0"));
        t.entry("rxe0", 1, 5, V4, Some("RoCE v2"), Some("eth0"));
        t.entry("rxe0", 1, 6, V4, Some("RoCE v2"), Some("eth0.100"));
        for i in 7..12 {
            t.entry("rxe0", 1, i, ZERO, None, None);
        }
    }

    #[test]
    fn parses_sysfs_formats() {
        assert_eq!(
            parse_gid(&format!("{V4}\n")),
            Some(Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped())
        );
        assert_eq!(parse_gid(&format!("{ZERO}\n")), Some(Ipv6Addr::UNSPECIFIED));
        assert_eq!(parse_gid("garbage"), None);
        assert_eq!(GidType::parse("RoCE v2\n"), GidType::RoceV2);
        assert_eq!(GidType::parse("IB/RoCE v1\n"), GidType::IbRoceV1);
        assert_eq!(
            GidType::parse("Invalid GID type\n"),
            GidType::Other("Invalid GID type".into())
        );
        assert_eq!(
            gid_of("2001:db8::1".parse().unwrap()),
            "2001:db8::1".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn zero_and_unreadable_entries_are_skipped_and_holes_kept() {
        let t = Tree::new();
        rxe_table(&t);
        let entries = t.sysfs().gid_entries("rxe0", 1).unwrap();
        let idx: Vec<u32> = entries.iter().map(|e| e.index).collect();
        assert_eq!(idx, [0, 1, 4, 5, 6]);
        // Numeric order, not the directory's lexical order ("10" < "2").
        t.entry("rxe0", 1, 20, V4, Some("RoCE v2"), None);
        let entries = t.sysfs().gid_entries("rxe0", 1).unwrap();
        assert_eq!(entries.last().unwrap().index, 20);
        assert_eq!(entries.last().unwrap().ndev, None);
    }

    #[test]
    fn resolver_picks_roce_v2_on_the_right_netdev() {
        let t = Tree::new();
        rxe_table(&t);
        let s = t.sysfs();
        let q = |netdev: &str, addr: &str| GidQuery {
            device: Some("rxe0".into()),
            netdev: netdev.into(),
            addr: addr.parse().unwrap(),
        };
        let m = s.resolve(&q("eth0", "192.0.2.1")).unwrap().unwrap();
        assert_eq!(
            (m.port.device.as_str(), m.port.port, m.index),
            ("rxe0", 1, 5)
        );
        assert_eq!(
            s.resolve(&q("eth0.100", "192.0.2.1"))
                .unwrap()
                .unwrap()
                .index,
            6
        );
        assert_eq!(
            s.resolve(&q("eth0", "fe80::5054:ff:fe00:1"))
                .unwrap()
                .unwrap()
                .index,
            1
        );
        assert_eq!(s.resolve(&q("eth1", "192.0.2.1")).unwrap(), None);
        assert_eq!(s.resolve(&q("eth0", "192.0.2.9")).unwrap(), None);
        // Any device when none is named.
        let any = GidQuery {
            device: None,
            ..q("eth0", "192.0.2.1")
        };
        assert_eq!(s.resolve(&any).unwrap().unwrap().index, 5);
    }

    #[test]
    fn resolve_wait_times_out_with_a_retryable_error() {
        let t = Tree::new();
        rxe_table(&t);
        let q = GidQuery {
            device: Some("rxe0".into()),
            netdev: "eth0".into(),
            addr: "198.51.100.7".parse().unwrap(),
        };
        let err = t
            .sysfs()
            .resolve_wait(&q, Duration::from_millis(30), Duration::from_millis(10))
            .unwrap_err();
        assert!(err.is_retryable());
        let msg = err.to_string();
        assert!(
            msg.contains("198.51.100.7 on eth0") && msg.contains("rxe0"),
            "{msg}"
        );
        assert!(msg.contains("try again later"), "{msg}");
    }

    #[test]
    fn ports_of_netdev_scans_ndevs() {
        let t = Tree::new();
        rxe_table(&t);
        t.entry("rxe1", 1, 0, LL, Some("RoCE v2"), Some("eth1"));
        let s = t.sysfs();
        assert_eq!(s.devices().unwrap(), ["rxe0", "rxe1"]);
        let on = |n: &str| s.ports_of_netdev(n).unwrap();
        assert_eq!(
            on("eth1"),
            [RdmaPortRef {
                device: "rxe1".into(),
                port: 1
            }]
        );
        assert_eq!(on("eth0.100")[0].device, "rxe0");
        assert!(on("eth9").is_empty());
    }

    #[test]
    fn bad_names_and_missing_devices_are_errors_not_paths() {
        let t = Tree::new();
        rxe_table(&t);
        let s = t.sysfs();
        assert!(matches!(s.ports("../x"), Err(GidError::InvalidName { .. })));
        assert!(matches!(
            s.ports_of_netdev("a/b"),
            Err(GidError::InvalidName { .. })
        ));
        let err = s.gid_entries("mlx5_9", 1).unwrap_err();
        assert!(matches!(err, GidError::NoSuchDevice { .. }), "{err}");
        assert!(!err.is_retryable());
        // No class/infiniband at all: no devices, not an error.
        assert!(
            RdmaSysfs::new(t.0.path().join("nothing"))
                .devices()
                .unwrap()
                .is_empty()
        );
    }
}
