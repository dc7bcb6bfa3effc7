//! Synthetic rail-optimised fabrics for benchmarks and scale tests: hosts with `rails` NICs,
//! leaf groups of `rails` leaves (NIC k of each host on leaf k of its group), pods of leaf groups
//! under their own spines, and optionally super-spines above the pods.
//!
//! Tables are generated one at a time, so a 100k-host fabric can be streamed into a
//! [`super::FabricBuilder`] without holding every table.

use spinel_wire::neighbor::{
    Capabilities, Capability, ChassisId, ChassisIdSubtype, Neighbor, NeighborTable, Observer,
    PortId, PortIdSubtype, PortNeighbors, Role, SCHEMA,
};

/// Shape of a synthetic fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// Number of hosts.
    pub hosts: usize,
    /// NICs per host, and leaves per leaf group.
    pub rails: usize,
    /// Hosts per leaf group (and so host ports per leaf).
    pub hosts_per_group: usize,
    /// Leaf groups per pod.
    pub groups_per_pod: usize,
    /// Spines per pod; every leaf of the pod links to each once.
    pub spines_per_pod: usize,
    /// Super-spines; every spine links to each once. Zero for a two-tier fabric.
    pub super_spines: usize,
}

impl SyntheticSpec {
    /// The benchmark shape: 8 rails, 32 hosts per group, 16 groups (512 hosts) per pod,
    /// 8 spines per pod and 16 super-spines.
    pub fn rail_optimized(hosts: usize) -> Self {
        Self {
            hosts,
            rails: 8,
            hosts_per_group: 32,
            groups_per_pod: 16,
            spines_per_pod: 8,
            super_spines: 16,
        }
    }

    /// Leaf groups.
    pub fn groups(&self) -> usize {
        self.hosts.div_ceil(self.hosts_per_group.max(1))
    }

    /// Pods.
    pub fn pods(&self) -> usize {
        self.groups().div_ceil(self.groups_per_pod.max(1))
    }

    /// Leaves.
    pub fn leaves(&self) -> usize {
        self.groups() * self.rails
    }

    /// Spines.
    pub fn spines(&self) -> usize {
        self.pods() * self.spines_per_pod
    }

