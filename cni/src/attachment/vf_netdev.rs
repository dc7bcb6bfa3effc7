//! Moving a VF's netdev into a pod and giving it back.
//!
//! The kernel applies a move-and-rename in two steps and can fail between them (see
//! `hostnet::netlink::LinkChange`), so a VF always travels under a name unique to it
//! ([`travel_name`]) and takes its final name in a separate step that can be undone. Before it
//! leaves the host it is marked with an alias naming its PCI address ([`marker`]); the alias
//! survives namespace moves and the kernel's return of devices from dying namespaces (as
//! `devN`), which is how a VF is found again after a crash.

use std::os::fd::AsFd;

use hostnet::netlink::{Link, LinkChange, NetlinkError, NetlinkErrorKind, RouteSocket};
use hostnet::netns::NetNs;
use hostnet::sriov::{PciAddress, Sysfs};
use spinel_wire::MacAddr;

use crate::journal::VfRecord;

/// The alias a VF carries while Spinel has it.
pub fn marker(pci: &PciAddress) -> String {
    format!("spinel:vf:{pci}")
}

/// The VF's name while moving between namespaces: `spl` + 8 hex digits of its PCI address's
/// FNV-1a hash, unique per VF and never a name a runtime or udev would pick.
pub fn travel_name(pci: &PciAddress) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for b in pci.as_str().bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("spl{hash:08x}")
}

/// Why moving a VF in failed.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The VF's netdev is not in the host namespace under the name sysfs gives.
    #[error("VF {pci}: network interface {name:?} not found in the host namespace")]
    NotInHost {
        /// The VF.
        pci: PciAddress,
        /// The expected name.
        name: String,
    },
    /// The pod already has an interface with the requested name.
    #[error("interface {0:?} already exists in the pod's network namespace")]
    NameTaken(String),
    /// A netlink request failed.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
}

/// What was asked of the pod-side interface.
#[derive(Debug, Clone, Copy)]
pub struct PodLinkSettings<'a> {
    /// Final name (`CNI_IFNAME`).
    pub ifname: &'a str,
    /// MAC to set, if any.
    pub mac: Option<MacAddr>,
    /// MTU to set, if any.
    pub mtu: Option<u32>,
}

/// Moves the VF described by `vf` into `pod`, still down and under its travel name: the
/// per-interface settings are made there, and [`bring_up`] gives it its final name as it
/// brings it up, in one request (every request after a move waits for the kernel's lock behind
/// every other pod's move, so each one saved counts when a job's pods start together).
pub fn move_in(
    host: &mut RouteSocket,
    pod_ns: &NetNs,
    pod: &mut RouteSocket,
    vf: &VfRecord,
) -> Result<Link, AttachError> {
    let travel = travel_name(&vf.pci);
    let link = host
        .link_by_name(&vf.host_name)?
        .ok_or_else(|| AttachError::NotInHost {
            pci: vf.pci.clone(),
            name: vf.host_name.clone(),
        })?;
    host.set_link(
        link.index,
        &LinkChange::new().up(false).alias(marker(&vf.pci)),
    )?;
    host.set_link(
        link.index,
        &LinkChange::new().netns(pod_ns.as_fd()).name(&travel),
    )?;
    pod.link_by_name(&travel)?
        .ok_or_else(|| AttachError::NotInHost {
            pci: vf.pci.clone(),
            name: travel.clone(),
        })
}

/// Gives the VF's netdev `mac` while it is still in the host (before the PF pins it as the
/// administrative MAC); nothing is sent when it has it already.
pub fn set_host_mac(
    host: &mut RouteSocket,
    vf: &VfRecord,
    mac: MacAddr,
) -> Result<(), AttachError> {
    let link = host
        .link_by_name(&vf.host_name)?
        .ok_or_else(|| AttachError::NotInHost {
            pci: vf.pci.clone(),
            name: vf.host_name.clone(),
        })?;
    if link.mac != Some(mac) {
        host.set_link(link.index, &LinkChange::new().mac(mac))?;
    }
    Ok(())
}

