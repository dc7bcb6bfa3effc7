//! The network configuration (`NetConf`): parsed strictly and validated before anything
//! changes. Unknown or malformed fields are refused with code 7 and the field's name.

use std::collections::BTreeMap;

use hostnet::netlink::{VfLinkMode, VlanProto};
use hostnet::sriov::{PciAddress, is_valid_ifname};
use serde::Deserialize;
use serde_json::Value;
use spinel_wire::MacAddr;

use crate::spec::result::CniResult;
use crate::spec::{CniError, ErrorCode, Version};

mod pod;
mod rdma;
mod vf;

pub use hostnet::netlink::VfAttributes;
pub use pod::{Garp, Routing, Sysctls, table_for};
pub use rdma::{GidPolicy, NetnsRequirement, Rdma};

/// Largest configuration accepted on stdin.
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// The `spinel` network configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetConf {
    /// Spec version of this configuration.
    pub cni_version: Version,
    /// Network name (unique per node).
    pub name: String,
    /// Always `spinel`.
    #[serde(rename = "type")]
    pub plugin_type: String,
    /// VF PCI address (set by Multus from the device plugin's allocation).
    #[serde(rename = "deviceID", default)]
    pub device_id: Option<PciAddress>,
    /// Same as `deviceID`; Multus injects both.
    #[serde(rename = "pciBusID", default)]
    pub pci_bus_id: Option<PciAddress>,
    /// PF netdev, with `vfIndex`: an alternative to `deviceID` for static setups.
    #[serde(default)]
    pub pf_name: Option<String>,
    /// VF index on `pfName`.
    #[serde(default)]
    pub vf_index: Option<u32>,
    /// MTU for the pod interface; must not exceed the PF's.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// MAC for the pod interface.
    #[serde(default)]
    pub mac: Option<MacAddr>,
    /// VLAN the PF inserts for the VF (0-4094; 0: none).
    #[serde(default)]
    pub vlan: Option<u16>,
    /// 802.1p priority of that VLAN (0-7); needs `vlan`.
    #[serde(rename = "vlanQoS", default)]
    pub vlan_qos: Option<u8>,
    /// `802.1Q` or `802.1ad`; needs `vlan`.
    #[serde(default)]
    pub vlan_proto: Option<VlanProto>,
    /// MAC/VLAN spoof checking, `on` or `off` (default `on`).
    #[serde(default)]
    pub spoofchk: Option<OnOff>,
    /// Trusted VF, `on` or `off` (default `off`).
    #[serde(default)]
    pub trust: Option<OnOff>,
    /// VF link state: `auto`, `enable` or `disable` (default `auto`). sriov-cni: `link_state`.
    #[serde(default, alias = "link_state")]
    pub link_state: Option<VfLinkMode>,
    /// Minimum TX rate in Mbit/s (default 0: none). sriov-cni: `min_tx_rate`.
    #[serde(default, alias = "min_tx_rate")]
    pub min_tx_rate: Option<u32>,
    /// Maximum TX rate in Mbit/s (default 0: none). sriov-cni: `max_tx_rate`.
    #[serde(default, alias = "max_tx_rate")]
    pub max_tx_rate: Option<u32>,
    /// `vf` (default): move the VF's netdev into the pod. `macvlan`: create a macvlan on
    /// `pfName` inside the pod and share the PF's RDMA device.
    #[serde(default)]
    pub mode: AttachMode,
    /// macvlan mode: accept a master that is not a PF with an RDMA device (a VF's netdev, a
    /// NIC without RoCE). Off by default.
    #[serde(default)]
    pub allow_non_rdma_master: bool,
    /// Per-interface sysctls inside the pod.
    #[serde(default)]
    pub sysctls: Sysctls,
    /// Per-NIC policy routing inside the pod.
    #[serde(default)]
    pub routing: Routing,
    /// Gratuitous ARP / unsolicited NA announcements of the pod's addresses.
    #[serde(default)]
    pub garp: Garp,
    /// The VF's RDMA device and its RoCE v2 GID.
    #[serde(default)]
    pub rdma: Rdma,
    /// IPAM delegate configuration, passed to the plugin named by `ipam.type`.
    #[serde(default)]
    pub ipam: Option<Value>,
    /// DNS settings, copied into the result.
    #[serde(default)]
    pub dns: Option<Value>,
    /// Capabilities the runtime may fill into `runtimeConfig`.
    #[serde(default)]
    pub capabilities: Option<BTreeMap<String, bool>>,
    /// Capability arguments from the runtime.
    #[serde(default)]
    pub runtime_config: Option<RuntimeConfig>,
    /// Per-attachment arguments (`args.cni`).
    #[serde(default)]
    pub args: Option<Args>,
    /// Result of the previous plugin in a chain.
    #[serde(default)]
    pub prev_result: Option<Value>,
    /// Log level for this network: `error`, `warn`, `info` or `debug`.
    #[serde(default)]
    pub log_level: Option<LogLevel>,
    /// sriov-cni's log file: accepted so its NADs work unchanged, never opened. Spinel logs to
    /// stderr, which the runtime keeps; root does not write where a pod-reachable
    /// configuration points.
    #[serde(default)]
    pub log_file: Option<String>,
    /// GC: the attachments that must be kept.
    #[serde(rename = "cni.dev/valid-attachments", default)]
    pub valid_attachments: Option<Vec<AttachmentRef>>,
}