    /// Every table: hosts, leaves, spines, super-spines.
    pub fn tables(&self) -> impl Iterator<Item = NeighborTable> + '_ {
        (0..self.hosts)
            .map(|h| self.host_table(h))
            .chain((0..self.leaves()).map(|l| self.leaf_table(l)))
            .chain((0..self.spines()).map(|s| self.spine_table(s)))
            .chain((0..self.super_spines).map(|s| self.super_spine_table(s)))
    }

    /// Name of host `h`.
    pub fn host_name(&self, h: usize) -> String {
        format!("host{h:06}")
    }

    /// Name of NIC `k`.
    pub fn nic_name(&self, k: usize) -> String {
        format!("ens{}f0np0", k + 1)
    }

    /// Name of leaf `l` (group `l / rails`, rail `l % rails`).
    pub fn leaf_name(&self, l: usize) -> String {
        format!("leaf-g{}-r{}", l / self.rails, l % self.rails)
    }

    fn spine_name(&self, s: usize) -> String {
        format!(
            "spine-p{}-{}",
            s / self.spines_per_pod,
            s % self.spines_per_pod
        )
    }

    fn super_spine_name(&self, s: usize) -> String {
        format!("super{s}")
    }

    /// Host `h`'s table: NIC k sees port `swp<n>` of leaf k of its group.
    pub fn host_table(&self, h: usize) -> NeighborTable {
        let group = h / self.hosts_per_group;
        let port = h % self.hosts_per_group + 1;
        let ports = (0..self.rails)
            .map(|k| {
                let leaf = group * self.rails + k;
                PortNeighbors {
                    port: self.nic_name(k),
                    neighbors: vec![neighbor(
                        switch_chassis(leaf),
                        &self.leaf_name(leaf),
                        &format!("swp{port}"),
                    )],
                    counters: None,
                }
            })
            .collect();
        table(&self.host_name(h), None, Role::Host, ports)
    }

    /// Leaf `l`'s table: host ports listed without neighbours (hosts listen only), uplinks to
    /// every spine of its pod.
    pub fn leaf_table(&self, l: usize) -> NeighborTable {
        let group = l / self.rails;
        let pod = group / self.groups_per_pod;
        let in_group = self
            .hosts
            .saturating_sub(group * self.hosts_per_group)
            .min(self.hosts_per_group);
        let mut ports: Vec<PortNeighbors> = (1..=in_group)
            .map(|p| PortNeighbors {
                port: format!("swp{p}"),
                neighbors: Vec::new(),
                counters: None,
            })
            .collect();
        let leaf_in_pod = l - pod * self.groups_per_pod * self.rails;
        for j in 0..self.spines_per_pod {
            let spine = pod * self.spines_per_pod + j;
            ports.push(PortNeighbors {
                port: format!("swp{}", self.hosts_per_group + 1 + j),
                neighbors: vec![neighbor(
                    spine_chassis(self, spine),
                    &self.spine_name(spine),
                    &format!("swp{}", leaf_in_pod + 1),
                )],
                counters: None,
            });
        }
        table(
            &self.leaf_name(l),
            Some(switch_chassis(l)),
            Role::Switch,
            ports,
        )
    }

    /// Spine `s`'s table: every leaf of its pod, then every super-spine.
    pub fn spine_table(&self, s: usize) -> NeighborTable {
        let pod = s / self.spines_per_pod;
        let j = s % self.spines_per_pod;
        let leaves_per_pod = self.groups_per_pod * self.rails;
        let first = pod * leaves_per_pod;
        let last = (first + leaves_per_pod).min(self.leaves());
        let mut ports: Vec<PortNeighbors> = (first..last)
            .map(|l| PortNeighbors {
                port: format!("swp{}", l - first + 1),
                neighbors: vec![neighbor(
                    switch_chassis(l),
                    &self.leaf_name(l),
                    &format!("swp{}", self.hosts_per_group + 1 + j),
                )],
                counters: None,
            })
            .collect();
        for x in 0..self.super_spines {
            ports.push(PortNeighbors {
                port: format!("swp{}", leaves_per_pod + 1 + x),
                neighbors: vec![neighbor(
                    super_chassis(self, x),
                    &self.super_spine_name(x),
                    &format!("swp{}", s + 1),
                )],
                counters: None,
            });
        }
        table(
            &self.spine_name(s),
            Some(spine_chassis(self, s)),
            Role::Switch,
            ports,
        )
    }

    /// Super-spine `x`'s table: every spine.
    pub fn super_spine_table(&self, x: usize) -> NeighborTable {
        let leaves_per_pod = self.groups_per_pod * self.rails;
        let ports = (0..self.spines())
            .map(|s| PortNeighbors {
                port: format!("swp{}", s + 1),
                neighbors: vec![neighbor(
                    spine_chassis(self, s),
                    &self.spine_name(s),
                    &format!("swp{}", leaves_per_pod + 1 + x),
                )],
                counters: None,
            })
            .collect();
        table(
            &self.super_spine_name(x),
            Some(super_chassis(self, x)),
            Role::Switch,
            ports,
        )
    }
}

fn mac(n: usize) -> ChassisId {
    let n = n as u64;
    ChassisId {
        subtype: ChassisIdSubtype::MacAddress,
        value: format!(
            "02:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            (n >> 32) & 0xff,
            (n >> 24) & 0xff,
            (n >> 16) & 0xff,
            (n >> 8) & 0xff,
            n & 0xff
        ),
    }
}

fn switch_chassis(leaf: usize) -> ChassisId {
    mac(leaf)
}

fn spine_chassis(spec: &SyntheticSpec, spine: usize) -> ChassisId {
    mac(spec.leaves() + spine)
}

fn super_chassis(spec: &SyntheticSpec, x: usize) -> ChassisId {
    mac(spec.leaves() + spec.spines() + x)
}

fn neighbor(chassis_id: ChassisId, name: &str, port: &str) -> Neighbor {
    let port_id = PortId {
        subtype: PortIdSubtype::InterfaceName,
        value: port.to_owned(),
    };
    Neighbor {
        system_name: Some(name.to_owned()),
        capabilities: Some(Capabilities {
            supported: vec![Capability::Bridge, Capability::Router],
            enabled: vec![Capability::Bridge, Capability::Router],
        }),
        ..Neighbor::new(chassis_id, port_id, 120)
    }
}

fn table(
    name: &str,
    chassis_id: Option<ChassisId>,
    role: Role,
    ports: Vec<PortNeighbors>,
) -> NeighborTable {
    NeighborTable {
        schema: SCHEMA.to_owned(),
        observer: Observer {
            name: name.to_owned(),
            chassis_id,
            role: Some(role),
        },
        ports,
    }
}

/// The two NICs of every host in [`Lab::two_rail_groups`], rail 0 first.
pub const TWO_RAIL_NICS: [&str; 2] = ["ens1f0np0", "ens1f1np1"];

