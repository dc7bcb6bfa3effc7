//! Which VF this attachment gets: from `deviceID` (wherever Multus or the runtime put it), the
//! device-info file, or `pfName` + `vfIndex`. Sources that disagree are an error, not a guess.

use std::fs;
use std::io::Read;
use std::path::{Component, Path};

use hostnet::sriov::{PciAddress, SriovError, Sysfs, VirtualFunction};
use serde::Deserialize;

use crate::config::NetConf;
use crate::settings::Settings;
use crate::spec::args::CniArgs;
use crate::spec::{CniError, ErrorCode};

/// Largest device-info file read.
const MAX_DEVICE_INFO_BYTES: u64 = 64 * 1024;

/// The device-info file (k8snetworkplumbingwg device-info spec 1.x), the parts we use.
#[derive(Debug, Clone, Deserialize)]
pub struct DeviceInfo {
    /// `pci` for SR-IOV VFs.
    #[serde(rename = "type")]
    pub kind: String,
    /// PCI section.
    #[serde(default)]
    pub pci: Option<DeviceInfoPci>,
}

/// The `pci` section of a device-info file.
#[derive(Debug, Clone, Deserialize)]
pub struct DeviceInfoPci {
    /// The VF's PCI address.
    #[serde(rename = "pci-address")]
    pub pci_address: Option<String>,
    /// Comma-separated RDMA device names.
    #[serde(rename = "rdma-device", default)]
    pub rdma_device: Option<String>,
}

/// The requested VF and where the request came from.
#[derive(Debug, Clone)]
pub struct DeviceRequest {
    /// VF by PCI address, or by PF and index.
    pub target: Target,
    /// The configuration field(s) the request came from, for messages.
    pub source: String,
    /// RDMA devices named by the device-info file, if any.
    pub rdma_devices: Vec<String>,
}

/// How the VF was named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// By PCI address.
    Pci(PciAddress),
    /// By PF netdev and VF index.
    PfVf(String, u32),
}

fn invalid(msg: impl Into<String>) -> CniError {
    CniError::new(ErrorCode::InvalidConfig, msg)
}

/// Works out which VF the runtime asked for, before anything changes.
pub fn requested(
    conf: &NetConf,
    args: &CniArgs,
    settings: &Settings,
) -> Result<DeviceRequest, CniError> {
    let rc = conf.runtime_config.as_ref();
    // Typed sources were validated when the configuration was parsed.
    let mut named: Vec<(&'static str, PciAddress)> = [
        (
            "runtimeConfig.deviceID",
            rc.and_then(|r| r.device_id.clone()),
        ),
        (
            "args.cni.deviceID",
            conf.args_cni().and_then(|a| a.device_id.clone()),
        ),
        ("deviceID", conf.device_id.clone()),
        ("pciBusID", conf.pci_bus_id.clone()),
    ]
    .into_iter()
    .filter_map(|(field, pci)| pci.map(|p| (field, p)))
    .collect();
    if conf.args.is_none() {
        push_text(&mut named, "CNI_ARGS DEVICE_ID", args.get("DEVICE_ID"))?;
    }
    let pf_vf = match (&conf.pf_name, conf.vf_index) {
        (Some(pf), Some(index)) => Some((pf.clone(), index)),
        _ => None,
    };
    let mut rdma_devices = Vec::new();
    if let Some(file) = rc.and_then(|r| r.device_info_file.as_deref()) {
        match read_device_info(file, &settings.device_info_dir)? {
            Some(info) => {
                if let Some(pci) = info.pci.as_ref().and_then(|p| p.pci_address.as_deref()) {
                    push_text(&mut named, "runtimeConfig.CNIDeviceInfoFile", Some(pci))?;
                }
                rdma_devices = rdma_device_names(info);
            }
            // Multus passes a path whether or not the device plugin wrote a file there.
            None if !named.is_empty() || pf_vf.is_some() => tracing::warn!(
                "runtimeConfig.CNIDeviceInfoFile: {file:?} does not exist (the device plugin wrote none); the VF comes from the configuration"
            ),
            None => {
                return Err(invalid(format!(
                    "runtimeConfig.CNIDeviceInfoFile: {file:?} does not exist and nothing else names the VF (deviceID, pfName/vfIndex)"
                )));
            }
        }
    }

    match (named.first(), pf_vf) {
        (Some(_), Some(_)) => Err(invalid(format!(
            "pfName/vfIndex and {} both name a VF; use one",
            named.iter().map(|(f, _)| *f).collect::<Vec<_>>().join(", ")
        ))),
        (Some((field, pci)), None) => {
            if let Some((other, differs)) = named.iter().find(|(_, p)| p != pci) {
                return Err(invalid(format!(
                    "{field} ({pci}) and {other} ({differs}) name different VFs"
                )));
            }
            let source = named.iter().map(|(f, _)| *f).collect::<Vec<_>>().join(", ");
            Ok(DeviceRequest {
                target: Target::Pci(pci.clone()),
                source,
                rdma_devices,
            })
        }
        (None, Some((pf, index))) => Ok(DeviceRequest {
            target: Target::PfVf(pf, index),
            source: "pfName/vfIndex".into(),
            rdma_devices,
        }),
        (None, None) => Err(invalid(
            "no VF given: set deviceID (Multus passes the device plugin's allocation), runtimeConfig.deviceID, a device-info file, or pfName and vfIndex",
        )),
    }
}

