//! Reading a gang request from a pod's labels and annotations, in Spinel's dialect or in the
//! Kueue TAS and Volcano dialects where they say the same thing.
//!
//! | dialect | gang name | size | levels |
//! |---|---|---|---|
//! | Spinel | `sched.spinel.dev/gang` | `sched.spinel.dev/gang-size` | `tp`/`dp`/`pp` degrees with `*-within`, `*-mode` |
//! | Kueue | `kueue.x-k8s.io/pod-group-name` | `kueue.x-k8s.io/pod-group-total-count` | `podset-required-topology` (hard), `podset-preferred-topology` (soft), `podset-slice-required-topology` + `podset-slice-size`, `podset-slice-required-topology-constraints` |
//! | Volcano | `scheduling.k8s.io/group-name` | `sched.spinel.dev/gang-size` | `volcano.sh/network-topology-mode` + `-highest-tier` |
//!
//! Upstream `spec.schedulingGroup.podGroupName` (Workload/PodGroup) names the gang when nothing
//! else does; the PodGroup's gang policy then gives the size (`minCount`) and its topology
//! constraint the tier the whole gang must fit in ([`PodGroupPolicy`]). Unknown values are
//! errors that name the key, never defaults.

use std::collections::BTreeMap;

use serde::Deserialize;
use spinel_api::labels::LabelOptions;
use spinel_api::scheduling as keys;

use crate::request::{Dialect, GangId, GangRequest, Level, Mode, RequestError};
use crate::tier::{Tier, TierError};

/// What the parser needs of a pod.
#[derive(Debug, Clone, Copy)]
pub struct PodMeta<'a> {
    /// Namespace.
    pub namespace: &'a str,
    /// Labels.
    pub labels: &'a BTreeMap<String, String>,
    /// Annotations.
    pub annotations: &'a BTreeMap<String, String>,
    /// Units requested per resource name (the larger of the containers' sum and any init
    /// container's request, as the kubelet counts them).
    pub requests: &'a BTreeMap<String, u64>,
    /// `spec.schedulingGroup.podGroupName`, when set.
    pub pod_group: Option<&'a str>,
    /// What that PodGroup says, when the caller has seen it.
    pub pod_group_policy: Option<&'a PodGroupPolicy>,
}

/// What an upstream PodGroup (`scheduling.k8s.io`, v1alpha2 in Kubernetes 1.36) says about the
/// gang formed by the pods that name it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodGroupPolicy {
    /// `spec.schedulingPolicy.gang.minCount`; `None` for the basic policy (no gang).
    pub min_count: Option<u32>,
    /// `spec.schedulingConstraints.topology[0].key`: the node label key of the domain the
    /// whole group must fit in.
    pub topology_key: Option<String>,
}

/// Parser settings.
#[derive(Debug, Clone)]
pub struct ParseOptions {
    /// Tier label keys of this cluster (Kueue levels and `*-within` may name them).
    pub labels: LabelOptions,
    /// The resource a gang counts in unless it names another.
    pub resource: String,
    /// Largest gang accepted.
    pub max_gang_size: u32,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self {
            labels: LabelOptions::default(),
            resource: "nvidia.com/gpu".to_owned(),
            max_gang_size: 65_536,
        }
    }
}

/// A pod whose scheduling annotations cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A value that does not parse.
    #[error("{key}={value:?}: {reason}")]
    Invalid {
        /// The key.
        key: String,
        /// Its value.
        value: String,
        /// What was expected.
        reason: String,
    },
    /// A key a present key depends on is absent.
    #[error("{key} is missing: {reason}")]
    Missing {
        /// The missing key.
        key: String,
        /// Why it is needed.
        reason: String,
    },
    /// Two dialects on one pod.
    #[error("{first} and {second} are both set: use one dialect per pod")]
    Conflict {
        /// A key of one dialect.
        first: String,
        /// A key of another.
        second: String,
    },
    /// A tier that is not one.
    #[error("{key}: {source}")]
    Tier {
        /// The key.
        key: String,
        /// The parse error.
        source: TierError,
    },
    /// The request is inconsistent.
    #[error(transparent)]
    Request(#[from] RequestError),
}

fn get<'a>(meta: &PodMeta<'a>, key: &str) -> Option<&'a str> {
    meta.annotations
        .get(key)
        .or_else(|| meta.labels.get(key))
        .map(String::as_str)
}

