//! The per-attachment record the CNI publishes on the host (`<dir>/<containerID>/<ifname>.json`)
//! and the fabric agent reads: the RoCE details workloads need, and where the pod is, so the
//! agent can re-announce its addresses when the leaf may have lost them.
//!
//! A record is input to the agent, not trusted: names are checked to be single path
//! components, files must be small regular files (symlinks are not followed), and
//! [`PodAttachment::validate`] refuses what the agent must not act on. The namespace path is a
//! hint only; the namespace's identity (with its cookie, which the kernel never reuses) decides.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use hostnet::netns::NsId;
use hostnet::sriov::is_valid_ifname;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use spinel_wire::MacAddr;

use crate::roce_info::RoceInfo;

/// Largest record file read.
const MAX_RECORD_BYTES: u64 = 64 * 1024;
/// Most addresses one attachment may list.
const MAX_ADDRESSES: usize = 64;

/// One attachment's published record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The RoCE details (the fields workloads have always read, at the top level), when the
    /// attachment has a RoCE v2 GID.
    #[serde(flatten)]
    pub roce: Option<RoceInfo>,
    /// Where the pod is and what it announces; absent in records of older CNI versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<PodAttachment>,
}

/// Where a pod attachment is, as its ADD left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodAttachment {
    /// The pod's namespace path at ADD (`CNI_NETNS`), a hint.
    pub netns: PathBuf,
    /// The namespace's identity, cookie included: what makes the path trustworthy.
    pub netns_id: NsId,
    /// The interface in the pod.
    pub ifname: String,
    /// Its MAC.
    pub mac: MacAddr,
    /// Its addresses.
    pub addresses: Vec<IpNet>,
    /// The host netdev whose cable the attachment uses: the VF's PF, or the macvlan's master.
    pub pf: String,
    /// The VF's PCI address, for VF attachments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vf_pci: Option<String>,
}

/// Why the agent must not use a pod attachment from a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnusableAttachment(String);

impl PodAttachment {
    /// Why the agent must not use this attachment, if it must not.
    pub fn validate(&self) -> Result<(), UnusableAttachment> {
        self.check().map_err(UnusableAttachment)
    }

    fn check(&self) -> Result<(), String> {
        let path_ok = self.netns.is_absolute()
            && self
                .netns
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
            && !self.netns.as_os_str().as_encoded_bytes().contains(&0);
        if !path_ok {
            return Err(format!(
                "namespace path {} is not a plain absolute path",
                self.netns.display()
            ));
        }
        if self.netns_id.cookie.is_none() {
            return Err("the namespace identity has no cookie: it cannot be verified".into());
        }
        if !is_valid_ifname(&self.ifname) || !is_valid_ifname(&self.pf) {
            return Err(format!(
                "interface names {:?} / {:?} are not interface names",
                self.ifname, self.pf
            ));
        }
        if !self.mac.is_valid_unicast() {
            return Err(format!("{} is not a unicast MAC", self.mac));
        }
        if self.addresses.is_empty() || self.addresses.len() > MAX_ADDRESSES {
            return Err(format!(
                "{} addresses (1 to {MAX_ADDRESSES} expected)",
                self.addresses.len()
            ));
        }
        Ok(())
    }
}

/// A record as found on disk, with the names it was found under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The container ID (directory name).
    pub container_id: String,
    /// The interface name (file stem).
    pub ifname: String,
    /// The record.
    pub record: Record,
}

/// A record file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum UnreadableRecord {
    /// Open, stat or read failed (a symlink is refused at open).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A directory, a FIFO, a device.
    #[error("not a regular file")]
    NotAFile,
    /// Over [`MAX_RECORD_BYTES`].
    #[error("larger than {MAX_RECORD_BYTES} bytes")]
    TooLarge,
    /// Not a record.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Every record under `dir`, and a line per file that could not be used (unreadable, too
/// large, not a regular file, not a record). A missing directory holds no records.
pub fn read_records(dir: &Path) -> (Vec<Found>, Vec<String>) {
    let mut found = Vec::new();
    let mut refused = Vec::new();
    let Ok(containers) = fs::read_dir(dir) else {
        return (found, refused);
    };
    for container in containers.flatten() {
        // file_type() does not follow symlinks: a link planted in the directory is skipped.
        if !container.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let container_id = container.file_name().to_string_lossy().into_owned();
        let Ok(files) = fs::read_dir(container.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let ifname = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            match read_one(&path) {
                Ok(record) => found.push(Found {
                    container_id: container_id.clone(),
                    ifname,
                    record,
                }),
                Err(e) => refused.push(format!("{}: {e}", path.display())),
            }
        }
    }
    found.sort_by(|a, b| (&a.container_id, &a.ifname).cmp(&(&b.container_id, &b.ifname)));
    (found, refused)
}