/// How the pod gets its interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachMode {
    /// An SR-IOV VF.
    #[default]
    Vf,
    /// A macvlan on the PF.
    Macvlan,
}

/// `runtimeConfig` keys this plugin accepts (the capabilities it can declare).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// Capability `deviceID`.
    #[serde(rename = "deviceID", default)]
    pub device_id: Option<PciAddress>,
    /// Capability `mac`.
    #[serde(default)]
    pub mac: Option<MacAddr>,
    /// Capability `ips`, for the IPAM plugin.
    #[serde(default)]
    pub ips: Option<Value>,
    /// Capability `CNIDeviceInfoFile`: the device-info file Multus wrote for this attachment.
    #[serde(rename = "CNIDeviceInfoFile", default)]
    pub device_info_file: Option<String>,
}

/// `args` in the configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// `args.cni`.
    #[serde(default)]
    pub cni: Option<CniArgsSection>,
}

/// `args.cni` keys this plugin accepts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CniArgsSection {
    /// VF PCI address.
    #[serde(rename = "deviceID", default)]
    pub device_id: Option<PciAddress>,
    /// MAC for the pod interface.
    #[serde(default)]
    pub mac: Option<MacAddr>,
    /// Static addresses, for the IPAM plugin.
    #[serde(default)]
    pub ips: Option<Value>,
}

/// One `cni.dev/valid-attachments` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachmentRef {
    /// Container ID.
    #[serde(rename = "containerID")]
    pub container_id: String,
    /// Interface name.
    pub ifname: String,
}

/// Log verbosity: the node settings' type, so both files accept the same words.
pub use spinel_node::cni_settings::LogLevel;

/// A configuration as read from stdin: the typed view and the original JSON (which is what the
/// IPAM delegate and the journal get).
#[derive(Debug, Clone)]
pub struct Config {
    /// Typed, validated view.
    pub conf: NetConf,
    /// The JSON exactly as received.
    pub raw: Value,
}

fn invalid(msg: impl Into<String>) -> CniError {
    CniError::new(ErrorCode::InvalidConfig, msg)
}

/// True for a name that may be used as a plugin file name on `CNI_PATH`.
pub fn is_valid_plugin_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

