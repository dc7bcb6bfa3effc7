//! The plan made real: one network namespace per switch and node, veth cables created with
//! each end already in its namespace, leaves that bridge their node ports under a gateway
//! address, /31 uplinks, static routes, IP forwarding on every switch.
//!
//! Routing is deliberately plain: a leaf reaches each remote subnet through one spine, chosen
//! by the subnet (the kernel here has no multipath in our netlink layer, and one fixed path per
//! subnet makes the path a packet took provable from counters).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hostnet::netlink::{LinkChange, LinkCounters, Route, RouteSocket, VethEnd};
use hostnet::netns::NetNs;
use ipnet::{IpNet, Ipv4Net};

use crate::layout::{Cable, FABRIC_MTU, LEAF_BRIDGE, Plan, Role};

/// The lab's namespaces, open, each with a netlink socket inside it.
pub struct Fabric {
    dir: PathBuf,
    namespaces: BTreeMap<String, (NetNs, RouteSocket)>,
}

impl Fabric {
    /// Creates every namespace of `plan` under `dir` (pinned like `ip netns add`) with
    /// loopback up, and IP forwarding on in the switches. A namespace that already exists is
    /// an error: the caller sweeps first.
    pub fn create(plan: &Plan, dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let mut fabric = Self {
            dir: dir.to_owned(),
            namespaces: BTreeMap::new(),
        };
        for name in plan.namespaces() {
            let ns = NetNs::create_at(dir.join(name))
                .with_context(|| format!("create namespace {name}"))?;
            fabric.insert(name, ns)?;
            fabric.set_up(name, "lo")?;
        }
        for switch in &plan.switches {
            fabric
                .namespace(&switch.name)?
                .run(|| hostnet::sysctl::write(&["net", "ipv4", "ip_forward"], "1"))??;
        }
        Ok(fabric)
    }

    /// Opens the namespaces of `plan` that exist under `dir` (a running lab).
    pub fn open(plan: &Plan, dir: &Path) -> anyhow::Result<Self> {
        let mut fabric = Self {
            dir: dir.to_owned(),
            namespaces: BTreeMap::new(),
        };
        for name in plan.namespaces() {
            let ns = NetNs::open(dir.join(name))
                .with_context(|| format!("namespace {name}: is the lab up?"))?;
            fabric.insert(name, ns)?;
        }
        Ok(fabric)
    }

    fn insert(&mut self, name: &str, ns: NetNs) -> anyhow::Result<()> {
        let socket =
            RouteSocket::open_in(&ns).with_context(|| format!("netlink socket in {name}"))?;
        self.namespaces.insert(name.to_owned(), (ns, socket));
        Ok(())
    }

    /// The pinned path of namespace `name` (what `--netns` flags and `nsenter --net=` take).
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Namespace `name`.
    pub fn namespace(&self, name: &str) -> anyhow::Result<&NetNs> {
        Ok(&self
            .namespaces
            .get(name)
            .with_context(|| format!("no namespace {name} in the lab"))?
            .0)
    }

    /// The netlink socket inside namespace `name`.
    pub fn socket(&mut self, name: &str) -> anyhow::Result<&mut RouteSocket> {
        Ok(&mut self
            .namespaces
            .get_mut(name)
            .with_context(|| format!("no namespace {name} in the lab"))?
            .1)
    }

    /// Index of link `ifname` in namespace `ns`.
    pub fn index(&mut self, ns: &str, ifname: &str) -> anyhow::Result<u32> {
        Ok(self
            .socket(ns)?
            .link_by_name(ifname)?
            .with_context(|| format!("{ns} has no interface {ifname}"))?
            .index)
    }

    fn set(&mut self, ns: &str, ifname: &str, change: &LinkChange<'_>) -> anyhow::Result<()> {
        let index = self.index(ns, ifname)?;
        self.socket(ns)?
            .set_link(index, change)
            .with_context(|| format!("{ns}: ip link set {ifname}{change}"))
    }

    fn set_up(&mut self, ns: &str, ifname: &str) -> anyhow::Result<()> {
        self.set(ns, ifname, &LinkChange::new().up(true))
    }

    fn add_address(&mut self, ns: &str, ifname: &str, net: Ipv4Net) -> anyhow::Result<()> {
        let index = self.index(ns, ifname)?;
        self.socket(ns)?
            .add_address(index, &IpNet::V4(net))
            .with_context(|| format!("{ns}: ip addr add {net} dev {ifname}"))
    }

    fn add_route(&mut self, ns: &str, to: Ipv4Net, via: Ipv4Addr) -> anyhow::Result<()> {
        let mut route = Route::new(IpNet::V4(to));
        route.gateway = Some(IpAddr::V4(via));
        self.socket(ns)?
            .add_route(&route)
            .with_context(|| format!("{ns}: ip route add {route}"))
    }

