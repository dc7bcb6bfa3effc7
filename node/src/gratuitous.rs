//! Announcing addresses at an interface's MAC: gratuitous ARP (both forms) per IPv4 address
//! and an unsolicited NA per IPv6 address, sent from a packet socket opened inside the
//! interface's namespace. The CNI announces a pod's addresses after ADD; the fabric agent
//! re-announces host and pod addresses when a leaf may have lost its entries (carrier up).

use std::net::IpAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use hostnet::packet::{PacketConfig, PacketError, PacketSocket};
use spinel_wire::{MacAddr, garp};

/// Waits until interface `index` of `ns_socket`'s namespace has carrier, at most `timeout`;
/// returns whether it has. Frames sent before carrier are lost.
pub fn wait_for_carrier(ns_socket: &mut RouteSocket, index: u32, timeout: Duration) -> bool {
    let start = Instant::now();
    loop {
        if ns_socket
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

/// A send-only packet socket on one interface and the frames announcing its addresses.
pub struct Announcer {
    sock: PacketSocket,
    frames: Vec<Vec<u8>>,
}

impl Announcer {
    /// Opens the socket on `ifname` inside `ns` for `addresses` at `mac`.
    pub fn open(
        ns: &NetNs,
        ifname: &str,
        mac: MacAddr,
        addresses: &[IpAddr],
    ) -> Result<Self, PacketError> {
        let sock = PacketSocket::open(ns, ifname, &PacketConfig::send_only())?;
        Ok(Self::on_socket(sock, mac, addresses))
    }

    /// Announces on a socket that is already open (for example one handed over by another
    /// process).
    pub fn on_socket(sock: PacketSocket, mac: MacAddr, addresses: &[IpAddr]) -> Self {
        Self {
            sock,
            frames: garp::frames(mac, addresses),
        }
    }

    /// Sends one round: every frame once. Returns how many frames went out.
    pub fn round(&self) -> Result<usize, PacketError> {
        for f in &self.frames {
            self.sock.send(f)?;
        }
        Ok(self.frames.len())
    }

    /// A second descriptor for the socket, to hand to another process.
    pub fn socket_fd(&self) -> std::io::Result<OwnedFd> {
        self.sock.as_fd().try_clone_to_owned()
    }
}