impl Config {
    /// Parses and validates stdin. Codes: 6 for JSON that does not decode, 1 for an
    /// unsupported version, 7 for everything else.
    pub fn parse(bytes: &[u8]) -> Result<Self, CniError> {
        if bytes.len() > MAX_CONFIG_BYTES {
            return Err(invalid(format!(
                "network configuration is larger than {MAX_CONFIG_BYTES} bytes"
            )));
        }
        let raw: Value = serde_json::from_slice(bytes).map_err(|e| {
            CniError::new(
                ErrorCode::Decode,
                format!("network configuration is not valid JSON: {e}"),
            )
        })?;
        if !raw.is_object() {
            return Err(CniError::new(
                ErrorCode::Decode,
                "network configuration must be a JSON object",
            ));
        }
        match raw.get("cniVersion") {
            Some(Value::String(v)) if Version::parse(v).is_none() => {
                return Err(CniError::new(
                    ErrorCode::IncompatibleVersion,
                    format!(
                        "cniVersion {v:?} is not supported (supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0)"
                    ),
                ));
            }
            None => return Err(invalid("cniVersion: missing")),
            _ => {}
        }
        // The path names the field in every error ("trust: invalid type ...").
        let conf: NetConf = serde_path_to_error::deserialize(&raw).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." {
                invalid(format!("network configuration: {inner}"))
            } else {
                invalid(format!("{path}: {inner}"))
            }
        })?;
        conf.validate()?;
        if let Some(prev) = &conf.prev_result {
            // A struct would also deserialize from a JSON array; a result is an object.
            let decoded = if prev.is_object() {
                CniResult::from_json(prev)
                    .map(drop)
                    .map_err(|e| e.to_string())
            } else {
                Err("a result is a JSON object".to_owned())
            };
            if let Err(e) = decoded {
                return Err(CniError::new(
                    ErrorCode::Decode,
                    format!("prevResult does not decode: {e}"),
                ));
            }
        }
        Ok(Self { conf, raw })
    }

    /// The version to answer in.
    pub fn version(&self) -> Version {
        self.conf.cni_version
    }
}

impl NetConf {
    fn validate(&self) -> Result<(), CniError> {
        self.vf_attributes()?;
        self.sysctls.validate()?;
        if self.garp.count > 10
            || self.garp.interval_ms > 60_000
            || self.garp.carrier_timeout_ms > 10_000
        {
            return Err(invalid(
                "garp: count at most 10, intervalMs at most 60000, carrierTimeoutMs at most 10000",
            ));
        }
        if let Some(t) = self.routing.table
            && (t == 0 || (253..=255).contains(&t) || t == u32::MAX)
        {
            return Err(invalid(format!(
                "routing.table: {t} is reserved (0, 253-255 are unspec, default, main, local)"
            )));
        }
        if self.plugin_type != "spinel" {
            return Err(invalid(format!(
                "type: expected \"spinel\", found {:?}",
                self.plugin_type
            )));
        }
        let mut chars = self.name.chars();
        let name_ok = self.name.len() <= 253
            && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !name_ok {
            return Err(invalid(format!(
                "name: {:?} is not a valid network name (alphanumeric first, then alphanumerics, '_', '-', '.')",
                self.name.chars().take(64).collect::<String>()
            )));
        }
        match (&self.pf_name, self.vf_index) {
            (Some(pf), Some(_)) if !is_valid_ifname(pf) => {
                return Err(invalid(format!(
                    "pfName: {pf:?} is not a valid interface name"
                )));
            }
            (Some(_), None) if self.mode == AttachMode::Vf => {
                return Err(invalid("vfIndex: required with pfName"));
            }
            (None, Some(_)) => return Err(invalid("pfName: required with vfIndex")),
            _ => {}
        }
        if let Some(pf) = &self.pf_name
            && !is_valid_ifname(pf)
        {
            return Err(invalid(format!(
                "pfName: {pf:?} is not a valid interface name"
            )));
        }
        if self.mode == AttachMode::Macvlan {
            if self.pf_name.is_none() {
                return Err(invalid(
                    "pfName: macvlan mode needs the PF to put the macvlan on",
                ));
            }
            if self.vf_index.is_some() {
                return Err(invalid("vfIndex: not used in macvlan mode"));
            }
            let vf_only = [
                ("vlan", self.vlan.is_some()),
                ("vlanQoS", self.vlan_qos.is_some()),
                ("vlanProto", self.vlan_proto.is_some()),
                ("spoofchk", self.spoofchk.is_some()),
                ("trust", self.trust.is_some()),
                ("linkState", self.link_state.is_some()),
                ("minTxRate", self.min_tx_rate.is_some()),
                ("maxTxRate", self.max_tx_rate.is_some()),
            ];
            if let Some((field, _)) = vf_only.iter().find(|(_, set)| *set) {
                return Err(invalid(format!(
                    "{field}: a VF attribute, not used in macvlan mode"
                )));
            }
            if self.rdma.netns_mode == NetnsRequirement::Exclusive {
                return Err(invalid(
                    "rdma.netnsMode: macvlan mode shares the PF's RDMA device, it cannot be exclusive",
                ));
            }
        }
        if self.allow_non_rdma_master && self.mode != AttachMode::Macvlan {
            return Err(invalid("allowNonRdmaMaster: only used in macvlan mode"));
        }
        if let Some(i) = self.vf_index
            && i > 4095
        {
            return Err(invalid(format!("vfIndex: {i} is out of range (0-4095)")));
        }
        if let Some(mtu) = self.mtu
            && !(68..=65535).contains(&mtu)
        {
            return Err(invalid(format!("mtu: {mtu} is out of range (68-65535)")));
        }
        for (field, value) in [
            ("mac", self.mac),
            (
                "runtimeConfig.mac",
                self.runtime_config.as_ref().and_then(|r| r.mac),
            ),
            ("args.cni.mac", self.args_cni().and_then(|a| a.mac)),
        ] {
            if let Some(mac) = value
                && !mac.is_valid_unicast()
            {
                return Err(invalid(format!("{field}: {mac} is not a unicast address")));
            }
        }
        if let Some(ipam) = &self.ipam {
            let kind = ipam.get("type").and_then(Value::as_str);
            match kind {
                Some("spinel") => {
                    return Err(invalid(
                        "ipam.type: spinel is not an IPAM plugin; name one (host-local, static, whereabouts, ...)",
                    ));
                }
                Some(k) if is_valid_plugin_name(k) => {}
                Some(k) => {
                    return Err(invalid(format!(
                        "ipam.type: {:?} is not a plugin name",
                        k.chars().take(64).collect::<String>()
                    )));
                }
                None => {
                    return Err(invalid(
                        "ipam.type: missing (an object with a \"type\" is required)",
                    ));
                }
            }
        }
        if let Some(valid) = &self.valid_attachments {
            for a in valid {
                if !crate::spec::env::is_valid_container_id(&a.container_id)
                    || !is_valid_ifname(&a.ifname)
                {
                    return Err(invalid(format!(
                        "cni.dev/valid-attachments: invalid entry {:?}/{:?}",
                        a.container_id.chars().take(80).collect::<String>(),
                        a.ifname.chars().take(32).collect::<String>()
                    )));
                }
            }
        }
        Ok(())
    }

