//! SR-IOV VF attributes, set and read through the PF (`ip link set PF vf N ...`).
//!
//! The request matches iproute2's byte for byte (see `hostnet/tests/fixtures/vf`): an
//! `RTM_NEWLINK` on the PF holding one `IFLA_VF_INFO` with MAC, VLAN (or VLAN_LIST when the
//! protocol is 802.1ad), SPOOFCHK, TRUST, LINK_STATE and RATE, in that order.

use std::fmt;
use std::str::FromStr;

use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{
    LinkAttribute, LinkExtentMask, LinkMessage, LinkVfInfo, VfInfo, VfInfoLinkState, VfInfoMac,
    VfInfoRate, VfInfoSpoofCheck, VfInfoTrust, VfInfoVlan, VfLinkState, VfVlan, VfVlanInfo,
    VlanProtocol,
};
use serde::{Deserialize, Serialize};

use super::{NetlinkError, RouteSocket};
use spinel_wire::MacAddr;

/// The VLAN tag protocol the PF inserts for the VF, written `802.1Q` or `802.1ad` as iproute2
/// does (read case-insensitively).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VlanProto {
    /// 802.1Q (0x8100), the default.
    #[default]
    Dot1Q,
    /// 802.1ad (0x88a8), QinQ.
    Dot1Ad,
}

impl VlanProto {
    /// The name iproute2 uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dot1Q => "802.1Q",
            Self::Dot1Ad => "802.1ad",
        }
    }
}

/// The VF's link state as the PF reports it to the VF: `auto`, `enable` or `disable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VfLinkMode {
    /// Follow the PF's link (default).
    #[default]
    Auto,
    /// Always up.
    Enable,
    /// Always down.
    Disable,
}

impl VfLinkMode {
    /// The name iproute2 uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Enable => "enable",
            Self::Disable => "disable",
        }
    }
}

/// A name that is not a VLAN protocol or VF link state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} must be {expected}")]
pub struct ParseVfValueError {
    value: String,
    expected: &'static str,
}

impl FromStr for VlanProto {
    type Err = ParseVfValueError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::Dot1Q, Self::Dot1Ad]
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseVfValueError {
                value: s.chars().take(64).collect(),
                expected: "\"802.1Q\" or \"802.1ad\"",
            })
    }
}

impl FromStr for VfLinkMode {
    type Err = ParseVfValueError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::Auto, Self::Enable, Self::Disable]
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| ParseVfValueError {
                value: s.chars().take(64).collect(),
                expected: "\"auto\", \"enable\" or \"disable\"",
            })
    }
}

/// Display, FromStr and serde all use the iproute2 name.
macro_rules! text_value {
    ($t:ty) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
text_value!(VlanProto);
text_value!(VfLinkMode);

/// Every PF-side attribute of one VF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VfSettings {
    /// VF index on the PF.
    pub index: u32,
    /// Administrative MAC.
    pub mac: MacAddr,
    /// Everything else (what a network's configuration decides).
    #[serde(flatten)]
    pub attributes: VfAttributes,
}

/// A VF's PF-side attributes other than its identity (index and MAC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VfAttributes {
    /// VLAN ID inserted by the PF (0: none).
    pub vlan: u16,
    /// 802.1p priority of that VLAN tag.
    pub qos: u8,
    /// Tag protocol.
    pub proto: VlanProto,
    /// MAC/VLAN spoof checking.
    pub spoofchk: bool,
    /// Trusted mode (promiscuous, MAC changes from inside).
    pub trust: bool,
    /// Link state.
    pub link_state: VfLinkMode,
    /// Minimum TX rate, Mbit/s (0: none).
    pub min_tx_rate: u32,
    /// Maximum TX rate, Mbit/s (0: none).
    pub max_tx_rate: u32,
}

impl VfAttributes {
    /// What a PF reports for a VF that never had anything set: no VLAN, spoof checking on,
    /// untrusted, link state auto, no rate limits.
    pub const FACTORY_DEFAULT: Self = Self {
        vlan: 0,
        qos: 0,
        proto: VlanProto::Dot1Q,
        spoofchk: true,
        trust: false,
        link_state: VfLinkMode::Auto,
        min_tx_rate: 0,
        max_tx_rate: 0,
    };

    /// These attributes for VF `index` with administrative MAC `mac`.
    pub fn for_vf(self, index: u32, mac: MacAddr) -> VfSettings {
        VfSettings {
            index,
            mac,
            attributes: self,
        }
    }
}

