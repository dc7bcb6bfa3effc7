//! DCB netlink (dcbnl) constants, the IEEE 802.1Qaz structures and the attributes.
//!
//! Values and layouts from the kernel's uapi `linux/dcbnl.h` (the enums there are ABI).
//! Structures are packed by hand with the C layout's natural alignment: `struct ieee_pfc` has a
//! pad byte before `delay` and two before the counters (136 bytes), `struct ieee_ets` has none
//! (59 bytes).

use netlink_packet_core::{
    DecodeError, DefaultNla, Emitable, NLA_F_NESTED, Nla, NlaBuffer, NlasIterator, Parseable,
    parse_string, parse_u8,
};

/// `RTM_GETDCB`.
pub const RTM_GETDCB: u16 = 78;
/// `RTM_SETDCB`.
pub const RTM_SETDCB: u16 = 79;

/// `DCB_CMD_GSTATE`: is DCB on for the device (CEE-era state).
pub const DCB_CMD_GSTATE: u8 = 1;
/// `DCB_CMD_IEEE_SET`: set ETS, PFC, APP entries (`dcb ets|pfc set`, `dcb app add`).
pub const DCB_CMD_IEEE_SET: u8 = 20;
/// `DCB_CMD_IEEE_GET`: everything IEEE in one reply (every `dcb ... show`).
pub const DCB_CMD_IEEE_GET: u8 = 21;
/// `DCB_CMD_GDCBX`: the DCBX mode.
pub const DCB_CMD_GDCBX: u8 = 22;
/// `DCB_CMD_SDCBX`: set the DCBX mode (`dcb dcbx set`).
pub const DCB_CMD_SDCBX: u8 = 23;
/// `DCB_CMD_IEEE_DEL`: delete APP entries (`dcb app del`).
pub const DCB_CMD_IEEE_DEL: u8 = 27;

const ATTR_IFNAME: u16 = 1;
const ATTR_STATE: u16 = 2;
const ATTR_IEEE: u16 = 13;
const ATTR_DCBX: u16 = 14;

const IEEE_ETS: u16 = 1;
const IEEE_PFC: u16 = 2;
const IEEE_APP_TABLE: u16 = 3;
const IEEE_PEER_ETS: u16 = 4;
const IEEE_PEER_PFC: u16 = 5;
const IEEE_MAXRATE: u16 = 7;
const IEEE_APP_TRUST_TABLE: u16 = 11;

/// `DCB_ATTR_IEEE_APP`: an APP entry with an IEEE selector (1-5).
const APP_IEEE: u16 = 1;
/// `DCB_ATTR_DCB_APP`: an APP entry with a non-IEEE selector (PCP, 255).
const APP_DCB: u16 = 2;

/// `IEEE_8021QAZ_APP_SEL_DSCP`.
pub const APP_SEL_DSCP: u8 = 5;
/// `IEEE_8021QAZ_APP_SEL_DGRAM`: UDP/DCCP port (RoCE v2 is 4791).
pub const APP_SEL_DGRAM: u8 = 3;
/// `DCB_APP_SEL_PCP`.
pub const APP_SEL_PCP: u8 = 255;

/// `DCB_CAP_DCBX_HOST`: the host's own agent (not the firmware) runs DCBX.
pub const DCBX_HOST: u8 = 0x01;
/// `DCB_CAP_DCBX_LLD_MANAGED`: the firmware's agent runs DCBX and may apply peer settings.
pub const DCBX_LLD_MANAGED: u8 = 0x02;
/// `DCB_CAP_DCBX_VER_CEE`.
pub const DCBX_VER_CEE: u8 = 0x04;
/// `DCB_CAP_DCBX_VER_IEEE`.
pub const DCBX_VER_IEEE: u8 = 0x08;
/// `DCB_CAP_DCBX_STATIC`: no DCBX negotiation.
pub const DCBX_STATIC: u8 = 0x10;

/// `struct ieee_ets`: 802.1Qaz ETS configuration and recommendation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IeeeEts {
    /// Willing bit: accept the peer's configuration.
    pub willing: u8,
    /// Traffic classes supported.
    pub ets_cap: u8,
    /// Credit-based shaper.
    pub cbs: u8,
    /// Transmit bandwidth percent per traffic class.
    pub tc_tx_bw: [u8; 8],
    /// Receive bandwidth percent per traffic class.
    pub tc_rx_bw: [u8; 8],
    /// Transmission selection algorithm per traffic class (0 strict, 1 CBS, 2 ETS, 255 vendor).
    pub tc_tsa: [u8; 8],
    /// Traffic class of each priority.
    pub prio_tc: [u8; 8],
    /// Recommended bandwidth.
    pub tc_reco_bw: [u8; 8],
    /// Recommended TSA.
    pub tc_reco_tsa: [u8; 8],
    /// Recommended priority → TC map.
    pub reco_prio_tc: [u8; 8],
}

