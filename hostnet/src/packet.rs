//! Raw Ethernet frames: an `AF_PACKET` socket bound to one interface of one network namespace.
//!
//! The socket is created inside the namespace (with [`NetNs::run`]) and then works from any
//! thread. It is opened with protocol 0, so the kernel queues nothing until the optional
//! classic-BPF filter is attached (and locked) and the socket is bound to the interface with
//! the real protocol: no unfiltered frame ever reaches the queue.
//!
//! [`PacketSocket::lldp`] is the LLDP agent's socket: a filter that passes only EtherType
//! 0x88cc (also behind an 802.1Q tag) sent to the three LLDP group addresses, the group
//! addresses joined as multicast memberships, `PACKET_IGNORE_OUTGOING` so our own frames are
//! not read back, and `SO_PRIORITY = TC_PRIO_CONTROL` (Intel ice drops LLDP sent at other
//! priorities, lldpd #444). The generic [`PacketSocket::open`] serves other senders, such as
//! gratuitous ARP or unsolicited neighbour advertisements from inside a pod namespace.
//!
//! This is the one module of `hostnet` with `unsafe` code: the socket calls `libc` does not
//! wrap safely. Each block says why it is sound.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use spinel_wire::ethertype;
use spinel_wire::lldp::LldpGroup;

use crate::netns::{NetNs, NetNsError};

/// EtherType "every protocol" (`ETH_P_ALL`).
pub const ETH_P_ALL: u16 = 0x0003;
/// `TC_PRIO_CONTROL` from `linux/pkt_sched.h`: the priority lldpd sends LLDP with.
pub const TC_PRIO_CONTROL: u32 = 7;

// Kernel ABI constants (linux/if_packet.h, asm-generic/socket.h), spelled out because not every
// libc release exports them.
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_MULTICAST: libc::c_ushort = 0;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_OUTGOING: u8 = 4;
const SO_ATTACH_FILTER: libc::c_int = 26;
const SO_LOCK_FILTER: libc::c_int = 44;
const SO_PRIORITY: libc::c_int = 12;

/// `struct packet_mreq` from `linux/if_packet.h`.
#[repr(C)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: libc::c_ushort,
    mr_alen: libc::c_ushort,
    mr_address: [u8; 8],
}

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfInsn {
    /// Opcode.
    pub code: u16,
    /// Jump offset if true.
    pub jt: u8,
    /// Jump offset if false.
    pub jf: u8,
    /// Operand.
    pub k: u32,
}

// Classic BPF opcodes (linux/filter.h).
const BPF_LD_H_ABS: u16 = 0x28;
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;

const fn insn(code: u16, jt: u8, jf: u8, k: u32) -> BpfInsn {
    BpfInsn { code, jt, jf, k }
}

/// Accepts frames with EtherType 0x88cc (directly or behind one 802.1Q tag) sent to one of
/// the three LLDP group addresses; drops everything else.
pub const LLDP_FILTER: [BpfInsn; 13] = [
    insn(BPF_LD_H_ABS, 0, 0, 12),                  // 0: A = EtherType
    insn(BPF_JEQ_K, 3, 0, ethertype::LLDP as u32), // 1: LLDP? -> 5
    insn(BPF_JEQ_K, 0, 9, ethertype::VLAN as u32), // 2: 802.1Q? else -> 12 (drop)
    insn(BPF_LD_H_ABS, 0, 0, 16),                  // 3: A = inner EtherType
    insn(BPF_JEQ_K, 0, 7, ethertype::LLDP as u32), // 4: LLDP? else -> 12
    insn(BPF_LD_W_ABS, 0, 0, 0),                   // 5: A = destination octets 0-3
    insn(BPF_JEQ_K, 0, 5, 0x0180_c200),            // 6: 01:80:c2:00? else -> 12
    insn(BPF_LD_H_ABS, 0, 0, 4),                   // 7: A = destination octets 4-5
    insn(BPF_JEQ_K, 2, 0, 0x000e),                 // 8: nearest bridge -> 11
    insn(BPF_JEQ_K, 1, 0, 0x0003),                 // 9: nearest non-TPMR bridge -> 11
    insn(BPF_JEQ_K, 0, 1, 0x0000),                 // 10: nearest customer bridge -> 11, else 12
    insn(BPF_RET_K, 0, 0, 0x0004_0000),            // 11: accept the whole frame
    insn(BPF_RET_K, 0, 0, 0),                      // 12: drop
];