impl VfSettings {
    /// What a PF reports for VF `index` that never had anything set: no MAC, no VLAN, spoof
    /// checking on, untrusted, link state auto, no rate limits.
    pub fn factory_default(index: u32) -> Self {
        VfAttributes::FACTORY_DEFAULT.for_vf(index, MacAddr([0; 6]))
    }

    /// The request exactly as [`RouteSocket::set_vf`] sends it (sequence number 0), for
    /// recordings and for byte-for-byte comparison with iproute2.
    pub fn request_bytes(&self, pf_index: u32) -> Vec<u8> {
        super::Socket::<RouteNetlinkMessage>::encode(
            self.message(pf_index),
            netlink_packet_core::NLM_F_ACK,
            0,
        )
    }

    /// The `RTM_NEWLINK` request iproute2 sends for the same settings on PF `pf_index`.
    pub fn message(&self, pf_index: u32) -> RouteNetlinkMessage {
        let (i, a) = (self.index, &self.attributes);
        let vlan = match a.proto {
            VlanProto::Dot1Q => VfInfo::Vlan(VfInfoVlan::new(i, a.vlan.into(), a.qos.into())),
            VlanProto::Dot1Ad => VfInfo::VlanList(vec![VfVlan::Info(VfVlanInfo::new(
                i,
                a.vlan.into(),
                a.qos.into(),
                VlanProtocol::Ieee8021Ad,
            ))]),
        };
        let state = match a.link_state {
            VfLinkMode::Auto => VfLinkState::Auto,
            VfLinkMode::Enable => VfLinkState::Enable,
            VfLinkMode::Disable => VfLinkState::Disable,
        };
        let info = LinkVfInfo(vec![
            VfInfo::Mac(VfInfoMac::new(i, &self.mac.octets())),
            vlan,
            VfInfo::SpoofCheck(VfInfoSpoofCheck::new(i, a.spoofchk)),
            VfInfo::Trust(VfInfoTrust::new(i, a.trust)),
            VfInfo::LinkState(VfInfoLinkState::new(i, state)),
            VfInfo::Rate(VfInfoRate::new(i, a.min_tx_rate, a.max_tx_rate)),
        ]);
        let mut msg = LinkMessage::default();
        msg.header.index = pf_index;
        msg.attributes.push(LinkAttribute::VfInfoList(vec![info]));
        RouteNetlinkMessage::NewLink(msg)
    }

    fn from_info(infos: &[VfInfo]) -> Option<Self> {
        // Spoof checking off until the PF says otherwise: a driver that omits the attribute
        // does not check.
        let mut s = VfAttributes {
            spoofchk: false,
            ..VfAttributes::FACTORY_DEFAULT
        }
        .for_vf(u32::MAX, MacAddr([0; 6]));
        for info in infos {
            match info {
                VfInfo::Mac(m) => {
                    s.index = m.vf_id;
                    s.mac = MacAddr::from_slice(&m.mac[..6])?;
                }
                VfInfo::Vlan(v) => {
                    s.attributes.vlan = u16::try_from(v.vlan_id).ok()?;
                    s.attributes.qos = u8::try_from(v.qos).ok()?;
                }
                VfInfo::VlanList(list) => {
                    for entry in list {
                        if let VfVlan::Info(v) = entry {
                            s.attributes.vlan = u16::try_from(v.vlan_id).ok()?;
                            s.attributes.qos = u8::try_from(v.qos).ok()?;
                            if v.protocol == VlanProtocol::Ieee8021Ad {
                                s.attributes.proto = VlanProto::Dot1Ad;
                            }
                        }
                    }
                }
                VfInfo::SpoofCheck(c) => s.attributes.spoofchk = c.enabled,
                VfInfo::Trust(t) => s.attributes.trust = t.enabled,
                VfInfo::LinkState(l) => {
                    s.attributes.link_state = match l.state {
                        VfLinkState::Enable => VfLinkMode::Enable,
                        VfLinkState::Disable => VfLinkMode::Disable,
                        _ => VfLinkMode::Auto,
                    }
                }
                VfInfo::Rate(r) => {
                    s.attributes.min_tx_rate = r.min_tx_rate;
                    s.attributes.max_tx_rate = r.max_tx_rate;
                }
                _ => {}
            }
        }
        (s.index != u32::MAX).then_some(s)
    }
}