/// Size of `struct ieee_ets`.
pub const IEEE_ETS_LEN: usize = 59;

impl IeeeEts {
    fn emit(&self, b: &mut [u8]) {
        if b.len() < IEEE_ETS_LEN {
            return;
        }
        b[0] = self.willing;
        b[1] = self.ets_cap;
        b[2] = self.cbs;
        let arrays = [
            &self.tc_tx_bw,
            &self.tc_rx_bw,
            &self.tc_tsa,
            &self.prio_tc,
            &self.tc_reco_bw,
            &self.tc_reco_tsa,
            &self.reco_prio_tc,
        ];
        for (i, a) in arrays.into_iter().enumerate() {
            b[3 + 8 * i..11 + 8 * i].copy_from_slice(a);
        }
    }

    fn parse(b: &[u8]) -> Result<Self, DecodeError> {
        if b.len() < IEEE_ETS_LEN {
            return Err(DecodeError::from(format!(
                "DCB_ATTR_IEEE_ETS: {} bytes, struct ieee_ets is {IEEE_ETS_LEN}",
                b.len()
            )));
        }
        let arr = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[3 + 8 * i..11 + 8 * i]);
            a
        };
        Ok(Self {
            willing: b[0],
            ets_cap: b[1],
            cbs: b[2],
            tc_tx_bw: arr(0),
            tc_rx_bw: arr(1),
            tc_tsa: arr(2),
            prio_tc: arr(3),
            tc_reco_bw: arr(4),
            tc_reco_tsa: arr(5),
            reco_prio_tc: arr(6),
        })
    }
}

/// `struct ieee_pfc`: PFC configuration and per-priority pause counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IeeePfc {
    /// Priorities that can have PFC at once.
    pub pfc_cap: u8,
    /// Bitmap of PFC-enabled priorities (bit p = priority p).
    pub pfc_en: u8,
    /// MACsec bypass capability.
    pub mbc: u8,
    /// Allowance for the PFC response, bit times.
    pub delay: u16,
    /// PFC frames sent, per priority.
    pub requests: [u64; 8],
    /// PFC frames received, per priority.
    pub indications: [u64; 8],
}

/// Size of `struct ieee_pfc` (with its padding).
pub const IEEE_PFC_LEN: usize = 136;

impl IeeePfc {
    /// The PFC-enabled priorities, ascending.
    pub fn enabled(&self) -> Vec<u8> {
        (0..8).filter(|p| self.pfc_en & (1 << p) != 0).collect()
    }

    /// The bitmap of `priorities` (values above 7 are ignored).
    pub fn bitmap(priorities: &[u8]) -> u8 {
        priorities
            .iter()
            .filter(|p| **p < 8)
            .fold(0, |m, p| m | (1 << p))
    }

    fn emit(&self, b: &mut [u8]) {
        if b.len() < IEEE_PFC_LEN {
            return;
        }
        b[..8].fill(0);
        b[0] = self.pfc_cap;
        b[1] = self.pfc_en;
        b[2] = self.mbc;
        b[4..6].copy_from_slice(&self.delay.to_ne_bytes());
        for (i, v) in self.requests.iter().chain(&self.indications).enumerate() {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_ne_bytes());
        }
    }

    fn parse(b: &[u8]) -> Result<Self, DecodeError> {
        if b.len() < IEEE_PFC_LEN {
            return Err(DecodeError::from(format!(
                "DCB_ATTR_IEEE_PFC: {} bytes, struct ieee_pfc is {IEEE_PFC_LEN}",
                b.len()
            )));
        }
        let counter = |i: usize| {
            let mut v = [0u8; 8];
            v.copy_from_slice(&b[8 + 8 * i..16 + 8 * i]);
            u64::from_ne_bytes(v)
        };
        let mut requests = [0u64; 8];
        let mut indications = [0u64; 8];
        for i in 0..8 {
            requests[i] = counter(i);
            indications[i] = counter(8 + i);
        }
        Ok(Self {
            pfc_cap: b[0],
            pfc_en: b[1],
            mbc: b[2],
            delay: u16::from_ne_bytes([b[4], b[5]]),
            requests,
            indications,
        })
    }
}

