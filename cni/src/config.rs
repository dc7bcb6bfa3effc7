//! The network configuration (`NetConf`): parsed strictly and validated before anything
//! changes. Unknown or malformed fields are refused with code 7 and the field's name.

use std::collections::BTreeMap;

use hostnet::mac::MacAddr;
use hostnet::netlink::{VfLinkMode, VfSettings, VlanProto};
use hostnet::sriov::{PciAddress, is_valid_ifname};
use serde::Deserialize;
use serde_json::Value;

use crate::spec::{CniError, ErrorCode, Version};

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
    pub device_id: Option<String>,
    /// Same as `deviceID`; Multus injects both.
    #[serde(rename = "pciBusID", default)]
    pub pci_bus_id: Option<String>,
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
    pub mac: Option<String>,
    /// VLAN the PF inserts for the VF (0-4094; 0: none).
    #[serde(default)]
    pub vlan: Option<u16>,
    /// 802.1p priority of that VLAN (0-7); needs `vlan`.
    #[serde(rename = "vlanQoS", default)]
    pub vlan_qos: Option<u8>,
    /// `802.1Q` or `802.1ad`; needs `vlan`.
    #[serde(default)]
    pub vlan_proto: Option<String>,
    /// MAC/VLAN spoof checking, `on` or `off` (default `on`).
    #[serde(default)]
    pub spoofchk: Option<String>,
    /// Trusted VF, `on` or `off` (default `off`).
    #[serde(default)]
    pub trust: Option<String>,
    /// VF link state: `auto`, `enable` or `disable` (default `auto`).
    #[serde(default)]
    pub link_state: Option<String>,
    /// Minimum TX rate in Mbit/s (default 0: none).
    #[serde(default)]
    pub min_tx_rate: Option<u32>,
    /// Maximum TX rate in Mbit/s (default 0: none).
    #[serde(default)]
    pub max_tx_rate: Option<u32>,
    /// `vf` (default): move the VF's netdev into the pod. `macvlan`: create a macvlan on
    /// `pfName` inside the pod and share the PF's RDMA device.
    #[serde(default)]
    pub mode: AttachMode,
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
    /// GC: the attachments that must be kept.
    #[serde(rename = "cni.dev/valid-attachments", default)]
    pub valid_attachments: Option<Vec<AttachmentRef>>,
}

/// Per-interface sysctls set inside the pod before the interface comes up. The defaults are
/// what multi-NIC RoCE hosts need (research: IBM, Red Hat, libfabric): answer ARP only for
/// the interface's own address, announce with it, loose reverse-path filtering, and announce
/// the interface on link-up.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Sysctls {
    /// `net.ipv4.conf.<if>.arp_ignore` (0-3 or 8).
    pub arp_ignore: u8,
    /// `net.ipv4.conf.<if>.arp_announce` (0-2).
    pub arp_announce: u8,
    /// `net.ipv4.conf.<if>.rp_filter` (0-2).
    pub rp_filter: u8,
    /// `net.ipv4.conf.<if>.arp_notify` (0-1).
    pub arp_notify: u8,
    /// `net.ipv6.conf.<if>.ndisc_notify` (0-1).
    pub ndisc_notify: u8,
}

impl Default for Sysctls {
    fn default() -> Self {
        Self {
            arp_ignore: 1,
            arp_announce: 2,
            rp_filter: 2,
            arp_notify: 1,
            ndisc_notify: 1,
        }
    }
}

impl Sysctls {
    fn validate(&self) -> Result<(), CniError> {
        for (field, value, ok) in [
            (
                "sysctls.arpIgnore",
                self.arp_ignore,
                self.arp_ignore <= 3 || self.arp_ignore == 8,
            ),
            (
                "sysctls.arpAnnounce",
                self.arp_announce,
                self.arp_announce <= 2,
            ),
            ("sysctls.rpFilter", self.rp_filter, self.rp_filter <= 2),
            ("sysctls.arpNotify", self.arp_notify, self.arp_notify <= 1),
            (
                "sysctls.ndiscNotify",
                self.ndisc_notify,
                self.ndisc_notify <= 1,
            ),
        ] {
            if !ok {
                return Err(invalid(format!(
                    "{field}: {value} is not a value the kernel accepts"
                )));
            }
        }
        Ok(())
    }
}

/// Per-NIC policy routing: a table per RoCE interface holding its connected route, its
/// gateway route and the IPAM routes, and a rule sending traffic from its addresses there, so
/// each rail's traffic leaves through its own NIC.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Routing {
    /// Turn it off for single-NIC pods that do not need it.
    pub enabled: bool,
    /// Table id; derived from the interface name when unset (see [`table_for`]).
    pub table: Option<u32>,
    /// Preference of the `from <address>` rules.
    pub rule_priority: u32,
    /// Add a default route through the IPAM gateway to the table.
    pub default_route: bool,
}

