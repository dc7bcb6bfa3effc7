//! Carries out planned writes against the API server: server-side apply as field manager
//! `spinel-fabric-controller` (forced: these fields are Spinel's), a few at a time, each only
//! while this replica leads. Every answer goes into the observed view at once.

use std::collections::HashSet;

use futures::StreamExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use spinel_api::crd::{FabricStatus, NodeFabric, NodeFabricStatus};
use spinel_api::kueue::Topology;
use spinel_api::volcano::HyperNode;
use spinel_kube::lease::Leadership;

use super::changes::{Observed, Write};
use crate::desired::events::{EVENT_NAMESPACE, reporter};
use crate::observed::rv_of;

/// The field manager of everything the controller writes.
pub const FIELD_MANAGER: &str = "spinel-fabric-controller";

/// What became of a batch of writes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Writes the API server took.
    pub done: usize,
    /// Writes that failed (tried again later).
    pub failed: usize,
    /// Writes not sent because this replica does not lead.
    pub not_leading: usize,
}

/// The answer to one write.
enum Answer {
    Status(String, Option<u64>, Option<NodeFabricStatus>),
    HyperNode(String, Option<u64>, Box<HyperNode>),
    HyperNodeGone(String),
    Topology(String, Option<u64>, Box<Topology>),
    Fabric(String, Option<u64>, Option<FabricStatus>),
    Event(String),
    Gone,
    Failed,
    NotLeading,
}

/// Writes to the API server for one replica.
#[derive(Clone)]
pub struct Writer {
    client: kube::Client,
    identity: String,
    leadership: Leadership,
    concurrency: usize,
}

impl Writer {
    /// A writer for replica `identity`, at most `concurrency` requests at a time.
    pub fn new(
        client: kube::Client,
        identity: String,
        leadership: Leadership,
        concurrency: usize,
    ) -> Self {
        Self {
            client,
            identity,
            leadership,
            concurrency: concurrency.max(1),
        }
    }

    /// Carries out `writes`; the `Fabric` object before its status, everything else at once.
    pub async fn execute(
        &self,
        writes: Vec<Write>,
        observed: &mut Observed,
        emitted: &mut HashSet<String>,
    ) -> Outcome {
        let (fabric, rest): (Vec<Write>, Vec<Write>) = writes
            .into_iter()
            .partition(|w| matches!(w, Write::FabricObject(_) | Write::FabricStatus(..)));
        let mut answers: Vec<Answer> = futures::stream::iter(rest)
            .map(|w| self.one(w))
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        for w in fabric {
            answers.push(self.one(w).await);
        }
        let mut outcome = Outcome::default();
        for a in answers {
            match a {
                Answer::Status(n, rv, s) => observed.statuses.wrote(n, rv, s),
                Answer::HyperNode(n, rv, h) => observed.hypernodes.wrote(n, rv, *h),
                Answer::HyperNodeGone(n) => observed.hypernodes.delete(&n),
                Answer::Topology(n, rv, t) => observed.topologies.wrote(n, rv, *t),
                Answer::Fabric(n, rv, s) => observed.fabrics.wrote(n, rv, s),
                Answer::Event(name) => {
                    emitted.insert(name);
                }
                Answer::Gone => {}
                Answer::Failed => {
                    outcome.failed += 1;
                    continue;
                }
                Answer::NotLeading => {
                    outcome.not_leading += 1;
                    continue;
                }
            }
            outcome.done += 1;
        }
        outcome
    }

    async fn one(&self, write: Write) -> Answer {
        if !self.leadership.may_act() {
            return Answer::NotLeading;
        }
        let what = describe(&write);
        match self.send(write).await {
            Ok(answer) => answer,
            Err(kube::Error::Api(s)) if s.code == 404 => Answer::Gone,
            Err(e) => {
                tracing::warn!("cannot write {what}: {e}");
                Answer::Failed
            }
        }
    }