fn read_one(path: &Path) -> Result<Record, UnreadableRecord> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(UnreadableRecord::NotAFile);
    }
    if meta.len() > MAX_RECORD_BYTES {
        return Err(UnreadableRecord::TooLarge);
    }
    let mut text = Vec::new();
    file.take(MAX_RECORD_BYTES).read_to_end(&mut text)?;
    Ok(serde_json::from_slice(&text)?)
}

/// Writing or naming a published record failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A name that cannot be a single path component.
    #[error("{what} {value:?} cannot name a RoCE record (empty, `.`/`..`, or contains `/`)")]
    BadName {
        /// Which part of the name.
        what: &'static str,
        /// The value.
        value: String,
    },
    /// The file system refused.
    #[error("cannot write {path}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The files of one attachment's record: `<dir>/<containerID>/<ifname>.json` and `.env`.
/// Both names are checked to be single path components before any path is built.
pub fn record_paths(
    dir: &Path,
    container_id: &str,
    ifname: &str,
) -> Result<(PathBuf, PathBuf), RecordError> {
    for (what, value) in [("container ID", container_id), ("interface name", ifname)] {
        if value.is_empty() || value == "." || value == ".." || value.contains(['/', '\0']) {
            return Err(RecordError::BadName {
                what,
                value: value.to_owned(),
            });
        }
    }
    let base = dir.join(container_id);
    Ok((
        base.join(format!("{ifname}.json")),
        base.join(format!("{ifname}.env")),
    ))
}

/// Writes an attachment's record where workloads (and `spinelctl nccl-env`) read its RoCE
/// details and the fabric agent finds the pod to re-announce; the `.env` file only when the
/// attachment has RoCE details. The JSON is written to a temporary file and renamed, so a
/// reader never sees half a record.
pub fn publish(
    dir: &Path,
    container_id: &str,
    ifname: &str,
    record: &Record,
) -> Result<(), RecordError> {
    let (json_path, env_path) = record_paths(dir, container_id, ifname)?;
    let fail = |path: &Path| {
        let path = path.to_owned();
        move |source| RecordError::Io { path, source }
    };
    if let Some(parent) = json_path.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(fail(parent))?;
    }
    let json = serde_json::to_vec_pretty(record)
        .map_err(|e| fail(&json_path)(std::io::Error::other(e)))?;
    let temporary = json_path.with_extension("json.tmp");
    fs::write(&temporary, json).map_err(fail(&temporary))?;
    fs::rename(&temporary, &json_path).map_err(fail(&json_path))?;
    let Some(info) = &record.roce else {
        let _ = fs::remove_file(&env_path);
        return Ok(());
    };
    let env: String = info
        .nccl_env()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    fs::write(&env_path, env).map_err(fail(&env_path))
}