/// Hand-cabled fabrics for tests: name switches and hosts, plug cables, read the tables.
///
/// Switches get a MAC chassis ID derived from their name and see each other (they transmit
/// LLDP); hosts only listen, as Spinel's listener does, so switches never see hosts.
#[derive(Debug, Clone, Default)]
pub struct Lab {
    tables: std::collections::BTreeMap<String, NeighborTable>,
    /// Every cable plugged and not pulled: (a, a's port, b, b's port).
    cables: Vec<[String; 4]>,
}

impl Lab {
    /// An empty lab.
    pub fn new() -> Self {
        Self::default()
    }

    /// The small rail-optimised fabric the tests start from: 2 spines, 4 leaves in two rail
    /// groups (leaf1+leaf2, leaf3+leaf4) each cabled to both spines on `swp51`/`swp52`, and 8
    /// hosts `h1`..`h8` whose [`TWO_RAIL_NICS`] go to the first and second leaf of their group.
    pub fn two_rail_groups() -> Self {
        let [nic0, nic1] = TWO_RAIL_NICS;
        let mut lab = Self::new();
        lab.switch("spine1").switch("spine2");
        for l in 1..=4 {
            let leaf = format!("leaf{l}");
            lab.switch(&leaf)
                .cable(&leaf, "swp51", "spine1", &format!("swp{l}"))
                .cable(&leaf, "swp52", "spine2", &format!("swp{l}"));
        }
        for h in 1..=8 {
            let host = format!("h{h}");
            let (a, b) = if h <= 4 {
                ("leaf1", "leaf2")
            } else {
                ("leaf3", "leaf4")
            };
            let port = format!("swp{}", (h - 1) % 4 + 1);
            lab.host(&host, &TWO_RAIL_NICS)
                .cable(&host, nic0, a, &port)
                .cable(&host, nic1, b, &port);
        }
        lab
    }

    /// Adds a switch named `name`.
    pub fn switch(&mut self, name: &str) -> &mut Self {
        let t = table(name, Some(Self::chassis_of(name)), Role::Switch, Vec::new());
        self.tables.insert(name.to_owned(), t);
        self
    }

    /// Adds a host with NICs `nics` (listed without neighbours until cabled).
    pub fn host(&mut self, name: &str, nics: &[&str]) -> &mut Self {
        let ports = nics
            .iter()
            .map(|n| PortNeighbors {
                port: (*n).to_owned(),
                neighbors: Vec::new(),
                counters: None,
            })
            .collect();
        self.tables
            .insert(name.to_owned(), table(name, None, Role::Host, ports));
        self
    }

    /// The chassis ID a lab switch advertises.
    pub fn chassis_of(name: &str) -> ChassisId {
        mac((super::names::fnv1a64(name.as_bytes()) & 0xff_ffff_ffff) as usize)
    }

    /// Plugs a cable between `a`'s port `a_port` and `b`'s port `b_port`. Every switch end
    /// that is seen advertises its port by name (subtype ifname).
    pub fn cable(&mut self, a: &str, a_port: &str, b: &str, b_port: &str) -> &mut Self {
        self.see(a, a_port, b, b_port);
        self.see(b, b_port, a, a_port);
        self.cables
            .push([a.into(), a_port.into(), b.into(), b_port.into()]);
        self
    }

    /// Lists `port` on `switch` with no neighbour (an empty port in its own table).
    pub fn free_port(&mut self, switch: &str, port: &str) -> &mut Self {
        if let Some(t) = self.tables.get_mut(switch) {
            Self::port_mut(t, port);
        }
        self
    }

    /// Makes host `host`'s NIC `nic` see a device that is not a switch (a server, say).
    pub fn sees_device(&mut self, host: &str, nic: &str, device: &str, port: &str) -> &mut Self {
        if let Some(t) = self.tables.get_mut(host) {
            let mut n = neighbor(mac(0xdead), device, port);
            n.capabilities = Some(Capabilities {
                supported: vec![Capability::Station],
                enabled: vec![Capability::Station],
            });
            Self::port_mut(t, nic).neighbors.push(n);
        }
        self
    }

