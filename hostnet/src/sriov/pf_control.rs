//! Setting and reading a VF's attributes through its PF (`ip link set PF vf N ...`), behind one
//! seam with two implementations:
//!
//! - [`PfControl::Kernel`] sends the requests to the kernel (production);
//! - [`PfControl::Recorded`] is a dry-run aid for nodes whose kernel has no SR-IOV (labs, CI):
//!   it takes the very same encoded requests, appends them to a file and keeps the VF state a PF
//!   would report in another, so everything else runs for real.
//!
//! Each attribute ([`VfAttribute`]) that differs from what the PF reports goes in a request of
//! its own, byte for byte what `ip link set PF vf N <that attribute>` sends. The kernel applies
//! a multi-attribute request in a fixed order and stops at the first one the driver refuses,
//! leaving the earlier ones applied; PF drivers implement different subsets (igb has no link
//! state at all and refuses even `state auto`), so one request per attribute is what lets a
//! VF be configured on every driver that implements what the network asks for, and lets a
//! refusal name the attribute.
//!
//! Which implementation a program uses is the node operator's choice (the CNI reads it from its
//! root-owned node settings); nothing a pod sends can select it.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{LinkAttribute, LinkVfInfo, VfInfo};

use crate::netlink::{NetlinkError, RouteSocket, Socket, VfSettings, VlanProto};

/// How VF attributes reach a PF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PfControl {
    /// Through the kernel.
    Kernel,
    /// Recorded in this directory instead (no kernel here implements VF attributes).
    Recorded(PathBuf),
}

/// One attribute of a VF as `ip link set PF vf N` sets it; each is a request of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VfAttribute {
    /// The administrative MAC (`mac`).
    Mac,
    /// VLAN, QoS and tag protocol (`vlan .. qos .. proto ..`).
    Vlan,
    /// Minimum and maximum TX rate (`min_tx_rate .. max_tx_rate ..`).
    Rate,
    /// MAC/VLAN spoof checking (`spoofchk`).
    SpoofCheck,
    /// The VF's link state (`state`).
    LinkState,
    /// Trusted mode (`trust`).
    Trust,
}

impl VfAttribute {
    /// Every attribute, in the order the kernel applies them within one request.
    pub const ALL: [Self; 6] = [
        Self::Mac,
        Self::Vlan,
        Self::Rate,
        Self::SpoofCheck,
        Self::LinkState,
        Self::Trust,
    ];