/// Removes an attachment's record (and its container directory when empty). Missing files are
/// not an error: removal is idempotent.
pub fn unpublish(dir: &Path, container_id: &str, ifname: &str) {
    let Ok((json_path, env_path)) = record_paths(dir, container_id, ifname) else {
        return;
    };
    let _ = fs::remove_file(&json_path);
    let _ = fs::remove_file(&env_path);
    if let Some(parent) = json_path.parent() {
        let _ = fs::remove_dir(parent);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use hostnet::rdma::NetnsMode;

    use super::*;

    fn attachment() -> PodAttachment {
        PodAttachment {
            netns: "/var/run/netns/cni-1234".into(),
            netns_id: NsId {
                dev: 4,
                ino: 4026532,
                cookie: Some(9),
            },
            ifname: "net1".into(),
            mac: "02:00:00:00:00:05".parse().unwrap(),
            addresses: vec!["10.56.0.5/24".parse().unwrap()],
            pf: "ens1f0np0".into(),
            vf_pci: Some("0000:3b:00.2".into()),
        }
    }

    #[test]
    fn records_round_trip_with_and_without_roce() {
        let dir = tempfile::tempdir().unwrap();
        let roce = RoceInfo {
            netdev: "net1".into(),
            rdma_device: "mlx5_1".into(),
            port: 1,
            gid_index: 3,
            gid: "::ffff:10.56.0.5".into(),
            address: "10.56.0.5".parse().unwrap(),
            netns_mode: Some(NetnsMode::Shared),
        };
        let with = Record {
            roce: Some(roce.clone()),
            attachment: Some(attachment()),
        };
        let without = Record {
            roce: None,
            attachment: Some(attachment()),
        };
        publish(dir.path(), "c1", "net1", &with).unwrap();
        publish(dir.path(), "c2", "net1", &without).unwrap();
        // Readers of the old layout still find the RoCE fields at the top level.
        let text = fs::read_to_string(dir.path().join("c1/net1.json")).unwrap();
        let old: RoceInfo = serde_json::from_str(&text).unwrap();
        assert_eq!(old, roce);
        assert!(dir.path().join("c1/net1.env").exists());
        assert!(!dir.path().join("c2/net1.env").exists(), "no RoCE, no env");
        let (found, refused) = read_records(dir.path());
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].record, with);
        assert_eq!(
            (found[1].container_id.as_str(), found[1].ifname.as_str()),
            ("c2", "net1")
        );
        assert_eq!(found[1].record, without);
    }

    #[test]
    fn hostile_records_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("c1");
        fs::create_dir(&c).unwrap();
        fs::write(c.join("net1.json"), "{not json").unwrap();
        fs::write(dir.path().join("target.json"), "{}").unwrap();
        symlink(dir.path().join("target.json"), c.join("net2.json")).unwrap();
        fs::write(c.join("net3.json"), vec![b' '; 70 * 1024]).unwrap();
        symlink(&c, dir.path().join("linked")).unwrap();
        let (found, refused) = read_records(dir.path());
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(refused.len(), 3, "{refused:?}");

        assert!(attachment().validate().is_ok());
        let bad = |edit: fn(&mut PodAttachment)| {
            let mut a = attachment();
            edit(&mut a);
            a.validate().unwrap_err().to_string()
        };
        assert!(bad(|a| a.netns = "relative/ns".into()).contains("absolute"));
        assert!(bad(|a| a.netns = "/var/run/../../proc/1/ns/net".into()).contains("plain"));
        assert!(bad(|a| a.netns_id.cookie = None).contains("cookie"));
        assert!(bad(|a| a.ifname = "a/b".into()).contains("interface"));
        assert!(bad(|a| a.mac = "01:00:5e:00:00:01".parse().unwrap()).contains("unicast"));
        assert!(bad(|a| a.addresses.clear()).contains("addresses"));
    }

    #[test]
    fn records_are_published_and_removed() {
        let info = RoceInfo {
            netdev: "net1".into(),
            rdma_device: "mlx5_1".into(),
            port: 1,
            gid_index: 3,
            gid: "::ffff:10.56.0.5".into(),
            address: "10.56.0.5".parse().unwrap(),
            netns_mode: Some(NetnsMode::Exclusive),
        };
        let env = info.nccl_env();
        assert_eq!(env[0], ("NCCL_IB_HCA".into(), "=mlx5_1:1".into()));
        assert_eq!(env[1], ("NCCL_IB_GID_INDEX".into(), "3".into()));
        let dir = tempfile::tempdir().unwrap();
        let record = Record {
            roce: Some(info.clone()),
            attachment: None,
        };
        publish(dir.path(), "c1", "net1", &record).unwrap();
        let text = fs::read_to_string(dir.path().join("c1/net1.env")).unwrap();
        assert!(text.contains("NCCL_IB_GID_INDEX=3\n"), "{text}");
        let json = fs::read_to_string(dir.path().join("c1/net1.json")).unwrap();
        assert!(json.contains("\"netnsMode\": \"exclusive\""), "{json}");
        let back: RoceInfo = serde_json::from_str(&json).unwrap();
        assert_eq!(back, info);
        unpublish(dir.path(), "c1", "net1");
        assert!(!dir.path().join("c1").exists());
    }

    #[test]
    fn record_names_must_be_one_path_component() {
        let dir = Path::new("/run/spinel/roce");
        for (cid, ifname) in [("..", "net1"), ("a/b", "net1"), ("c1", ""), ("c1", "../x")] {
            assert!(
                matches!(
                    record_paths(dir, cid, ifname),
                    Err(RecordError::BadName { .. })
                ),
                "{cid:?} {ifname:?}"
            );
        }
        assert!(record_paths(dir, "c1", "net1").is_ok());
    }
}
