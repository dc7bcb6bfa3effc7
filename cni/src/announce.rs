//! Announcing a pod's addresses at its interface's MAC (see [`crate::garp`] for the frames).
//!
//! ADD sends the first rounds itself ([`round`]); the later, spaced rounds come from the same
//! binary re-executed as `spinel announce ...` ([`spawn_followup`], [`run_followup`]), detached
//! from the runtime (its own session, no inherited pipes or locks), so ADD returns at once.
//! Before every round the helper checks that the interface is still the attachment's, so a
//! DEL or a pod's death simply ends it.

use std::ffi::OsString;
use std::net::IpAddr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use hostnet::mac::MacAddr;
use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::packet::{PacketConfig, PacketSocket};

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

/// Announcing failed.
#[derive(Debug, thiserror::Error)]
pub enum AnnounceError {
    /// Opening or sending on the packet socket failed.
    #[error(transparent)]
    Packet(#[from] hostnet::packet::PacketError),
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

/// Sends one round: every frame of [`garp::frames`] once, from inside the pod.
pub fn round(pod_ns: &NetNs, a: &Announcement) -> Result<usize, AnnounceError> {
    let sock = PacketSocket::open(pod_ns, &a.ifname, &PacketConfig::send_only())?;
    let frames = garp::frames(a.mac, &a.addresses);
    for f in &frames {
        sock.send(f)?;
    }
    Ok(frames.len())
}

/// Starts the detached helper that sends `rounds` more rounds every `interval`.
pub fn spawn_followup(a: &Announcement, rounds: u32, interval: Duration) -> std::io::Result<()> {
    let mut args: Vec<OsString> = vec![
        "announce".into(),
        a.netns.clone().into(),
        a.netns_ino.to_string().into(),
        a.ifname.clone().into(),
        a.marker.clone().into(),
        a.mac.to_string().into(),
        interval.as_millis().to_string().into(),
        rounds.to_string().into(),
    ];
    args.extend(a.addresses.iter().map(|ip| OsString::from(ip.to_string())));
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Its own session: the runtime's signals to the plugin's group do not reach it, and it
    // holds none of the runtime's pipes, so ADD's caller is not kept waiting.
    cmd.process_group(0);
    cmd.spawn().map(drop)
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

/// The helper's main: sends the remaining rounds, stopping as soon as the interface is no
/// longer the attachment's.
pub fn run_followup(args: &[String]) -> ExitCode {
    let Some((a, rounds, interval)) = parse(args) else {
        eprintln!("usage: spinel announce NETNS INODE IFNAME MARKER MAC INTERVAL_MS ROUNDS IP...");
        return ExitCode::FAILURE;
    };
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
        if !still_ours || round(&ns, &a).is_err() {
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