    async fn send(&self, write: Write) -> kube::Result<Answer> {
        let apply = PatchParams::apply(FIELD_MANAGER).force();
        match write {
            Write::NodeStatus(name, status) => self.node_status(name, status).await,
            Write::HyperNode(h) => {
                let name = h.metadata.name.clone().unwrap_or_default();
                let api: Api<HyperNode> = Api::all(self.client.clone());
                let got = api.patch(&name, &apply, &Patch::Apply(&*h)).await?;
                Ok(Answer::HyperNode(name, rv_of(&got), Box::new(got)))
            }
            Write::DeleteHyperNode(name) => {
                let api: Api<HyperNode> = Api::all(self.client.clone());
                api.delete(&name, &DeleteParams::default()).await?;
                Ok(Answer::HyperNodeGone(name))
            }
            Write::Topology(t) => {
                let name = t.metadata.name.clone().unwrap_or_default();
                let api: Api<Topology> = Api::all(self.client.clone());
                let got = api.patch(&name, &apply, &Patch::Apply(&*t)).await?;
                Ok(Answer::Topology(name, rv_of(&got), Box::new(got)))
            }
            Write::FabricObject(name) => {
                let api: Api<spinel_api::crd::Fabric> = Api::all(self.client.clone());
                let object = json!({
                    "apiVersion": format!("{}/{}", spinel_api::crd::GROUP, spinel_api::crd::VERSION),
                    "kind": "Fabric",
                    "metadata": {"name": name},
                    "spec": {},
                });
                let got = api.patch(&name, &apply, &Patch::Apply(&object)).await?;
                Ok(Answer::Fabric(name, rv_of(&got), got.status))
            }
            Write::FabricStatus(name, status) => {
                let api: Api<spinel_api::crd::Fabric> = Api::all(self.client.clone());
                let object = json!({
                    "apiVersion": format!("{}/{}", spinel_api::crd::GROUP, spinel_api::crd::VERSION),
                    "kind": "Fabric",
                    "metadata": {"name": name},
                    "status": status,
                });
                let got = api
                    .patch_status(&name, &apply, &Patch::Apply(&object))
                    .await?;
                Ok(Answer::Fabric(name, rv_of(&got), got.status))
            }
            Write::Event(spec) => {
                // Told now, or by this or an earlier replica: the finding is told either way.
                reporter(&self.identity)
                    .tell(&self.client, &spec.to_kube())
                    .await?;
                Ok(Answer::Event(spec.name))
            }
        }
    }

    /// Applies a node's status; fields another manager put there (which apply does not
    /// remove) are then removed with a merge patch, so the status is exactly the model's.
    async fn node_status(&self, name: String, status: NodeFabricStatus) -> kube::Result<Answer> {
        let api: Api<NodeFabric> = Api::all(self.client.clone());
        let object = json!({
            "apiVersion": format!("{}/{}", spinel_api::crd::GROUP, spinel_api::crd::VERSION),
            "kind": "NodeFabric",
            "metadata": {"name": name},
            "status": status,
        });
        let apply = PatchParams::apply(FIELD_MANAGER).force();
        let mut got = api
            .patch_status(&name, &apply, &Patch::Apply(&object))
            .await?;
        if got.status.as_ref() != Some(&status) {
            let current = serde_json::to_value(&got.status).unwrap_or(Value::Null);
            let wanted = serde_json::to_value(&status).unwrap_or(Value::Null);
            let patch = json!({"status": merge_patch(&current, &wanted)});
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_owned()),
                ..PatchParams::default()
            };
            tracing::info!(node = %name, "removing fields other managers put in the status");
            got = api
                .patch_status(&name, &params, &Patch::Merge(&patch))
                .await?;
        }
        Ok(Answer::Status(name, rv_of(&got), got.status))
    }
}

/// The JSON merge patch (RFC 7386) that turns `current` into `wanted`.
pub fn merge_patch(current: &Value, wanted: &Value) -> Value {
    match (current, wanted) {
        (Value::Object(c), Value::Object(w)) => {
            let mut out = serde_json::Map::new();
            for (k, cv) in c {
                match w.get(k) {
                    None => {
                        out.insert(k.clone(), Value::Null);
                    }
                    Some(wv) if wv != cv => {
                        out.insert(k.clone(), merge_patch(cv, wv));
                    }
                    Some(_) => {}
                }
            }
            for (k, wv) in w {
                if !c.contains_key(k) {
                    out.insert(k.clone(), wv.clone());
                }
            }
            Value::Object(out)
        }
        _ => wanted.clone(),
    }
}

fn describe(w: &Write) -> String {
    match w {
        Write::NodeStatus(n, _) => format!("NodeFabric/{n} status"),
        Write::HyperNode(h) => format!(
            "HyperNode/{}",
            h.metadata.name.as_deref().unwrap_or_default()
        ),
        Write::DeleteHyperNode(n) => format!("HyperNode/{n} (delete)"),
        Write::Topology(t) => format!(
            "Topology/{}",
            t.metadata.name.as_deref().unwrap_or_default()
        ),
        Write::FabricObject(n) => format!("Fabric/{n}"),
        Write::FabricStatus(n, _) => format!("Fabric/{n} status"),
        Write::Event(e) => format!("Event {}/{}", EVENT_NAMESPACE, e.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merge_patch_removes_foreign_keys_and_sets_ours() {
        let current = json!({"labels": {"a": "1", "x": "foreign"}, "tier1": "t", "findings": []});
        let wanted = json!({"labels": {"a": "2"}, "findings": [{"k": 1}]});
        assert_eq!(
            merge_patch(&current, &wanted),
            json!({"labels": {"a": "2", "x": null}, "tier1": null, "findings": [{"k": 1}]})
        );
        assert_eq!(merge_patch(&wanted, &wanted), json!({}));
    }
}
