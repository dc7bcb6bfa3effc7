//! Writing an intent back as YAML (deterministic: the same intent gives the same bytes), for
//! intents generated from an inferred fabric.

use super::Intent;

/// The intent as YAML, with a header comment.
pub fn to_yaml(intent: &Intent) -> Result<String, serde_saphyr::SerializeError> {
    let body = serde_saphyr::to_string(intent)?;
    Ok(format!(
        "# Spinel fabric intent ({}); see switch-config/examples/fabric-intent.yaml for every \
         field.\n{body}",
        super::SCHEMA
    ))
}