impl Default for Routing {
    fn default() -> Self {
        Self {
            enabled: true,
            table: None,
            rule_priority: 1000,
            default_route: true,
        }
    }
}

/// The table of interface `ifname`: 100 + N for names ending in a number N (`net1` → 101,
/// `rail7` → 107, like Spiderpool's 101, 102, ... for net1, net2), otherwise 1000 plus the
/// FNV-1a hash of the name modulo 1000. Deterministic, so DEL and CHECK find it again.
pub fn table_for(ifname: &str) -> u32 {
    let digits: String = ifname
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    if let Some(n) = digits
        .chars()
        .rev()
        .collect::<String>()
        .parse::<u32>()
        .ok()
        .filter(|n| *n < 900)
    {
        return 100 + n;
    }
    let mut hash: u32 = 0x811c_9dc5;
    for b in ifname.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    1000 + hash % 1000
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

/// Announcing the pod's addresses so neighbours holding a reused IP's old MAC update at once.
/// ADD sends a round (every address, ARP request and reply forms, NA for IPv6) when the link
/// has carrier and another once routes and rules are in place; `count - 1` more rounds follow
/// every `intervalMs` from a detached helper, spaced past the receivers' ARP locktime (1 s on
/// Linux), so ADD itself waits at most `carrierTimeoutMs` for carrier.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Garp {
    /// Rounds at `intervalMs` spacing (0 turns announcing off).
    pub count: u32,
    /// Spacing of the rounds after ADD.
    pub interval_ms: u64,
    /// How long ADD waits for carrier before its first round.
    pub carrier_timeout_ms: u64,
}

impl Default for Garp {
    fn default() -> Self {
        Self {
            count: 3,
            interval_ms: 1100,
            carrier_timeout_ms: 500,
        }
    }
}

/// What the network needs of the RDMA subsystem.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Rdma {
    /// The RDMA namespace mode the network requires: `any` (default), `exclusive` (the pod
    /// gets its own RDMA device, moved into its namespace) or `shared`.
    pub netns_mode: NetnsRequirement,
    /// Whether ADD must find the interface's RoCE v2 GID (`required`, the default when the
    /// VF has an RDMA device), only report it when found (`optional`), or skip it (`off`).
    pub gid: GidPolicy,
    /// How long ADD waits for the kernel to add the GID after the address.
    pub gid_timeout_ms: u64,
}

impl Default for Rdma {
    fn default() -> Self {
        Self {
            netns_mode: NetnsRequirement::Any,
            gid: GidPolicy::Required,
            gid_timeout_ms: 3000,
        }
    }
}

/// `rdma.netnsMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetnsRequirement {
    /// Whatever the node runs.
    Any,
    /// Each pod owns its RDMA device.
    Exclusive,
    /// RDMA devices stay in the host namespace, visible to every pod.
    Shared,
}

/// `rdma.gid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GidPolicy {
    /// ADD fails (code 11) when the GID does not appear in time.
    Required,
    /// The GID is reported when found.
    Optional,
    /// No GID lookup.
    Off,
}

/// `runtimeConfig` keys this plugin accepts (the capabilities it can declare).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// Capability `deviceID`.
    #[serde(rename = "deviceID", default)]
    pub device_id: Option<String>,
    /// Capability `mac`.
    #[serde(default)]
    pub mac: Option<String>,
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
    pub device_id: Option<String>,
    /// MAC for the pod interface.
    #[serde(default)]
    pub mac: Option<String>,
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

/// Log verbosity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// Progress of each attachment.
    Info,
    /// Every kernel operation.
    Debug,
}

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
                    format!("cniVersion {v:?} is not supported (supported: 0.4.0, 1.0.0, 1.1.0)"),
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
        Ok(Self { conf, raw })
    }

    /// The version to answer in.
    pub fn version(&self) -> Version {
        self.conf.cni_version
    }
}

/// The PF-side VF attributes a configuration asks for, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VfAttributes {
    /// VLAN (0: none).
    pub vlan: u16,
    /// VLAN priority.
    pub qos: u8,
    /// Tag protocol.
    pub proto: VlanProto,
    /// Spoof checking.
    pub spoofchk: bool,
    /// Trusted mode.
    pub trust: bool,
    /// Link state.
    pub link_state: VfLinkMode,
    /// Minimum TX rate, Mbit/s.
    pub min_tx_rate: u32,
    /// Maximum TX rate, Mbit/s.
    pub max_tx_rate: u32,
}