/// `struct dcb_app`: one APP table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DcbApp {
    /// Selector (5 DSCP, 3 UDP port, 255 PCP, ...).
    pub selector: u8,
    /// Priority.
    pub priority: u8,
    /// DSCP value, port, ethertype or PCP.
    pub protocol: u16,
}

impl DcbApp {
    /// A DSCP → priority entry (what `dcb app add dev X dscp-prio D:P` adds).
    pub fn dscp(dscp: u8, priority: u8) -> Self {
        Self {
            selector: APP_SEL_DSCP,
            priority,
            protocol: u16::from(dscp),
        }
    }

    fn emit(&self, b: &mut [u8]) {
        if b.len() >= 4 {
            b[0] = self.selector;
            b[1] = self.priority;
            b[2..4].copy_from_slice(&self.protocol.to_ne_bytes());
        }
    }

    fn parse(b: &[u8]) -> Result<Self, DecodeError> {
        match b {
            [selector, priority, p0, p1, ..] => Ok(Self {
                selector: *selector,
                priority: *priority,
                protocol: u16::from_ne_bytes([*p0, *p1]),
            }),
            _ => Err(DecodeError::from("APP entry shorter than struct dcb_app")),
        }
    }

    /// The attribute type the kernel files it under (`dcbnl_app_attr_type_get`).
    fn attr_kind(&self) -> u16 {
        if (1..=5).contains(&self.selector) {
            APP_IEEE
        } else {
            APP_DCB
        }
    }
}

/// A top-level dcbnl attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DcbAttribute {
    /// `DCB_ATTR_IFNAME`: the device (NUL-terminated).
    IfName(String),
    /// `DCB_ATTR_STATE` (u8): DCB on or off (GSTATE reply).
    State(u8),
    /// `DCB_ATTR_IEEE`, nested: the IEEE objects.
    Ieee(Vec<IeeeAttribute>),
    /// `DCB_ATTR_IEEE` as a u8: the driver's status in the reply to a set (0 = done).
    IeeeStatus(u8),
    /// `DCB_ATTR_DCBX` (u8): DCBX mode flags.
    Dcbx(u8),
    /// Anything else, kept as received.
    Other(DefaultNla),
}

/// An attribute nested in `DCB_ATTR_IEEE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IeeeAttribute {
    /// `DCB_ATTR_IEEE_ETS`.
    Ets(IeeeEts),
    /// `DCB_ATTR_IEEE_PFC`.
    Pfc(IeeePfc),
    /// `DCB_ATTR_IEEE_APP_TABLE`, nested APP entries.
    AppTable(Vec<DcbApp>),
    /// `DCB_ATTR_IEEE_PEER_ETS`: what the peer advertised (firmware DCBX agents).
    PeerEts(IeeeEts),
    /// `DCB_ATTR_IEEE_PEER_PFC`.
    PeerPfc(IeeePfc),
    /// `DCB_ATTR_IEEE_MAXRATE`: per-TC rate limits, bits/s.
    MaxRate([u64; 8]),
    /// `DCB_ATTR_DCB_APP_TRUST_TABLE`: trusted selectors, most trusted first (kernel 6.3+).
    TrustTable(Vec<u8>),
    /// Anything else, kept as received.
    Other(DefaultNla),
}

