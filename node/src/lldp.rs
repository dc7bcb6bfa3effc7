//! LLDP on a set of ports, on tokio: receive into one TTL-aged neighbour table with 802.1AB
//! counters, and, on the ports that advertise, the 802.1AB transmit schedule with a shutdown
//! LLDPDU at the end. Both `spinelctl lldp` and the fabric agent run this loop.
//!
//! The sockets are opened before the loop ([`open_ports`], from an ordinary thread, inside the
//! namespace they belong to); the loop never enters a namespace. Frames whose source MAC is
//! one of the node's own ([`LldpPorts::own_sources`]: its NICs, its VFs' administrative MACs)
//! are ignored and counted: a pod must not be able to tell the node where it is cabled. Frames
//! a pod sends through a macvlan on a NIC never reach that NIC's socket at all: they are
//! outgoing there, and the sockets ignore outgoing frames.

use std::collections::{BTreeMap, HashSet};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hostnet::async_packet::AsyncPacketSocket;
use hostnet::netns::NetNs;
use hostnet::packet::{PacketError, PacketSocket};
use spinel_wire::MacAddr;
use spinel_wire::lldp::remote::RxOutcome;
use spinel_wire::lldp::{RemoteTable, TxSchedule, TxTiming};
use tokio::sync::mpsc;

/// Why a port cannot advertise.
#[derive(Debug, thiserror::Error)]
pub enum AdvertiseError {
    /// Not a port this loop listens on.
    #[error("{0} is not one of the LLDP ports")]
    NotAPort(String),
    /// The timers are not 802.1AB's.
    #[error(transparent)]
    Timing(#[from] spinel_wire::lldp::TxTimingError),
}

/// What one advertising port sends.
#[derive(Debug, Clone)]
pub struct Advert {
    /// The encoded frame.
    pub frame: Vec<u8>,
    /// The shutdown frame (TTL 0) sent when the loop stops.
    pub shutdown: Vec<u8>,
    /// The 802.1AB timers.
    pub timing: TxTiming,
}

/// What happened in the loop, for the caller's log and metrics.
#[derive(Debug)]
pub enum Event<'a> {
    /// A frame was taken into the table (`outcome` says how).
    Received {
        /// The port.
        port: &'a str,
        /// What the table did with it.
        outcome: &'a RxOutcome,
    },
    /// A frame from one of the node's own MACs was ignored.
    Ignored {
        /// The port.
        port: &'a str,
        /// Its source MAC.
        source: MacAddr,
    },
    /// Neighbours aged out.
    Expired {
        /// How many.
        count: usize,
    },
    /// A frame was sent.
    Sent {
        /// The port.
        port: &'a str,
    },
}

/// Opens the LLDP sockets of `ports` inside `ns` (call from an ordinary thread, before the
/// runtime uses them).
pub fn open_ports(ns: &NetNs, ports: &[String]) -> Result<Vec<PacketSocket>, PacketError> {
    ports.iter().map(|p| PacketSocket::lldp(ns, p)).collect()
}

/// The node's own source MACs, shared with whoever keeps them current (VFs get new
/// administrative MACs as pods come and go).
#[derive(Debug, Clone, Default)]
pub struct OwnSources(Arc<Mutex<HashSet<MacAddr>>>);

impl OwnSources {
    /// Replaces the set.
    pub fn replace(&self, macs: impl IntoIterator<Item = MacAddr>) {
        let set: HashSet<MacAddr> = macs.into_iter().collect();
        if let Ok(mut own) = self.0.lock() {
            *own = set;
        }
    }

    fn contains(&self, mac: &MacAddr) -> bool {
        self.0.lock().is_ok_and(|own| own.contains(mac))
    }
}

/// The ports, their neighbour table and their transmit schedules.
pub struct LldpPorts {
    sockets: Vec<Arc<AsyncPacketSocket>>,
    table: RemoteTable,
    adverts: BTreeMap<usize, (Advert, TxSchedule)>,
    own: OwnSources,
    ignored: BTreeMap<String, u64>,
}

/// Largest frame read (jumbo-frame LLDPDUs included).
const MAX_FRAME: usize = 9216;

impl LldpPorts {
    /// Takes opened sockets into the current runtime, each port with at most
    /// `max_neighbors` neighbours (lldpd keeps 32).
    pub fn new(sockets: Vec<PacketSocket>, max_neighbors: usize) -> Result<Self, PacketError> {
        let mut table = RemoteTable::new(max_neighbors);
        let sockets = sockets
            .into_iter()
            .map(|s| {
                table.add_port(s.ifname());
                AsyncPacketSocket::new(s).map(Arc::new)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            sockets,
            table,
            adverts: BTreeMap::new(),
            own: OwnSources::default(),
            ignored: BTreeMap::new(),
        })
    }

    /// Advertises `advert` on port `ifname` with its schedule, starting `now`.
    pub fn advertise(
        &mut self,
        ifname: &str,
        advert: Advert,
        now: Instant,
    ) -> Result<(), AdvertiseError> {
        let index = self
            .sockets
            .iter()
            .position(|s| s.get_ref().ifname() == ifname)
            .ok_or_else(|| AdvertiseError::NotAPort(ifname.to_owned()))?;
        let schedule = TxSchedule::start(advert.timing, now)?;
        self.adverts.insert(index, (advert, schedule));
        Ok(())
    }

    /// Frames from these source MACs are ignored and counted, never believed; the handle
    /// updates the set while the loop runs.
    pub fn own_sources(&self) -> OwnSources {
        self.own.clone()
    }

