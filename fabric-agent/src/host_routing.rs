//! Host policy routing for multi-NIC RoCE nodes, kept right continuously.
//!
//! For each RoCE NIC with an address, the recipe of the research notes (§8.3): a table per NIC
//! (`tableBase` + the NIC's position among the RoCE NICs by name, or the operator's choice)
//! holding the NIC's connected route with its address as source (and a default route via the
//! rail gateway when one is configured), a `from ADDRESS lookup TABLE` rule, and the sysctls
//! that stop ARP flux and reverse-path drops (`arp_ignore` 1, or 2 when rails share a subnet;
//! `arp_announce` 2; `rp_filter` 2). The agent's routes and rules carry its routing protocol
//! number, so it removes what it installed and nothing else: a rule whose address went away,
//! a table of a NIC that is no longer a RoCE NIC.
//!
//! Planning is pure ([`desired`], [`changes`], [`iproute2`]); [`run`] reconciles whenever the
//! kernel announces a change (see `kernel_events`), when the NICs change, and every resync
//! period (sysctls announce nothing). Shutting down leaves everything in place.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hostnet::netlink::{Address, NetlinkError, NetlinkErrorKind, Route, Rule};
use hostnet::netns::NetNs;
use hostnet::rtnl::Rtnl;
use ipnet::IpNet;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::{Notify, watch};

use crate::metrics::{Metrics, RepairLabel};
use crate::report::Observation;
use crate::settings::Routing;

/// Coalesces a burst of kernel notifications (one address brings several) into one pass.
const SETTLE: Duration = Duration::from_millis(10);

/// One per-interface sysctl the agent keeps.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sysctl {
    /// The interface.
    pub nic: String,
    /// `arp_ignore`, `arp_announce` or `rp_filter`.
    pub key: &'static str,
    /// The value.
    pub value: u8,
}

/// What the host should have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Desired {
    /// Rules.
    pub rules: BTreeSet<Rule>,
    /// Routes.
    pub routes: BTreeSet<Route>,
    /// Sysctls.
    pub sysctls: Vec<Sysctl>,
}

/// What must change to get there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Rules to delete (the agent's, no longer wanted).
    pub delete_rules: Vec<Rule>,
    /// Routes to delete.
    pub delete_routes: Vec<Route>,
    /// Routes to add (before the rules that point at their tables).
    pub add_routes: Vec<Route>,
    /// Rules to add.
    pub add_rules: Vec<Rule>,
}

impl Changes {
    /// True when nothing needs to change.
    pub fn is_empty(&self) -> bool {
        self.delete_rules.is_empty()
            && self.delete_routes.is_empty()
            && self.add_routes.is_empty()
            && self.add_rules.is_empty()
    }
}

/// A RoCE NIC as routing sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nic {
    /// The netdev.
    pub name: String,
    /// Its index.
    pub index: u32,
}

/// The table of each NIC: the operator's choice, else `tableBase` + position by name.
pub fn tables(settings: &Routing, nics: &[Nic]) -> BTreeMap<String, u32> {
    let mut names: Vec<&str> = nics.iter().map(|n| n.name.as_str()).collect();
    names.sort_unstable();
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let table = settings.tables.get(*name).copied().unwrap_or_else(|| {
                settings.table_base + u32::try_from(i).unwrap_or(u32::MAX - settings.table_base)
            });
            ((*name).to_owned(), table)
        })
        .collect()
}

fn usable(net: &IpNet) -> bool {
    match net.addr() {
        IpAddr::V4(v4) => !v4.is_loopback() && !v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80 && !v6.is_loopback(),
    }
}

