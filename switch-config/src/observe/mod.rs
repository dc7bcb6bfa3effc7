//! Reading collected switch configurations into a [`SwitchState`]: SONiC's `config_db.json`,
//! NVUE's `nv config show -o json` (or the `nv config patch` YAML), and EOS `show
//! running-config`.
//!
//! Files come from elsewhere, so parsing is bounded (size checked by the caller, serde_json's
//! recursion limit) and never panics; unknown content is ignored, not guessed at.

pub mod eos;
pub mod nvue;
pub mod sonic;

use crate::intent::SwitchOs;
use crate::state::SwitchState;

/// Why a configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// Not JSON.
    #[error("not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// Not YAML.
    #[error("not valid YAML: {0}")]
    Yaml(String),
    /// JSON of another shape.
    #[error("{0}")]
    Shape(String),
}

/// Reads `text` as the running configuration of a switch running `os`.
pub fn parse(os: SwitchOs, text: &str) -> Result<SwitchState, ObserveError> {
    match os {
        SwitchOs::Sonic => Ok(sonic::state(&sonic::parse_config_db(text)?)),
        SwitchOs::Cumulus => Ok(nvue::state(&nvue::parse_tree(text)?)),
        SwitchOs::Eos => Ok(eos::state(text)),
    }
}

/// Expands `3`, `0-2`, `3,4` into indices (SONiC keys, NVUE and EOS lists), ignoring junk.
pub(crate) fn expand_indices(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u8>(), b.trim().parse::<u8>())
                    && a <= b
                    && b < 64
                {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(v) = part.parse::<u8>() {
                    out.push(v);
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}