fn number(meta: &PodMeta<'_>, key: &str) -> Result<Option<u32>, ParseError> {
    let Some(v) = get(meta, key) else {
        return Ok(None);
    };
    v.trim()
        .parse::<u32>()
        .map(Some)
        .map_err(|_| ParseError::Invalid {
            key: key.to_owned(),
            value: v.to_owned(),
            reason: "expected a whole number".to_owned(),
        })
}

fn tier(meta: &PodMeta<'_>, key: &str, opts: &ParseOptions) -> Result<Option<Tier>, ParseError> {
    get(meta, key)
        .map(|v| {
            Tier::parse(v, &opts.labels).map_err(|source| ParseError::Tier {
                key: key.to_owned(),
                source,
            })
        })
        .transpose()
}

fn mode(meta: &PodMeta<'_>, key: &str, default: Mode) -> Result<Mode, ParseError> {
    match get(meta, key) {
        None => Ok(default),
        Some(v) => Mode::parse(v).ok_or_else(|| ParseError::Invalid {
            key: key.to_owned(),
            value: v.to_owned(),
            reason: "expected hard or soft".to_owned(),
        }),
    }
}

const SPINEL_LEVEL_KEYS: [&str; 9] = [
    keys::TP,
    keys::DP,
    keys::PP,
    keys::TP_WITHIN,
    keys::DP_WITHIN,
    keys::PP_WITHIN,
    keys::TP_MODE,
    keys::DP_MODE,
    keys::PP_MODE,
];

const KUEUE_KEYS: [&str; 5] = [
    keys::KUEUE_REQUIRED_TOPOLOGY,
    keys::KUEUE_PREFERRED_TOPOLOGY,
    keys::KUEUE_SLICE_REQUIRED_TOPOLOGY,
    keys::KUEUE_SLICE_SIZE,
    keys::KUEUE_SLICE_CONSTRAINTS,
];

const VOLCANO_KEYS: [&str; 2] = [keys::VOLCANO_TOPOLOGY_MODE, keys::VOLCANO_HIGHEST_TIER];

fn first_present<'k>(meta: &PodMeta<'_>, list: &[&'k str]) -> Option<&'k str> {
    list.iter().copied().find(|k| get(meta, k).is_some())
}

/// Reads the gang request of a pod: `Ok(None)` for a pod that is not in a gang.
pub fn parse_gang(
    meta: &PodMeta<'_>,
    opts: &ParseOptions,
) -> Result<Option<GangRequest>, ParseError> {
    let spinel = first_present(meta, &SPINEL_LEVEL_KEYS);
    let kueue = first_present(meta, &KUEUE_KEYS);
    let volcano = first_present(meta, &VOLCANO_KEYS);
    let present: Vec<&str> = [spinel, kueue, volcano].into_iter().flatten().collect();
    if let [first, second, ..] = present[..] {
        return Err(ParseError::Conflict {
            first: first.to_owned(),
            second: second.to_owned(),
        });
    }
    let dialect_name = get(meta, keys::GANG)
        .or_else(|| get(meta, keys::KUEUE_POD_GROUP_NAME))
        .or_else(|| get(meta, keys::VOLCANO_GROUP_NAME));
    // The upstream PodGroup speaks only when no dialect names the gang.
    let upstream = dialect_name
        .is_none()
        .then_some(meta.pod_group_policy)
        .flatten();
    let name = dialect_name.or(meta.pod_group);
    let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
        return match present.first() {
            Some(k) => Err(ParseError::Missing {
                key: keys::GANG.to_owned(),
                reason: format!("{k} is set but the pod names no gang"),
            }),
            None => Ok(None),
        };
    };
    let annotated = number(meta, keys::GANG_SIZE)?;
    // A PodGroup with the basic policy schedules its pods one by one: no gang, unless the pod
    // asks for one itself.
    if upstream.is_some_and(|p| p.min_count.is_none()) && present.is_empty() && annotated.is_none()
    {
        return Ok(None);
    }
    let from_group = upstream.and_then(|p| p.min_count);
    let size = match (annotated, from_group) {
        (Some(s), Some(m)) if s != m => {
            return Err(ParseError::Invalid {
                key: keys::GANG_SIZE.to_owned(),
                value: s.to_string(),
                reason: format!("PodGroup {name} has a gang policy of minCount {m}"),
            });
        }
        (Some(s), _) => s,
        (None, Some(m)) => m,
        (None, None) => {
            number(meta, keys::KUEUE_POD_GROUP_TOTAL_COUNT)?.ok_or_else(|| ParseError::Missing {
                key: keys::GANG_SIZE.to_owned(),
                reason: format!(
                    "gang {name} needs its size in pods (or a PodGroup with a gang policy)"
                ),
            })?
        }
    };
    if size > opts.max_gang_size {
        return Err(RequestError::GangTooLarge {
            size,
            max: opts.max_gang_size,
        }
        .into());
    }
    let resource = get(meta, keys::RESOURCE)
        .map(str::trim)
        .unwrap_or(&opts.resource)
        .to_owned();
    let per_pod_u64 = meta.requests.get(&resource).copied().unwrap_or(0);
    let per_pod = u32::try_from(per_pod_u64).map_err(|_| ParseError::Invalid {
        key: resource.clone(),
        value: per_pod_u64.to_string(),
        reason: "more units per pod than any node can hold".to_owned(),
    })?;
    let (levels, dialect) = if spinel.is_some() {
        (spinel_levels(meta, opts, size, per_pod)?, Dialect::Spinel)
    } else if kueue.is_some() {
        (kueue_levels(meta, opts, size)?, Dialect::Kueue)
    } else if volcano.is_some() {
        (volcano_levels(meta, size)?, Dialect::Volcano)
    } else if let Some(key) = upstream.and_then(|p| p.topology_key.as_deref()) {
        (podgroup_levels(key, opts, size)?, Dialect::PodGroup)
    } else {
        (Vec::new(), Dialect::Spinel)
    };
    let gang = GangId {
        namespace: meta.namespace.to_owned(),
        name: name.to_owned(),
    };
    Ok(Some(GangRequest::new(
        gang, size, per_pod, resource, levels, dialect,
    )?))
}