    /// The network configuration's name for it (rates are `minTxRate`/`maxTxRate`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Mac => "mac",
            Self::Vlan => "vlan",
            Self::Rate => "rate",
            Self::SpoofCheck => "spoofchk",
            Self::LinkState => "linkState",
            Self::Trust => "trust",
        }
    }

    /// Whether `a` and `b` differ in this attribute.
    pub fn differs(self, a: &VfSettings, b: &VfSettings) -> bool {
        let (x, y) = (&a.attributes, &b.attributes);
        match self {
            Self::Mac => a.mac != b.mac,
            Self::Vlan => (x.vlan, x.qos, x.proto) != (y.vlan, y.qos, y.proto),
            Self::Rate => (x.min_tx_rate, x.max_tx_rate) != (y.min_tx_rate, y.max_tx_rate),
            Self::SpoofCheck => x.spoofchk != y.spoofchk,
            Self::LinkState => x.link_state != y.link_state,
            Self::Trust => x.trust != y.trust,
        }
    }

    /// Copies this attribute from `from` into `to`.
    fn copy(self, from: &VfSettings, to: &mut VfSettings) {
        let (f, t) = (&from.attributes, &mut to.attributes);
        match self {
            Self::Mac => to.mac = from.mac,
            Self::Vlan => (t.vlan, t.qos, t.proto) = (f.vlan, f.qos, f.proto),
            Self::Rate => (t.min_tx_rate, t.max_tx_rate) = (f.min_tx_rate, f.max_tx_rate),
            Self::SpoofCheck => t.spoofchk = f.spoofchk,
            Self::LinkState => t.link_state = f.link_state,
            Self::Trust => t.trust = f.trust,
        }
    }

    /// The `ip link set PF` arguments that set this attribute to its value in `s`.
    pub fn args(self, s: &VfSettings) -> String {
        let on = |b: bool| if b { "on" } else { "off" };
        let a = &s.attributes;
        let value = match self {
            Self::Mac => format!("mac {}", s.mac),
            Self::Vlan if a.proto == VlanProto::Dot1Q => format!("vlan {} qos {}", a.vlan, a.qos),
            Self::Vlan => format!("vlan {} qos {} proto {}", a.vlan, a.qos, a.proto),
            Self::Rate => format!(
                "min_tx_rate {} max_tx_rate {}",
                a.min_tx_rate, a.max_tx_rate
            ),
            Self::SpoofCheck => format!("spoofchk {}", on(a.spoofchk)),
            Self::LinkState => format!("state {}", a.link_state),
            Self::Trust => format!("trust {}", on(a.trust)),
        };
        format!("vf {} {value}", s.index)
    }

    fn carries(self, info: &VfInfo) -> bool {
        matches!(
            (self, info),
            (Self::Mac, VfInfo::Mac(_))
                | (Self::Vlan, VfInfo::Vlan(_) | VfInfo::VlanList(_))
                | (Self::Rate, VfInfo::Rate(_))
                | (Self::SpoofCheck, VfInfo::SpoofCheck(_))
                | (Self::LinkState, VfInfo::LinkState(_))
                | (Self::Trust, VfInfo::Trust(_))
        )
    }

    /// The request iproute2 sends for [`VfAttribute::args`] on PF `pf_index`: the full request
    /// of [`VfSettings::message`] with only this attribute left in its `IFLA_VF_INFO`.
    pub fn message(self, s: &VfSettings, pf_index: u32) -> RouteNetlinkMessage {
        let mut message = s.message(pf_index);
        if let RouteNetlinkMessage::NewLink(link) = &mut message {
            for attr in &mut link.attributes {
                if let LinkAttribute::VfInfoList(list) = attr {
                    for LinkVfInfo(infos) in list {
                        infos.retain(|i| self.carries(i));
                    }
                }
            }
        }
        message
    }

    /// [`VfAttribute::message`] encoded as sent (sequence number 0), for recordings and
    /// byte-for-byte comparison with iproute2.
    pub fn request_bytes(self, s: &VfSettings, pf_index: u32) -> Vec<u8> {
        Socket::<RouteNetlinkMessage>::encode(
            self.message(s, pf_index),
            netlink_packet_core::NLM_F_ACK,
            0,
        )
    }
}

impl fmt::Display for VfAttribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One attribute a PF did not take.
#[derive(Debug)]
pub struct Refusal {
    /// The attribute.
    pub attribute: VfAttribute,
    /// The kernel's answer (the request is in its `what`).
    pub error: NetlinkError,
}

impl Refusal {
    /// True when the driver answered that it does not implement the attribute or the value
    /// (`EOPNOTSUPP`, `EPROTONOSUPPORT`, `EINVAL`, `ERANGE`): asking again will not help; every
    /// other answer (`EBUSY`, `EAGAIN`, a socket error) may be transient.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self.error.errno(),
            Some(libc::EOPNOTSUPP | libc::EPROTONOSUPPORT | libc::EINVAL | libc::ERANGE)
        )
    }
}

