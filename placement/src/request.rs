//! What a gang asks for, in one dialect-free form: nested levels of contiguous rank blocks,
//! each confined to a tier, hard or soft. Every dialect (Spinel's annotations, Kueue TAS,
//! Volcano) is translated into this and validated here before any decision.

use std::fmt;

use serde::Serialize;

use crate::tier::Tier;

/// Whether a level may fall back to a wider tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Never placed outside its tier: the gang waits instead.
    Hard,
    /// Placed one tier wider at a time when its tier has no room, and the fallback recorded.
    Soft,
}

impl Mode {
    /// Parses `hard` or `soft`.
    pub fn parse(text: &str) -> Option<Mode> {
        match text.trim() {
            "hard" => Some(Mode::Hard),
            "soft" => Some(Mode::Soft),
            _ => None,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Hard => "hard",
            Mode::Soft => "soft",
        })
    }
}

/// One level of a gang: every block of `pods` consecutive ranks lies in one `tier` domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Level {
    /// Name users know it by (`tp`, `dp`, `pp`, `gang`, `slice-1`, ...).
    pub name: String,
    /// Pods per block.
    pub pods: u32,
    /// The tier each block must fit in.
    pub tier: Tier,
    /// Hard or soft.
    pub mode: Mode,
}

/// A gang's identity: namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GangId {
    /// Namespace of its pods.
    pub namespace: String,
    /// Gang name.
    pub name: String,
}

impl fmt::Display for GangId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Which annotation family a request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// `sched.spinel.dev/*`.
    Spinel,
    /// Kueue TAS pod-set annotations.
    Kueue,
    /// Volcano's network-topology annotations.
    Volcano,
    /// An upstream PodGroup's gang policy and topology constraint.
    PodGroup,
    /// Built in code (simulator, tests).
    Native,
}

/// A whole gang's request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GangRequest {
    /// The gang.
    pub gang: GangId,
    /// Pods in the gang.
    pub size: u32,
    /// Units of `resource` each pod requests.
    pub per_pod: u32,
    /// The extended resource (for example `nvidia.com/gpu`).
    pub resource: String,
    /// Levels, innermost first; the last one covers the whole gang.
    pub levels: Vec<Level>,
    /// Where the request came from.
    pub dialect: Dialect,
}

/// A request that can never be decided as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Gang size zero.
    #[error("gang size is 0: a gang needs at least one pod")]
    EmptyGang,
    /// Gang size above the configured limit.
    #[error("gang size {size} is above this scheduler's limit of {max} pods")]
    GangTooLarge {
        /// Requested size.
        size: u32,
        /// Limit.
        max: u32,
    },
    /// Pods request none of the resource.
    #[error(
        "gang pods request no {resource}: a gang pod must request at least one unit of the \
         scheduled resource"
    )]
    NoResource {
        /// The resource.
        resource: String,
    },
    /// A level of zero pods.
    #[error("level {level} has 0 pods per group")]
    EmptyLevel {
        /// The level.
        level: String,
    },
    /// A level larger than the gang.
    #[error("level {level} has {pods} pods per group, more than the gang's {size}")]
    LevelLargerThanGang {
        /// The level.
        level: String,
        /// Its block size.
        pods: u32,
        /// Gang size.
        size: u32,
    },
    /// Block sizes that do not divide.
    #[error(
        "level {inner} ({inner_pods} pods per group) does not divide level {outer} \
         ({outer_pods} pods per group): groups must nest exactly"
    )]
    NotNested {
        /// Inner level.
        inner: String,
        /// Its block size.
        inner_pods: u32,
        /// Outer level.
        outer: String,
        /// Its block size.
        outer_pods: u32,
    },
    /// Tiers that widen inwards.
    #[error(
        "level {inner} must fit within a {inner_tier} but encloses level {outer}, which must \
         fit within a {outer_tier}: an inner group cannot need a wider tier than its outer group"
    )]
    TiersDoNotNest {
        /// Inner level.
        inner: String,
        /// Its tier.
        inner_tier: Tier,
        /// Outer level.
        outer: String,
        /// Its tier.
        outer_tier: Tier,
    },
}

impl GangRequest {
    /// Builds a request, adding the whole-gang level (anywhere, soft) when the outermost level
    /// is smaller than the gang, and validates it.
    pub fn new(
        gang: GangId,
        size: u32,
        per_pod: u32,
        resource: impl Into<String>,
        mut levels: Vec<Level>,
        dialect: Dialect,
    ) -> Result<GangRequest, RequestError> {
        levels.sort_by_key(|l| l.pods);
        if levels.last().is_none_or(|l| l.pods < size) {
            levels.push(Level {
                name: "gang".to_owned(),
                pods: size,
                tier: Tier::CLUSTER,
                mode: Mode::Soft,
            });
        }
        let request = GangRequest {
            gang,
            size,
            per_pod,
            resource: resource.into(),
            levels,
            dialect,
        };
        request.validate()?;
        Ok(request)
    }

