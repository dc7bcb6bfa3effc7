//! The miswiring report as Kubernetes Events: one per finding, on the Node it is about (on
//! `Fabric/default` for switch-side findings). Names are derived from what the finding is
//! about, so a restarted or failed-over controller creates the same names and the API server
//! refuses the duplicates (AlreadyExists), instead of repeating every finding.

use k8s_openapi::api::core::v1::ObjectReference;
use spinel_api::crd::{FABRIC_NAME, GROUP, VERSION};
use spinel_kube::events::{Reporter, camel, node_ref};
use topo_discovery::fabric::{Finding, Severity};

/// The namespace of Events about cluster-scoped objects (as the kubelet does for Nodes).
pub const EVENT_NAMESPACE: &str = spinel_kube::events::CLUSTER_SCOPED_NAMESPACE;

/// The `reportingController` of every Event.
pub const REPORTING_CONTROLLER: &str = "fabric.spinel.dev/fabric-controller";

/// What an Event is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Regarding {
    /// A Node, by name.
    Node(String),
    /// The `Fabric/default` object.
    Fabric,
}

/// One Event to create, once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventSpec {
    /// Deterministic name: the subject and a hash of what the finding is about.
    pub name: String,
    /// The object it is about.
    pub regarding: Regarding,
    /// Warning (errors) or Normal (warnings of the model, which need no action now).
    pub warning: bool,
    /// The finding's kind, CamelCase (`SwappedRail`).
    pub reason: String,
    /// The finding's message.
    pub note: String,
}

/// The Event of a miswiring finding.
pub fn for_finding(f: &Finding) -> EventSpec {
    let regarding = match &f.host {
        Some(h) => Regarding::Node(h.clone()),
        None => Regarding::Fabric,
    };
    let about = [
        f.kind.as_str(),
        f.host.as_deref().unwrap_or(""),
        f.nic.as_deref().unwrap_or(""),
        f.switch.as_deref().unwrap_or(""),
        f.port.as_deref().unwrap_or(""),
        f.expected.as_deref().unwrap_or(""),
    ]
    .join("\u{1f}");
    EventSpec {
        name: event_name(&regarding, &about),
        regarding,
        warning: f.severity == Severity::Error,
        reason: camel(f.kind.as_str()),
        note: f.message.clone(),
    }
}

/// The Event of a node whose report cannot be used.
pub fn for_unusable(node: &str, why: &str) -> EventSpec {
    let regarding = Regarding::Node(node.to_owned());
    EventSpec {
        name: event_name(&regarding, &format!("unusable\u{1f}{why}")),
        regarding,
        warning: true,
        reason: "UnusableReport".to_owned(),
        note: format!("the node's NodeFabric report cannot be used: {why}"),
    }
}

/// `<subject>.spinel-<16 hex digits>`: see [`spinel_kube::events::event_name`].
fn event_name(regarding: &Regarding, about: &str) -> String {
    let subject = match regarding {
        Regarding::Node(n) => n.as_str(),
        Regarding::Fabric => FABRIC_NAME,
    };
    spinel_kube::events::event_name(subject, about)
}

impl EventSpec {
    /// The Event to tell, in the form the shared Event writer takes.
    pub fn to_kube(&self) -> spinel_kube::events::EventSpec {
        let regarding = match &self.regarding {
            Regarding::Node(n) => node_ref(n),
            Regarding::Fabric => ObjectReference {
                api_version: Some(format!("{GROUP}/{VERSION}")),
                kind: Some("Fabric".into()),
                name: Some(FABRIC_NAME.into()),
                ..ObjectReference::default()
            },
        };
        spinel_kube::events::EventSpec {
            name: self.name.clone(),
            regarding,
            warning: self.warning,
            reason: self.reason.clone(),
            action: "InferFabric".into(),
            note: self.note.clone(),
        }
    }
}

/// Who reports the controller's Events: replica `instance`.
pub fn reporter(instance: &str) -> Reporter {
    Reporter {
        controller: REPORTING_CONTROLLER.into(),
        instance: instance.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use topo_discovery::fabric::FindingKind;

    use super::*;

    fn finding(host: Option<&str>, nic: &str, message: &str) -> Finding {
        Finding {
            severity: Severity::Error,
            kind: FindingKind::SwappedRail,
            host: host.map(str::to_owned),
            nic: Some(nic.into()),
            switch: Some("leaf2".into()),
            port: Some("swp1".into()),
            expected: Some("leaf1".into()),
            message: message.into(),
        }
    }

    #[test]
    fn names_are_stable_and_tell_findings_apart() {
        let a = for_finding(&finding(Some("h1"), "ens1f0np0", "one"));
        // The message (free ports, counts) may change; the finding is the same.
        let again = for_finding(&finding(Some("h1"), "ens1f0np0", "one, reworded"));
        let other = for_finding(&finding(Some("h1"), "ens1f1np1", "one"));
        assert_eq!(a.name, again.name);
        assert_ne!(a.name, other.name);
        assert!(a.name.starts_with("h1.spinel-") && a.name.len() == "h1.spinel-".len() + 16);
        assert_eq!(a.reason, "SwappedRail");
        assert_eq!(a.regarding, Regarding::Node("h1".into()));
        let fabric = for_finding(&finding(None, "x", "m"));
        assert!(fabric.name.starts_with("default.spinel-"));
    }

    #[test]
    fn events_are_valid_for_events_k8s_io() {
        let long = "n".repeat(253);
        let spec = for_finding(&finding(Some(&long), "x", &"é".repeat(2000)));
        assert!(spec.name.len() <= 253, "{}", spec.name.len());
        let e = reporter("replica-1").event(
            &spec.to_kube(),
            k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
        );
        assert!(e.note.as_ref().unwrap().len() <= 1024);
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.regarding.as_ref().unwrap().kind.as_deref(), Some("Node"));
        assert_eq!(e.metadata.namespace.as_deref(), Some(EVENT_NAMESPACE));
    }
}
