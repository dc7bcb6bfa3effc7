//! The operator's switch neighbour tables: hosts alone cannot see which spine a leaf hangs
//! from. One entry (a ConfigMap data key, or a file) per box, in any format `topo infer`
//! reads: lldpd `-f json0` or `-f json` (`show interfaces details` then `show neighbors
//! details`), or Spinel tables. An entry of neighbours only is named after its key or file,
//! as `spinelctl topo infer` names it after its file.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use topo_discovery::sources::{self, Capture, ParseOptions};

/// One entry: its bytes (to tell whether it changed) and what they parse to.
#[derive(Debug, Clone)]
pub struct SwitchEntry {
    /// The entry as given.
    pub bytes: Vec<u8>,
    /// Its captures (shared with the model), or why it cannot be read.
    pub captures: Result<Arc<Vec<Capture>>, String>,
}

impl PartialEq for SwitchEntry {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

/// Parses one entry named `key` (its ConfigMap key or file name), known to the controller as
/// `source`: an entry of neighbours only stands under its key's name until its cabling says
/// which box it is (`FabricBuilder::resolve_stand_ins`).
pub fn parse_entry(source: &str, key: &str, bytes: Vec<u8>) -> SwitchEntry {
    let captures = match std::str::from_utf8(&bytes) {
        Ok(text) => sources::parse(text, &ParseOptions::for_file(source, key))
            .map(Arc::new)
            .map_err(|e| e.to_string()),
        Err(e) => Err(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.valid_up_to()
        )),
    };
    SwitchEntry { bytes, captures }
}

/// The entries of a ConfigMap, keyed `ConfigMap/<namespace>/<name>/<key>` (`data` and
/// `binaryData` alike).
pub fn from_config_map(cm: &ConfigMap) -> BTreeMap<String, SwitchEntry> {
    let prefix = format!(
        "ConfigMap/{}/{}",
        cm.metadata.namespace.as_deref().unwrap_or_default(),
        cm.metadata.name.as_deref().unwrap_or_default()
    );
    let text = cm
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k, v.clone().into_bytes()));
    let binary = cm
        .binary_data
        .iter()
        .flatten()
        .map(|(k, v)| (k, v.0.clone()));
    text.chain(binary)
        .map(|(k, bytes)| {
            let source = format!("{prefix}/{k}");
            let entry = parse_entry(&source, k, bytes);
            (source, entry)
        })
        .collect()
}

/// The entries of a directory, keyed by path: every regular file (through symbolic links, as a
/// mounted ConfigMap has them) whose name does not start with a dot.
pub fn read_dir(dir: &Path) -> std::io::Result<BTreeMap<String, SwitchEntry>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = entry.path();
        if name.starts_with('.') || !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path)?;
        let source = path.display().to_string();
        let entry = parse_entry(&source, name, bytes);
        out.insert(source, entry);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const NEIGHBOURS_ONLY: &str = r#"{"lldp": [{"interface": [{"swp1": {"chassis": [{"id": [{"type": "mac", "value": "0c:42:a1:00:00:11"}], "name": [{"value": "leaf1"}], "capability": [{"type": "Bridge", "enabled": true}]}], "port": [{"id": [{"type": "ifname", "value": "swp51"}]}]}}]}]}"#;

    #[test]
    fn entries_are_named_by_key_and_bad_ones_say_why() {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "tables", "namespace": "spinel-system"},
            "data": {"spine1.json": NEIGHBOURS_ONLY, "broken.json": "{not json"},
        }))
        .unwrap();
        let entries = from_config_map(&cm);
        let keys: Vec<&String> = entries.keys().collect();
        assert_eq!(
            keys,
            [
                "ConfigMap/spinel-system/tables/broken.json",
                "ConfigMap/spinel-system/tables/spine1.json"
            ]
        );
        let good = entries["ConfigMap/spinel-system/tables/spine1.json"]
            .captures
            .as_ref()
            .unwrap();
        assert_eq!(good[0].table.observer.name, "spine1");
        assert!(
            entries["ConfigMap/spinel-system/tables/broken.json"]
                .captures
                .as_ref()
                .unwrap_err()
                .contains("JSON")
        );
    }

    #[test]
    fn a_directory_skips_hidden_entries() {
        let dir = std::env::temp_dir().join(format!("ctrl-switches-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("..data")).unwrap();
        std::fs::write(dir.join("spine2.json"), NEIGHBOURS_ONLY).unwrap();
        std::fs::write(dir.join(".hidden"), "x").unwrap();
        let entries: BTreeMap<String, SwitchEntry> = read_dir(&dir).unwrap();
        assert_eq!(entries.len(), 1);
        let (key, entry) = entries.iter().next().unwrap();
        assert!(key.ends_with("spine2.json"));
        assert_eq!(
            entry.captures.as_ref().unwrap()[0].table.observer.name,
            "spine2"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn entries_stand_under_their_key_without_extensions() {
        let e = parse_entry(
            "cm/lf1a.json0.json",
            "lf1a.json0.json",
            NEIGHBOURS_ONLY.into(),
        );
        let c = &e.captures.unwrap()[0];
        assert_eq!(c.table.observer.name, "lf1a");
        assert_eq!(c.source.as_deref(), Some("cm/lf1a.json0.json"));
    }
}
