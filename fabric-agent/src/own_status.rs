//! The node's own `NodeFabric` status as the fabric controller writes it (the node's labels,
//! the cabling findings about it), from one watch for every duty that reads it: the health
//! pass (cabling findings) and the DRA driver (labels). `node_labels` keeps its own watch: it
//! also reacts to the object's deletion and to relists.
//!
//! The channel is first written when the first list is complete, even when it found nothing:
//! a reader that must not act on a status it has not read yet (the DRA publisher after a
//! restart) waits for that first change.

use futures::StreamExt as _;
use kube::Api;
use kube::runtime::watcher::{self, Event};
use spinel_api::crd::{NodeFabric, NodeFabricStatus};
use tokio::sync::watch;

/// Keeps the status of `NodeFabric/<node>` current in `out` (`None` while it has none).
pub async fn watch(
    fabrics: Api<NodeFabric>,
    node: String,
    out: watch::Sender<Option<NodeFabricStatus>>,
) {
    let config = watcher::Config::default().fields(&format!("metadata.name={node}"));
    let stream = kube::runtime::WatchStreamExt::default_backoff(watcher::watcher(fabrics, config));
    futures::pin_mut!(stream);
    let mut tracker = Tracker::default();
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => tracker.apply(event, &out),
            Err(e) => tracing::warn!(node, "watching the node's NodeFabric status: {e}"),
        }
    }
}

/// Folds watch events into the channel.
#[derive(Debug, Default)]
struct Tracker {
    /// During a (re)list: the status it showed so far.
    listing: Option<Option<NodeFabricStatus>>,
    /// Whether a list has completed.
    listed: bool,
}

impl Tracker {
    fn apply(&mut self, event: Event<NodeFabric>, out: &watch::Sender<Option<NodeFabricStatus>>) {
        let set = |status: Option<NodeFabricStatus>, always: bool| {
            out.send_if_modified(|s| {
                let changed = *s != status;
                *s = status;
                changed || always
            });
        };
        match event {
            Event::Init => self.listing = Some(None),
            Event::InitApply(nf) => self.listing = Some(nf.status),
            Event::InitDone => {
                let status = self.listing.take().flatten();
                set(status, !self.listed);
                self.listed = true;
            }
            Event::Apply(nf) => set(nf.status, false),
            // The agent writes its report again and the controller its status: until then the
            // last status read is the best knowledge of the node's place.
            Event::Delete(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use spinel_api::crd::NodeFabricSpec;

    use super::*;

    fn object(labels: &[(&str, &str)]) -> NodeFabric {
        let mut nf = NodeFabric::new("h1", NodeFabricSpec::default());
        nf.status = Some(NodeFabricStatus {
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..NodeFabricStatus::default()
        });
        nf
    }

    #[test]
    fn readers_learn_when_the_first_list_is_complete_even_if_empty() {
        let (tx, mut rx) = watch::channel(None);
        let mut t = Tracker::default();
        t.apply(Event::Init, &tx);
        assert!(
            !rx.has_changed().unwrap(),
            "nothing before the list is complete"
        );
        t.apply(Event::InitDone, &tx);
        assert!(rx.has_changed().unwrap(), "an empty first list is news too");
        assert_eq!(*rx.borrow_and_update(), None);
        // A relist that shows the same nothing again says nothing.
        t.apply(Event::Init, &tx);
        t.apply(Event::InitDone, &tx);
        assert!(!rx.has_changed().unwrap());
    }

    #[test]
    fn a_status_arrives_whole_at_the_end_of_a_list_and_with_each_change() {
        let (tx, mut rx) = watch::channel(None);
        let mut t = Tracker::default();
        t.apply(Event::Init, &tx);
        t.apply(Event::InitApply(object(&[("tier-1", "lf1")])), &tx);
        assert!(
            !rx.has_changed().unwrap(),
            "not before the list is complete"
        );
        t.apply(Event::InitDone, &tx);
        let labels = |rx: &mut watch::Receiver<Option<NodeFabricStatus>>| {
            rx.borrow_and_update().as_ref().map(|s| s.labels.clone())
        };
        assert_eq!(
            labels(&mut rx).unwrap().get("tier-1").map(String::as_str),
            Some("lf1")
        );
        t.apply(Event::Apply(object(&[("tier-1", "lf2")])), &tx);
        assert_eq!(
            labels(&mut rx).unwrap().get("tier-1").map(String::as_str),
            Some("lf2")
        );
        // A relist that no longer finds the object: no status.
        t.apply(Event::Init, &tx);
        t.apply(Event::InitDone, &tx);
        assert!(rx.has_changed().unwrap());
        assert_eq!(labels(&mut rx), None);
    }
}
