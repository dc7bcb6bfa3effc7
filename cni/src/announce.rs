//! Announcing a pod's addresses at its interface's MAC (see [`crate::garp`] for the frames).
//!
//! ADD opens one packet socket inside the pod ([`Announcer`]) and sends the first rounds
//! itself; the later, spaced rounds come from the same binary re-executed as
//! `spinel announce ...`, detached from the runtime (its own process group, no inherited pipes
//! or locks), which receives the socket as its stdin. Handing the socket over matters: closing
//! the last reference to a packet socket costs the kernel an RCU grace period (13-15 ms here),
//! which now happens in the helper, after ADD has returned. Before every round the helper
//! checks that the interface is still the attachment's, so a DEL or the pod's death ends it.

use std::io::Stdin;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use hostnet::mac::MacAddr;
use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::packet::{PacketConfig, PacketError, PacketSocket};
use nix::sys::socket::{AddressFamily, MsgFlags, SockaddrLike, SockaddrStorage, getsockname, send};

use crate::garp;

/// What to announce, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    /// The pod's namespace path.
    pub netns: PathBuf,
    /// Its identity (inode), so a reused path is never announced into.
    pub netns_ino: u64,
    /// The pod interface.
    pub ifname: String,
    /// The interface's alias marker, proving it is still the attachment's.
    pub marker: String,
    /// The interface's MAC.
    pub mac: MacAddr,
    /// The addresses.
    pub addresses: Vec<IpAddr>,
}

/// Waits until `index` has carrier in the pod, at most `timeout`; returns whether it has.
pub fn wait_for_carrier(pod: &mut RouteSocket, index: u32, timeout: Duration) -> bool {
    let start = Instant::now();
    loop {
        if pod
            .link_by_index(index)
            .ok()
            .flatten()
            .is_some_and(|l| l.carrier)
        {
            return true;
        }
        if start.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A send-only packet socket on the pod interface, for one attachment's announcements.
pub struct Announcer {
    sock: PacketSocket,
    frames: Vec<Vec<u8>>,
    announcement: Announcement,
}

impl Announcer {
    /// Opens the socket inside the pod.
    pub fn open(pod_ns: &NetNs, announcement: Announcement) -> Result<Self, PacketError> {
        let sock = PacketSocket::open(pod_ns, &announcement.ifname, &PacketConfig::send_only())?;
        let frames = garp::frames(announcement.mac, &announcement.addresses);
        Ok(Self {
            sock,
            frames,
            announcement,
        })
    }

    /// Sends one round: every frame once.
    pub fn round(&self) -> Result<usize, PacketError> {
        for f in &self.frames {
            self.sock.send(f)?;
        }
        Ok(self.frames.len())
    }

    /// Hands the socket to a detached helper that sends `rounds` more rounds every `interval`.
    pub fn hand_over(self, rounds: u32, interval: Duration) -> std::io::Result<()> {
        let a = &self.announcement;
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg("announce")
            .arg(&a.netns)
            .arg(a.netns_ino.to_string())
            .arg(&a.ifname)
            .arg(&a.marker)
            .arg(a.mac.to_string())
            .arg(interval.as_millis().to_string())
            .arg(rounds.to_string())
            .args(a.addresses.iter().map(IpAddr::to_string))
            .stdin(Stdio::from(self.sock_fd()?))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Its own process group: the runtime's signals to the plugin's group do not reach it,
        // and it holds none of the runtime's pipes, so ADD's caller is not kept waiting.
        cmd.process_group(0);
        cmd.spawn().map(drop)
    }

    fn sock_fd(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::AsFd;
        self.sock.as_fd().try_clone_to_owned()
    }
}

/// Parses `spinel announce NETNS INO IFNAME MARKER MAC INTERVAL_MS ROUNDS IP...`.
fn parse(args: &[String]) -> Option<(Announcement, u32, Duration)> {
    let [netns, ino, ifname, marker, mac, interval, rounds, ips @ ..] = args else {
        return None;
    };
    let announcement = Announcement {
        netns: PathBuf::from(netns),
        netns_ino: ino.parse().ok()?,
        ifname: ifname.clone(),
        marker: marker.clone(),
        mac: mac.parse().ok()?,
        addresses: ips
            .iter()
            .map(|ip| ip.parse().ok())
            .collect::<Option<Vec<_>>>()?,
    };
    if !hostnet::sriov::is_valid_ifname(ifname) || announcement.addresses.is_empty() {
        return None;
    }
    let interval = Duration::from_millis(interval.parse::<u64>().ok()?.min(60_000));
    Some((announcement, rounds.parse::<u32>().ok()?.min(10), interval))
}

/// The helper's socket, on its stdin, if it really is a packet socket.
fn packet_socket(stdin: &Stdin) -> Option<i32> {
    let fd = stdin.as_raw_fd();
    // The kernel may return a short sockaddr_ll: check the family, not the size.
    let addr = getsockname::<SockaddrStorage>(fd).ok()?;
    (addr.family() == Some(AddressFamily::Packet)).then_some(fd)
}

/// The helper's main: sends the remaining rounds, stopping as soon as the interface is no
/// longer the attachment's.
pub fn run_followup(args: &[String]) -> ExitCode {
    let Some((a, rounds, interval)) = parse(args) else {
        eprintln!(
            "usage: spinel announce NETNS INODE IFNAME MARKER MAC INTERVAL_MS ROUNDS IP... <packet-socket"
        );
        return ExitCode::FAILURE;
    };
    let stdin = std::io::stdin();
    let Some(fd) = packet_socket(&stdin) else {
        eprintln!("spinel announce: stdin is not a packet socket");
        return ExitCode::FAILURE;
    };
    let frames = garp::frames(a.mac, &a.addresses);
    for _ in 0..rounds {
        std::thread::sleep(interval);
        let Ok(ns) = NetNs::open(&a.netns) else {
            return ExitCode::SUCCESS;
        };
        if ns.id().ino != a.netns_ino {
            return ExitCode::SUCCESS;
        }
        let still_ours = RouteSocket::open_in(&ns)
            .ok()
            .and_then(|mut s| s.link_by_name(&a.ifname).ok().flatten())
            .is_some_and(|l| l.alias.as_deref() == Some(a.marker.as_str()) && l.mac == Some(a.mac));
        if !still_ours
            || frames
                .iter()
                .any(|f| send(fd, f, MsgFlags::empty()).is_err())
        {
            return ExitCode::SUCCESS;
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_arguments_are_validated() {
        let ok: Vec<String> = [
            "/run/netns/p",
            "4026532",
            "net1",
            "spinel:vf:x",
            "02:00:00:00:00:01",
            "1100",
            "2",
            "10.0.0.5",
            "fd00::5",
        ]
        .map(String::from)
        .to_vec();
        let (a, rounds, interval) = parse(&ok).unwrap();
        assert_eq!(
            (rounds, interval.as_millis(), a.addresses.len()),
            (2, 1100, 2)
        );
        let with = |i: usize, v: &str| {
            let mut args = ok.clone();
            args[i] = v.into();
            args
        };
        assert!(parse(&ok[..7]).is_none(), "no address");
        assert!(parse(&with(2, "a/b")).is_none(), "bad interface name");
        assert!(parse(&with(1, "ino")).is_none(), "bad inode");
        assert!(parse(&with(4, "not-a-mac")).is_none(), "bad MAC");
        assert!(parse(&with(7, "10.0.0.300")).is_none(), "bad address");
        assert_eq!(parse(&with(6, "1000")).unwrap().1, 10, "rounds are capped");
    }
}