/// Setting or reading VF attributes failed.
#[derive(Debug, thiserror::Error)]
pub enum PfControlError {
    /// The PF's netdev is not in the namespace the socket looks at.
    #[error("PF {0} has no network interface in the host namespace")]
    NoPf(String),
    /// The PF does not report the VF.
    #[error("PF {pf} does not report VF {index}")]
    NoVf {
        /// PF name.
        pf: String,
        /// VF index.
        index: u32,
    },
    /// The PF refused some attributes; every other differing attribute was still sent.
    #[error("PF {pf} refused VF {index} {}", refusals.iter().map(|r| format!("{} ({})", r.attribute, r.error)).collect::<Vec<_>>().join(", "))]
    Refused {
        /// PF name.
        pf: String,
        /// VF index.
        index: u32,
        /// Each attribute it refused, with the kernel's answer.
        refusals: Vec<Refusal>,
    },
    /// Reading the PF failed.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
    /// The recording's files failed.
    #[error("VF request recording at {path}: {reason}")]
    Recording {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

impl PfControl {
    fn pf_index(host: &mut RouteSocket, pf: &str) -> Result<u32, PfControlError> {
        Ok(host
            .link_by_name(pf)?
            .ok_or_else(|| PfControlError::NoPf(pf.to_owned()))?
            .index)
    }

    /// The attributes of VF `index` of `pf` as the PF reports them.
    pub fn read(
        &self,
        host: &mut RouteSocket,
        pf: &str,
        index: u32,
    ) -> Result<VfSettings, PfControlError> {
        self.locate(host, pf, index).map(|(_, now)| now)
    }

    /// The PF's index and what it reports for VF `index` (one request to the kernel).
    fn locate(
        &self,
        host: &mut RouteSocket,
        pf: &str,
        index: u32,
    ) -> Result<(u32, VfSettings), PfControlError> {
        match self {
            Self::Kernel => {
                let (pf_index, vfs) = host
                    .pf_vf_settings(pf)?
                    .ok_or_else(|| PfControlError::NoPf(pf.to_owned()))?;
                let now = vfs.into_iter().find(|s| s.index == index).ok_or_else(|| {
                    PfControlError::NoVf {
                        pf: pf.to_owned(),
                        index,
                    }
                })?;
                Ok((pf_index, now))
            }
            Self::Recorded(dir) => {
                let pf_index = Self::pf_index(host, pf)?;
                let now = Recording::open(dir, pf)?
                    .state()?
                    .get(&index)
                    .copied()
                    .unwrap_or_else(|| VfSettings::factory_default(index));
                Ok((pf_index, now))
            }
        }
    }

    /// Brings VF `settings.index` of `pf` to `settings`: every attribute that differs from what
    /// the PF reports now is sent in a request of its own, in the kernel's order. Every one is
    /// tried; the ones the PF refused are returned together. Returns what was sent.
    pub fn apply(
        &self,
        host: &mut RouteSocket,
        pf: &str,
        settings: &VfSettings,
    ) -> Result<Vec<VfAttribute>, PfControlError> {
        let (pf_index, now) = self.locate(host, pf, settings.index)?;
        let changed: Vec<VfAttribute> = VfAttribute::ALL
            .into_iter()
            .filter(|a| a.differs(settings, &now))
            .collect();
        let mut refusals = Vec::new();
        let recording = match self {
            Self::Kernel => None,
            Self::Recorded(dir) => Some(Recording::open(dir, pf)?),
        };
        for attribute in &changed {
            let sent = match &recording {
                None => host.socket().request(
                    attribute.message(settings, pf_index),
                    0,
                    format!("ip link set index {pf_index} {}", attribute.args(settings)),
                ),
                Some(r) => r.apply(pf_index, *attribute, settings)?,
            };
            if let Err(error) = sent {
                refusals.push(Refusal {
                    attribute: *attribute,
                    error,
                });
            }
        }
        if refusals.is_empty() {
            Ok(changed)
        } else {
            Err(PfControlError::Refused {
                pf: pf.to_owned(),
                index: settings.index,
                refusals,
            })
        }
    }
}

/// The recording's files for one PF: `<pf>.requests` (one line per request: the encoded bytes
/// in hex, a tab, the `ip link set` arguments), `<pf>.state.json` (what the PF would report),
/// `<pf>.ignore` (attribute names, as [`VfAttribute::name`], this PF silently does not apply)
/// and `<pf>.refuse` (names it answers with `EOPNOTSUPP`, as igb does for `linkState`), to
/// emulate hardware that does not take them. A lock file serialises writers.
struct Recording {
    requests: PathBuf,
    state: PathBuf,
    ignore: PathBuf,
    refuse: PathBuf,
    _lock: fs::File,
}

fn recording_error(path: &Path, reason: impl ToString) -> PfControlError {
    PfControlError::Recording {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

impl Recording {
    fn open(dir: &Path, pf: &str) -> Result<Self, PfControlError> {
        if !crate::sriov::is_valid_ifname(pf) {
            return Err(recording_error(dir, format!("{pf:?} is not a PF name")));
        }
        fs::create_dir_all(dir).map_err(|e| recording_error(dir, e))?;
        let lock_path = dir.join(format!("{pf}.lock"));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| recording_error(&lock_path, e))?;
        lock.lock().map_err(|e| recording_error(&lock_path, e))?;
        Ok(Self {
            requests: dir.join(format!("{pf}.requests")),
            state: dir.join(format!("{pf}.state.json")),
            ignore: dir.join(format!("{pf}.ignore")),
            refuse: dir.join(format!("{pf}.refuse")),
            _lock: lock,
        })
    }

    fn state(&self) -> Result<BTreeMap<u32, VfSettings>, PfControlError> {
        match fs::read(&self.state) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| recording_error(&self.state, e))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(recording_error(&self.state, e)),
        }
    }

    /// Records one attribute's request and applies it to the state, as a PF would: answers
    /// `EOPNOTSUPP` for an attribute listed in `<pf>.refuse`, and silently keeps the old value
    /// for one listed in `<pf>.ignore`. (Its outer error is the recording's own failure.)
    fn apply(
        &self,
        pf_index: u32,
        attribute: VfAttribute,
        settings: &VfSettings,
    ) -> Result<Result<(), NetlinkError>, PfControlError> {
        let hex: String = attribute
            .request_bytes(settings, pf_index)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let args = attribute.args(settings);
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.requests)
            .map_err(|e| recording_error(&self.requests, e))?;
        writeln!(log, "{hex}\t{args}").map_err(|e| recording_error(&self.requests, e))?;

        let listed = |path: &Path| {
            fs::read_to_string(path)
                .unwrap_or_default()
                .split_whitespace()
                .any(|w| w == attribute.name())
        };
        if listed(&self.refuse) {
            return Ok(Err(NetlinkError {
                what: format!("ip link set index {pf_index} {args}"),
                source: io::Error::from_raw_os_error(libc::EOPNOTSUPP),
                kernel_message: None,
            }));
        }
        let mut state = self.state()?;
        let mut new = state
            .get(&settings.index)
            .copied()
            .unwrap_or_else(|| VfSettings::factory_default(settings.index));
        if !listed(&self.ignore) {
            attribute.copy(settings, &mut new);
        }
        state.insert(settings.index, new);
        let json =
            serde_json::to_vec_pretty(&state).map_err(|e| recording_error(&self.state, e))?;
        let tmp = self.state.with_extension("json.tmp");
        fs::write(&tmp, json).map_err(|e| recording_error(&tmp, e))?;
        fs::rename(&tmp, &self.state).map_err(|e| recording_error(&self.state, e))?;
        Ok(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::netlink::{VfAttributes, VfLinkMode};

    /// `ip link set PF <args>` and iproute2's request, captured with strace.
    const FIXTURES: &str = include_str!("../../tests/fixtures/vf/ip-link-set-vf.txt");

    fn fixture(args: &str) -> Vec<u8> {
        let line = FIXTURES
            .lines()
            .find(|l| l.split('\t').next() == Some(args))
            .unwrap_or_else(|| panic!("no fixture for {args:?}"));
        let hex = line.split('\t').nth(1).expect("hex");
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn settings(
        proto: VlanProto,
        link_state: VfLinkMode,
        spoofchk: bool,
        trust: bool,
    ) -> VfSettings {
        VfSettings {
            index: 3,
            mac: "02:11:22:33:44:55".parse().unwrap(),
            attributes: VfAttributes {
                vlan: 100,
                qos: 5,
                proto,
                spoofchk,
                trust,
                link_state,
                min_tx_rate: 100,
                max_tx_rate: 2000,
            },
        }
    }

    #[test]
    fn each_attribute_alone_is_byte_for_byte_iproute2s_request() {
        let cases = [
            (
                VfAttribute::Mac,
                settings(VlanProto::Dot1Q, VfLinkMode::Auto, true, true),
            ),
            (
                VfAttribute::Vlan,
                settings(VlanProto::Dot1Q, VfLinkMode::Auto, true, true),
            ),
            (
                VfAttribute::Vlan,
                settings(VlanProto::Dot1Ad, VfLinkMode::Auto, true, true),
            ),
            (
                VfAttribute::Rate,
                settings(VlanProto::Dot1Q, VfLinkMode::Auto, true, true),
            ),
            (
                VfAttribute::SpoofCheck,
                settings(VlanProto::Dot1Q, VfLinkMode::Auto, true, true),
            ),
            (
                VfAttribute::SpoofCheck,
                settings(VlanProto::Dot1Q, VfLinkMode::Auto, false, true),
            ),
            (
                VfAttribute::Trust,
                settings(VlanProto::Dot1Q, VfLinkMode::Auto, true, true),
            ),
            (
                VfAttribute::Trust,
                settings(VlanProto::Dot1Q, VfLinkMode::Auto, true, false),
            ),
            (
                VfAttribute::LinkState,
                settings(VlanProto::Dot1Q, VfLinkMode::Auto, true, true),
            ),
            (
                VfAttribute::LinkState,
                settings(VlanProto::Dot1Q, VfLinkMode::Enable, true, true),
            ),
            (
                VfAttribute::LinkState,
                settings(VlanProto::Dot1Q, VfLinkMode::Disable, true, true),
            ),
        ];
        for (attribute, s) in cases {
            let args = attribute.args(&s);
            let theirs = fixture(&args);
            let seq = u32::from_le_bytes(theirs[8..12].try_into().unwrap());
            let pf_index = u32::from_le_bytes(theirs[20..24].try_into().unwrap());
            let ours = Socket::<RouteNetlinkMessage>::encode(
                attribute.message(&s, pf_index),
                netlink_packet_core::NLM_F_ACK,
                seq,
            );
            assert_eq!(ours, theirs, "ip link set PF {args}");
        }
    }

    #[test]
    fn only_differing_attributes_are_named_and_copied() {
        let base = VfSettings::factory_default(1);
        let mut want = base;
        want.attributes.vlan = 7;
        want.attributes.trust = true;
        let differing: Vec<_> = VfAttribute::ALL
            .into_iter()
            .filter(|a| a.differs(&want, &base))
            .collect();
        assert_eq!(differing, [VfAttribute::Vlan, VfAttribute::Trust]);
        let mut copy = base;
        for a in differing {
            a.copy(&want, &mut copy);
        }
        assert_eq!(copy, want);
        assert_eq!(VfAttribute::Vlan.args(&want), "vf 1 vlan 7 qos 0");
    }

    #[test]
    fn the_recording_refuses_and_ignores_as_told() {
        let dir = std::env::temp_dir().join(format!("spinel-pfc-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("pf0.refuse"), "linkState\n").unwrap();
        fs::write(dir.join("pf0.ignore"), "trust\n").unwrap();
        let r = Recording::open(&dir, "pf0").unwrap();
        let mut want = VfSettings::factory_default(0);
        want.attributes.link_state = VfLinkMode::Enable;
        want.attributes.trust = true;
        want.attributes.vlan = 9;
        let refused = r.apply(4, VfAttribute::LinkState, &want).unwrap();
        assert!(refused.unwrap_err().is(libc::EOPNOTSUPP));
        r.apply(4, VfAttribute::Trust, &want).unwrap().unwrap();
        r.apply(4, VfAttribute::Vlan, &want).unwrap().unwrap();
        let state = r.state().unwrap()[&0];
        assert_eq!(
            (
                state.attributes.vlan,
                state.attributes.trust,
                state.attributes.link_state
            ),
            (9, false, VfLinkMode::Auto)
        );
        let log = fs::read_to_string(dir.join("pf0.requests")).unwrap();
        assert_eq!(log.lines().count(), 3, "{log}");
        assert!(log.ends_with("\tvf 0 vlan 9 qos 0\n"), "{log}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