/// Renders the settings as `ip link set PF` arguments.
impl fmt::Display for VfSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let on = |b: bool| if b { "on" } else { "off" };
        let a = &self.attributes;
        write!(
            f,
            "vf {} mac {} vlan {} qos {} proto {} spoofchk {} trust {} state {} min_tx_rate {} max_tx_rate {}",
            self.index,
            self.mac,
            a.vlan,
            a.qos,
            a.proto,
            on(a.spoofchk),
            on(a.trust),
            a.link_state,
            a.min_tx_rate,
            a.max_tx_rate
        )
    }
}

impl RouteSocket {
    /// Sets every attribute of one VF in one request (`ip link set PF vf N mac .. vlan .. ...`).
    pub fn set_vf(&mut self, pf_index: u32, settings: &VfSettings) -> Result<(), NetlinkError> {
        let what = format!("ip link set index {pf_index} {settings}");
        self.socket().request(settings.message(pf_index), 0, what)
    }

    /// The attributes of every VF of PF `pf_index`, as the PF reports them (`ip link show PF`).
    pub fn vf_settings(&mut self, pf_index: u32) -> Result<Vec<VfSettings>, NetlinkError> {
        let mut msg = LinkMessage::default();
        msg.header.index = pf_index;
        self.vf_settings_of(msg, format!("ip link show index {pf_index}"))
            .map(|found| found.map(|(_, vfs)| vfs).unwrap_or_default())
    }

    /// The PF named `pf`'s index and the attributes of its VFs, in one request (every request
    /// waits for the kernel's lock while pods' devices move); `None` when there is no such
    /// link.
    pub fn pf_vf_settings(
        &mut self,
        pf: &str,
    ) -> Result<Option<(u32, Vec<VfSettings>)>, NetlinkError> {
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(pf.to_owned()));
        match self.vf_settings_of(msg, format!("ip link show {pf}")) {
            Err(e) if e.kind() == super::NetlinkErrorKind::NoDevice => Ok(None),
            other => other,
        }
    }

    fn vf_settings_of(
        &mut self,
        mut msg: LinkMessage,
        what: String,
    ) -> Result<Option<(u32, Vec<VfSettings>)>, NetlinkError> {
        // Without RTEXT_FILTER_VF the kernel leaves IFLA_VFINFO_LIST out.
        msg.attributes
            .push(LinkAttribute::ExtMask(vec![LinkExtentMask::Vf]));
        let replies = self.socket().get(RouteNetlinkMessage::GetLink(msg), what)?;
        let mut found = None;
        let mut out = Vec::new();
        for reply in replies {
            let RouteNetlinkMessage::NewLink(link) = reply else {
                continue;
            };
            found = Some(link.header.index);
            for attr in link.attributes {
                if let LinkAttribute::VfInfoList(list) = attr {
                    out.extend(
                        list.iter()
                            .filter_map(|LinkVfInfo(infos)| VfSettings::from_info(infos)),
                    );
                }
            }
        }
        Ok(found.map(|index| (index, out)))
    }
}

#[cfg(test)]
mod tests {
    use netlink_packet_core::NLM_F_ACK;

    use super::*;
    use crate::netlink::Socket;

    /// The fixtures: `ip link set PF <args>` and iproute2's request, captured with strace.
    const FIXTURES: &str = include_str!("../../tests/fixtures/vf/ip-link-set-vf.txt");

