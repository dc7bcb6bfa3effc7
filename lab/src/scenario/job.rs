//! Training jobs as a launcher submits them: one pod per TP group, all pods of a gang carrying
//! Spinel's gang annotations, GPUs requested as the device plugin's extended resource; and what
//! kube-scheduler with Spinel's extender made of them.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use spinel_api::scheduling as keys;

use crate::cluster::GPU_RESOURCE;

/// The namespace the lab's jobs run in.
pub const JOBS_NAMESPACE: &str = "training";

/// A gang job.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// Gang name (pods are `<name>-<i>`).
    pub name: String,
    /// Pods.
    pub pods: u32,
    /// GPUs per pod (= ranks per pod).
    pub gpus_per_pod: u32,
    /// Tensor-parallel degree (ranks).
    pub tp: u32,
    /// Data-parallel degree.
    pub dp: u32,
    /// Pipeline stages.
    pub pp: u32,
}

impl Job {
    /// Pods in one pipeline stage (one DP group of TP groups).
    pub fn pods_per_stage(&self) -> u32 {
        (self.tp * self.dp / self.gpus_per_pod).max(1)
    }

    /// Pod `i`'s name.
    pub fn pod_name(&self, i: u32) -> String {
        format!("{}-{i}", self.name)
    }
}

/// Where one pod of a job landed.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Placed {
    /// Pod.
    pub pod: String,
    /// Its rank (pod index in the gang) as the scheduler published it.
    pub rank: u32,
    /// Node.
    pub node: String,
}

/// Creates the jobs' namespace and its default ServiceAccount (no controller manager runs in
/// the lab to make it).
pub async fn ensure_namespace(admin: &kube::Client) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": JOBS_NAMESPACE}}))?;
    let created = Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &ns)
        .await;
    exists_ok(created).context("create the jobs' namespace")?;
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "default"}}))?;
    let created = Api::<ServiceAccount>::namespaced(admin.clone(), JOBS_NAMESPACE)
        .create(&PostParams::default(), &sa)
        .await;
    exists_ok(created).context("create the jobs' default ServiceAccount")
}

fn exists_ok<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Submits every pod of `job`.
pub async fn submit(admin: &kube::Client, job: &Job) -> anyhow::Result<()> {
    let api = Api::<Pod>::namespaced(admin.clone(), JOBS_NAMESPACE);
    for i in 0..job.pods {
        let gpus = job.gpus_per_pod.to_string();
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {
                "name": job.pod_name(i),
                "labels": {keys::GANG: job.name},
                "annotations": {
                    keys::GANG_SIZE: job.pods.to_string(),
                    keys::TP: job.tp.to_string(),
                    keys::DP: job.dp.to_string(),
                    keys::PP: job.pp.to_string(),
                },
            },
            "spec": {
                "containers": [{
                    "name": "trainer",
                    "image": "nvcr.io/nvidia/pytorch:25.10-py3",
                    "resources": {"limits": {GPU_RESOURCE: gpus}, "requests": {GPU_RESOURCE: gpus}},
                }],
                "tolerations": [],
            },
        }))?;
        api.create(&PostParams::default(), &pod)
            .await
            .with_context(|| format!("create Pod {}", job.pod_name(i)))?;
    }
    Ok(())
}

