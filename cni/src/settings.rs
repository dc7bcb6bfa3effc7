//! Node settings (`/etc/spinel/cni.json`): the schema lives in [`spinel_node::cni_settings`],
//! shared with the agent's `install-cni`, which validates a ConfigMap with it before writing
//! the node's file, so the installer and the CNI can never disagree about a key.

pub use spinel_node::cni_settings::{DEFAULT_PATH, PATH_ENV, Settings, SettingsError};