    /// `args.cni`, when present.
    pub fn args_cni(&self) -> Option<&CniArgsSection> {
        self.args.as_ref().and_then(|a| a.cni.as_ref())
    }

    /// The IPAM plugin's name, when IPAM is configured.
    pub fn ipam_type(&self) -> Option<&str> {
        self.ipam
            .as_ref()
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
    }

    /// The MAC to set: `runtimeConfig.mac` over `args.cni.mac` over `CNI_ARGS` `MAC` over
    /// `mac` (the CNI conventions' precedence, as sriov-cni applies it: what the runtime asks for
    /// per attachment wins over the network's default).
    pub fn requested_mac(&self, cni_args_mac: Option<&str>) -> Result<Option<MacAddr>, CniError> {
        let from_args = self.args_cni().and_then(|a| a.mac);
        let from_cni_args = match cni_args_mac {
            // CNI_ARGS only counts when the configuration carries no `args` section.
            Some(text) if self.args.is_none() => {
                let mac: MacAddr = text
                    .parse()
                    .map_err(|e| invalid(format!("CNI_ARGS MAC: {e}")))?;
                if !mac.is_valid_unicast() {
                    return Err(invalid(format!(
                        "CNI_ARGS MAC: {mac} is not a unicast address"
                    )));
                }
                Some(mac)
            }
            _ => None,
        };
        Ok(self
            .runtime_config
            .as_ref()
            .and_then(|r| r.mac)
            .or(from_args)
            .or(from_cni_args)
            .or(self.mac))
    }
}

/// `on` or `off`, as sriov-cni's configuration spells switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

