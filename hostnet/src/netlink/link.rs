//! Links: look up, change attributes, move between namespaces.

use std::fmt;
use std::os::fd::{AsRawFd, BorrowedFd};

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoMacVlan, LinkAttribute, LinkFlags, LinkInfo, LinkMessage, MacVlanMode,
};

use super::{NetlinkError, RouteSocket};
use spinel_wire::MacAddr;

/// A network interface as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Interface index (per namespace).
    pub index: u32,
    /// Interface name.
    pub name: String,
    /// Current MAC address, for Ethernet-like links.
    pub mac: Option<MacAddr>,
    /// MTU.
    pub mtu: u32,
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    /// Carrier present (`IFF_LOWER_UP`).
    pub carrier: bool,
    /// Interface alias (`ip link set dev X alias ...`), when set and non-empty.
    pub alias: Option<String>,
    /// Link kind (`veth`, `macvlan`, ...), absent for physical devices.
    pub kind: Option<String>,
    /// Bus address of the parent device (for PCI functions: `0000:3b:00.2`).
    pub parent_device: Option<String>,
}

impl Link {
    fn from_message(msg: LinkMessage) -> Self {
        let mut link = Link {
            index: msg.header.index,
            name: String::new(),
            mac: None,
            mtu: 0,
            up: msg.header.flags.contains(LinkFlags::Up),
            carrier: msg.header.flags.contains(LinkFlags::LowerUp),
            alias: None,
            kind: None,
            parent_device: None,
        };
        for attr in msg.attributes {
            match attr {
                LinkAttribute::IfName(name) => link.name = name,
                LinkAttribute::Address(bytes) => link.mac = MacAddr::from_slice(&bytes),
                LinkAttribute::Mtu(mtu) => link.mtu = mtu,
                LinkAttribute::IfAlias(alias) if !alias.is_empty() => link.alias = Some(alias),
                LinkAttribute::ParentDevName(dev) => link.parent_device = Some(dev),
                LinkAttribute::LinkInfo(infos) => {
                    for info in infos {
                        if let LinkInfo::Kind(kind) = info {
                            link.kind = Some(kind_name(&kind));
                        }
                    }
                }
                _ => {}
            }
        }
        link
    }
}

/// The kernel's name for a link kind (`IFLA_INFO_KIND`): what `ip -d link` prints.
fn kind_name(kind: &InfoKind) -> String {
    kind.to_string()
}

/// A set of changes applied to one link in a single `RTM_SETLINK` request.
///
/// The kernel applies the parts one after another and stops at the first failure: a move
/// combined with a rename to a name taken in the target namespace moves the link and then
/// fails (EEXIST), leaving it there under its old name. Callers that must not clash move
/// under a name unique to the link and rename in a separate, undoable step.
#[derive(Default)]
pub struct LinkChange<'fd> {
    up: Option<bool>,
    mtu: Option<u32>,
    mac: Option<MacAddr>,
    name: Option<String>,
    alias: Option<String>,
    master: Option<u32>,
    netns: Option<BorrowedFd<'fd>>,
}

impl<'fd> LinkChange<'fd> {
    /// No change yet.
    pub fn new() -> Self {
        Self::default()
    }
    /// Set administratively up or down.
    pub fn up(mut self, up: bool) -> Self {
        self.up = Some(up);
        self
    }
    /// Set the MTU.
    pub fn mtu(mut self, mtu: u32) -> Self {
        self.mtu = Some(mtu);
        self
    }
    /// Set the MAC address.
    pub fn mac(mut self, mac: MacAddr) -> Self {
        self.mac = Some(mac);
        self
    }
    /// Rename (in the target namespace when combined with [`LinkChange::netns`]).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Set the alias; an empty string clears it.
    pub fn alias(mut self, alias: impl Into<String>) -> Self {
        self.alias = Some(alias.into());
        self
    }
    /// Enslave to the bridge (or other controller) with this index; 0 releases it.
    pub fn master(mut self, index: u32) -> Self {
        self.master = Some(index);
        self
    }
    /// Move into the namespace open at `fd`.
    pub fn netns(mut self, fd: BorrowedFd<'fd>) -> Self {
        self.netns = Some(fd);
        self
    }