impl Nla for DcbAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::IfName(s) => s.len() + 1,
            Self::State(_) | Self::IeeeStatus(_) | Self::Dcbx(_) => 1,
            Self::Ieee(attrs) => attrs.as_slice().buffer_len(),
            Self::Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::IfName(_) => ATTR_IFNAME,
            Self::State(_) => ATTR_STATE,
            // iproute2 marks the nests it sends (mnl_attr_nest_start); the kernel does not.
            Self::Ieee(_) => ATTR_IEEE | NLA_F_NESTED,
            Self::IeeeStatus(_) => ATTR_IEEE,
            Self::Dcbx(_) => ATTR_DCBX,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::IfName(s) => {
                let n = s.len().min(buffer.len());
                buffer[..n].copy_from_slice(&s.as_bytes()[..n]);
                if let Some(nul) = buffer.get_mut(n) {
                    *nul = 0;
                }
            }
            Self::State(v) | Self::IeeeStatus(v) | Self::Dcbx(v) => {
                if let Some(b) = buffer.first_mut() {
                    *b = *v;
                }
            }
            Self::Ieee(attrs) => attrs.as_slice().emit(buffer),
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl Nla for IeeeAttribute {
    fn value_len(&self) -> usize {
        match self {
            Self::Ets(_) | Self::PeerEts(_) => IEEE_ETS_LEN,
            Self::Pfc(_) | Self::PeerPfc(_) => IEEE_PFC_LEN,
            Self::AppTable(apps) => apps.len() * 8,
            Self::MaxRate(_) => 64,
            Self::TrustTable(sel) => sel.len() * 8,
            Self::Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            Self::Ets(_) => IEEE_ETS,
            Self::Pfc(_) => IEEE_PFC,
            Self::AppTable(_) => IEEE_APP_TABLE | NLA_F_NESTED,
            Self::PeerEts(_) => IEEE_PEER_ETS,
            Self::PeerPfc(_) => IEEE_PEER_PFC,
            Self::MaxRate(_) => IEEE_MAXRATE,
            Self::TrustTable(_) => IEEE_APP_TRUST_TABLE | NLA_F_NESTED,
            Self::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            Self::Ets(e) | Self::PeerEts(e) => e.emit(buffer),
            Self::Pfc(p) | Self::PeerPfc(p) => p.emit(buffer),
            Self::AppTable(apps) => {
                // Each entry: a 4-byte attribute header and struct dcb_app.
                for (i, app) in apps.iter().enumerate() {
                    let Some(chunk) = buffer.get_mut(8 * i..8 * i + 8) else {
                        return;
                    };
                    chunk[..2].copy_from_slice(&8u16.to_ne_bytes());
                    chunk[2..4].copy_from_slice(&app.attr_kind().to_ne_bytes());
                    app.emit(&mut chunk[4..]);
                }
            }
            Self::MaxRate(rates) => {
                for (i, r) in rates.iter().enumerate() {
                    if let Some(chunk) = buffer.get_mut(8 * i..8 * i + 8) {
                        chunk.copy_from_slice(&r.to_ne_bytes());
                    }
                }
            }
            Self::TrustTable(selectors) => {
                for (i, sel) in selectors.iter().enumerate() {
                    let Some(chunk) = buffer.get_mut(8 * i..8 * i + 8) else {
                        return;
                    };
                    let kind = DcbApp {
                        selector: *sel,
                        priority: 0,
                        protocol: 0,
                    }
                    .attr_kind();
                    chunk[..2].copy_from_slice(&5u16.to_ne_bytes());
                    chunk[2..4].copy_from_slice(&kind.to_ne_bytes());
                    chunk[4] = *sel;
                    chunk[5..].fill(0);
                }
            }
            Self::Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for DcbAttribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let v = buf.value();
        Ok(match buf.kind() {
            ATTR_IFNAME => Self::IfName(parse_string(v)?),
            ATTR_STATE => Self::State(parse_u8(v)?),
            // A set's reply carries a u8 status here; a get's reply the nested objects.
            ATTR_IEEE if v.len() == 1 => Self::IeeeStatus(v[0]),
            ATTR_IEEE => Self::Ieee(nested(v, IeeeAttribute::parse_one)?),
            ATTR_DCBX => Self::Dcbx(parse_u8(v)?),
            _ => Self::Other(DefaultNla::parse(buf)?),
        })
    }
}

fn nested<A>(
    v: &[u8],
    parse: impl Fn(&NlaBuffer<&[u8]>) -> Result<A, DecodeError>,
) -> Result<Vec<A>, DecodeError> {
    NlasIterator::new(v).map(|nla| parse(&nla?)).collect()
}

impl IeeeAttribute {
    fn parse_one(buf: &NlaBuffer<&[u8]>) -> Result<Self, DecodeError> {
        let v = buf.value();
        Ok(match buf.kind() {
            IEEE_ETS => Self::Ets(IeeeEts::parse(v)?),
            IEEE_PFC => Self::Pfc(IeeePfc::parse(v)?),
            IEEE_PEER_ETS => Self::PeerEts(IeeeEts::parse(v)?),
            IEEE_PEER_PFC => Self::PeerPfc(IeeePfc::parse(v)?),
            IEEE_APP_TABLE => Self::AppTable(nested(v, |a| match a.kind() {
                APP_IEEE | APP_DCB => DcbApp::parse(a.value()),
                other => Err(DecodeError::from(format!(
                    "APP table entry of attribute type {other}"
                ))),
            })?),
            IEEE_MAXRATE if v.len() >= 64 => {
                let mut rates = [0u64; 8];
                for (i, r) in rates.iter_mut().enumerate() {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&v[8 * i..8 * i + 8]);
                    *r = u64::from_ne_bytes(b);
                }
                Self::MaxRate(rates)
            }
            IEEE_APP_TRUST_TABLE => Self::TrustTable(nested(v, |a| parse_u8(a.value()))?),
            _ => Self::Other(DefaultNla::parse(buf)?),
        })
    }
}
