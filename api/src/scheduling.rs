//! Scheduling keys: the contract between a training job (its pod annotations and labels), the
//! fabric agent (the degraded taint) and `spinel-scheduler` (what it reads and publishes).
//!
//! A job asks for topology on each of its pods; every pod of a gang carries the same values:
//!
//! ```yaml
//! metadata:
//!   labels:
//!     sched.spinel.dev/gang: llama-70b        # gang name, unique in the namespace
//!   annotations:
//!     sched.spinel.dev/gang-size: "64"        # pods in the gang
//!     sched.spinel.dev/tp: "8"                # tensor-parallel degree (ranks)
//!     sched.spinel.dev/dp: "16"               # data-parallel degree
//!     sched.spinel.dev/pp: "4"                # pipeline stages
//!     sched.spinel.dev/dp-within: leaf        # node | leaf | spine | super-spine | tier-N | cluster
//!     sched.spinel.dev/pp-mode: soft          # hard | soft
//! ```
//!
//! The scheduler publishes, on each pod, [`RANK`] (its index in the gang: torchrun's
//! `--node-rank`) and, on rank 0, [`RANK_NODES`] (every rank's node, comma-separated) and
//! [`PLACEMENT`] (the chosen domain and any fallback).

/// Prefix of every job-facing scheduling key.
pub const PREFIX: &str = "sched.spinel.dev/";

/// Taint the fabric agent sets on a node whose RoCE fabric is unhealthy (effect `NoSchedule`).
/// The scheduler plans no gang onto a node carrying it and re-plans reservations that do.
pub const DEGRADED_TAINT_KEY: &str = "fabric.spinel.dev/degraded";

/// Effect of [`DEGRADED_TAINT_KEY`].
pub const DEGRADED_TAINT_EFFECT: &str = "NoSchedule";

/// Gang name (label, so gang pods can be selected; also read as an annotation).
pub const GANG: &str = "sched.spinel.dev/gang";

/// Number of pods in the gang.
pub const GANG_SIZE: &str = "sched.spinel.dev/gang-size";

/// Tensor-parallel degree in ranks (default 1).
pub const TP: &str = "sched.spinel.dev/tp";

/// Data-parallel degree in ranks (default 1).
pub const DP: &str = "sched.spinel.dev/dp";

/// Pipeline-parallel degree (stages, default 1).
pub const PP: &str = "sched.spinel.dev/pp";

/// Where each TP group must fit (default `node`).
pub const TP_WITHIN: &str = "sched.spinel.dev/tp-within";

/// Where each DP group (a pipeline stage: TP × DP consecutive ranks) must fit (default `leaf`).
pub const DP_WITHIN: &str = "sched.spinel.dev/dp-within";

/// Where the whole pipeline (the gang) must fit (default `spine`).
pub const PP_WITHIN: &str = "sched.spinel.dev/pp-within";

/// `hard` or `soft` for the TP level (default `hard`).
pub const TP_MODE: &str = "sched.spinel.dev/tp-mode";

/// `hard` or `soft` for the DP level (default `hard`).
pub const DP_MODE: &str = "sched.spinel.dev/dp-mode";

/// `hard` or `soft` for the PP level (default `soft`).
pub const PP_MODE: &str = "sched.spinel.dev/pp-mode";

/// Ranks (processes) per pod; defaults to the pod's units of the scheduled resource.
pub const RANKS_PER_POD: &str = "sched.spinel.dev/ranks-per-pod";

/// The extended resource a gang pod counts in (default: the scheduler's `--resource`).
pub const RESOURCE: &str = "sched.spinel.dev/resource";

/// A pod's fixed rank, when the launcher (not the scheduler) decides the order.
pub const RANK_REQUEST: &str = "sched.spinel.dev/rank-request";

/// Published: the pod's rank in its gang (0-based).
pub const RANK: &str = "sched.spinel.dev/rank";

/// Published on rank 0: node of every rank, comma-separated, in rank order.
pub const RANK_NODES: &str = "sched.spinel.dev/rank-nodes";

/// Published on rank 0: JSON summary of the placement (domain, spread, fallbacks).
pub const PLACEMENT: &str = "sched.spinel.dev/placement";

/// Volcano's pod annotation for the PodGroup a pod belongs to.
pub const VOLCANO_GROUP_NAME: &str = "scheduling.k8s.io/group-name";

/// Volcano's pod annotation for the topology mode (`hard` or `soft`).
pub const VOLCANO_TOPOLOGY_MODE: &str = "volcano.sh/network-topology-mode";

/// Volcano's pod annotation for the highest HyperNode tier the job may span.
pub const VOLCANO_HIGHEST_TIER: &str = "volcano.sh/network-topology-highest-tier";

/// Volcano's pod index within its task.
pub const VOLCANO_TASK_INDEX: &str = "volcano.sh/task-index";

/// Kueue plain pod group name (label).
pub const KUEUE_POD_GROUP_NAME: &str = "kueue.x-k8s.io/pod-group-name";

/// Kueue plain pod group size (annotation).
pub const KUEUE_POD_GROUP_TOTAL_COUNT: &str = "kueue.x-k8s.io/pod-group-total-count";

/// Kueue pod index within its group (label).
pub const KUEUE_POD_GROUP_POD_INDEX: &str = "kueue.x-k8s.io/pod-group-pod-index";

/// Kueue TAS: all pods in one domain of this level (hard).
pub const KUEUE_REQUIRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-required-topology";

/// Kueue TAS: all pods in one domain of this level if possible (soft).
pub const KUEUE_PREFERRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-preferred-topology";

/// Kueue TAS: each slice of [`KUEUE_SLICE_SIZE`] pods in one domain of this level.
pub const KUEUE_SLICE_REQUIRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-slice-required-topology";

/// Kueue TAS: pods per slice.
pub const KUEUE_SLICE_SIZE: &str = "kueue.x-k8s.io/podset-slice-size";

/// Kueue TAS: multi-layer slices, a JSON list of `{"topology": KEY, "size": N}`, outer first.
pub const KUEUE_SLICE_CONSTRAINTS: &str =
    "kueue.x-k8s.io/podset-slice-required-topology-constraints";

/// Indexed Job completion index (annotation and label).
pub const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// The node-name label every kubelet sets (Kueue's lowest topology level).
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_keys_share_the_prefix() {
        for key in [
            GANG,
            GANG_SIZE,
            TP,
            DP,
            PP,
            TP_WITHIN,
            DP_WITHIN,
            PP_WITHIN,
            TP_MODE,
            DP_MODE,
            PP_MODE,
            RANKS_PER_POD,
            RESOURCE,
            RANK_REQUEST,
            RANK,
            RANK_NODES,
            PLACEMENT,
        ] {
            assert!(key.starts_with(PREFIX), "{key}");
        }
        assert!(!DEGRADED_TAINT_KEY.starts_with(PREFIX));
    }
}