/// Spinel's TP/DP/PP degrees (in ranks) become blocks of pods: a TP group of `tp` ranks, a DP
/// group (one pipeline stage: `tp × dp` consecutive ranks) and the pipeline (the gang).
fn spinel_levels(
    meta: &PodMeta<'_>,
    opts: &ParseOptions,
    size: u32,
    per_pod: u32,
) -> Result<Vec<Level>, ParseError> {
    let ranks_per_pod = number(meta, keys::RANKS_PER_POD)?.unwrap_or(per_pod.max(1));
    if ranks_per_pod == 0 {
        return Err(ParseError::Invalid {
            key: keys::RANKS_PER_POD.to_owned(),
            value: "0".to_owned(),
            reason: "a pod runs at least one rank".to_owned(),
        });
    }
    let degree = |key: &str| -> Result<Option<u64>, ParseError> {
        match number(meta, key)? {
            Some(0) => Err(ParseError::Invalid {
                key: key.to_owned(),
                value: "0".to_owned(),
                reason: "a parallel degree is at least 1".to_owned(),
            }),
            d => Ok(d.map(u64::from)),
        }
    };
    let rpp = u64::from(ranks_per_pod);
    let world = u64::from(size) * rpp;
    // Unset degrees: a pod holds one TP group, one stage, and DP takes the rest.
    let tp = degree(keys::TP)?.unwrap_or(rpp);
    let pp = degree(keys::PP)?.unwrap_or(1);
    let dp = degree(keys::DP)?.unwrap_or_else(|| (world / (tp * pp)).max(1));
    if tp * dp * pp != world {
        return Err(ParseError::Invalid {
            key: keys::GANG_SIZE.to_owned(),
            value: size.to_string(),
            reason: format!(
                "tp × dp × pp = {tp} × {dp} × {pp} = {} ranks, but {size} pods × \
                 {ranks_per_pod} ranks per pod = {world}",
                tp * dp * pp
            ),
        });
    }
    let blocks = [
        (
            keys::TP,
            "tp",
            tp,
            keys::TP_WITHIN,
            Tier::NODE,
            keys::TP_MODE,
            Mode::Hard,
        ),
        (
            keys::DP,
            "dp",
            tp * dp,
            keys::DP_WITHIN,
            Tier::LEAF,
            keys::DP_MODE,
            Mode::Hard,
        ),
        (
            keys::PP,
            "pp",
            world,
            keys::PP_WITHIN,
            Tier::SPINE,
            keys::PP_MODE,
            Mode::Soft,
        ),
    ];
    let mut levels = Vec::new();
    for (key, name, ranks, within, default_tier, mode_key, default_mode) in blocks {
        if ranks < rpp {
            // The group lives inside one pod: nothing to place. It must not straddle pods.
            if rpp % ranks != 0 {
                return Err(ParseError::Invalid {
                    key: key.to_owned(),
                    value: ranks.to_string(),
                    reason: format!(
                        "a group of {ranks} ranks straddles pods of {ranks_per_pod} ranks"
                    ),
                });
            }
            continue;
        }
        if ranks % rpp != 0 {
            return Err(ParseError::Invalid {
                key: key.to_owned(),
                value: ranks.to_string(),
                reason: format!(
                    "a {name} group of {ranks} ranks is not a whole number of pods of \
                     {ranks_per_pod} ranks"
                ),
            });
        }
        levels.push(Level {
            name: name.to_owned(),
            pods: u32::try_from(ranks / rpp).unwrap_or(u32::MAX),
            tier: tier(meta, within, opts)?.unwrap_or(default_tier),
            mode: mode(meta, mode_key, default_mode)?,
        });
    }
    Ok(levels)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KueueSlice {
    topology: String,
    size: u32,
}

fn kueue_levels(
    meta: &PodMeta<'_>,
    opts: &ParseOptions,
    size: u32,
) -> Result<Vec<Level>, ParseError> {
    let mut levels = Vec::new();
    let required = tier(meta, keys::KUEUE_REQUIRED_TOPOLOGY, opts)?;
    let preferred = tier(meta, keys::KUEUE_PREFERRED_TOPOLOGY, opts)?;
    if required.is_some() && preferred.is_some() {
        return Err(ParseError::Conflict {
            first: keys::KUEUE_REQUIRED_TOPOLOGY.to_owned(),
            second: keys::KUEUE_PREFERRED_TOPOLOGY.to_owned(),
        });
    }
    if let Some((t, mode)) = required
        .map(|t| (t, Mode::Hard))
        .or(preferred.map(|t| (t, Mode::Soft)))
    {
        levels.push(Level {
            name: "podset".to_owned(),
            pods: size,
            tier: t,
            mode,
        });
    }
    let single = tier(meta, keys::KUEUE_SLICE_REQUIRED_TOPOLOGY, opts)?;
    let slice_size = number(meta, keys::KUEUE_SLICE_SIZE)?;
    let multi = get(meta, keys::KUEUE_SLICE_CONSTRAINTS);
    match (single, slice_size, multi) {
        (Some(_), _, Some(_)) => {
            return Err(ParseError::Conflict {
                first: keys::KUEUE_SLICE_REQUIRED_TOPOLOGY.to_owned(),
                second: keys::KUEUE_SLICE_CONSTRAINTS.to_owned(),
            });
        }
        (Some(t), Some(n), None) => levels.push(Level {
            name: "slice".to_owned(),
            pods: n,
            tier: t,
            mode: Mode::Hard,
        }),
        (Some(_), None, None) => {
            return Err(ParseError::Missing {
                key: keys::KUEUE_SLICE_SIZE.to_owned(),
                reason: format!("{} needs a slice size", keys::KUEUE_SLICE_REQUIRED_TOPOLOGY),
            });
        }
        (None, Some(_), _) => {
            return Err(ParseError::Missing {
                key: keys::KUEUE_SLICE_REQUIRED_TOPOLOGY.to_owned(),
                reason: format!("{} is set without a slice topology", keys::KUEUE_SLICE_SIZE),
            });
        }
        (None, None, Some(json)) => levels.extend(kueue_multi_layer(json, opts)?),
        (None, None, None) => {}
    }
    Ok(levels)
}

fn kueue_multi_layer(json: &str, opts: &ParseOptions) -> Result<Vec<Level>, ParseError> {
    let invalid = |reason: String| ParseError::Invalid {
        key: keys::KUEUE_SLICE_CONSTRAINTS.to_owned(),
        value: json.chars().take(200).collect(),
        reason,
    };
    let slices: Vec<KueueSlice> = serde_json::from_str(json).map_err(|e| {
        invalid(format!(
            "expected [{{\"topology\": KEY, \"size\": N}}, ...]: {e}"
        ))
    })?;
    if slices.is_empty() || slices.len() > 3 {
        return Err(invalid(format!("1 to 3 layers, got {}", slices.len())));
    }
    slices
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let t = Tier::parse(&s.topology, &opts.labels).map_err(|source| ParseError::Tier {
                key: keys::KUEUE_SLICE_CONSTRAINTS.to_owned(),
                source,
            })?;
            Ok(Level {
                name: format!("slice-{}", i + 1),
                pods: s.size,
                tier: t,
                mode: Mode::Hard,
            })
        })
        .collect()
}

