//! A NIC driver's statistics, as `ethtool -S` prints them (`SIOCETHTOOL`: `ETHTOOL_GSSET_INFO`,
//! `ETHTOOL_GSTRINGS`, `ETHTOOL_GSTATS`), for the counters that exist nowhere else: mlx5's
//! per-priority PFC pause counters (`rx_prio3_pause`, `tx_prio3_pause_duration`, ...).
//!
//! The socket answers for the namespace it was opened in, whichever thread asks later, so the
//! agent opens it once inside the node's namespace and reads from any thread.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::netns::{NetNs, NetNsError};

const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;
/// A driver offering more is refused rather than trusted with a huge allocation (mlx5 with
/// many channels has a few thousand).
const MAX_STATS: usize = 65_536;

/// A socket for ethtool requests in one network namespace.
#[derive(Debug)]
pub struct EthtoolSocket {
    fd: OwnedFd,
}

impl EthtoolSocket {
    /// Opens the socket inside `ns` (from a plain thread: it enters the namespace briefly).
    pub fn open_in(ns: &NetNs) -> Result<Self, NetNsError> {
        ns.run(Self::open_here)?.map_err(|source| NetNsError::Open {
            path: ns.path().to_owned(),
            source,
        })
    }

    /// Opens the socket in the calling thread's namespace.
    pub fn open_here() -> io::Result<Self> {
        #[allow(unsafe_code)]
        // SAFETY: socket(2) with constant arguments; the result is checked before use.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        #[allow(unsafe_code)]
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { fd })
    }

    /// `ETHTOOL_*` request `data` (a `u64` buffer, for the kernel structs' alignment) on
    /// interface `ifname`.
    fn request(&self, ifname: &str, data: &mut [u64]) -> io::Result<()> {
        let name = ifname.as_bytes();
        if name.is_empty()
            || name.len() >= libc::IFNAMSIZ
            || name
                .iter()
                .any(|&b| b == 0 || b == b'/' || b.is_ascii_whitespace())
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{ifname:?} is not an interface name"),
            ));
        }
        #[allow(unsafe_code)]
        // SAFETY: an all-zero ifreq is valid (a name of NULs and a null pointer).
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in ifr.ifr_name.iter_mut().zip(name) {
            *dst = *src as libc::c_char;
        }
        ifr.ifr_ifru.ifru_data = data.as_mut_ptr().cast();
        #[allow(unsafe_code)]
        // SAFETY: `ifr` is a valid ifreq whose data pointer refers to `data`, which is large
        // enough for the request's reply (the callers size it from the counts the kernel gave).
        let rc = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::SIOCETHTOOL as libc::Ioctl,
                &mut ifr,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// How many statistics the driver of `ifname` has (0 when it offers none).
    fn count(&self, ifname: &str) -> io::Result<usize> {
        // struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[]; }
        let mut buf = [0u64; 3];
        set_bytes(&mut buf, 0, &words(&[ETHTOOL_GSSET_INFO, 0]));
        set_bytes(&mut buf, 8, &(1u64 << ETH_SS_STATS).to_ne_bytes());
        match self.request(ifname, &mut buf) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return Ok(0),
            Err(e) => return Err(e),
        }
        let reply = bytes_of(&buf);
        let mask = u64::from_ne_bytes(reply[8..16].try_into().unwrap_or([0; 8]));
        if mask & (1u64 << ETH_SS_STATS) == 0 {
            return Ok(0);
        }
        let count = u32::from_ne_bytes(reply[16..20].try_into().unwrap_or([0; 4]));
        let n = usize::try_from(count).unwrap_or(usize::MAX);
        if n > MAX_STATS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{ifname} claims {n} statistics"),
            ));
        }
        Ok(n)
    }

    /// Every statistic of `ifname`'s driver, by name, in the driver's order.
    pub fn stats(&self, ifname: &str) -> io::Result<Vec<(String, u64)>> {
        let n = self.count(ifname)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        // struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[]; }
        let mut strings = vec![0u64; (12 + n * ETH_GSTRING_LEN).div_ceil(8)];
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        let header = words(&[ETHTOOL_GSTRINGS, ETH_SS_STATS, n32]);
        set_bytes(&mut strings, 0, &header);
        self.request(ifname, &mut strings)?;
        // struct ethtool_stats { u32 cmd; u32 n_stats; u64 data[]; }
        let mut values = vec![0u64; 1 + n];
        set_bytes(&mut values, 0, &words(&[ETHTOOL_GSTATS, n32]));
        self.request(ifname, &mut values)?;
        let names = bytes_of(&strings);
        let got = u32::from_ne_bytes(bytes_of(&values)[4..8].try_into().unwrap_or([0; 4]));
        let n = n.min(usize::try_from(got).unwrap_or(0));
        Ok((0..n)
            .map(|i| {
                let raw = &names[12 + i * ETH_GSTRING_LEN..12 + (i + 1) * ETH_GSTRING_LEN];
                let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                (
                    String::from_utf8_lossy(&raw[..end]).into_owned(),
                    values[1 + i],
                )
            })
            .collect())
    }
}

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