/// Gives the pod interface its final name, MAC and MTU (when asked) and brings it up, in one
/// request.
pub fn bring_up(
    pod: &mut RouteSocket,
    link: &Link,
    want: PodLinkSettings<'_>,
) -> Result<Link, AttachError> {
    let mut change = LinkChange::new().up(true);
    if link.name != want.ifname {
        change = change.name(want.ifname);
    }
    // Only a change: a VF driver may refuse even its own MAC once the PF pins it.
    if let Some(mac) = want.mac.filter(|m| link.mac != Some(*m)) {
        change = change.mac(mac);
    }
    if let Some(mtu) = want.mtu {
        change = change.mtu(mtu);
    }
    match pod.set_link(link.index, &change) {
        Ok(()) => {}
        Err(e) if e.kind() == NetlinkErrorKind::AlreadyExists && link.name != want.ifname => {
            return Err(AttachError::NameTaken(want.ifname.to_owned()));
        }
        Err(e) => return Err(e.into()),
    }
    Ok(pod
        .link_by_index(link.index)?
        .unwrap_or_else(|| link.clone()))
}

/// Where [`bring_home`] found the VF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// In the pod; moved back.
    InPod,
    /// Already in the host (never moved, or returned by the kernel when the pod died).
    InHost,
    /// Nowhere: the netdev is gone (VF disabled or driver unbound).
    Nowhere,
}

/// The VF is back, possibly with something left to say.
#[derive(Debug, Clone)]
pub struct Detached {
    /// Where it was found.
    pub found: Found,
    /// Things that could not be restored exactly, for the log.
    pub warnings: Vec<String>,
}

/// The VF on its way home: where it was found, and its netdev in the host if it is there.
#[derive(Debug)]
pub struct Home {
    detached: Detached,
    /// Its netdev in the host, when it still needs its name, MTU and alias restored.
    link: Option<Link>,
    /// The netdev as it was in the pod, when the move home restored name, MTU and alias too.
    arrived: Option<Link>,
}

