//! `events.k8s.io/v1` Events that are told once. Each Event's name is derived from what it is
//! about (its subject and a stable hash of the facts that make it the same Event), so a
//! restarted or failed-over daemon creates the same name again and the API server refuses the
//! duplicate (AlreadyExists) instead of the cluster hearing the same thing twice. The note may
//! change wording; the name does not.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;

/// The namespace of Events about cluster-scoped objects (as the kubelet does for Nodes).
pub const CLUSTER_SCOPED_NAMESPACE: &str = "default";

/// The longest note `events.k8s.io/v1` accepts.
const MAX_NOTE: usize = 1024;

/// One Event to tell once.
#[derive(Debug, Clone, PartialEq)]
pub struct EventSpec {
    /// Deterministic name (see [`event_name`]).
    pub name: String,
    /// What it is about.
    pub regarding: ObjectReference,
    /// Warning, or Normal.
    pub warning: bool,
    /// CamelCase reason (`SwappedRail`, `GangReleased`).
    pub reason: String,
    /// CamelCase action (`InferFabric`, `Scheduling`).
    pub action: String,
    /// What a person reads; cut to 1,024 bytes.
    pub note: String,
}

/// `<subject>.spinel-<16 hex digits of FNV-1a(about)>`: a valid object name of at most 253
/// characters, the same for the same `about` in every build.
pub fn event_name(subject: &str, about: &str) -> String {
    // Subjects are DNS subdomains; cut long ones at a dot-free, dash-free end.
    let mut cut = subject.get(..200).unwrap_or(subject);
    cut = cut.trim_end_matches(['.', '-']);
    format!("{cut}.spinel-{:016x}", fnv1a(about.as_bytes()))
}

/// FNV-1a, 64 bits: stable across builds and platforms (unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A reference to a cluster-scoped Node (kubelets use the name as its uid too, and
/// `kubectl describe node` finds Events by either).
pub fn node_ref(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(name.to_owned()),
        uid: Some(name.to_owned()),
        ..ObjectReference::default()
    }
}

/// A reference to a Pod.
pub fn pod_ref(namespace: &str, name: &str, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        uid: uid.map(str::to_owned),
        ..ObjectReference::default()
    }
}

/// `snake_case` → `SnakeCase`, for reasons.
pub fn camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Who reports Events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reporter {
    /// `reportingController`, e.g. `fabric.spinel.dev/fabric-controller`.
    pub controller: String,
    /// `reportingInstance`: this replica.
    pub instance: String,
}

impl Reporter {
    /// The object for `spec`, at `now`.
    pub fn event(&self, spec: &EventSpec, now: MicroTime) -> Event {
        let mut note = spec.note.clone();
        if note.len() > MAX_NOTE {
            let mut end = MAX_NOTE - 3;
            while !note.is_char_boundary(end) {
                end -= 1;
            }
            note.truncate(end);
            note.push_str("...");
        }
        let namespace = spec
            .regarding
            .namespace
            .clone()
            .unwrap_or_else(|| CLUSTER_SCOPED_NAMESPACE.to_owned());
        Event {
            metadata: ObjectMeta {
                name: Some(spec.name.clone()),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            action: Some(spec.action.clone()),
            event_time: Some(now),
            note: Some(note),
            reason: Some(spec.reason.chars().take(128).collect()),
            regarding: Some(spec.regarding.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.chars().take(128).collect()),
            type_: Some(if spec.warning { "Warning" } else { "Normal" }.into()),
            ..Event::default()
        }
    }

    /// Creates the Event for `spec`; an Event of that name that already exists was told by
    /// this or an earlier replica, which is success.
    pub async fn tell(&self, client: &kube::Client, spec: &EventSpec) -> kube::Result<Told> {
        let event = self.event(spec, MicroTime(Timestamp::now()));
        let namespace = event.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => Ok(Told::Now),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Told::Before),
            Err(e) => Err(e),
        }
    }
}

/// Whether an Event was created now or had been before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told {
    /// Created by this call.
    Now,
    /// It existed already.
    Before,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_short_and_valid() {
        let a = event_name("h1", "swapped_rail\u{1f}h1\u{1f}ens1f0np0");
        assert_eq!(a, event_name("h1", "swapped_rail\u{1f}h1\u{1f}ens1f0np0"));
        assert_ne!(a, event_name("h1", "swapped_rail\u{1f}h1\u{1f}ens1f1np1"));
        assert!(a.starts_with("h1.spinel-") && a.len() == "h1.spinel-".len() + 16);
        let long = "n".repeat(253);
        assert!(event_name(&long, "x").len() <= 253);
        assert!(!event_name("a-.b.-", "x").contains("-.spinel"));
    }

    #[test]
    fn events_fit_the_api() {
        let reporter = Reporter {
            controller: "fabric.spinel.dev/x".into(),
            instance: "i".repeat(300),
        };
        let spec = EventSpec {
            name: "n.spinel-0".into(),
            regarding: node_ref("n"),
            warning: true,
            reason: "SwappedRail".into(),
            action: "InferFabric".into(),
            note: "é".repeat(2000),
        };
        let e = reporter.event(&spec, MicroTime(Timestamp::UNIX_EPOCH));
        assert!(e.note.as_ref().unwrap().len() <= MAX_NOTE);
        assert_eq!(e.reporting_instance.as_ref().unwrap().len(), 128);
        assert_eq!(
            e.metadata.namespace.as_deref(),
            Some(CLUSTER_SCOPED_NAMESPACE)
        );
        let pod = EventSpec {
            regarding: pod_ref("ml", "p", Some("u")),
            ..spec
        };
        assert_eq!(
            reporter
                .event(&pod, MicroTime(Timestamp::UNIX_EPOCH))
                .metadata
                .namespace
                .as_deref(),
            Some("ml")
        );
        assert_eq!(camel("swapped_rail"), "SwappedRail");
    }
}
