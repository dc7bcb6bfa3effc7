//! What the agent observes, gathered into one [`Observation`]: the RoCE NICs (rediscovered
//! from a plain thread, because netlink and sysfs calls block) and the LLDP neighbour table
//! (from the LLDP loop's events). Each source updates its part; the publisher sees one value.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hostnet::netlink::RouteSocket;
use hostnet::sriov::Sysfs;
use spinel_node::lldp::{Advert, Event, OwnSources};
use spinel_node::nics::{self, NicSelection, RoceNic};
use spinel_wire::MacAddr;
use spinel_wire::lldp::remote::RxOutcome;
use spinel_wire::lldp::{LldpFrame, LldpGroup, LocalSystem, RemoteTable, TxTiming};
use spinel_wire::neighbor::{Capabilities, Capability};
use tokio::sync::watch;

use crate::report::{Observation, stable_table};

/// Rediscovers the NICs every `period` until `stop` is set; publishes changes and keeps the
/// LLDP loop's set of the node's own MACs current (every link's, and the administrative MAC
/// of every VF, which the CNI sets to the pod's).
pub fn watch_nics(
    sysfs: Sysfs,
    mut host: RouteSocket,
    selection: NicSelection,
    period: Duration,
    observation: Arc<watch::Sender<Observation>>,
    own: OwnSources,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match nics::discover(&sysfs, &mut host, &selection) {
                Ok((found, _)) => {
                    own.replace(own_macs(&mut host, &found));
                    observation.send_if_modified(|o| {
                        let changed = o.nics != found;
                        o.nics = found;
                        changed
                    });
                }
                Err(e) => tracing::warn!("cannot rediscover the RoCE NICs: {e}"),
            }
            std::thread::sleep(period);
        }
    })
}

fn own_macs(host: &mut RouteSocket, nics: &[RoceNic]) -> Vec<MacAddr> {
    let mut macs: Vec<MacAddr> = host
        .links()
        .map(|links| links.into_iter().filter_map(|l| l.mac).collect())
        .unwrap_or_default();
    for nic in nics {
        if let Ok(vfs) = host.vf_settings(nic.index) {
            macs.extend(vfs.into_iter().map(|v| v.mac));
        }
    }
    macs.retain(MacAddr::is_valid_unicast);
    macs
}

/// The LLDP loop's event handler: the table goes into the observation whenever the cabling
/// it shows may have changed; ignored frames are counted there and logged.
pub fn on_lldp_event(
    node: &str,
    observation: &watch::Sender<Observation>,
) -> impl FnMut(Event<'_>, &RemoteTable) -> ControlFlow<()> {
    let node = node.to_owned();
    let observation = observation.clone();
    move |event, table| {
        match event {
            Event::Received { outcome, port } => match outcome {
                RxOutcome::Discarded(e) => {
                    tracing::warn!(port, "discarded an LLDP frame: {e}");
                    return ControlFlow::Continue(());
                }
                RxOutcome::TableFull => {
                    tracing::warn!(
                        port,
                        "LLDP neighbour table full; a new neighbour was dropped"
                    );
                    return ControlFlow::Continue(());
                }
                _ => {}
            },
            Event::Ignored { port, source } => {
                tracing::warn!(port, %source, "ignored an LLDP frame from one of the node's own MACs");
                observation.send_modify(|o| o.ignored += 1);
                return ControlFlow::Continue(());
            }
            Event::Sent { .. } => return ControlFlow::Continue(()),
            Event::Expired { .. } => {}
        }
        let stable = stable_table(table, &node);
        observation.send_if_modified(|o| {
            let changed = o.table.as_ref() != Some(&stable);
            o.table = Some(stable);
            changed
        });
        ControlFlow::Continue(())
    }
}

/// Why a NIC's advertisement cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum AdvertError {
    /// The local system's TLVs.
    #[error(transparent)]
    Local(#[from] spinel_wire::lldp::LocalSystemError),
    /// The frame.
    #[error(transparent)]
    Encode(#[from] spinel_wire::lldp::EncodeError),
}

/// What the node advertises on `nic`: the node name as system name (so switch-side tables
/// name hosts the way Kubernetes does), the NIC as port, station capability.
pub fn advert(node: &str, nic: &RoceNic, timing: TxTiming) -> Result<Advert, AdvertError> {
    let mac = nic.mac.unwrap_or_default();
    let mut local = LocalSystem::new(mac, &nic.name);
    local.system_name = Some(node.to_owned());
    local.port_description = Some(format!("{} {}", nic.name, nic.pci));
    local.capabilities = Some(Capabilities {
        supported: vec![Capability::Station],
        enabled: vec![Capability::Station],
    });
    local.max_frame_size = u16::try_from(nic.mtu + 18).ok();
    let lldpdu = local.lldpdu(timing.ttl())?;
    let frame = LldpFrame {
        destination: LldpGroup::NearestBridge,
        source: mac,
        vlan: None,
        lldpdu,
    };
    let shutdown = LldpFrame {
        lldpdu: frame.lldpdu.shutdown(),
        ..frame.clone()
    };
    Ok(Advert {
        frame: frame.to_vec(1500)?,
        shutdown: shutdown.to_vec(1500)?,
        timing,
    })
}