/// Moves the VF's netdev from the pod to the host, if it is there, and finds it in the host.
///
/// `pod` is `None` when the pod's namespace is gone or not the one ADD used.
pub fn bring_home(
    host_ns: &NetNs,
    host: &mut RouteSocket,
    pod: Option<&mut RouteSocket>,
    vf: &VfRecord,
    ifname: &str,
    sysfs: &Sysfs,
) -> Result<Home, NetlinkError> {
    let mark = marker(&vf.pci);
    let travel = travel_name(&vf.pci);
    let mut warnings = Vec::new();
    let mut found = Found::Nowhere;

    if let Some(pod) = pod
        && let Some(link) = find_marked(pod, &mark, &[ifname, &travel])?
    {
        // One request: the move closes the link itself (an explicit "down" first would cost
        // the kernel another RCU grace period), and name, MTU and alias are applied on
        // arrival (each request after a move waits behind every other pod's move for the
        // kernel's lock, which is what a job ending all at once pays for).
        let home = LinkChange::new()
            .netns(host_ns.as_fd())
            .name(&vf.host_name)
            .mtu(vf.host_mtu)
            .alias(vf.host_alias.clone().unwrap_or_default());
        match pod.set_link(link.index, &home) {
            Ok(()) => {
                return Ok(Home {
                    detached: Detached {
                        found: Found::InPod,
                        warnings,
                    },
                    link: None,
                    arrived: Some(link),
                });
            }
            Err(e) if e.kind() == NetlinkErrorKind::AlreadyExists => {
                // Either it moved and the original name is taken in the host (the host side
                // below sees it under its pod name), or both its pod name and the original
                // name are taken there and it did not move: then it leaves under the name
                // unique to it.
                if let Some(still) = pod.link_by_index(link.index)?
                    && still.alias.as_deref() == Some(mark.as_str())
                {
                    pod.set_link(link.index, &LinkChange::new().up(false).name(&travel))?;
                    match pod.set_link(link.index, &home) {
                        Ok(()) => {}
                        Err(e) if e.kind() == NetlinkErrorKind::AlreadyExists => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(e) => return Err(e),
        }
        found = Found::InPod;
    }

    let mut in_host = find_marked(host, &mark, &[&vf.host_name, &travel])?;
    if in_host.is_none() {
        // Never marked (ADD died before its first change): look for it where sysfs says.
        let names = sysfs.vf(&vf.pci).map(|v| v.netdevs).unwrap_or_default();
        for name in names.iter().chain(std::iter::once(&vf.host_name)) {
            if let Some(link) = host.link_by_name(name)?
                && link.alias.as_deref().is_none_or(|a| a == mark)
            {
                in_host = Some(link);
                break;
            }
        }
    }
    let Some(link) = in_host else {
        if found == Found::InPod {
            warnings.push(format!(
                "VF {} left the pod but was not found in the host",
                vf.pci
            ));
        } else {
            warnings.push(format!(
                "VF {}: no network interface found in the host or the pod; it may have been removed",
                vf.pci
            ));
        }
        return Ok(Home {
            detached: Detached { found, warnings },
            link: None,
            arrived: None,
        });
    };
    if found == Found::Nowhere {
        found = Found::InHost;
    }
    Ok(Home {
        detached: Detached { found, warnings },
        link: Some(link),
        arrived: None,
    })
}

/// Restores the original name, MAC, MTU, alias and state of the netdev [`bring_home`] found.
/// Idempotent: a VF already restored is left as it is.
pub fn restore_host(
    host: &mut RouteSocket,
    vf: &VfRecord,
    home: Home,
) -> Result<Detached, NetlinkError> {
    let Home {
        detached: Detached {
            found,
            mut warnings,
        },
        link,
        arrived,
    } = home;
    if let Some(was) = arrived {
        // Name, MTU and alias came with the move; what is left is the MAC the pod had (once
        // the PF has let go of it) and the original state (the move took the link down).
        let mac = vf.host_mac.filter(|m| was.mac != Some(*m));
        if mac.is_some() || vf.host_up {
            let Some(now) = host.link_by_name(&vf.host_name)? else {
                warnings.push(format!(
                    "VF {} left the pod but is not in the host as {}",
                    vf.pci, vf.host_name
                ));
                return Ok(Detached { found, warnings });
            };
            let mut change = LinkChange::new().up(vf.host_up);
            if let Some(mac) = mac {
                change = change.mac(mac);
            }
            host.set_link(now.index, &change)?;
        }
        return Ok(Detached { found, warnings });
    }
    let Some(link) = link else {
        return Ok(Detached { found, warnings });
    };
    let mut restore = LinkChange::new()
        .alias(vf.host_alias.clone().unwrap_or_default())
        .mtu(vf.host_mtu);
    if let Some(mac) = vf.host_mac.filter(|m| link.mac != Some(*m)) {
        restore = restore.mac(mac);
    }
    // Renaming needs the link down; the original state is set last.
    if link.name != vf.host_name {
        if link.up {
            host.set_link(link.index, &LinkChange::new().up(false))?;
        }
        match host.set_link(link.index, &LinkChange::new().name(&vf.host_name)) {
            Ok(()) => {}
            Err(e) if e.kind() == NetlinkErrorKind::AlreadyExists => warnings.push(format!(
                "VF {}: name {:?} is taken in the host; the VF stays as {:?}",
                vf.pci, vf.host_name, link.name
            )),
            Err(e) => return Err(e),
        }
    }
    host.set_link(link.index, &restore)?;
    if vf.host_up != link.up || link.name != vf.host_name {
        host.set_link(link.index, &LinkChange::new().up(vf.host_up))?;
    }
    Ok(Detached { found, warnings })
}

/// A link carrying `mark`, trying the likely names first, then every link.
fn find_marked(
    nl: &mut RouteSocket,
    mark: &str,
    likely: &[&str],
) -> Result<Option<Link>, NetlinkError> {
    for name in likely {
        if let Some(link) = nl.link_by_name(name)?
            && link.alias.as_deref() == Some(mark)
        {
            return Ok(Some(link));
        }
    }
    Ok(nl
        .links()?
        .into_iter()
        .find(|l| l.alias.as_deref() == Some(mark)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn travel_names_are_valid_and_distinct() {
        let a = travel_name(&"0000:3b:00.2".parse().unwrap());
        let b = travel_name(&"0000:3b:00.3".parse().unwrap());
        assert_ne!(a, b);
        assert!(hostnet::sriov::is_valid_ifname(&a), "{a}");
        assert_eq!(a.len(), 11);
    }
}
