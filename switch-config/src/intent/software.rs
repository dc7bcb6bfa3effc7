//! Switch software releases and what each accepts: the NVUE syntax of a Cumulus Linux release
//! and the queue command of an EOS platform family. A release this crate does not know is
//! refused with the list it does, never rendered as a guess.
//!
//! The table with its sources is in docs/switch-config.md ("Software versions"); every Cumulus
//! release listed is validated against NVIDIA's NVUE schema of that release in the test suite
//! (`switch-config/tests/peers.rs`).

use serde::{Deserialize, Serialize};

use super::{Switch, SwitchOs};

/// Cumulus Linux releases whose NVUE schema the rendered commands are validated against. Before
/// 5.9 NVUE has no per-interface LLDP application TLV; before 5.6 no PFC watchdog.
pub const CUMULUS_RELEASES: [&str; 10] = [
    "5.9", "5.10", "5.11", "5.12", "5.13", "5.14", "5.15", "5.16", "5.17", "5.18",
];

/// EOS release trains the rendered commands are written for (no command rendered here changed
/// between them; the platform family is what changes the syntax).
pub const EOS_RELEASES: [&str; 6] = ["4.30", "4.31", "4.32", "4.33", "4.34", "4.35"];

/// An EOS hardware family: the queue command in a QoS profile differs between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EosPlatform {
    /// Broadcom Trident and Tomahawk switches (7050X, 7060X, 7260X, 7300X, 7358X, 7368X, 7388X):
    /// separate unicast and multicast queues, `uc-tx-queue`.
    Strata,
    /// Broadcom Arad, Jericho and Qumran switches (7020R, 7280R, 7500R, 7800R): virtual output
    /// queues, `tx-queue`.
    Sand,
}

impl EosPlatform {
    /// The queue command inside a `qos profile`.
    pub fn tx_queue(self) -> &'static str {
        match self {
            Self::Strata => "uc-tx-queue",
            Self::Sand => "tx-queue",
        }
    }

    /// The name in the intent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Strata => "strata",
            Self::Sand => "sand",
        }
    }
}

/// The NVUE spelling of the commands whose syntax changed in Cumulus Linux 5.15 (NVIDIA's
/// "New and Changed NVUE Commands" for 5.15: LLDP moved from `service` to `system`, `on|off`
/// became `enabled|disabled`, interface `ip address` became `ipv4 address`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvueSyntax {
    /// Where global LLDP lives: `service` (5.14 and earlier) or `system`.
    pub lldp_root: &'static str,
    /// The value that turns an LLDP TLV on: `on` or `enabled`.
    pub on: &'static str,
    /// The interface's IPv4 container: `ip` or `ipv4`.
    pub ipv4: &'static str,
}

impl NvueSyntax {
    /// Cumulus Linux 5.9 to 5.14.
    pub const V5_9: Self = Self {
        lldp_root: "service",
        on: "on",
        ipv4: "ip",
    };
    /// Cumulus Linux 5.15 and later.
    pub const V5_15: Self = Self {
        lldp_root: "system",
        on: "enabled",
        ipv4: "ipv4",
    };
}

/// A switch's software, resolved from the intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Software {
    /// SONiC: one config_db form (validated against SONiC's YANG models).
    Sonic,
    /// Cumulus Linux 5.`minor`.
    Cumulus {
        /// The minor release (15 for 5.15).
        minor: u8,
    },
    /// Arista EOS.
    Eos {
        /// The minor release of 4.x (33 for 4.33).
        minor: u8,
        /// The hardware family.
        platform: EosPlatform,
    },
}

/// Why a switch's software cannot be told from its intent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SoftwareError {
    /// A version on a SONiC switch (`version` holds it, quoted and cut).
    #[error(
        "version {0}: SONiC is rendered in one config_db form, validated against SONiC's YANG \
         models (docs/switch-config.md); there is no release to choose, remove the version"
    )]
    SonicVersion(String),
    /// No version where the syntax depends on it.
    #[error(
        "{os} renders differently per release: say which one this switch runs (version: one \
         of {known})"
    )]
    NoVersion {
        /// The OS's name.
        os: &'static str,
        /// The releases known, comma-separated.
        known: String,
    },
    /// A release this renderer does not know (`version` quoted and cut).
    #[error("{os} {version} is not a release this renderer knows; known: {known}")]
    UnknownRelease {
        /// The OS's name.
        os: &'static str,
        /// The version written.
        version: String,
        /// The releases known, comma-separated.
        known: String,
    },
    /// A platform family on a switch that is not EOS.
    #[error("platform is for EOS switches only")]
    PlatformNotEos,
    /// An EOS switch without its platform family.
    #[error(
        "EOS needs its platform family (the queue command differs): platform: strata \
         (Trident/Tomahawk: 7050X, 7060X, 7260X, 7300X, 7388X; uc-tx-queue) or sand \
         (Arad/Jericho: 7280R, 7500R, 7800R; tx-queue)"
    )]
    NoEosPlatform,
}

impl SoftwareError {
    /// The intent field at fault: `version` or `platform`.
    pub fn field(&self) -> &'static str {
        match self {
            Self::PlatformNotEos | Self::NoEosPlatform => "platform",
            _ => "version",
        }
    }
}

impl Software {
    /// What `switch` runs, or why it cannot be told.
    pub fn of(switch: &Switch) -> Result<Self, SoftwareError> {
        match switch.os {
            SwitchOs::Sonic => match &switch.version {
                None => Ok(Self::Sonic),
                Some(v) => Err(SoftwareError::SonicVersion(super::cut(v))),
            },
            SwitchOs::Cumulus => {
                let minor = release(switch, 5, &CUMULUS_RELEASES, "Cumulus Linux")?;
                if switch.platform.is_some() {
                    return Err(SoftwareError::PlatformNotEos);
                }
                Ok(Self::Cumulus { minor })
            }
            SwitchOs::Eos => {
                let minor = release(switch, 4, &EOS_RELEASES, "EOS")?;
                let platform = switch.platform.ok_or(SoftwareError::NoEosPlatform)?;
                Ok(Self::Eos { minor, platform })
            }
        }
    }

    /// The NVUE syntax of a Cumulus release.
    pub fn nvue(self) -> Option<NvueSyntax> {
        match self {
            Self::Cumulus { minor } if minor >= 15 => Some(NvueSyntax::V5_15),
            Self::Cumulus { .. } => Some(NvueSyntax::V5_9),
            _ => None,
        }
    }

    /// The EOS platform family.
    pub fn eos_platform(self) -> Option<EosPlatform> {
        match self {
            Self::Eos { platform, .. } => Some(platform),
            _ => None,
        }
    }
}

/// The minor release of `switch.version` (`5.15`, `5.15.1`, `4.33.1F`), when `major` and listed.
fn release(
    switch: &Switch,
    major: u8,
    known: &[&str],
    os: &'static str,
) -> Result<u8, SoftwareError> {
    let list = known.join(", ");
    let Some(version) = &switch.version else {
        return Err(SoftwareError::NoVersion { os, known: list });
    };
    let mut parts = version.split('.');
    let parsed = (parts.next(), parts.next());
    let minor = match parsed {
        (Some(a), Some(b)) if a.parse::<u8>() == Ok(major) => b.parse::<u8>().ok(),
        _ => None,
    };
    match minor {
        Some(m) if known.contains(&format!("{major}.{m}").as_str()) => Ok(m),
        _ => Err(SoftwareError::UnknownRelease {
            os,
            version: super::cut(version),
            known: list,
        }),
    }
}