/// Adds a PCI address given as text to the sources that name a VF.
fn push_text(
    named: &mut Vec<(&'static str, PciAddress)>,
    field: &'static str,
    value: Option<&str>,
) -> Result<(), CniError> {
    if let Some(v) = value {
        let pci = v.parse().map_err(|e| invalid(format!("{field}: {e}")))?;
        named.push((field, pci));
    }
    Ok(())
}

/// The RDMA devices a device-info file names (comma-separated).
fn rdma_device_names(info: DeviceInfo) -> Vec<String> {
    info.pci
        .and_then(|p| p.rdma_device)
        .map(|s| {
            s.split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Writes the device-info file Multus passed when nobody wrote one (no device plugin file to
/// copy): Multus reads it back into the pod's `network-status` annotation, and removes it on
/// DEL. Best effort: a file that cannot be written costs the annotation its `device-info`,
/// not the attachment.
pub fn publish_device_info(
    conf: &NetConf,
    settings: &Settings,
    pci: &PciAddress,
    rdma_devices: &[String],
) {
    let Some(file) = conf
        .runtime_config
        .as_ref()
        .and_then(|r| r.device_info_file.as_deref())
    else {
        return;
    };
    // Only a path `read_device_info` found free and inside the directory gets written.
    match read_device_info(file, &settings.device_info_dir) {
        Ok(None) => {}
        Ok(Some(_)) => return,
        Err(e) => {
            tracing::warn!("device-info file not written: {e}");
            return;
        }
    }
    let path = Path::new(file);
    let parent_inside = path
        .parent()
        .and_then(|p| fs::canonicalize(p).ok())
        .zip(fs::canonicalize(&settings.device_info_dir).ok())
        .is_some_and(|(parent, base)| parent.starts_with(base));
    if !parent_inside {
        tracing::warn!(
            "device-info file {file:?} not written: its directory is not under the device-info directory"
        );
        return;
    }
    let mut pci_section = serde_json::json!({"pci-address": pci.to_string()});
    if !rdma_devices.is_empty() {
        pci_section["rdma-device"] = rdma_devices.join(",").into();
    }
    let info = serde_json::json!({"type": "pci", "version": "1.1.0", "pci": pci_section});
    if let Err(e) = crate::journal::write_json(path, &info) {
        tracing::warn!("device-info file {file:?} not written: {e}");
    }
}

/// Looks the requested VF up in sysfs.
pub fn lookup(request: &DeviceRequest, sysfs: &Sysfs) -> Result<VirtualFunction, CniError> {
    let found = match &request.target {
        Target::Pci(pci) => sysfs.vf(pci),
        Target::PfVf(pf, index) => sysfs.vf_of_pf(pf, *index),
    };
    found.map_err(|e| {
        let code = match e {
            SriovError::Io { .. } => ErrorCode::Io,
            _ => ErrorCode::Device,
        };
        CniError::caused(
            code,
            format!("cannot use the VF from {}", request.source),
            &e,
        )
    })
}

/// Reads a device-info file, which must be a regular file under `allowed_dir`; `None` when
/// no file is at a path that lies under it.
fn read_device_info(file: &str, allowed_dir: &Path) -> Result<Option<DeviceInfo>, CniError> {
    let field = "runtimeConfig.CNIDeviceInfoFile";
    let path = Path::new(file);
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(invalid(format!(
            "{field}: {file:?} must be an absolute path without '..'"
        )));
    }
    let base = fs::canonicalize(allowed_dir).unwrap_or_else(|_| allowed_dir.to_owned());
    let outside = || {
        invalid(format!(
            "{field}: {file:?} is outside the device-info directory {}",
            base.display()
        ))
    };
    // Resolve symlinks before checking the location, so nothing outside escapes.
    let real = match fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return if path.starts_with(allowed_dir) || path.starts_with(&base) {
                Ok(None)
            } else {
                Err(outside())
            };
        }
        Err(e) => return Err(invalid(format!("{field}: cannot open {file:?}: {e}"))),
    };
    if !real.starts_with(&base) {
        return Err(outside());
    }
    let meta = fs::metadata(&real).map_err(|e| invalid(format!("{field}: {e}")))?;
    if !meta.is_file() || meta.len() > MAX_DEVICE_INFO_BYTES {
        return Err(invalid(format!(
            "{field}: {file:?} is not a regular file under {MAX_DEVICE_INFO_BYTES} bytes"
        )));
    }
    let mut text = String::new();
    fs::File::open(&real)
        .and_then(|f| f.take(MAX_DEVICE_INFO_BYTES).read_to_string(&mut text))
        .map_err(|e| CniError::new(ErrorCode::Io, format!("{field}: cannot read {file:?}: {e}")))?;
    let info: DeviceInfo = serde_json::from_str(&text)
        .map_err(|e| invalid(format!("{field}: {file:?} is not a device-info file: {e}")))?;
    if info.kind != "pci" {
        return Err(invalid(format!(
            "{field}: device type {:?} is not supported (want \"pci\")",
            info.kind
        )));
    }
    Ok(Some(info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn conf(json: &str) -> NetConf {
        Config::parse(json.as_bytes()).unwrap().conf
    }

    fn settings(dir: &Path) -> Settings {
        Settings {
            device_info_dir: dir.to_owned(),
            ..Settings::default()
        }
    }

    #[test]
    fn sources_agree_or_fail() {
        let s = Settings::default();
        let c = conf(
            r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","deviceID":"0000:3b:00.2","pciBusID":"3b:00.2"}"#,
        );
        let r = requested(&c, &CniArgs::default(), &s).unwrap();
        assert_eq!(r.target, Target::Pci("0000:3b:00.2".parse().unwrap()));
        let c = conf(
            r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","deviceID":"0000:3b:00.2","runtimeConfig":{"deviceID":"0000:3b:00.3"}}"#,
        );
        let e = requested(&c, &CniArgs::default(), &s).unwrap_err();
        assert!(e.msg.contains("different VFs"), "{e}");
        let c = conf(r#"{"cniVersion":"1.0.0","name":"n","type":"spinel"}"#);
        assert!(
            requested(&c, &CniArgs::default(), &s)
                .unwrap_err()
                .msg
                .contains("no VF given")
        );
        let c = conf(
            r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","deviceID":"0000:3b:00.2","pfName":"p","vfIndex":1}"#,
        );
        assert!(
            requested(&c, &CniArgs::default(), &s)
                .unwrap_err()
                .msg
                .contains("use one")
        );
        let args = CniArgs::parse("DEVICE_ID=0000:3b:00.7").unwrap();
        let c = conf(r#"{"cniVersion":"1.0.0","name":"n","type":"spinel"}"#);
        assert_eq!(
            requested(&c, &args, &s).unwrap().target,
            Target::Pci("0000:3b:00.7".parse().unwrap())
        );
    }

    #[test]
    fn device_info_file_must_stay_in_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let allowed = dir.path().join("devinfo");
        fs::create_dir_all(allowed.join("cni")).unwrap();
        let good = allowed.join("cni/net-abc_net1");
        fs::write(&good, r#"{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:3b:00.4","rdma-device":"mlx5_4"}}"#).unwrap();
        let outside = dir.path().join("secret");
        fs::write(
            &outside,
            r#"{"type":"pci","pci":{"pci-address":"0000:3b:00.5"}}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink(&outside, allowed.join("cni/link")).unwrap();
        let s = settings(&allowed);
        let mk = |p: &Path| {
            conf(&format!(
                r#"{{"cniVersion":"1.0.0","name":"n","type":"spinel","runtimeConfig":{{"CNIDeviceInfoFile":{:?}}}}}"#,
                p.to_str().unwrap()
            ))
        };
        let r = requested(&mk(&good), &CniArgs::default(), &s).unwrap();
        assert_eq!(r.target, Target::Pci("0000:3b:00.4".parse().unwrap()));
        assert_eq!(r.rdma_devices, ["mlx5_4"]);
        for bad in [
            outside.clone(),
            allowed.join("cni/link"),
            allowed.join("cni/../../secret"),
            allowed.join("cni/missing"),
            dir.path().join("elsewhere/missing"),
        ] {
            let e = requested(&mk(&bad), &CniArgs::default(), &s).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidConfig, "{bad:?}: {e}");
        }
    }

    /// Multus always passes a device-info path; the device plugin writes a file there only
    /// sometimes. The deviceID in the same call then names the VF.
    #[test]
    fn a_missing_device_info_file_defers_to_device_id() {
        let dir = tempfile::tempdir().unwrap();
        let allowed = dir.path().join("devinfo");
        fs::create_dir_all(allowed.join("cni")).unwrap();
        let s = settings(&allowed);
        let with = |file: &Path, extra: &str| {
            conf(&format!(
                r#"{{"cniVersion":"1.0.0","name":"n","type":"spinel"{extra},"runtimeConfig":{{"CNIDeviceInfoFile":{:?}}}}}"#,
                file.to_str().unwrap()
            ))
        };
        let missing = allowed.join("cni/rail0-abc_net1");
        let r = requested(
            &with(&missing, r#","deviceID":"0000:3b:00.2""#),
            &CniArgs::default(),
            &s,
        )
        .unwrap();
        assert_eq!(r.target, Target::Pci("0000:3b:00.2".parse().unwrap()));
        // Missing and outside the directory: still refused.
        let e = requested(
            &with(&dir.path().join("x/y"), r#","deviceID":"0000:3b:00.2""#),
            &CniArgs::default(),
            &s,
        )
        .unwrap_err();
        assert!(e.msg.contains("outside"), "{e}");
        // A file that disagrees with deviceID stays an error.
        fs::write(
            &missing,
            r#"{"type":"pci","pci":{"pci-address":"0000:3b:00.4"}}"#,
        )
        .unwrap();
        let e = requested(
            &with(&missing, r#","deviceID":"0000:3b:00.2""#),
            &CniArgs::default(),
            &s,
        )
        .unwrap_err();
        assert!(e.msg.contains("different VFs"), "{e}");
    }
}