    fn fixture(args: &str) -> Vec<u8> {
        let line = FIXTURES
            .lines()
            .find(|l| l.split('\t').next() == Some(args))
            .expect("fixture exists");
        let hex = line.split('\t').nth(1).expect("hex");
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// iproute2's request for a full `vf` command, with our encoder's sequence number and the
    /// same PF index, must equal ours exactly.
    fn assert_same_as_iproute2(args: &str, settings: VfSettings) {
        let theirs = fixture(args);
        let seq = u32::from_le_bytes(theirs[8..12].try_into().unwrap());
        let pf_index = u32::from_le_bytes(theirs[20..24].try_into().unwrap());
        let ours =
            Socket::<RouteNetlinkMessage>::encode(settings.message(pf_index), NLM_F_ACK, seq);
        assert_eq!(hex(&ours), hex(&theirs), "ip link set PF {args}");
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn full_vf_requests_are_byte_for_byte_iproute2s() {
        let mac = "02:11:22:33:44:55".parse().unwrap();
        assert_same_as_iproute2(
            "vf 3 mac 02:11:22:33:44:55 vlan 100 qos 5 proto 802.1ad spoofchk off trust on state enable min_tx_rate 100 max_tx_rate 2000",
            VfAttributes {
                vlan: 100,
                qos: 5,
                proto: VlanProto::Dot1Ad,
                spoofchk: false,
                trust: true,
                link_state: VfLinkMode::Enable,
                min_tx_rate: 100,
                max_tx_rate: 2000,
            }
            .for_vf(3, mac),
        );
        assert_same_as_iproute2(
            "vf 7 mac 02:00:00:00:00:01 vlan 0 qos 0 proto 802.1Q spoofchk on trust off state auto min_tx_rate 0 max_tx_rate 0",
            VfSettings {
                mac: "02:00:00:00:00:01".parse().unwrap(),
                ..VfSettings::factory_default(7)
            },
        );
    }

    #[test]
    fn every_attribute_is_encoded_as_iproute2_does_on_its_own() {
        // Each single-attribute fixture's VF_INFO payload must appear inside our full request.
        let settings = VfSettings {
            index: 3,
            mac: "02:11:22:33:44:55".parse().unwrap(),
            attributes: VfAttributes {
                vlan: 100,
                qos: 5,
                proto: VlanProto::Dot1Q,
                spoofchk: true,
                trust: true,
                link_state: VfLinkMode::Disable,
                min_tx_rate: 100,
                max_tx_rate: 2000,
            },
        };
        let ours = hex(&Socket::<RouteNetlinkMessage>::encode(
            settings.message(13),
            NLM_F_ACK,
            1,
        ));
        for args in [
            "vf 3 mac 02:11:22:33:44:55",
            "vf 3 vlan 100 qos 5",
            "vf 3 spoofchk on",
            "vf 3 trust on",
            "vf 3 state disable",
            "vf 3 min_tx_rate 100 max_tx_rate 2000",
        ] {
            // Skip nlmsghdr, ifinfomsg and the two nest headers (VFINFO_LIST, VF_INFO).
            let attr = hex(&fixture(args)[40..]);
            assert!(ours.contains(&attr), "{args}: {attr} not in {ours}");
        }
    }

    #[test]
    fn settings_are_written_flat_as_journals_hold_them() {
        let s = VfSettings::factory_default(4);
        let v = serde_json::to_value(s).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"index": 4, "mac": "00:00:00:00:00:00", "vlan": 0, "qos": 0,
                "proto": "802.1Q", "spoofchk": true, "trust": false, "linkState": "auto",
                "minTxRate": 0, "maxTxRate": 0})
        );
        assert_eq!(serde_json::from_value::<VfSettings>(v).unwrap(), s);
    }

    #[test]
    fn settings_read_back_from_the_kernels_format() {
        let s = VfSettings {
            index: 2,
            mac: "02:00:00:00:00:09".parse().unwrap(),
            attributes: VfAttributes {
                vlan: 4094,
                qos: 7,
                proto: VlanProto::Dot1Ad,
                spoofchk: true,
                trust: false,
                link_state: VfLinkMode::Enable,
                min_tx_rate: 10,
                max_tx_rate: 100,
            },
        };
        let RouteNetlinkMessage::NewLink(msg) = s.message(5) else {
            unreachable!()
        };
        let LinkAttribute::VfInfoList(list) = &msg.attributes[0] else {
            unreachable!()
        };
        assert_eq!(VfSettings::from_info(&list[0].0), Some(s));
    }
}

#[cfg(test)]
mod names {
    use super::*;

    #[test]
    fn one_spelling_for_text_serde_and_display() {
        assert_eq!("802.1AD".parse::<VlanProto>(), Ok(VlanProto::Dot1Ad));
        assert_eq!(VlanProto::Dot1Q.to_string(), "802.1Q");
        assert!("qinq".parse::<VlanProto>().is_err());
        assert_eq!("enable".parse::<VfLinkMode>(), Ok(VfLinkMode::Enable));
        assert!("up".parse::<VfLinkMode>().is_err());
        let s = VfSettings::factory_default(3);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""proto":"802.1Q""#), "{json}");
        assert!(json.contains(r#""linkState":"auto""#), "{json}");
        assert_eq!(serde_json::from_str::<VfSettings>(&json).unwrap(), s);
        assert!(
            s.to_string()
                .contains("proto 802.1Q spoofchk on trust off state auto")
        );
    }
}