/// How to set up a packet socket.
#[derive(Debug, Clone, Default)]
pub struct PacketConfig {
    /// EtherType to receive, host byte order (`ETH_P_ALL` for all; 0 to receive nothing, for
    /// a send-only socket).
    pub protocol: u16,
    /// Classic BPF filter applied before frames are queued.
    pub filter: Option<Vec<BpfInsn>>,
    /// Lock the filter so it can no longer be replaced or removed (`SO_LOCK_FILTER`).
    pub lock_filter: bool,
    /// Multicast MAC addresses to join on the interface (`PACKET_ADD_MEMBERSHIP`).
    pub multicast: Vec<[u8; 6]>,
    /// `SO_PRIORITY` for frames we send.
    pub priority: Option<u32>,
    /// Do not read back frames this host sends (`PACKET_IGNORE_OUTGOING`).
    pub ignore_outgoing: bool,
}

impl PacketConfig {
    /// The LLDP agent's configuration (see the module documentation).
    pub fn lldp() -> Self {
        Self {
            protocol: ETH_P_ALL,
            filter: Some(LLDP_FILTER.to_vec()),
            lock_filter: true,
            multicast: LldpGroup::ALL.iter().map(|g| g.mac().0).collect(),
            priority: Some(TC_PRIO_CONTROL),
            ignore_outgoing: true,
        }
    }

    /// A socket that only sends (receives nothing), e.g. for gratuitous ARP.
    pub fn send_only() -> Self {
        Self::default()
    }
}

/// Errors from packet sockets.
#[derive(Debug, thiserror::Error)]
pub enum PacketError {
    /// The socket had to be opened inside a namespace that could not be entered.
    #[error("cannot open a packet socket inside the network namespace")]
    Netns(#[from] NetNsError),
    /// No such interface in the namespace.
    #[error("no interface {ifname} in network namespace {netns}")]
    NoInterface {
        /// The interface name.
        ifname: String,
        /// The namespace searched.
        netns: PathBuf,
    },
    /// A socket call failed.
    #[error("{operation} failed on the packet socket for {ifname}")]
    Io {
        /// What was being done.
        operation: &'static str,
        /// The interface.
        ifname: String,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

/// A frame read from the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Octets copied into the buffer.
    pub len: usize,
    /// The frame's real length (larger than `len` when the buffer was too small).
    pub frame_len: usize,
}

/// An `AF_PACKET` raw socket bound to one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: u32,
    ifname: String,
    mac: [u8; 6],
}

/// Sets a socket option whose value is a plain C struct or integer.
fn setsockopt<T>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    let len = libc::socklen_t::try_from(size_of::<T>()).map_err(io::Error::other)?;
    #[allow(unsafe_code)]
    // SAFETY: `value` is a live reference to a `T` of exactly `len` bytes; the kernel only
    // reads it during the call. The fd is open for the duration (borrowed).
    let rc =
        unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, (value as *const T).cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn sockaddr_ll(protocol: u16, ifindex: u32) -> io::Result<libc::sockaddr_ll> {
    #[allow(unsafe_code)]
    // SAFETY: sockaddr_ll is a plain C struct of integers and arrays; all-zero is valid.
    let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
    addr.sll_family = libc::AF_PACKET as libc::c_ushort;
    addr.sll_protocol = protocol.to_be();
    addr.sll_ifindex = libc::c_int::try_from(ifindex).map_err(io::Error::other)?;
    Ok(addr)
}

/// The six-octet hardware address in a bound `sockaddr_ll` (all zero if it has none).
fn mac_of(addr: &libc::sockaddr_ll) -> [u8; 6] {
    let mut mac = [0u8; 6];
    if usize::from(addr.sll_halen) == 6 {
        mac.copy_from_slice(&addr.sll_addr[..6]);
    }
    mac
}

impl PacketSocket {
    /// Opens a socket on `ifname` inside `netns`.
    pub fn open(netns: &NetNs, ifname: &str, config: &PacketConfig) -> Result<Self, PacketError> {
        netns
            .run(|| Self::open_here(ifname, config))?
            .map_err(|e| match e {
                PacketError::NoInterface { ifname, .. } => PacketError::NoInterface {
                    ifname,
                    netns: netns.path().to_owned(),
                },
                other => other,
            })
    }

