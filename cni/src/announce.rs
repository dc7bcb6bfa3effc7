//! Announcing a pod's addresses after ADD (the frames and the socket are
//! [`spinel_node::gratuitous`]'s).
//!
//! ADD opens one packet socket inside the pod ([`Announcer`]) and sends the first rounds
//! itself; the later, spaced rounds come from the same binary re-executed as
//! `spinel announce ...`, detached from the runtime (its own process group, no inherited pipes
//! or locks), which receives the socket as its stdin. Handing the socket over matters: closing
//! the last reference to a packet socket costs the kernel an RCU grace period (13-15 ms here),
//! which now happens in the helper, after ADD has returned. The helper closes it at once and
//! opens a socket per round, so it never keeps a dead pod's namespace alive between rounds.
//! Before every round it checks that the interface is still the attachment's, so a DEL or the
//! pod's death ends it.

use std::net::IpAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::packet::{PacketError, PacketSocket};
use spinel_node::gratuitous::Announcer as Rounds;
use spinel_wire::MacAddr;

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

/// One attachment's announcements: the rounds ADD sends, and what the helper needs.
pub struct Announcer {
    rounds: Rounds,
    announcement: Announcement,
}

impl Announcer {
    /// Opens the socket inside the pod.
    pub fn open(pod_ns: &NetNs, announcement: Announcement) -> Result<Self, PacketError> {
        let rounds = Rounds::open(
            pod_ns,
            &announcement.ifname,
            announcement.mac,
            &announcement.addresses,
        )?;
        Ok(Self {
            rounds,
            announcement,
        })
    }

    /// Sends one round: every frame once.
    pub fn round(&self) -> Result<usize, PacketError> {
        self.rounds.round()
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
            .stdin(Stdio::from(self.rounds.socket_fd()?))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Its own process group: the runtime's signals to the plugin's group do not reach it,
        // and it holds none of the runtime's pipes, so ADD's caller is not kept waiting.
        cmd.process_group(0);
        cmd.spawn().map(drop)
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
fn packet_socket(ifname: &str) -> Option<PacketSocket> {
    let stdin: OwnedFd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    PacketSocket::from_fd(stdin, ifname).ok()
}

/// The helper's main: sends the remaining rounds, stopping as soon as the interface is no
/// longer the attachment's.
pub fn run_followup(args: &[String]) -> ExitCode {
    let Some((a, count, interval)) = parse(args) else {
        eprintln!(
            "usage: spinel announce NETNS INODE IFNAME MARKER MAC INTERVAL_MS ROUNDS IP... <packet-socket"
        );
        return ExitCode::FAILURE;
    };
    let Some(handed_over) = packet_socket(&a.ifname) else {
        eprintln!("spinel announce: stdin is not a packet socket");
        return ExitCode::FAILURE;
    };
    // ADD's socket ends here (closing its last reference costs the kernel a grace period,
    // which is why ADD hands it over), and nothing stays open in the pod between rounds: a
    // socket holds its namespace alive, and a pod namespace kept alive only by this helper
    // would read as a live pod to a DEL asking the kernel about it.
    drop(handed_over);
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = nix::unistd::dup2_stdin(&null);
    }
    for _ in 0..count {
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
        let sent = still_ours
            && Rounds::open(&ns, &a.ifname, a.mac, &a.addresses)
                .and_then(|rounds| rounds.round())
                .is_ok();
        if !sent {
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
