//! Re-announcing addresses when a leaf may have lost them: on carrier up of a RoCE NIC (a leaf
//! reboot or a link flap empties its ARP table), a burst of announcement rounds (gratuitous ARP
//! in both forms, unsolicited NA) for the NIC's own addresses and for every pod attachment the
//! CNI has on that NIC (its VFs, or macvlans on it), spaced over the receivers' `locktime`.
//!
//! One plain thread does it all: it enters pod namespaces (never a tokio worker), keeps each
//! burst's packet sockets open across its rounds (closing one costs an RCU grace period) and
//! closes them on a throwaway thread afterwards. A pod is announced only when everything
//! checks: its record validates, the namespace opened by path has the recorded identity
//! (cookie included), the interface there has the recorded MAC, and only addresses that it
//! still has are announced.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hostnet::netlink::RouteSocket;
use hostnet::netns::NetNs;
use spinel_node::attachment_record::{PodAttachment, read_records};
use spinel_node::gratuitous::Announcer;

use crate::metrics::{GarpLabel, Metrics, NicLabel};
use crate::settings::Garp;

/// Asks the announcing thread for bursts.
#[derive(Clone)]
pub struct Bursts {
    tx: Sender<String>,
}

impl Bursts {
    /// Starts (or restarts) a burst for host NIC `nic`.
    pub fn start(&self, nic: &str) {
        let _ = self.tx.send(nic.to_owned());
    }
}

/// One burst in progress.
struct Burst {
    rounds_left: u32,
    next: Instant,
    sockets: BTreeMap<String, Announcer>,
}

/// Starts the announcing thread for NICs in `host_ns`; it ends when every [`Bursts`] is gone.
pub fn spawn(host_ns: Arc<NetNs>, settings: Garp, metrics: Metrics) -> (Bursts, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("garp".into())
        .spawn(move || run(&host_ns, &settings, &metrics, &rx))
        .unwrap_or_else(|e| {
            tracing::error!("cannot start the announcing thread: {e}");
            std::thread::spawn(|| {})
        });
    (Bursts { tx }, handle)
}