/// A PodGroup's topology constraint: the whole group in one domain of that label's tier, hard
/// (the upstream scheduler waits rather than spread it).
fn podgroup_levels(key: &str, opts: &ParseOptions, size: u32) -> Result<Vec<Level>, ParseError> {
    let t = Tier::parse(key, &opts.labels).map_err(|source| ParseError::Tier {
        key: "PodGroup spec.schedulingConstraints.topology[0].key".to_owned(),
        source,
    })?;
    Ok(vec![Level {
        name: "podgroup".to_owned(),
        pods: size,
        tier: t,
        mode: Mode::Hard,
    }])
}

fn volcano_levels(meta: &PodMeta<'_>, size: u32) -> Result<Vec<Level>, ParseError> {
    let mode = mode(meta, keys::VOLCANO_TOPOLOGY_MODE, Mode::Hard)?;
    let Some(highest) = number(meta, keys::VOLCANO_HIGHEST_TIER)? else {
        return Err(ParseError::Missing {
            key: keys::VOLCANO_HIGHEST_TIER.to_owned(),
            reason: format!("{} needs the highest tier", keys::VOLCANO_TOPOLOGY_MODE),
        });
    };
    let t = u8::try_from(highest)
        .ok()
        .filter(|t| (1..=Tier::MAX_NAMED).contains(t))
        .ok_or_else(|| ParseError::Invalid {
            key: keys::VOLCANO_HIGHEST_TIER.to_owned(),
            value: highest.to_string(),
            reason: format!("a HyperNode tier from 1 to {}", Tier::MAX_NAMED),
        })?;
    Ok(vec![Level {
        name: "job".to_owned(),
        pods: size,
        tier: Tier(t),
        mode,
    }])
}