    /// Opens the LLDP agent's socket on `ifname` inside `netns`.
    pub fn lldp(netns: &NetNs, ifname: &str) -> Result<Self, PacketError> {
        Self::open(netns, ifname, &PacketConfig::lldp())
    }

    /// Opens a socket on `ifname` in the calling thread's namespace.
    pub fn open_here(ifname: &str, config: &PacketConfig) -> Result<Self, PacketError> {
        let io_err = |operation| {
            let ifname = ifname.to_owned();
            move |source| PacketError::Io {
                operation,
                ifname,
                source,
            }
        };
        let ifindex = match nix::net::if_::if_nametoindex(ifname) {
            Ok(i) => i,
            Err(nix::Error::ENODEV) => {
                return Err(PacketError::NoInterface {
                    ifname: ifname.to_owned(),
                    netns: PathBuf::from("/proc/thread-self/ns/net"),
                });
            }
            Err(e) => return Err(io_err("if_nametoindex")(e.into())),
        };

        #[allow(unsafe_code)]
        // SAFETY: plain syscall; protocol 0 means nothing is queued before bind.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io_err("socket(AF_PACKET)")(io::Error::last_os_error()));
        }
        #[allow(unsafe_code)]
        // SAFETY: `raw` is a freshly created descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };

        if let Some(filter) = &config.filter {
            let mut code: Vec<libc::sock_filter> = filter
                .iter()
                .map(|i| libc::sock_filter {
                    code: i.code,
                    jt: i.jt,
                    jf: i.jf,
                    k: i.k,
                })
                .collect();
            let prog = libc::sock_fprog {
                len: u16::try_from(code.len())
                    .map_err(|e| io_err("SO_ATTACH_FILTER")(io::Error::other(e)))?,
                filter: code.as_mut_ptr(),
            };
            // The kernel copies the program during the call; `code` outlives it.
            setsockopt(fd.as_fd(), libc::SOL_SOCKET, SO_ATTACH_FILTER, &prog)
                .map_err(io_err("SO_ATTACH_FILTER"))?;
            if config.lock_filter {
                setsockopt(
                    fd.as_fd(),
                    libc::SOL_SOCKET,
                    SO_LOCK_FILTER,
                    &1 as &libc::c_int,
                )
                .map_err(io_err("SO_LOCK_FILTER"))?;
            }
        }
        if let Some(priority) = config.priority {
            let p = libc::c_int::try_from(priority)
                .map_err(|e| io_err("SO_PRIORITY")(io::Error::other(e)))?;
            setsockopt(fd.as_fd(), libc::SOL_SOCKET, SO_PRIORITY, &p)
                .map_err(io_err("SO_PRIORITY"))?;
        }
        if config.ignore_outgoing {
            setsockopt(
                fd.as_fd(),
                libc::SOL_PACKET,
                PACKET_IGNORE_OUTGOING,
                &1 as &libc::c_int,
            )
            .map_err(io_err("PACKET_IGNORE_OUTGOING"))?;
        }

        let addr = sockaddr_ll(config.protocol, ifindex).map_err(io_err("bind"))?;
        #[allow(unsafe_code)]
        // SAFETY: `addr` is a valid sockaddr_ll and the length passed is its size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io_err("bind")(io::Error::last_os_error()));
        }

        for mac in &config.multicast {
            let mut mr_address = [0u8; 8];
            mr_address[..6].copy_from_slice(mac);
            let mreq = PacketMreq {
                mr_ifindex: addr.sll_ifindex,
                mr_type: PACKET_MR_MULTICAST,
                mr_alen: 6,
                mr_address,
            };
            setsockopt(fd.as_fd(), libc::SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(io_err("PACKET_ADD_MEMBERSHIP"))?;
        }

        let mac = Self::bound_mac(fd.as_fd()).map_err(io_err("getsockname"))?;
        Ok(Self {
            fd,
            ifindex,
            ifname: ifname.to_owned(),
            mac,
        })
    }