impl VfAttributes {
    /// The complete settings for VF `index` with administrative MAC `mac`.
    pub fn settings(&self, index: u32, mac: MacAddr) -> VfSettings {
        VfSettings {
            index,
            mac,
            vlan: self.vlan,
            qos: self.qos,
            proto: self.proto,
            spoofchk: self.spoofchk,
            trust: self.trust,
            link_state: self.link_state,
            min_tx_rate: self.min_tx_rate,
            max_tx_rate: self.max_tx_rate,
        }
    }
}

fn on_off(field: &str, value: Option<&str>, default: bool) -> Result<bool, CniError> {
    match value {
        None => Ok(default),
        Some("on") => Ok(true),
        Some("off") => Ok(false),
        Some(other) => Err(invalid(format!(
            "{field}: {other:?} must be \"on\" or \"off\""
        ))),
    }
}

impl NetConf {
    /// The PF-side attributes to set on every ADD: what the configuration asks for, and the
    /// defaults for everything it leaves out, so nothing a previous pod left behind survives.
    pub fn vf_attributes(&self) -> Result<VfAttributes, CniError> {
        if self.vlan.is_none() {
            if self.vlan_qos.is_some() {
                return Err(invalid("vlanQoS: needs vlan"));
            }
            if self.vlan_proto.is_some() {
                return Err(invalid("vlanProto: needs vlan"));
            }
        }
        let vlan = self.vlan.unwrap_or(0);
        if vlan > 4094 {
            return Err(invalid(format!("vlan: {vlan} is out of range (0-4094)")));
        }
        let qos = self.vlan_qos.unwrap_or(0);
        if qos > 7 {
            return Err(invalid(format!("vlanQoS: {qos} is out of range (0-7)")));
        }
        if qos != 0 && vlan == 0 {
            return Err(invalid("vlanQoS: a priority needs a VLAN other than 0"));
        }
        let proto = match self
            .vlan_proto
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("802.1q") => VlanProto::Dot1Q,
            Some("802.1ad") if vlan == 0 => {
                return Err(invalid("vlanProto: 802.1ad needs a VLAN other than 0"));
            }
            Some("802.1ad") => VlanProto::Dot1Ad,
            Some(_) => {
                return Err(invalid(format!(
                    "vlanProto: {:?} must be \"802.1Q\" or \"802.1ad\"",
                    self.vlan_proto.as_deref().unwrap_or_default()
                )));
            }
        };
        let link_state = match self.link_state.as_deref() {
            None | Some("auto") => VfLinkMode::Auto,
            Some("enable") => VfLinkMode::Enable,
            Some("disable") => VfLinkMode::Disable,
            Some(other) => {
                return Err(invalid(format!(
                    "linkState: {other:?} must be \"auto\", \"enable\" or \"disable\""
                )));
            }
        };
        let min_tx_rate = self.min_tx_rate.unwrap_or(0);
        let max_tx_rate = self.max_tx_rate.unwrap_or(0);
        if max_tx_rate != 0 && min_tx_rate > max_tx_rate {
            return Err(invalid(format!(
                "minTxRate: {min_tx_rate} exceeds maxTxRate {max_tx_rate}"
            )));
        }
        Ok(VfAttributes {
            vlan,
            qos,
            proto,
            spoofchk: on_off("spoofchk", self.spoofchk.as_deref(), true)?,
            trust: on_off("trust", self.trust.as_deref(), false)?,
            link_state,
            min_tx_rate,
            max_tx_rate,
        })
    }

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
        for (field, value) in [
            ("deviceID", &self.device_id),
            ("pciBusID", &self.pci_bus_id),
            (
                "runtimeConfig.deviceID",
                &self
                    .runtime_config
                    .as_ref()
                    .and_then(|r| r.device_id.clone()),
            ),
            (
                "args.cni.deviceID",
                &self.args_cni().and_then(|a| a.device_id.clone()),
            ),
        ] {
            if let Some(v) = value {
                v.parse::<PciAddress>()
                    .map_err(|e| invalid(format!("{field}: {e}")))?;
            }
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
            ("mac", self.mac.as_deref()),
            (
                "runtimeConfig.mac",
                self.runtime_config.as_ref().and_then(|r| r.mac.as_deref()),
            ),
            (
                "args.cni.mac",
                self.args_cni().and_then(|a| a.mac.as_deref()),
            ),
        ] {
            if let Some(v) = value {
                let mac: MacAddr = v.parse().map_err(|e| invalid(format!("{field}: {e}")))?;
                if !mac.is_valid_unicast() {
                    return Err(invalid(format!("{field}: {mac} is not a unicast address")));
                }
            }
        }
        if let Some(ipam) = &self.ipam {
            let kind = ipam.get("type").and_then(Value::as_str);
            match kind {
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
    /// `mac` (the CNI conventions' precedence).
    pub fn requested_mac(&self, cni_args_mac: Option<&str>) -> Result<Option<MacAddr>, CniError> {
        let from_args = self.args_cni().and_then(|a| a.mac.as_deref());
        let chosen = self
            .runtime_config
            .as_ref()
            .and_then(|r| r.mac.as_deref())
            .or(from_args)
            .or(if self.args.is_some() {
                None
            } else {
                cni_args_mac
            })
            .or(self.mac.as_deref());
        match chosen {
            Some(text) => {
                let mac: MacAddr = text.parse().map_err(|e| invalid(format!("MAC: {e}")))?;
                if !mac.is_valid_unicast() {
                    return Err(invalid(format!("MAC: {mac} is not a unicast address")));
                }
                Ok(Some(mac))
            }
            None => Ok(None),
        }
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

    #[test]
    fn vf_attributes_default_and_validate() {
        let base = r#""cniVersion":"1.0.0","name":"n","type":"spinel""#;
        let a = parse(&format!("{{{base}}}"))
            .unwrap()
            .conf
            .vf_attributes()
            .unwrap();
        assert_eq!(
            (a.vlan, a.qos, a.proto, a.spoofchk, a.trust),
            (0, 0, VlanProto::Dot1Q, true, false)
        );
        assert_eq!(
            (a.link_state, a.min_tx_rate, a.max_tx_rate),
            (VfLinkMode::Auto, 0, 0)
        );
        let a = parse(&format!(
            r#"{{{base},"vlan":100,"vlanQoS":3,"vlanProto":"802.1AD","spoofchk":"off","trust":"on","linkState":"enable","minTxRate":10,"maxTxRate":100}}"#
        ))
        .unwrap()
        .conf
        .vf_attributes()
        .unwrap();
        assert_eq!(
            (a.vlan, a.qos, a.proto, a.spoofchk, a.trust),
            (100, 3, VlanProto::Dot1Ad, false, true)
        );
        for (extra, field) in [
            (r#""vlan":4095"#, "vlan"),
            (r#""vlanQoS":1"#, "vlanQoS"),
            (r#""vlanProto":"802.1Q""#, "vlanProto"),
            (r#""vlan":0,"vlanQoS":2"#, "vlanQoS"),
            (r#""vlan":5,"vlanQoS":8"#, "vlanQoS"),
            (r#""vlan":0,"vlanProto":"802.1ad""#, "vlanProto"),
            (r#""vlan":5,"vlanProto":"qinq""#, "vlanProto"),
            (r#""spoofchk":"yes""#, "spoofchk"),
            (r#""trust":true"#, "trust"),
            (r#""linkState":"up""#, "linkState"),
            (r#""minTxRate":100,"maxTxRate":10"#, "minTxRate"),
            (r#""vlan":-1"#, "vlan"),
        ] {
            let err = parse(&format!("{{{base},{extra}}}")).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidConfig, "{extra}");
            assert!(err.msg.contains(field), "{extra}: {}", err.msg);
        }
    }

    #[test]
    fn routing_tables_are_deterministic() {
        assert_eq!(table_for("net1"), 101);
        assert_eq!(table_for("rail12"), 112);
        let t = table_for("roce");
        assert!((1000..2000).contains(&t));
        assert_eq!(t, table_for("roce"));
        assert_ne!(table_for("roce"), table_for("rocf"));
        let base = r#""cniVersion":"1.0.0","name":"n","type":"spinel""#;
        for bad in [
            r#""routing":{"table":254}"#,
            r#""sysctls":{"arpIgnore":5}"#,
            r#""sysctls":{"bogus":1}"#,
        ] {
            assert_eq!(
                parse(&format!("{{{base},{bad}}}")).unwrap_err().code,
                ErrorCode::InvalidConfig,
                "{bad}"
            );
        }
    }

    #[test]
    fn codes_and_field_names() {
        let cases = [
            ("{", ErrorCode::Decode, "JSON"),
            ("[1]", ErrorCode::Decode, "object"),
            (
                r#"{"cniVersion":"0.3.1","name":"n","type":"spinel"}"#,
                ErrorCode::IncompatibleVersion,
                "0.3.1",
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