    /// Checks sizes and nesting: every block size divides the next one's and the gang's, tiers
    /// never widen inwards.
    pub fn validate(&self) -> Result<(), RequestError> {
        if self.size == 0 {
            return Err(RequestError::EmptyGang);
        }
        if self.per_pod == 0 {
            return Err(RequestError::NoResource {
                resource: self.resource.clone(),
            });
        }
        for l in &self.levels {
            if l.pods == 0 {
                return Err(RequestError::EmptyLevel {
                    level: l.name.clone(),
                });
            }
            if l.pods > self.size {
                return Err(RequestError::LevelLargerThanGang {
                    level: l.name.clone(),
                    pods: l.pods,
                    size: self.size,
                });
            }
        }
        let gang = Level {
            name: "gang".to_owned(),
            pods: self.size,
            tier: Tier::CLUSTER,
            mode: Mode::Soft,
        };
        let outer_of = |i: usize| self.levels.get(i + 1).unwrap_or(&gang);
        for (i, inner) in self.levels.iter().enumerate() {
            let outer = outer_of(i);
            if outer.pods % inner.pods != 0 {
                return Err(RequestError::NotNested {
                    inner: inner.name.clone(),
                    inner_pods: inner.pods,
                    outer: outer.name.clone(),
                    outer_pods: outer.pods,
                });
            }
            if i + 1 < self.levels.len() && inner.tier > outer.tier {
                return Err(RequestError::TiersDoNotNest {
                    inner: inner.name.clone(),
                    inner_tier: inner.tier,
                    outer: outer.name.clone(),
                    outer_tier: outer.tier,
                });
            }
        }
        Ok(())
    }

    /// Total units of the resource the gang needs.
    pub fn total_units(&self) -> u64 {
        u64::from(self.size) * u64::from(self.per_pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(name: &str, pods: u32, tier: Tier, mode: Mode) -> Level {
        Level {
            name: name.to_owned(),
            pods,
            tier,
            mode,
        }
    }

    fn gang() -> GangId {
        GangId {
            namespace: "ml".to_owned(),
            name: "job".to_owned(),
        }
    }

    #[test]
    fn a_gang_level_is_added_when_missing() {
        let r = GangRequest::new(
            gang(),
            8,
            8,
            "nvidia.com/gpu",
            vec![level("dp", 4, Tier::LEAF, Mode::Hard)],
            Dialect::Native,
        )
        .unwrap();
        assert_eq!(r.levels.len(), 2);
        assert_eq!(r.levels[1].pods, 8);
        assert_eq!(r.levels[1].tier, Tier::CLUSTER);
        assert_eq!(r.total_units(), 64);
    }

    #[test]
    fn sizes_must_divide() {
        let e = GangRequest::new(
            gang(),
            12,
            8,
            "nvidia.com/gpu",
            vec![
                level("dp", 4, Tier::LEAF, Mode::Hard),
                level("x", 6, Tier::SPINE, Mode::Hard),
            ],
            Dialect::Native,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "level dp (4 pods per group) does not divide level x (6 pods per group): groups \
             must nest exactly"
        );
        let e = GangRequest::new(
            gang(),
            10,
            8,
            "r",
            vec![level("dp", 4, Tier::LEAF, Mode::Hard)],
            Dialect::Native,
        )
        .unwrap_err();
        assert!(
            matches!(e, RequestError::NotNested { outer_pods: 10, .. }),
            "{e}"
        );
    }

    #[test]
    fn tiers_must_nest() {
        let e = GangRequest::new(
            gang(),
            8,
            8,
            "r",
            vec![
                level("dp", 4, Tier::SPINE, Mode::Hard),
                level("pp", 8, Tier::LEAF, Mode::Hard),
            ],
            Dialect::Native,
        )
        .unwrap_err();
        assert!(matches!(e, RequestError::TiersDoNotNest { .. }), "{e}");
        assert!(e.to_string().contains("within a spine"), "{e}");
    }

    #[test]
    fn empty_and_resourceless_gangs_are_refused() {
        let e = GangRequest::new(gang(), 0, 8, "r", vec![], Dialect::Native).unwrap_err();
        assert_eq!(e, RequestError::EmptyGang);
        let e = GangRequest::new(gang(), 2, 0, "r", vec![], Dialect::Native).unwrap_err();
        assert!(matches!(e, RequestError::NoResource { .. }));
        let e = GangRequest::new(
            gang(),
            2,
            1,
            "r",
            vec![level("tp", 4, Tier::NODE, Mode::Hard)],
            Dialect::Native,
        )
        .unwrap_err();
        assert!(matches!(e, RequestError::LevelLargerThanGang { .. }));
    }
}