    /// Cables, bridges, addresses and routes of `plan`; the namespaces exist.
    pub fn wire(&mut self, plan: &Plan) -> anyhow::Result<()> {
        for cable in &plan.cables {
            self.cable(cable)?;
        }
        for leaf in plan.switches.iter().filter(|s| s.role == Role::Leaf) {
            let gateway = leaf.gateway().context("a leaf without a subnet")?;
            self.bridge_node_ports(plan, &leaf.name)?;
            self.add_address(&leaf.name, LEAF_BRIDGE, gateway)?;
        }
        for cable in plan.uplinks() {
            let (leaf_end, spine_end) = cable.p2p.context("an uplink without addresses")?;
            self.add_address(&cable.a, &cable.a_port, leaf_end)?;
            self.add_address(&cable.b, &cable.b_port, spine_end)?;
        }
        self.route(plan)?;
        for node in &plan.nodes {
            for nic in &node.nics {
                self.add_address(&node.name, &nic.ifname, nic.address)?;
            }
        }
        Ok(())
    }

    /// One veth pair, both ends up, MTU 9000.
    fn cable(&mut self, cable: &Cable) -> anyhow::Result<()> {
        let a = self.namespace(&cable.a)?.as_fd();
        let b = self.namespace(&cable.b)?.as_fd();
        let ends = (
            VethEnd {
                name: &cable.a_port,
                netns: a,
            },
            VethEnd {
                name: &cable.b_port,
                netns: b,
            },
        );
        let mut host = RouteSocket::open().context("netlink socket")?;
        host.create_veth(ends.0, ends.1, Some(FABRIC_MTU))
            .with_context(|| {
                format!(
                    "cable {}:{} - {}:{}",
                    cable.a, cable.a_port, cable.b, cable.b_port
                )
            })?;
        self.set_up(&cable.a, &cable.a_port)?;
        self.set_up(&cable.b, &cable.b_port)
    }

    /// The leaf's node ports under one bridge, which holds the gateway address.
    fn bridge_node_ports(&mut self, plan: &Plan, leaf: &str) -> anyhow::Result<()> {
        self.socket(leaf)?
            .create_bridge(LEAF_BRIDGE, Some(FABRIC_MTU))
            .with_context(|| format!("{leaf}: bridge {LEAF_BRIDGE}"))?;
        let bridge = self.index(leaf, LEAF_BRIDGE)?;
        let ports: Vec<String> = plan
            .cables
            .iter()
            .filter(|c| c.b == leaf && c.p2p.is_none())
            .map(|c| c.b_port.clone())
            .collect();
        for port in &ports {
            self.set(leaf, port, &LinkChange::new().master(bridge))?;
        }
        self.set_up(leaf, LEAF_BRIDGE)
    }

    /// Spines: every leaf subnet through that leaf. Leaves: every other subnet through one
    /// spine, picked by the subnet.
    fn route(&mut self, plan: &Plan) -> anyhow::Result<()> {
        let spines = plan.size.spines as usize;
        for cable in plan.uplinks() {
            let (leaf_end, _) = cable.p2p.context("an uplink without addresses")?;
            let subnet = plan
                .switch(&cable.a)
                .and_then(|s| s.subnet)
                .context("a leaf without a subnet")?;
            self.add_route(&cable.b, subnet, leaf_end.addr())?;
        }
        let leaves: Vec<_> = plan
            .switches
            .iter()
            .filter(|s| s.role == Role::Leaf)
            .collect();
        for leaf in &leaves {
            for (i, other) in leaves.iter().enumerate() {
                if other.name == leaf.name {
                    continue;
                }
                let spine = format!("spine{}", i % spines + 1);
                let uplink = plan
                    .uplinks()
                    .find(|c| c.a == leaf.name && c.b == spine)
                    .context("a leaf without an uplink to a spine")?;
                let (_, spine_end) = uplink.p2p.context("an uplink without addresses")?;
                let subnet = other.subnet.context("a leaf without a subnet")?;
                self.add_route(&leaf.name, subnet, spine_end.addr())?;
            }
        }
        Ok(())
    }

    /// Sets port `ifname` of switch `switch` down (a pulled cable) or up.
    pub fn set_port(&mut self, switch: &str, ifname: &str, up: bool) -> anyhow::Result<()> {
        self.set(switch, ifname, &LinkChange::new().up(up))
    }

    /// Whether `ifname` in `ns` is up with a carrier.
    pub fn port_up(&mut self, ns: &str, ifname: &str) -> anyhow::Result<bool> {
        match self.socket(ns)?.link_by_name(ifname)? {
            Some(link) => Ok(link.up && link.carrier),
            None => bail!("{ns} has no interface {ifname}"),
        }
    }

    /// The counters of `ifname` in `ns`.
    pub fn counters(&mut self, ns: &str, ifname: &str) -> anyhow::Result<LinkCounters> {
        match self.socket(ns)?.link_counters(ifname)? {
            Some(c) => Ok(c),
            None => bail!("{ns} has no interface {ifname}"),
        }
    }
}

/// Unpins every namespace under `dir` (the lab's own directory: nothing else lives there) and
/// returns how many there were. A namespace dies once no process holds it.
pub fn sweep_namespaces(dir: &Path) -> anyhow::Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("read {}", dir.display())),
    };
    let mut swept = 0;
    for entry in entries {
        let path = entry?.path();
        NetNs::remove_at(&path).with_context(|| format!("remove namespace {}", path.display()))?;
        swept += 1;
    }
    let _ = std::fs::remove_dir(dir);
    Ok(swept)
}