    /// Takes over a descriptor that another process opened (for example one passed as stdin),
    /// after checking that it really is a bound `AF_PACKET` socket. `ifname` is only used in
    /// messages: the socket may be bound in a namespace other than ours.
    pub fn from_fd(fd: OwnedFd, ifname: &str) -> Result<Self, PacketError> {
        let io_err = |operation: &'static str, source: io::Error| PacketError::Io {
            operation,
            ifname: ifname.to_owned(),
            source,
        };
        let addr = Self::bound_address(fd.as_fd()).map_err(|e| io_err("getsockname", e))?;
        if i32::from(addr.sll_family) != libc::AF_PACKET || addr.sll_ifindex <= 0 {
            return Err(io_err(
                "getsockname",
                io::Error::other("the descriptor is not a bound packet socket"),
            ));
        }
        let mac = mac_of(&addr);
        Ok(Self {
            fd,
            ifindex: u32::try_from(addr.sll_ifindex).unwrap_or_default(),
            ifname: ifname.to_owned(),
            mac,
        })
    }

    /// The socket's bound address. The kernel may return a short `sockaddr_ll`; the family
    /// and index come first, so they are always there.
    fn bound_address(fd: BorrowedFd<'_>) -> io::Result<libc::sockaddr_ll> {
        let mut addr = sockaddr_ll(0, 0)?;
        addr.sll_family = 0;
        let mut len = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        #[allow(unsafe_code)]
        // SAFETY: `addr` and `len` are valid for writes and `len` holds the buffer's size.
        let rc = unsafe {
            libc::getsockname(
                fd.as_raw_fd(),
                (&mut addr as *mut libc::sockaddr_ll).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(addr)
    }

    /// The hardware address of the bound interface, as the kernel reports it for the socket.
    fn bound_mac(fd: BorrowedFd<'_>) -> io::Result<[u8; 6]> {
        Self::bound_address(fd).map(|addr| mac_of(&addr))
    }

    /// The interface index (in the socket's namespace).
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The interface name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The interface's MAC address when the socket was opened (all zero if it has none).
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    fn io_error(&self, operation: &'static str, source: io::Error) -> PacketError {
        PacketError::Io {
            operation,
            ifname: self.ifname.clone(),
            source,
        }
    }

    /// Sends one complete Ethernet frame (header included, no FCS) out of the interface.
    pub fn send(&self, frame: &[u8]) -> Result<(), PacketError> {
        loop {
            #[allow(unsafe_code)]
            // SAFETY: `frame` is valid for reads of its length during the call.
            let n =
                unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            if n >= 0 {
                return if usize::try_from(n).ok() == Some(frame.len()) {
                    Ok(())
                } else {
                    Err(self.io_error("send", io::Error::other("short write")))
                };
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(self.io_error("send", e));
            }
        }
    }

    /// Reads one frame if one is queued, without waiting.
    pub fn try_recv(&self, buf: &mut [u8]) -> Result<Option<Received>, PacketError> {
        loop {
            let mut from = sockaddr_ll(0, 0).map_err(|e| self.io_error("recvfrom", e))?;
            let mut from_len = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            #[allow(unsafe_code)]
            // SAFETY: `buf` is valid for writes of its length; `from`/`from_len` are valid for
            // writes and `from_len` holds the size of `from`.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut from_len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => return Ok(None),
                    _ => return Err(self.io_error("recvfrom", e)),
                }
            }
            // Kernels without PACKET_IGNORE_OUTGOING (before 4.20) still loop our frames back.
            if from.sll_pkttype == PACKET_OUTGOING {
                continue;
            }
            let frame_len = usize::try_from(n).unwrap_or(0);
            return Ok(Some(Received {
                len: frame_len.min(buf.len()),
                frame_len,
            }));
        }
    }

    /// Waits up to `timeout` (forever with `None`) for a frame and reads it.
    pub fn recv(
        &self,
        buf: &mut [u8],
        timeout: Option<Duration>,
    ) -> Result<Option<Received>, PacketError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(r) = self.try_recv(buf)? {
                return Ok(Some(r));
            }
            let wait = match deadline {
                None => PollTimeout::NONE,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    // Round up so a sub-millisecond remainder does not spin.
                    let ms = left.as_millis().saturating_add(1);
                    PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
                }
            };
            let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, wait) {
                Ok(_) | Err(nix::Error::EINTR) => {}
                Err(e) => return Err(self.io_error("poll", e.into())),
            }
        }
    }
}