/// Waits until every pod of `job` is bound and has its rank; `Err` after `timeout` with what
/// kube-scheduler said about the pods still pending.
pub async fn wait_placed(
    admin: &kube::Client,
    job: &Job,
    timeout: Duration,
) -> anyhow::Result<Vec<Placed>> {
    let api = Api::<Pod>::namespaced(admin.clone(), JOBS_NAMESPACE);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let pods = gang_pods(&api, job).await?;
        let placed: Vec<Placed> = pods.iter().filter_map(placed_of).collect();
        if placed.len() == job.pods as usize {
            let mut placed = placed;
            placed.sort_by_key(|p| p.rank);
            return Ok(placed);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "{} of {} pods of {} placed after {} s; kube-scheduler says: {}",
                placed.len(),
                job.pods,
                job.name,
                timeout.as_secs(),
                unschedulable_reason(&pods).unwrap_or_else(|| "nothing".into())
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Waits until kube-scheduler reports `job` unschedulable, and returns why.
pub async fn wait_unschedulable(
    admin: &kube::Client,
    job: &Job,
    timeout: Duration,
) -> anyhow::Result<String> {
    let api = Api::<Pod>::namespaced(admin.clone(), JOBS_NAMESPACE);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let pods = gang_pods(&api, job).await?;
        if let Some(placed) = pods.iter().find_map(placed_of) {
            bail!(
                "{} was placed on {} although it cannot fit",
                placed.pod,
                placed.node
            );
        }
        if let Some(reason) = unschedulable_reason(&pods) {
            return Ok(reason);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "kube-scheduler gave no reason for {} within {} s",
                job.name,
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Deletes every pod of `job` at once (no kubelet runs here to finish a graceful delete).
pub async fn delete(admin: &kube::Client, job: &Job) -> anyhow::Result<()> {
    let api = Api::<Pod>::namespaced(admin.clone(), JOBS_NAMESPACE);
    for i in 0..job.pods {
        match api
            .delete(&job.pod_name(i), &DeleteParams::default().grace_period(0))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e).with_context(|| format!("delete {}", job.pod_name(i))),
        }
    }
    Ok(())
}

async fn gang_pods(api: &Api<Pod>, job: &Job) -> anyhow::Result<Vec<Pod>> {
    Ok(api
        .list(&ListParams::default().labels(&format!("{}={}", keys::GANG, job.name)))
        .await
        .context("list the gang's pods")?
        .items)
}

fn placed_of(pod: &Pod) -> Option<Placed> {
    let node = pod.spec.as_ref()?.node_name.clone()?;
    let rank = pod
        .metadata
        .annotations
        .as_ref()?
        .get(keys::RANK)?
        .parse()
        .ok()?;
    Some(Placed {
        pod: pod.metadata.name.clone()?,
        rank,
        node,
    })
}

/// The message of a pod's `PodScheduled=False` condition, if any pod has one.
fn unschedulable_reason(pods: &[Pod]) -> Option<String> {
    pods.iter().find_map(|p| {
        p.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")?
            .message
            .clone()
    })
}

/// Stage of each rank, and which stages span more than one rail group (`group_of` gives a
/// node's rail group): the list must be empty.
pub fn stages_split(
    job: &Job,
    placed: &[Placed],
    group_of: impl Fn(&str) -> Option<u32>,
) -> BTreeMap<u32, Vec<Option<u32>>> {
    let mut groups: BTreeMap<u32, Vec<Option<u32>>> = BTreeMap::new();
    for p in placed {
        let stage = p.rank / job.pods_per_stage();
        let g = group_of(&p.node);
        let seen = groups.entry(stage).or_default();
        if !seen.contains(&g) {
            seen.push(g);
        }
    }
    groups.retain(|_, gs| gs.len() != 1 || gs[0].is_none());
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(rank: u32, node: &str) -> Placed {
        Placed {
            pod: format!("p-{rank}"),
            rank,
            node: node.into(),
        }
    }

    #[test]
    fn a_stage_across_two_rail_groups_is_found() {
        let job = Job {
            name: "p".into(),
            pods: 4,
            gpus_per_pod: 2,
            tp: 2,
            dp: 2,
            pp: 2,
        };
        assert_eq!(job.pods_per_stage(), 2);
        let group = |n: &str| Some(u32::from(n > "node04"));
        let good = [
            placed(0, "node01"),
            placed(1, "node02"),
            placed(2, "node05"),
            placed(3, "node06"),
        ];
        assert!(stages_split(&job, &good, group).is_empty());
        let bad = [
            placed(0, "node01"),
            placed(1, "node05"),
            placed(2, "node06"),
            placed(3, "node07"),
        ];
        assert_eq!(
            stages_split(&job, &bad, group).keys().collect::<Vec<_>>(),
            [&0]
        );
    }
}