fn bytes_of(buf: &[u64]) -> Vec<u8> {
    buf.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

fn set_bytes(buf: &mut [u64], at: usize, bytes: &[u8]) {
    let mut all = bytes_of(buf);
    all[at..at + bytes.len()].copy_from_slice(bytes);
    for (w, chunk) in buf.iter_mut().zip(all.chunks(8)) {
        *w = u64::from_ne_bytes(chunk.try_into().unwrap_or([0; 8]));
    }
}

/// A per-priority PFC pause statistic of mlx5 (kernel `mlx5/counters.rst`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PauseStat {
    /// `rx` or `tx`.
    pub direction: &'static str,
    /// The priority, 0-7.
    pub priority: u8,
    /// `frames` (`..._pause`), `duration` (`..._pause_duration`, microseconds) or
    /// `transitions` (`rx_prio{p}_pause_transition`).
    pub kind: &'static str,
}

/// The pause statistic `name` is, if it is one.
pub fn pause_stat(name: &str) -> Option<PauseStat> {
    let (direction, rest) = if let Some(r) = name.strip_prefix("rx_prio") {
        ("rx", r)
    } else {
        ("tx", name.strip_prefix("tx_prio")?)
    };
    let (digit, rest) = rest.split_at_checked(1)?;
    let priority: u8 = digit.parse().ok().filter(|p| *p < 8)?;
    let kind = match rest {
        "_pause" => "frames",
        "_pause_duration" => "duration",
        "_pause_transition" => "transitions",
        _ => return None,
    };
    Some(PauseStat {
        direction,
        priority,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlx5_pause_names_and_nothing_else() {
        assert_eq!(
            pause_stat("rx_prio3_pause"),
            Some(PauseStat {
                direction: "rx",
                priority: 3,
                kind: "frames"
            })
        );
        assert_eq!(
            pause_stat("tx_prio7_pause_duration").unwrap().kind,
            "duration"
        );
        assert_eq!(
            pause_stat("rx_prio0_pause_transition").unwrap().kind,
            "transitions"
        );
        for other in [
            "rx_prio8_pause",
            "rx_prio3_bytes",
            "rx_pause_ctrl_phy",
            "tx_prio3_pause_x",
            "rx_prio",
            "peer_ifindex",
        ] {
            assert_eq!(pause_stat(other), None, "{other}");
        }
    }

    #[test]
    fn names_that_are_no_interface_are_refused_before_the_kernel() {
        let s = EthtoolSocket::open_here().unwrap();
        for bad in ["", "a/b", "x y", "0123456789abcdef"] {
            assert_eq!(
                s.stats(bad).unwrap_err().kind(),
                io::ErrorKind::InvalidInput,
                "{bad:?}"
            );
        }
        assert_eq!(
            s.stats("lo").unwrap(),
            Vec::new(),
            "lo has no driver statistics"
        );
    }
}