impl AsFd for PacketSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    const LLDP_GROUP_MACS: [[u8; 6]; 3] = [
        LldpGroup::NearestBridge.mac().0,
        LldpGroup::NearestNonTpmrBridge.mac().0,
        LldpGroup::NearestCustomerBridge.mac().0,
    ];
    const ETH_P_LLDP: u16 = ethertype::LLDP;

    fn require_root() {
        assert!(
            nix::unistd::geteuid().is_root(),
            "this test needs root (CAP_SYS_ADMIN, CAP_NET_RAW) to create namespaces and raw sockets"
        );
    }

    /// A throwaway namespace holding a veth pair `va` <-> `vb`, both up.
    struct VethNs {
        _dir: tempfile::TempDir,
        path: PathBuf,
        ns: Option<NetNs>,
    }

    impl VethNs {
        fn new() -> Self {
            require_root();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("ns");
            let ns = NetNs::create_at(&path).unwrap();
            let ip = |args: &[&str]| {
                // A child forked from this thread starts in the thread's namespace.
                let status = ns
                    .run(|| Command::new("ip").args(args).status())
                    .unwrap()
                    .unwrap();
                assert!(status.success(), "ip {args:?}");
            };
            ip(&[
                "link", "add", "name", "va", "type", "veth", "peer", "name", "vb",
            ]);
            ip(&["link", "set", "dev", "va", "address", "02:00:00:00:00:0a"]);
            ip(&["link", "set", "dev", "vb", "address", "02:00:00:00:00:0b"]);
            ip(&["link", "set", "dev", "va", "up"]);
            ip(&["link", "set", "dev", "vb", "up"]);
            // Until linkwatch activates the qdisc (up to a second later) veth drops what we send.
            let deadline = Instant::now() + Duration::from_secs(5);
            for dev in ["va", "vb"] {
                loop {
                    let out = ns
                        .run(|| {
                            Command::new("ip")
                                .args(["-o", "link", "show", "dev", dev])
                                .output()
                        })
                        .unwrap()
                        .unwrap();
                    let line = String::from_utf8_lossy(&out.stdout).into_owned();
                    if line.contains("state UP") && !line.contains("qdisc noop") {
                        break;
                    }
                    assert!(Instant::now() < deadline, "{dev} never came up: {line}");
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            Self {
                _dir: dir,
                path,
                ns: Some(ns),
            }
        }

        fn ns(&self) -> &NetNs {
            self.ns.as_ref().unwrap()
        }
    }

    impl Drop for VethNs {
        fn drop(&mut self) {
            self.ns.take();
            let _ = NetNs::remove_at(&self.path);
        }
    }

    fn frame(dst: [u8; 6], src: [u8; 6], ethertype: u16, fill: u8) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.resize(60, fill);
        f
    }

    const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];

    #[test]
    fn lldp_frames_cross_the_veth_and_the_filter_drops_the_rest() {
        let v = VethNs::new();
        let tx = PacketSocket::open(v.ns(), "va", &PacketConfig::send_only()).unwrap();
        let rx = PacketSocket::lldp(v.ns(), "vb").unwrap();
        assert_eq!(tx.mac(), SRC);
        assert_eq!(rx.mac(), [0x02, 0, 0, 0, 0, 0x0b]);
        assert!(rx.ifindex() > 0);

        // Dropped by the filter: wrong EtherType to an LLDP address, LLDP EtherType to other
        // addresses (broadcast, a unicast, a neighbouring 01:80:c2 address).
        tx.send(&frame(LLDP_GROUP_MACS[0], SRC, 0x0800, 1)).unwrap();
        tx.send(&frame([0xff; 6], SRC, ETH_P_LLDP, 2)).unwrap();
        tx.send(&frame([0x02, 0, 0, 0, 0, 0x0b], SRC, ETH_P_LLDP, 3))
            .unwrap();
        tx.send(&frame([0x01, 0x80, 0xc2, 0, 0, 0x0f], SRC, ETH_P_LLDP, 4))
            .unwrap();
        // Accepted: all three group addresses, and LLDP behind an 802.1Q tag.
        for (i, dst) in LLDP_GROUP_MACS.iter().enumerate() {
            tx.send(&frame(*dst, SRC, ETH_P_LLDP, 10 + i as u8))
                .unwrap();
        }
        let mut tagged = frame(LLDP_GROUP_MACS[0], SRC, 0x8100, 20);
        tagged[14..18].copy_from_slice(&[0x00, 0x64, 0x88, 0xcc]);
        tx.send(&tagged).unwrap();

        let mut buf = [0u8; 2048];
        let mut fills = Vec::new();

        while let Some(r) = rx.recv(&mut buf, Some(Duration::from_millis(500))).unwrap() {
            // The receive path may move the 802.1Q tag out of the frame into metadata.
            assert!(r.len == 60 || r.len == 56, "{r:?}");
            fills.push(buf[r.len - 1]);
        }
        assert_eq!(fills, [10, 11, 12, 20]);
    }

    #[test]
    fn own_frames_are_not_read_back() {
        let v = VethNs::new();
        let a = PacketSocket::lldp(v.ns(), "va").unwrap();
        let b = PacketSocket::lldp(v.ns(), "vb").unwrap();
        a.send(&frame(LLDP_GROUP_MACS[0], SRC, ETH_P_LLDP, 7))
            .unwrap();
        let mut buf = [0u8; 128];
        let got = b.recv(&mut buf, Some(Duration::from_secs(2))).unwrap();
        assert_eq!(got.map(|r| r.len), Some(60), "the peer receives it");
        assert_eq!(buf[59], 7);
        assert_eq!(
            a.recv(&mut buf, Some(Duration::from_millis(300))).unwrap(),
            None,
            "the sender must not see its own frame"
        );
    }

    #[test]
    fn truncation_is_reported_and_timeouts_return_none() {
        let v = VethNs::new();
        let tx = PacketSocket::open(v.ns(), "va", &PacketConfig::send_only()).unwrap();
        let rx = PacketSocket::lldp(v.ns(), "vb").unwrap();
        let mut buf = [0u8; 16];
        let started = Instant::now();
        assert_eq!(
            rx.recv(&mut buf, Some(Duration::from_millis(100))).unwrap(),
            None
        );
        assert!(started.elapsed() >= Duration::from_millis(100));
        let mut big = frame(LLDP_GROUP_MACS[0], SRC, ETH_P_LLDP, 0);
        big.resize(300, 0);
        tx.send(&big).unwrap();
        let r = rx
            .recv(&mut buf, Some(Duration::from_secs(2)))
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            Received {
                len: 16,
                frame_len: 300
            }
        );
    }

    #[test]
    fn missing_interface_names_the_namespace() {
        let v = VethNs::new();
        let err = PacketSocket::lldp(v.ns(), "nosuch0").unwrap_err();
        match &err {
            PacketError::NoInterface { ifname, netns } => {
                assert_eq!(ifname, "nosuch0");
                assert_eq!(netns, &v.path);
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn the_socket_works_from_another_thread_after_leaving_the_namespace() {
        let v = VethNs::new();
        let rx = PacketSocket::lldp(v.ns(), "vb").unwrap();
        let tx = PacketSocket::open(v.ns(), "va", &PacketConfig::send_only()).unwrap();
        let handle = std::thread::spawn(move || {
            let mut buf = [0u8; 128];
            rx.recv(&mut buf, Some(Duration::from_secs(2)))
                .unwrap()
                .map(|r| r.len)
        });
        tx.send(&frame(LLDP_GROUP_MACS[1], SRC, ETH_P_LLDP, 1))
            .unwrap();
        assert_eq!(handle.join().unwrap(), Some(60));
    }
}