/// What the host should have for `nics` with `addresses`.
pub fn desired(settings: &Routing, nics: &[Nic], addresses: &[Address]) -> Desired {
    let tables = tables(settings, nics);
    let mut out = Desired::default();
    let mut subnets: BTreeMap<IpNet, usize> = BTreeMap::new();
    for nic in nics {
        let Some(&table) = tables.get(&nic.name) else {
            continue;
        };
        let mine: Vec<&IpNet> = addresses
            .iter()
            .filter(|a| a.index == nic.index && usable(&a.net))
            .map(|a| &a.net)
            .collect();
        for net in &mine {
            let ipv6 = net.addr().is_ipv6();
            *subnets.entry(net.trunc()).or_default() += usize::from(!ipv6);
            out.routes.insert(Route {
                metric: None,
                table,
                destination: net.trunc(),
                gateway: None,
                oif: Some(nic.index),
                source: Some(net.addr()),
                // The kernel reports every IPv6 route with universe scope.
                link_scope: !ipv6,
                protocol: settings.protocol,
            });
            out.rules.insert(Rule {
                source: IpNet::from(net.addr()),
                table,
                priority: settings.rule_priority,
                protocol: settings.protocol,
            });
        }
        if let Some(gw) = settings.gateways.get(&nic.name)
            && mine.iter().any(|n| n.addr().is_ipv6() == gw.is_ipv6())
        {
            out.routes.insert(Route {
                metric: None,
                table,
                destination: IpNet::new(
                    if gw.is_ipv6() {
                        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
                    } else {
                        IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
                    },
                    0,
                )
                .unwrap_or_default(),
                gateway: Some(*gw),
                oif: Some(nic.index),
                source: None,
                link_scope: false,
                protocol: settings.protocol,
            });
        }
    }
    // Rails sharing a subnet need arp_ignore 2: answer only for addresses of that subnet.
    let shared = subnets.values().any(|n| *n > 1);
    let arp_ignore = settings.arp_ignore.unwrap_or(if shared { 2 } else { 1 });
    for nic in nics {
        for (key, value) in [
            ("arp_ignore", arp_ignore),
            ("arp_announce", settings.arp_announce),
            ("rp_filter", settings.rp_filter),
        ] {
            out.sysctls.push(Sysctl {
                nic: nic.name.to_string(),
                key,
                value,
            });
        }
    }
    out
}

/// The changes from what the kernel has (`rules`, `routes`: everybody's) to `want`. Only
/// entries with the agent's `protocol` are ever deleted.
pub fn changes(want: &Desired, rules: &[Rule], routes: &[Route], protocol: u8) -> Changes {
    let have_rules: BTreeSet<&Rule> = rules.iter().collect();
    let have_routes: BTreeSet<&Route> = routes.iter().collect();
    Changes {
        delete_rules: rules
            .iter()
            .filter(|r| r.protocol == protocol && !want.rules.contains(*r))
            .cloned()
            .collect(),
        delete_routes: routes
            .iter()
            .filter(|r| r.protocol == protocol && !want.routes.contains(*r))
            .cloned()
            .collect(),
        add_routes: want
            .routes
            .iter()
            .filter(|r| !have_routes.contains(r))
            .cloned()
            .collect(),
        add_rules: want
            .rules
            .iter()
            .filter(|r| !have_rules.contains(r))
            .cloned()
            .collect(),
    }
}

fn route_args(r: &Route, names: &BTreeMap<u32, String>) -> String {
    let mut s = r.destination.to_string();
    if let Some(gw) = r.gateway {
        s += &format!(" via {gw}");
    }
    if let Some(oif) = r.oif {
        match names.get(&oif) {
            Some(name) => s += &format!(" dev {name}"),
            None => s += &format!(" dev index{oif}"),
        }
    }
    if let Some(src) = r.source {
        s += &format!(" src {src}");
    }
    if r.link_scope {
        s += " scope link";
    }
    s + &format!(" table {} proto {}", r.table, r.protocol)
}

/// The changes as iproute2 commands, in the order they are made; sysctls that differ from
/// `current` (`None`: unreadable) are included.
pub fn iproute2(
    changes: &Changes,
    sysctls: &[(Sysctl, Option<u8>)],
    names: &BTreeMap<u32, String>,
) -> Vec<String> {
    let family = |ip: IpAddr| if ip.is_ipv6() { "ip -6" } else { "ip" };
    let mut out = Vec::new();
    for (s, current) in sysctls {
        if *current != Some(s.value) {
            out.push(format!(
                "sysctl -w net.ipv4.conf.{}.{}={}",
                s.nic, s.key, s.value
            ));
        }
    }
    for r in &changes.delete_rules {
        out.push(format!("{} rule del {r}", family(r.source.addr())));
    }
    for r in &changes.delete_routes {
        out.push(format!(
            "{} route del {}",
            family(r.destination.addr()),
            route_args(r, names)
        ));
    }
    for r in &changes.add_routes {
        out.push(format!(
            "{} route add {}",
            family(r.destination.addr()),
            route_args(r, names)
        ));
    }
    for r in &changes.add_rules {
        out.push(format!("{} rule add {r}", family(r.source.addr())));
    }
    out
}

/// Reads and writes the sysctls in the NICs' namespace, from a plain thread.
fn sysctls(ns: Option<&NetNs>, wanted: &[Sysctl], write: bool) -> Vec<(Sysctl, Option<u8>)> {
    let work = || {
        wanted
            .iter()
            .map(|s| {
                let path = ["net", "ipv4", "conf", s.nic.as_str(), s.key];
                let current = hostnet::sysctl::read(&path)
                    .ok()
                    .and_then(|v| v.trim().parse::<u8>().ok());
                if write
                    && current != Some(s.value)
                    && let Err(e) = hostnet::sysctl::write(&path, &s.value.to_string())
                {
                    tracing::warn!(nic = %s.nic, key = s.key, "cannot set the sysctl: {e}");
                }
                (s.clone(), current)
            })
            .collect()
    };
    match ns {
        // /proc/sys/net follows the thread's namespace: enter it on a thread of our own.
        Some(ns) => std::thread::scope(|scope| {
            scope
                .spawn(|| ns.run(work).unwrap_or_default())
                .join()
                .unwrap_or_default()
        }),
        None => work(),
    }
}