/// The pod's fixed rank, if its launcher gave it one (`sched.spinel.dev/rank-request`, an
/// Indexed Job's completion index, Kueue's or Volcano's pod index).
pub fn pod_index(meta: &PodMeta<'_>) -> Result<Option<u32>, ParseError> {
    for key in [
        keys::RANK_REQUEST,
        keys::JOB_COMPLETION_INDEX,
        keys::KUEUE_POD_GROUP_POD_INDEX,
        keys::VOLCANO_TASK_INDEX,
    ] {
        if let Some(i) = number(meta, key)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn parse(
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
        gpus: u64,
    ) -> Result<Option<GangRequest>, ParseError> {
        let (l, a) = (map(labels), map(annotations));
        let requests: BTreeMap<String, u64> = [("nvidia.com/gpu".to_owned(), gpus)].into();
        parse_gang(
            &PodMeta {
                namespace: "ml",
                labels: &l,
                annotations: &a,
                requests: &requests,
                pod_group: None,
                pod_group_policy: None,
            },
            &ParseOptions::default(),
        )
    }

    #[test]
    fn plain_pods_are_not_gangs() {
        assert_eq!(parse(&[("app", "web")], &[], 0), Ok(None));
    }

    #[test]
    fn spinel_degrees_become_pod_blocks() {
        let r = parse(
            &[(keys::GANG, "llama")],
            &[
                (keys::GANG_SIZE, "64"),
                (keys::TP, "8"),
                (keys::DP, "16"),
                (keys::PP, "4"),
                (keys::PP_MODE, "hard"),
            ],
            8,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.gang.to_string(), "ml/llama");
        assert_eq!((r.size, r.per_pod), (64, 8));
        let shape: Vec<(&str, u32, Tier, Mode)> = r
            .levels
            .iter()
            .map(|l| (l.name.as_str(), l.pods, l.tier, l.mode))
            .collect();
        assert_eq!(
            shape,
            vec![
                ("tp", 1, Tier::NODE, Mode::Hard),
                ("dp", 16, Tier::LEAF, Mode::Hard),
                ("pp", 64, Tier::SPINE, Mode::Hard),
            ]
        );
    }

    #[test]
    fn one_gpu_pods_put_tensor_groups_on_a_node() {
        let r = parse(
            &[(keys::GANG, "g")],
            &[
                (keys::GANG_SIZE, "16"),
                (keys::TP, "4"),
                (keys::DP, "4"),
                (keys::DP_WITHIN, "fabric.spinel.dev/tier-2"),
                (keys::DP_MODE, "soft"),
            ],
            1,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.levels[0].pods, 4);
        assert_eq!(r.levels[0].tier, Tier::NODE);
        assert_eq!(r.levels[1].tier, Tier::SPINE);
        assert_eq!(r.levels[1].mode, Mode::Soft);
    }

    #[test]
    fn spinel_errors_name_the_key() {
        let e = parse(
            &[(keys::GANG, "g")],
            &[(keys::GANG_SIZE, "8"), (keys::TP, "8"), (keys::DP, "3")],
            8,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("tp × dp × pp = 8 × 3 × 1 = 24 ranks"),
            "{e}"
        );
        let e = parse(
            &[(keys::GANG, "g")],
            &[(keys::GANG_SIZE, "8"), (keys::DP_WITHIN, "rack-7")],
            8,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("sched.spinel.dev/dp-within: \"rack-7\""),
            "{e}"
        );
        let e = parse(&[(keys::GANG, "g")], &[(keys::GANG_SIZE, "x")], 8).unwrap_err();
        assert!(e.to_string().contains("expected a whole number"), "{e}");
        let e = parse(&[], &[(keys::TP, "8")], 8).unwrap_err();
        assert!(matches!(e, ParseError::Missing { .. }), "{e}");
        let e = parse(&[(keys::GANG, "g")], &[(keys::TP, "8")], 8).unwrap_err();
        assert!(e.to_string().contains("gang-size is missing"), "{e}");
        let e = parse(&[(keys::GANG, "g")], &[(keys::GANG_SIZE, "2")], 0).unwrap_err();
        assert!(e.to_string().contains("request no nvidia.com/gpu"), "{e}");
    }

    #[test]
    fn kueue_topology_annotations_map_to_levels() {
        let r = parse(
            &[(keys::KUEUE_POD_GROUP_NAME, "kq")],
            &[
                (keys::KUEUE_POD_GROUP_TOTAL_COUNT, "32"),
                (keys::KUEUE_PREFERRED_TOPOLOGY, "fabric.spinel.dev/tier-2"),
                (
                    keys::KUEUE_SLICE_CONSTRAINTS,
                    r#"[{"topology":"fabric.spinel.dev/tier-1","size":8},{"topology":"kubernetes.io/hostname","size":2}]"#,
                ),
            ],
            4,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.dialect, Dialect::Kueue);
        let shape: Vec<(u32, Tier, Mode)> =
            r.levels.iter().map(|l| (l.pods, l.tier, l.mode)).collect();
        assert_eq!(
            shape,
            vec![
                (2, Tier::NODE, Mode::Hard),
                (8, Tier::LEAF, Mode::Hard),
                (32, Tier::SPINE, Mode::Soft),
            ]
        );
        let e = parse(
            &[(keys::KUEUE_POD_GROUP_NAME, "kq")],
            &[
                (keys::KUEUE_POD_GROUP_TOTAL_COUNT, "32"),
                (
                    keys::KUEUE_SLICE_REQUIRED_TOPOLOGY,
                    "fabric.spinel.dev/tier-1",
                ),
            ],
            4,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("podset-slice-size is missing"),
            "{e}"
        );
        let e = parse(
            &[(keys::KUEUE_POD_GROUP_NAME, "kq")],
            &[
                (keys::KUEUE_POD_GROUP_TOTAL_COUNT, "32"),
                (keys::KUEUE_SLICE_CONSTRAINTS, "[{\"topology\":1}]"),
            ],
            4,
        )
        .unwrap_err();
        assert!(e.to_string().contains("expected [{\"topology\""), "{e}");
    }

    #[test]
    fn volcano_annotations_bound_the_whole_job() {
        let r = parse(
            &[],
            &[
                (keys::VOLCANO_GROUP_NAME, "vj"),
                (keys::GANG_SIZE, "4"),
                (keys::VOLCANO_TOPOLOGY_MODE, "soft"),
                (keys::VOLCANO_HIGHEST_TIER, "1"),
            ],
            8,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.dialect, Dialect::Volcano);
        assert_eq!(r.levels.len(), 1);
        assert_eq!(
            (r.levels[0].tier, r.levels[0].mode),
            (Tier::LEAF, Mode::Soft)
        );
        let e = parse(
            &[],
            &[
                (keys::VOLCANO_GROUP_NAME, "vj"),
                (keys::GANG_SIZE, "4"),
                (keys::VOLCANO_TOPOLOGY_MODE, "strict"),
                (keys::VOLCANO_HIGHEST_TIER, "1"),
            ],
            8,
        )
        .unwrap_err();
        assert!(e.to_string().contains("expected hard or soft"), "{e}");
    }

    #[test]
    fn two_dialects_on_one_pod_conflict() {
        let e = parse(
            &[(keys::GANG, "g")],
            &[
                (keys::GANG_SIZE, "4"),
                (keys::TP, "8"),
                (keys::VOLCANO_HIGHEST_TIER, "1"),
            ],
            8,
        )
        .unwrap_err();
        assert!(matches!(e, ParseError::Conflict { .. }), "{e}");
    }

    #[test]
    fn the_upstream_pod_group_names_the_gang() {
        let (l, a) = (map(&[]), map(&[(keys::GANG_SIZE, "2")]));
        let requests: BTreeMap<String, u64> = [("nvidia.com/gpu".to_owned(), 8)].into();
        let r = parse_gang(
            &PodMeta {
                namespace: "ml",
                labels: &l,
                annotations: &a,
                requests: &requests,
                pod_group: Some("pg-1"),
                pod_group_policy: None,
            },
            &ParseOptions::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.gang.name, "pg-1");
    }

    #[test]
    fn the_pod_group_gives_size_and_topology_when_the_pod_does_not() {
        let requests: BTreeMap<String, u64> = [("nvidia.com/gpu".to_owned(), 8)].into();
        let run = |annotations: &[(&str, &str)], policy: &PodGroupPolicy| {
            let (l, a) = (map(&[]), map(annotations));
            parse_gang(
                &PodMeta {
                    namespace: "ml",
                    labels: &l,
                    annotations: &a,
                    requests: &requests,
                    pod_group: Some("pg"),
                    pod_group_policy: Some(policy),
                },
                &ParseOptions::default(),
            )
        };
        let gang = PodGroupPolicy {
            min_count: Some(4),
            topology_key: Some("fabric.spinel.dev/tier-1".to_owned()),
        };
        let r = run(&[], &gang).unwrap().unwrap();
        assert_eq!((r.size, r.dialect), (4, Dialect::PodGroup));
        assert_eq!(
            (r.levels[0].pods, r.levels[0].tier, r.levels[0].mode),
            (4, Tier::LEAF, Mode::Hard)
        );
        // The pod's own levels win; a size that disagrees with minCount is an error.
        let r = run(&[(keys::DP_WITHIN, "spine")], &gang).unwrap().unwrap();
        assert_eq!(r.dialect, Dialect::Spinel);
        let e = run(&[(keys::GANG_SIZE, "8")], &gang).unwrap_err();
        assert!(e.to_string().contains("minCount 4"), "{e}");
        // The basic policy makes no gang.
        let basic = PodGroupPolicy::default();
        assert_eq!(run(&[], &basic), Ok(None));
        let e = run(
            &[],
            &PodGroupPolicy {
                min_count: Some(2),
                topology_key: Some("example.com/rack".to_owned()),
            },
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("PodGroup spec.schedulingConstraints"),
            "{e}"
        );
    }

    #[test]
    fn pod_indexes_come_from_the_launcher() {
        let (l, a) = (
            map(&[(keys::KUEUE_POD_GROUP_POD_INDEX, "3")]),
            map(&[(keys::JOB_COMPLETION_INDEX, "5")]),
        );
        let requests = BTreeMap::new();
        let meta = PodMeta {
            namespace: "ml",
            labels: &l,
            annotations: &a,
            requests: &requests,
            pod_group: None,
            pod_group_policy: None,
        };
        assert_eq!(pod_index(&meta), Ok(Some(5)));
    }
}