fn run(host_ns: &NetNs, settings: &Garp, metrics: &Metrics, rx: &Receiver<String>) {
    let mut host = match RouteSocket::open_in(host_ns) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("announcements are off: cannot open a netlink socket: {e}");
            return;
        }
    };
    let mut bursts: BTreeMap<String, Burst> = BTreeMap::new();
    loop {
        let wait = bursts
            .values()
            .map(|b| b.next.saturating_duration_since(Instant::now()))
            .min()
            .unwrap_or(Duration::from_secs(3600));
        match rx.recv_timeout(wait) {
            Ok(nic) => {
                metrics
                    .garp_bursts
                    .get_or_create(&NicLabel { nic: nic.clone() })
                    .inc();
                let burst = bursts.entry(nic).or_insert_with(|| Burst {
                    rounds_left: 0,
                    next: Instant::now(),
                    sockets: BTreeMap::new(),
                });
                burst.rounds_left = settings.count;
                burst.next = Instant::now();
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        let now = Instant::now();
        let due: Vec<String> = bursts
            .iter()
            .filter(|(_, b)| b.next <= now)
            .map(|(n, _)| n.clone())
            .collect();
        for nic in due {
            let Some(burst) = bursts.get_mut(&nic) else {
                continue;
            };
            round(host_ns, &mut host, settings, metrics, &nic, burst);
            burst.rounds_left = burst.rounds_left.saturating_sub(1);
            burst.next = now + settings.interval;
            if burst.rounds_left == 0
                && let Some(done) = bursts.remove(&nic)
            {
                // Closing packet sockets waits for an RCU grace period each: not here.
                std::thread::spawn(move || drop(done.sockets));
            }
        }
    }
}

/// One round for `nic`: the host's addresses, then every pod on it.
#[tracing::instrument(name = "announce", skip_all, fields(nic = %nic))]
fn round(
    host_ns: &NetNs,
    host: &mut RouteSocket,
    settings: &Garp,
    metrics: &Metrics,
    nic: &str,
    burst: &mut Burst,
) {
    let count = |target: &str, frames: usize| {
        metrics
            .garp_frames
            .get_or_create(&GarpLabel {
                nic: nic.to_owned(),
                target: target.to_owned(),
            })
            .inc_by(frames as u64);
    };
    if let Some((mac, addresses)) = host_addresses(host, nic) {
        let key = format!("host/{nic}/{mac}/{addresses:?}");
        match send(&mut burst.sockets, key, || {
            Announcer::open(host_ns, nic, mac, &addresses)
        }) {
            Ok(n) => count("host", n),
            Err(e) => tracing::warn!(nic, "cannot announce the host's addresses: {e}"),
        }
    }
    let (records, refused) = read_records(&settings.records_dir());
    for r in refused {
        tracing::debug!("skipping an attachment record: {r}");
    }
    for found in records {
        let Some(a) = found.record.attachment.filter(|a| a.pf == nic) else {
            continue;
        };
        let who = format!("{}/{}", found.container_id, found.ifname);
        match pod_target(&a) {
            Ok((ns, addresses)) => {
                let cookie = a.netns_id.cookie.unwrap_or_default();
                let key = format!("pod/{who}/{cookie}/{addresses:?}");
                match send(&mut burst.sockets, key, || {
                    Announcer::open(&ns, &a.ifname, a.mac, &addresses)
                }) {
                    Ok(n) => count("pod", n),
                    Err(e) => tracing::warn!(nic, pod = %who, "cannot announce: {e}"),
                }
            }
            Err(why) => tracing::debug!(nic, pod = %who, "not announcing: {why}"),
        }
    }
}

/// Sends a round on the socket cached under `key`, opening it first if needed.
fn send(
    sockets: &mut BTreeMap<String, Announcer>,
    key: String,
    open: impl FnOnce() -> Result<Announcer, hostnet::packet::PacketError>,
) -> Result<usize, hostnet::packet::PacketError> {
    let announcer = match sockets.entry(key) {
        std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::btree_map::Entry::Vacant(e) => e.insert(open()?),
    };
    announcer.round()
}

/// The NIC's MAC and announceable addresses (IPv6 link-local left out).
fn host_addresses(
    host: &mut RouteSocket,
    nic: &str,
) -> Option<(spinel_wire::MacAddr, Vec<IpAddr>)> {
    let link = host.link_by_name(nic).ok()??;
    let mac = link.mac?;
    let addresses: Vec<IpAddr> = host
        .addresses(Some(link.index))
        .ok()?
        .into_iter()
        .map(|a| a.net.addr())
        .filter(|ip| !matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80))
        .collect();
    (!addresses.is_empty()).then_some((mac, addresses))
}

/// The pod's namespace and the addresses to announce there, after every check.
fn pod_target(a: &PodAttachment) -> Result<(NetNs, Vec<IpAddr>), String> {
    a.validate().map_err(|e| e.to_string())?;
    let ns = NetNs::open(&a.netns).map_err(|e| format!("namespace: {e}"))?;
    if !ns.is(&a.netns_id) {
        return Err(format!(
            "{} is no longer the pod's namespace (identity differs)",
            a.netns.display()
        ));
    }
    let mut sock = RouteSocket::open_in(&ns).map_err(|e| e.to_string())?;
    let link = sock
        .link_by_name(&a.ifname)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no {} in the pod", a.ifname))?;
    if link.mac != Some(a.mac) {
        return Err(format!("{} no longer has MAC {}", a.ifname, a.mac));
    }
    let present: Vec<IpAddr> = sock
        .addresses(Some(link.index))
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|x| x.net.addr())
        .collect();
    let addresses: Vec<IpAddr> = a
        .addresses
        .iter()
        .map(|n| n.addr())
        .filter(|ip| present.contains(ip))
        .collect();
    if addresses.is_empty() {
        return Err("none of its recorded addresses is on the interface".into());
    }
    Ok((ns, addresses))
}