/// The reconciler's fixed inputs.
pub struct Router {
    /// Requests.
    pub rtnl: Rtnl,
    /// Settings.
    pub settings: Routing,
    /// The NICs' namespace when it is not the agent's own (sysctls are entered there).
    pub netns: Option<Arc<NetNs>>,
    /// Metrics.
    pub metrics: Metrics,
}

impl Router {
    fn count(&self, kind: &str, op: &str, n: usize) {
        let label = RepairLabel {
            kind: kind.into(),
            op: op.into(),
        };
        let counter: Counter = self.metrics.repairs.get_or_create(&label).clone();
        counter.inc_by(n as u64);
    }

    /// One pass: read, compare, repair (or print, in dry-run mode). Returns the iproute2
    /// lines of what was (or would be) changed.
    #[tracing::instrument(name = "host_routing", skip_all, fields(nics = nics.len()))]
    async fn reconcile(&self, nics: &[Nic]) -> Result<Vec<String>, NetlinkError> {
        let addresses = self.rtnl.addresses().await?;
        let want = desired(&self.settings, nics, &addresses);
        let mut rules = self.rtnl.rules(false).await?;
        rules.extend(self.rtnl.rules(true).await?);
        let mut routes = self.rtnl.routes(false).await?;
        routes.extend(self.rtnl.routes(true).await?);
        let plan = changes(&want, &rules, &routes, self.settings.protocol);
        let dry = self.settings.dry_run;
        let ns = self.netns.clone();
        let wanted = want.sysctls.clone();
        let sysctl_state =
            tokio::task::spawn_blocking(move || sysctls(ns.as_deref(), &wanted, !dry))
                .await
                .unwrap_or_default();
        let names = nics.iter().map(|n| (n.index, n.name.clone())).collect();
        let lines = iproute2(&plan, &sysctl_state, &names);
        let fixed_sysctls = sysctl_state
            .iter()
            .filter(|(s, c)| *c != Some(s.value))
            .count();
        self.count("sysctl", "set", fixed_sysctls);
        if dry || plan.is_empty() {
            return Ok(lines);
        }
        for r in &plan.delete_rules {
            self.apply(self.rtnl.delete_rule(r).await, "rule", "delete");
        }
        for r in &plan.delete_routes {
            self.apply(self.rtnl.delete_route(r).await, "route", "delete");
        }
        for r in &plan.add_routes {
            self.apply(self.rtnl.add_route(r).await, "route", "add");
        }
        for r in &plan.add_rules {
            self.apply(self.rtnl.add_rule(r).await, "rule", "add");
        }
        Ok(lines)
    }

    fn apply(&self, result: Result<(), NetlinkError>, kind: &str, op: &str) {
        match result {
            Ok(()) => self.count(kind, op, 1),
            // Someone (or the kernel, as an address went) did it first: the next pass checks.
            Err(e)
                if matches!(
                    e.kind(),
                    NetlinkErrorKind::AlreadyExists | NetlinkErrorKind::NotFound
                ) => {}
            Err(e) => {
                self.metrics.routing_errors.inc();
                tracing::warn!("host routing: {e}");
            }
        }
    }
}

/// The RoCE NICs of an observation.
fn nics_of(o: &Observation) -> Vec<Nic> {
    o.nics
        .iter()
        .map(|n| Nic {
            name: n.name.to_string(),
            index: n.index,
        })
        .collect()
}

