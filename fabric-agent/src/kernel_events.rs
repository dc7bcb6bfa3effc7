//! The kernel's link, address, route and rule notifications, fanned out: a RoCE NIC whose
//! carrier comes up starts an announcement burst at once; every notification wakes the route
//! reconciler (a deleted rule is back within milliseconds, not at the next poll).

use std::collections::BTreeMap;
use std::sync::Arc;

use hostnet::rtnl::{Event, Events};
use tokio::sync::{Notify, watch};

use crate::announcements::Bursts;
use crate::report::Observation;

/// Tracks carrier per link and says when a RoCE NIC's carrier comes up.
#[derive(Debug, Default)]
pub struct Carrier {
    known: BTreeMap<u32, bool>,
}

impl Carrier {
    /// Starts from what the NIC discovery saw.
    pub fn from_observation(o: &Observation) -> Self {
        Self {
            known: o.nics.iter().map(|n| (n.index, n.carrier)).collect(),
        }
    }

    /// The NIC whose carrier `event` brought up, if it is one of `roce` (by name).
    pub fn carrier_up(&mut self, event: &Event, roce: &[String]) -> Option<String> {
        match event {
            Event::Link {
                index,
                name,
                carrier,
            } => {
                let before = self.known.insert(*index, *carrier);
                (*carrier && before != Some(true) && roce.contains(name)).then(|| name.clone())
            }
            Event::LinkGone { index } => {
                self.known.remove(index);
                None
            }
            _ => None,
        }
    }
}

/// Dispatches `events` until the socket closes.
pub async fn run(
    mut events: Events,
    observations: watch::Receiver<Observation>,
    routes_changed: Arc<Notify>,
    bursts: Option<Bursts>,
) {
    let mut carrier = Carrier::from_observation(&observations.borrow());
    while let Some(event) = events.next().await {
        if let Some(bursts) = &bursts {
            let roce: Vec<String> = observations
                .borrow()
                .nics
                .iter()
                .map(|n| n.name.to_string())
                .collect();
            if let Some(nic) = carrier.carrier_up(&event, &roce) {
                tracing::info!(nic, "carrier up: announcing the host's and pods' addresses");
                bursts.start(&nic);
            }
        }
        routes_changed.notify_one();
    }
    tracing::warn!("the kernel event socket closed");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_roce_nic_going_from_no_carrier_to_carrier_starts_a_burst() {
        let mut c = Carrier::default();
        let roce = vec!["pf0".to_owned()];
        let link = |index, name: &str, carrier| Event::Link {
            index,
            name: name.into(),
            carrier,
        };
        assert_eq!(c.carrier_up(&link(2, "pf0", false), &roce), None);
        assert_eq!(
            c.carrier_up(&link(2, "pf0", true), &roce),
            Some("pf0".into())
        );
        assert_eq!(
            c.carrier_up(&link(2, "pf0", true), &roce),
            None,
            "MTU change, not a flap"
        );
        assert_eq!(c.carrier_up(&link(3, "eth9", false), &roce), None);
        assert_eq!(
            c.carrier_up(&link(3, "eth9", true), &roce),
            None,
            "not a RoCE NIC"
        );
        assert_eq!(c.carrier_up(&Event::LinkGone { index: 2 }, &roce), None);
        assert_eq!(
            c.carrier_up(&link(2, "pf0", true), &roce),
            Some("pf0".into()),
            "a NIC that comes back with carrier"
        );
    }
}