impl OnOff {
    /// Whether the switch is on.
    pub fn is_on(self) -> bool {
        self == Self::On
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, CniError> {
        Config::parse(s.as_bytes())
    }

    #[test]
    fn minimal_and_full() {
        let c = parse(r#"{"cniVersion":"1.0.0","name":"rail0","type":"spinel","deviceID":"0000:3b:00.2","ipam":{"type":"host-local","subnet":"10.56.0.0/24"}}"#).unwrap();
        assert_eq!(c.conf.ipam_type(), Some("host-local"));
        let c = parse(r#"{"cniVersion":"1.1.0","name":"rail0","type":"spinel","pfName":"ens1f0","vfIndex":3,"mtu":9000,"mac":"02:00:00:00:00:01","capabilities":{"deviceID":true},"runtimeConfig":{"deviceID":"3b:00.2","mac":"02:00:00:00:00:02"},"args":{"cni":{"mac":"02:00:00:00:00:03"}},"logLevel":"debug"}"#).unwrap();
        assert_eq!(
            c.conf
                .requested_mac(Some("02:00:00:00:00:04"))
                .unwrap()
                .unwrap()
                .to_string(),
            "02:00:00:00:00:02"
        );
    }

    /// A NetworkAttachmentDefinition written for sriov-cni (its configuration reference, every
    /// field) works with only `type` changed; its keys are aliases of ours.
    #[test]
    fn sriov_cni_configuration_is_accepted() {
        let c = parse(r#"{"cniVersion":"0.3.1","name":"sriov-net","type":"spinel","deviceID":"0000:03:02.0","mac":"CA:FE:C0:FF:EE:00","vlan":1000,"vlanQoS":4,"vlanProto":"802.1ad","min_tx_rate":100,"max_tx_rate":200,"spoofchk":"off","trust":"on","link_state":"enable","logLevel":"warning","logFile":"/tmp/sriov.log","capabilities":{"mac":true,"ips":true},"ipam":{"type":"host-local","subnet":"10.56.0.0/24"}}"#).unwrap();
        let vf = c.conf.vf_attributes().unwrap();
        assert_eq!((vf.vlan, vf.qos, vf.proto), (1000, 4, VlanProto::Dot1Ad));
        assert_eq!((vf.min_tx_rate, vf.max_tx_rate), (100, 200));
        assert_eq!(vf.link_state, VfLinkMode::Enable);
        assert!(!vf.spoofchk && vf.trust);
        assert_eq!(c.conf.log_level, Some(LogLevel::Warn));
        assert_eq!(c.version(), Version::V0_3_1);
        // Both spellings at once is ambiguous.
        let e = parse(r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","linkState":"auto","link_state":"enable"}"#).unwrap_err();
        assert!(e.msg.contains("duplicate field"), "{e}");
        let c = parse(r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","vlanProto":"802.1q","vlan":5,"logLevel":"panic"}"#).unwrap();
        assert_eq!(c.conf.vf_attributes().unwrap().proto, VlanProto::Dot1Q);
        assert_eq!(c.conf.log_level, Some(LogLevel::Error));
    }

    #[test]
    fn codes_and_field_names() {
        let cases = [
            ("{", ErrorCode::Decode, "JSON"),
            ("[1]", ErrorCode::Decode, "object"),
            (
                r#"{"cniVersion":"0.2.0","name":"n","type":"spinel"}"#,
                ErrorCode::IncompatibleVersion,
                "0.2.0",
            ),
            (
                r#"{"name":"n","type":"spinel"}"#,
                ErrorCode::InvalidConfig,
                "cniVersion",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","vlann":3}"#,
                ErrorCode::InvalidConfig,
                "vlann",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"sriov"}"#,
                ErrorCode::InvalidConfig,
                "type",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"../x","type":"spinel"}"#,
                ErrorCode::InvalidConfig,
                "name",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","deviceID":"../../etc"}"#,
                ErrorCode::InvalidConfig,
                "deviceID",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","mtu":70000}"#,
                ErrorCode::InvalidConfig,
                "mtu",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","mtu":"9000"}"#,
                ErrorCode::InvalidConfig,
                "invalid type",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","mac":"01:00:5e:00:00:01"}"#,
                ErrorCode::InvalidConfig,
                "mac",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","pfName":"ens1f0"}"#,
                ErrorCode::InvalidConfig,
                "vfIndex",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","ipam":{"type":"../../bin/sh"}}"#,
                ErrorCode::InvalidConfig,
                "ipam.type",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","runtimeConfig":{"sysfsRoot":"/tmp"}}"#,
                ErrorCode::InvalidConfig,
                "sysfsRoot",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"n","type":"spinel","stateDir":"/tmp"}"#,
                ErrorCode::InvalidConfig,
                "stateDir",
            ),
        ];
        for (input, code, needle) in cases {
            let err = parse(input).unwrap_err();
            assert_eq!(err.code, code, "{input}: {err}");
            assert!(
                err.msg.contains(needle),
                "{input}: {} does not mention {needle}",
                err.msg
            );
        }
    }
}