    /// Removes every neighbour from `a`'s port `a_port` and the far end's view of it.
    pub fn uncable(&mut self, a: &str, a_port: &str) -> &mut Self {
        self.cables
            .retain(|c| !((c[0] == a && c[1] == a_port) || (c[2] == a && c[3] == a_port)));
        let mut far: Vec<(String, String)> = Vec::new();
        if let Some(t) = self.tables.get_mut(a) {
            for p in t.ports.iter_mut().filter(|p| p.port == a_port) {
                for n in p.neighbors.drain(..) {
                    if let Some(name) = n.system_name {
                        far.push((name, n.port_id.value));
                    }
                }
            }
        }
        let me = Self::chassis_of(a);
        for (name, port) in far {
            if let Some(t) = self.tables.get_mut(&name) {
                for p in t.ports.iter_mut().filter(|p| p.port == port) {
                    p.neighbors.retain(|n| n.chassis_id != me);
                }
            }
        }
        self
    }

    /// Mutable access to one system's table (to drop it, edit it, or make odd inputs).
    pub fn table_mut(&mut self, name: &str) -> Option<&mut NeighborTable> {
        self.tables.get_mut(name)
    }

    /// Removes one system's table, as if it was never collected.
    pub fn drop_table(&mut self, name: &str) -> &mut Self {
        self.tables.remove(name);
        self
    }

    /// Every table, ports in natural order.
    pub fn tables(&self) -> Vec<NeighborTable> {
        self.tables
            .values()
            .cloned()
            .map(|mut t| {
                t.ports
                    .sort_by(|a, b| super::names::natural_cmp(&a.port, &b.port));
                t
            })
            .collect()
    }

    /// Every table as lldpd running on every box (hosts included) gives it: hosts transmit
    /// `host_caps` (Router alone for a Kubernetes node with forwarding on, Station without), so
    /// switches and hosts cabled to hosts see them; each table carries its chassis ID and the
    /// role lldpd's reader derives from the box's own capabilities (Bridge: switch; neither
    /// Bridge nor Router: host; Router alone: none). Returns each table with the capabilities
    /// its box advertises.
    pub fn lldpd_tables(&self, host_caps: &[Capability]) -> Vec<(NeighborTable, Capabilities)> {
        let is_host = |name: &str| {
            self.tables
                .get(name)
                .is_some_and(|t| t.observer.role == Some(Role::Host))
        };
        let host_caps = Capabilities {
            supported: host_caps.to_vec(),
            enabled: host_caps.to_vec(),
        };
        let switch_caps = Capabilities {
            supported: vec![Capability::Bridge, Capability::Router],
            enabled: vec![Capability::Bridge, Capability::Router],
        };
        let mut lab = self.clone();
        for [a, a_port, b, b_port] in &self.cables {
            for (me, my_port, host, its_port) in [(a, a_port, b, b_port), (b, b_port, a, a_port)] {
                if !is_host(host) {
                    continue;
                }
                if let Some(t) = lab.tables.get_mut(me) {
                    let mut n = neighbor(Self::chassis_of(host), host, its_port);
                    n.capabilities = Some(host_caps.clone());
                    Self::port_mut(t, my_port).neighbors.push(n);
                }
            }
        }
        let derived = |caps: &Capabilities| {
            if caps.enabled.contains(&Capability::Bridge) {
                Some(Role::Switch)
            } else if caps.enabled.contains(&Capability::Router) {
                None
            } else {
                Some(Role::Host)
            }
        };
        lab.tables()
            .into_iter()
            .map(|mut t| {
                let caps = if is_host(&t.observer.name) {
                    host_caps.clone()
                } else {
                    switch_caps.clone()
                };
                t.observer.chassis_id = Some(Self::chassis_of(&t.observer.name));
                t.observer.role = derived(&caps);
                (t, caps)
            })
            .collect()
    }

    fn see(&mut self, observer: &str, port: &str, peer: &str, peer_port: &str) {
        let peer_is_switch = self
            .tables
            .get(peer)
            .is_some_and(|t| t.observer.role == Some(Role::Switch));
        if !peer_is_switch {
            // hosts do not transmit
            if let Some(t) = self.tables.get_mut(observer) {
                Self::port_mut(t, port);
            }
            return;
        }
        if let Some(t) = self.tables.get_mut(observer) {
            let n = neighbor(Self::chassis_of(peer), peer, peer_port);
            Self::port_mut(t, port).neighbors.push(n);
        }
    }

    fn port_mut<'a>(t: &'a mut NeighborTable, port: &str) -> &'a mut PortNeighbors {
        let i = match t.ports.iter().position(|p| p.port == port) {
            Some(i) => i,
            None => {
                t.ports.push(PortNeighbors {
                    port: port.to_owned(),
                    neighbors: Vec::new(),
                    counters: None,
                });
                t.ports.len() - 1
            }
        };
        &mut t.ports[i]
    }
}