/// Reconciles until `observations` closes: after each kernel change (`changed`), each change
/// of the NIC set, and every resync period. `reconciled` is set after the first full pass.
pub async fn run(
    router: Router,
    mut observations: watch::Receiver<Observation>,
    changed: Arc<Notify>,
    reconciled: Arc<std::sync::atomic::AtomicBool>,
) {
    let mut printed: Vec<String> = Vec::new();
    loop {
        let nics = nics_of(&observations.borrow_and_update());
        let start = Instant::now();
        match router.reconcile(&nics).await {
            Ok(lines) => {
                router
                    .metrics
                    .reconcile
                    .observe(start.elapsed().as_secs_f64());
                reconciled.store(true, std::sync::atomic::Ordering::Relaxed);
                if router.settings.dry_run {
                    if lines != printed {
                        for line in &lines {
                            println!("{line}");
                        }
                        printed = lines;
                    }
                } else if !lines.is_empty() {
                    tracing::info!(changes = ?lines, "host routing repaired");
                }
            }
            Err(e) => {
                router.metrics.routing_errors.inc();
                tracing::warn!("host routing: cannot read the kernel's state: {e}");
            }
        }
        tokio::select! {
            () = changed.notified() => tokio::time::sleep(SETTLE).await,
            r = observations.changed() => if r.is_err() { return },
            () = tokio::time::sleep(router.settings.resync) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{DutiesFile, DutyFlags};

    fn settings() -> Routing {
        let mut s = DutiesFile::default()
            .resolve(&DutyFlags::default())
            .unwrap()
            .routing;
        s.gateways
            .insert("ens1f0np0".into(), "10.56.0.1".parse().unwrap());
        s
    }

    fn nics() -> Vec<Nic> {
        vec![
            Nic {
                name: "ens2f0np0".into(),
                index: 5,
            },
            Nic {
                name: "ens1f0np0".into(),
                index: 4,
            },
        ]
    }

    fn addr(index: u32, net: &str) -> Address {
        Address {
            index,
            net: net.parse().unwrap(),
        }
    }

    #[test]
    fn each_nic_gets_its_table_rule_and_sysctls() {
        let s = settings();
        let addresses = [
            addr(4, "10.56.0.7/24"),
            addr(5, "10.57.0.7/24"),
            addr(5, "fe80::1/64"),
            addr(1, "127.0.0.1/8"),
        ];
        let want = desired(&s, &nics(), &addresses);
        assert_eq!(want.rules.len(), 2, "{:?}", want.rules);
        assert!(want.rules.contains(&Rule {
            source: "10.56.0.7/32".parse().unwrap(),
            table: 100,
            priority: 1000,
            protocol: 197,
        }));
        assert!(
            want.rules.iter().any(|r| r.table == 101),
            "second NIC by name"
        );
        assert_eq!(want.routes.len(), 3, "two connected routes, one default");
        let lines = iproute2(
            &changes(&want, &[], &[], 197),
            &[],
            &nics().into_iter().map(|n| (n.index, n.name)).collect(),
        );
        assert_eq!(
            lines,
            [
                "ip route add 0.0.0.0/0 via 10.56.0.1 dev ens1f0np0 table 100 proto 197",
                "ip route add 10.56.0.0/24 dev ens1f0np0 src 10.56.0.7 scope link table 100 proto 197",
                "ip route add 10.57.0.0/24 dev ens2f0np0 src 10.57.0.7 scope link table 101 proto 197",
                "ip rule add from 10.56.0.7/32 lookup 100 pref 1000 protocol 197",
                "ip rule add from 10.57.0.7/32 lookup 101 pref 1000 protocol 197",
            ]
        );
        assert!(
            want.sysctls
                .iter()
                .any(|c| c.key == "arp_ignore" && c.value == 1),
            "rails in separate subnets"
        );
        let shared = desired(
            &s,
            &nics(),
            &[addr(4, "10.56.0.7/24"), addr(5, "10.56.0.8/24")],
        );
        assert!(
            shared
                .sysctls
                .iter()
                .all(|c| c.key != "arp_ignore" || c.value == 2),
            "rails sharing a subnet answer ARP only for their own addresses"
        );
    }

    #[test]
    fn only_the_agents_own_entries_are_removed_and_present_ones_are_kept() {
        let s = settings();
        let want = desired(&s, &nics(), &[addr(4, "10.56.0.7/24")]);
        let stale = Rule {
            source: "10.56.0.99/32".parse().unwrap(),
            table: 100,
            priority: 1000,
            protocol: 197,
        };
        let operators = Rule {
            protocol: 4,
            ..stale.clone()
        };
        let mut rules: Vec<Rule> = want.rules.iter().cloned().collect();
        rules.push(stale.clone());
        rules.push(operators);
        let routes: Vec<Route> = want.routes.iter().cloned().collect();
        let c = changes(&want, &rules, &routes, 197);
        assert_eq!(c.delete_rules, vec![stale]);
        assert!(c.add_rules.is_empty() && c.add_routes.is_empty() && c.delete_routes.is_empty());
        // The address went: everything the agent installed for it goes too.
        let gone = changes(&desired(&s, &nics(), &[]), &rules, &routes, 197);
        assert_eq!(gone.delete_rules.len(), 2);
        assert_eq!(gone.delete_routes.len(), routes.len());
        assert!(changes(&want, &rules[..1], &routes, 197).is_empty());
    }
}