    fn message(&self, index: u32) -> LinkMessage {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        if let Some(up) = self.up {
            msg.header.change_mask = LinkFlags::Up;
            if up {
                msg.header.flags = LinkFlags::Up;
            }
        }
        if let Some(fd) = self.netns {
            msg.attributes.push(LinkAttribute::NetNsFd(fd.as_raw_fd()));
        }
        if let Some(name) = &self.name {
            msg.attributes.push(LinkAttribute::IfName(name.clone()));
        }
        if let Some(mac) = self.mac {
            msg.attributes
                .push(LinkAttribute::Address(mac.octets().to_vec()));
        }
        if let Some(mtu) = self.mtu {
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        if let Some(alias) = &self.alias {
            msg.attributes.push(LinkAttribute::IfAlias(alias.clone()));
        }
        if let Some(master) = self.master {
            msg.attributes.push(LinkAttribute::Controller(master));
        }
        msg
    }
}

/// Renders the change as the equivalent `ip link set` arguments.
impl fmt::Display for LinkChange<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(fd) = self.netns {
            write!(f, " netns fd:{}", fd.as_raw_fd())?;
        }
        if let Some(name) = &self.name {
            write!(f, " name {name}")?;
        }
        if let Some(mac) = self.mac {
            write!(f, " address {mac}")?;
        }
        if let Some(mtu) = self.mtu {
            write!(f, " mtu {mtu}")?;
        }
        if let Some(alias) = &self.alias {
            write!(f, " alias {alias:?}")?;
        }
        match self.master {
            Some(0) => write!(f, " nomaster")?,
            Some(index) => write!(f, " master index {index}")?,
            None => {}
        }
        match self.up {
            Some(true) => write!(f, " up"),
            Some(false) => write!(f, " down"),
            None => Ok(()),
        }
    }
}

impl RouteSocket {
    /// Looks a link up by name (`ip link show dev NAME`); `None` when there is none.
    pub fn link_by_name(&mut self, name: &str) -> Result<Option<Link>, NetlinkError> {
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        self.get_one_link(msg, format!("ip link show dev {name}"))
    }

    /// Looks a link up by index; `None` when there is none.
    pub fn link_by_index(&mut self, index: u32) -> Result<Option<Link>, NetlinkError> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        self.get_one_link(msg, format!("ip link show index {index}"))
    }

    fn get_one_link(
        &mut self,
        msg: LinkMessage,
        what: String,
    ) -> Result<Option<Link>, NetlinkError> {
        match self.socket().get(RouteNetlinkMessage::GetLink(msg), what) {
            Ok(replies) => Ok(replies.into_iter().find_map(|m| match m {
                RouteNetlinkMessage::NewLink(link) => Some(Link::from_message(link)),
                _ => None,
            })),
            Err(e) if e.is(libc::ENODEV) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every link in the namespace (`ip link show`).
    pub fn links(&mut self) -> Result<Vec<Link>, NetlinkError> {
        let replies = self.socket().dump(
            RouteNetlinkMessage::GetLink(LinkMessage::default()),
            "ip link show",
        )?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewLink(link) => Some(Link::from_message(link)),
                _ => None,
            })
            .collect())
    }

    /// Applies `change` to link `index` in one request (`ip link set dev X ...`).
    pub fn set_link(&mut self, index: u32, change: &LinkChange<'_>) -> Result<(), NetlinkError> {
        let what = format!("ip link set index {index}{change}");
        self.socket()
            .request(RouteNetlinkMessage::SetLink(change.message(index)), 0, what)
    }

    /// Creates a bridge-mode macvlan on `master` directly inside the namespace open at `netns`
    /// (`ip link add link MASTER name NAME netns NS type macvlan mode bridge`), already named
    /// and with `mtu`/`mac` when given. Created in place, it never has to move (a move costs
    /// the kernel an RCU barrier) and its name is checked in the target namespace.
    pub fn create_macvlan(
        &mut self,
        master: u32,
        name: &str,
        netns: BorrowedFd<'_>,
        mtu: Option<u32>,
        mac: Option<MacAddr>,
    ) -> Result<(), NetlinkError> {
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        msg.attributes.push(LinkAttribute::Link(master));
        msg.attributes
            .push(LinkAttribute::NetNsFd(netns.as_raw_fd()));
        if let Some(mtu) = mtu {
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        if let Some(mac) = mac {
            msg.attributes
                .push(LinkAttribute::Address(mac.octets().to_vec()));
        }
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::MacVlan),
            LinkInfo::Data(InfoData::MacVlan(vec![InfoMacVlan::Mode(
                MacVlanMode::Bridge,
            )])),
        ]));
        let what = format!(
            "ip link add link index {master} name {name} netns fd:{} type macvlan mode bridge",
            netns.as_raw_fd()
        );
        self.socket().request(
            RouteNetlinkMessage::NewLink(msg),
            NLM_F_CREATE | NLM_F_EXCL,
            what,
        )
    }

    /// Deletes link `index` (`ip link del`).
    pub fn delete_link(&mut self, index: u32) -> Result<(), NetlinkError> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        self.socket().request(
            RouteNetlinkMessage::DelLink(msg),
            0,
            format!("ip link del index {index}"),
        )
    }
}