    /// The neighbour table.
    pub fn table(&self) -> &RemoteTable {
        &self.table
    }

    /// Frames ignored per port because they came from one of the node's own MACs.
    pub fn ignored(&self) -> &BTreeMap<String, u64> {
        &self.ignored
    }

    /// The ports' names, in order.
    pub fn ports(&self) -> impl Iterator<Item = &str> {
        self.sockets.iter().map(|s| s.get_ref().ifname())
    }

    /// Runs until `stop` completes or `on_event` breaks, then sends the shutdown LLDPDU on every
    /// advertising port. A socket that fails ends the loop with its error.
    pub async fn run(
        &mut self,
        stop: impl std::future::Future<Output = ()>,
        mut on_event: impl FnMut(Event<'_>, &RemoteTable) -> ControlFlow<()>,
    ) -> Result<(), PacketError> {
        let (tx, mut rx) = mpsc::channel::<(usize, Result<Vec<u8>, PacketError>)>(64);
        let readers: Vec<_> = self
            .sockets
            .iter()
            .enumerate()
            .map(|(i, sock)| tokio::spawn(read_frames(i, Arc::clone(sock), tx.clone())))
            .collect();
        drop(tx);
        tokio::pin!(stop);
        let result = loop {
            let now = Instant::now();
            if let ControlFlow::Break(()) = self.tick(now, &mut on_event) {
                break Ok(());
            }
            let wake = self.next_wake(now);
            tokio::select! {
                () = &mut stop => break Ok(()),
                () = tokio::time::sleep_until(wake.into()) => {}
                // Without a port there is nothing to read, but the loop still runs until told
                // to stop: a node with no RoCE NIC keeps its agent (its report says so).
                frame = rx.recv(), if !readers.is_empty() => match frame {
                    Some((i, Ok(bytes))) => {
                        if let ControlFlow::Break(()) = self.receive(i, &bytes, &mut on_event) {
                            break Ok(());
                        }
                    }
                    Some((_, Err(e))) => break Err(e),
                    None => break Ok(()),
                },
            }
        };
        readers.iter().for_each(tokio::task::JoinHandle::abort);
        self.shut_down();
        result
    }

    /// Ages the table and sends what is due.
    fn tick(
        &mut self,
        now: Instant,
        on_event: &mut impl FnMut(Event<'_>, &RemoteTable) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let count = self.table.expire(now);
        if count > 0 {
            on_event(Event::Expired { count }, &self.table)?;
        }
        for (&i, (advert, schedule)) in &mut self.adverts {
            if schedule.poll(now).is_some() {
                let sock = &self.sockets[i];
                let port = sock.get_ref().ifname();
                match sock.send(&advert.frame) {
                    Ok(()) => {
                        self.table.record_sent(port);
                        on_event(Event::Sent { port }, &self.table)?;
                    }
                    Err(e) => tracing::warn!(port, "cannot send LLDP: {e}"),
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn receive(
        &mut self,
        i: usize,
        frame: &[u8],
        on_event: &mut impl FnMut(Event<'_>, &RemoteTable) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let port = self.sockets[i].get_ref().ifname();
        let source = frame.get(6..12).and_then(MacAddr::from_slice);
        if let Some(source) = source.filter(|s| self.own.contains(s)) {
            *self.ignored.entry(port.to_owned()).or_default() += 1;
            return on_event(Event::Ignored { port, source }, &self.table);
        }
        let outcome = self.table.receive_frame(port, frame, Instant::now());
        on_event(
            Event::Received {
                port,
                outcome: &outcome,
            },
            &self.table,
        )
    }

    /// The next time something is due: an expiry or a transmission (at most a minute away).
    fn next_wake(&self, now: Instant) -> Instant {
        let due = self
            .adverts
            .values()
            .filter_map(|(_, s)| s.next_due())
            .chain(self.table.next_expiry())
            .min();
        due.unwrap_or(now + Duration::from_secs(60))
            .min(now + Duration::from_secs(60))
    }

    /// Sends the shutdown LLDPDU on every advertising port (once).
    fn shut_down(&mut self) {
        for (&i, (advert, schedule)) in &mut self.adverts {
            if schedule.stop() {
                let sock = &self.sockets[i];
                if let Err(e) = sock.send(&advert.shutdown) {
                    tracing::warn!(
                        port = sock.get_ref().ifname(),
                        "cannot send the shutdown LLDPDU: {e}"
                    );
                }
            }
        }
    }
}

/// Reads frames from one socket into the loop's channel until the loop goes away.
async fn read_frames(
    index: usize,
    sock: Arc<AsyncPacketSocket>,
    tx: mpsc::Sender<(usize, Result<Vec<u8>, PacketError>)>,
) {
    let mut buf = vec![0u8; MAX_FRAME];
    loop {
        let item = sock.recv(&mut buf).await.map(|r| buf[..r.len].to_vec());
        let failed = item.is_err();
        if tx.send((index, item)).await.is_err() || failed {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A node without RoCE NICs: the loop runs until it is told to stop, never ends by itself.
    #[tokio::test]
    async fn without_ports_the_loop_runs_until_stopped() {
        let mut ports = LldpPorts::new(Vec::new(), 32).expect("no sockets to wrap");
        let stop = tokio::time::sleep(Duration::from_millis(300));
        let started = std::time::Instant::now();
        ports
            .run(stop, |_, _| ControlFlow::Continue(()))
            .await
            .expect("a clean stop");
        assert!(started.elapsed() >= Duration::from_millis(300));
    }
}
