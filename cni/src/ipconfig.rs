//! Addresses and routes from the IPAM result, applied inside the pod and checked by CHECK.

use std::net::IpAddr;

use hostnet::netlink::{NetlinkError, NetlinkErrorKind, Route, RouteSocket, Rule};
use ipnet::IpNet;

use crate::spec::result::{CniResult, RouteConfig};

/// The kernel route for a result route: through the route's gateway, else the gateway of the
/// address of the same family (as the reference plugins do), on the pod interface.
fn kernel_route(r: &RouteConfig, result: &CniResult, oif: u32) -> Route {
    let gateway = r.gw.or_else(|| {
        result
            .ips
            .iter()
            .find(|ip| ip.address.addr().is_ipv4() == r.dst.addr().is_ipv4())
            .and_then(|ip| ip.gateway)
    });
    let mut route = Route::new(r.dst.trunc());
    route.gateway = gateway;
    route.oif = Some(oif);
    route.link_scope = gateway.is_none();
    if let Some(table) = r.table {
        route.table = table;
    }
    route.metric = r.priority;
    route
}

/// Adds the result's addresses and routes to link `oif` (already up). Existing entries are
/// accepted so a retried step converges. IPv6 addresses skip duplicate address detection: the
/// IPAM plugin allocated them uniquely, and a tentative address could neither be a route's
/// source nor be announced for the DAD period (a second or more).
pub fn apply(pod: &mut RouteSocket, oif: u32, result: &CniResult) -> Result<(), NetlinkError> {
    for ip in &result.ips {
        let added = if ip.address.addr().is_ipv6() {
            pod.add_address_nodad(oif, &ip.address)
        } else {
            pod.add_address(oif, &ip.address)
        };
        match added {
            Err(e) if e.kind() != NetlinkErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    for r in &result.routes {
        match pod.add_route(&kernel_route(r, result, oif)) {
            Err(e) if e.kind() != NetlinkErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// What differs between the result and the kernel, one line per difference.
pub fn drift(
    pod: &mut RouteSocket,
    oif: u32,
    ifname: &str,
    result: &CniResult,
) -> Result<Vec<String>, NetlinkError> {
    let mut out = Vec::new();
    let have: Vec<IpNet> = pod
        .addresses(Some(oif))?
        .into_iter()
        .map(|a| a.net)
        .collect();
    for ip in &result.ips {
        if !have.contains(&ip.address) {
            out.push(format!("address {} is missing from {ifname}", ip.address));
        }
    }
    // A later plugin in the chain may move routes to another table (sbr does, for source-based
    // routing); CHECK must tolerate that, so any table counts.
    let mut tables: [Option<Vec<Route>>; 2] = [None, None];
    for r in &result.routes {
        let want = kernel_route(r, result, oif);
        let v6 = matches!(want.destination.addr(), IpAddr::V6(_));
        let routes = match &mut tables[usize::from(v6)] {
            Some(routes) => routes,
            slot => slot.insert(pod.all_routes(v6)?),
        };
        let present = routes.iter().any(|k| {
            k.destination == want.destination && k.gateway == want.gateway && k.oif == want.oif
        });
        if !present {
            out.push(format!("route {want} is missing"));
        }
    }
    Ok(out)
}

/// Where an interface's policy routing lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The interface's own table.
    pub table: u32,
    /// Preference of its `from <address>` rules.
    pub priority: u32,
    /// Whether the table gets a default route through the IPAM gateway.
    pub default_route: bool,
}

/// The routes of the interface's own table: for each address its connected route (with the
/// address as source), the result's routes, and a default route through the address's gateway.
fn policy_routes(oif: u32, result: &CniResult, policy: &Policy) -> Vec<Route> {
    let mut routes = Vec::new();
    for ip in &result.ips {
        let mut connected = Route::new(ip.address.trunc());
        connected.oif = Some(oif);
        connected.table = policy.table;
        connected.source = Some(ip.address.addr());
        connected.link_scope = true;
        routes.push(connected);
        if policy.default_route
            && let Some(gw) = ip.gateway
        {
            let any = if gw.is_ipv4() { "0.0.0.0/0" } else { "::/0" };
            let mut default = Route::new(any.parse().unwrap_or_else(|_| ip.address.trunc()));
            default.gateway = Some(gw);
            default.oif = Some(oif);
            default.table = policy.table;
            routes.push(default);
        }
    }
    for r in &result.routes {
        let mut route = kernel_route(r, result, oif);
        route.table = policy.table;
        if !routes.iter().any(|k| k.destination == route.destination) {
            routes.push(route);
        }
    }
    routes
}

/// The rules steering traffic from the interface's addresses to its table.
fn policy_rules(result: &CniResult, policy: &Policy) -> Vec<Rule> {
    result
        .ips
        .iter()
        .filter_map(|ip| {
            let host = IpNet::new(
                ip.address.addr(),
                if ip.address.addr().is_ipv4() { 32 } else { 128 },
            )
            .ok()?;
            Some(Rule {
                source: host,
                table: policy.table,
                priority: policy.priority,
                protocol: 0,
            })
        })
        .collect()
}

/// Installs the interface's table and rules (`ip route add ... table T`, `ip rule add from A
/// lookup T pref P`). Existing entries are accepted so a retried step converges.
pub fn apply_policy(
    pod: &mut RouteSocket,
    oif: u32,
    result: &CniResult,
    policy: &Policy,
) -> Result<(), NetlinkError> {
    for route in policy_routes(oif, result, policy) {
        match pod.add_route(&route) {
            Err(e) if e.kind() != NetlinkErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    for rule in policy_rules(result, policy) {
        match pod.add_rule(&rule) {
            Err(e) if e.kind() != NetlinkErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Removes every rule pointing at `table` (the routes leave with the interface).
pub fn remove_policy(pod: &mut RouteSocket, table: u32) -> Result<(), NetlinkError> {
    for ipv6 in [false, true] {
        for rule in pod.rules(ipv6)?.into_iter().filter(|r| r.table == table) {
            match pod.delete_rule(&rule) {
                Err(e) if e.kind() != NetlinkErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

/// What is missing from the interface's table and rules, one line each.
pub fn policy_drift(
    pod: &mut RouteSocket,
    oif: u32,
    result: &CniResult,
    policy: &Policy,
) -> Result<Vec<String>, NetlinkError> {
    let mut out = Vec::new();
    for ipv6 in [false, true] {
        let have = pod.routes(ipv6, policy.table)?;
        for want in policy_routes(oif, result, policy)
            .into_iter()
            .filter(|r| r.destination.addr().is_ipv6() == ipv6)
        {
            if !have.iter().any(|k| {
                k.destination == want.destination && k.gateway == want.gateway && k.oif == want.oif
            }) {
                out.push(format!("route {want} is missing"));
            }
        }
        let rules = pod.rules(ipv6)?;
        for want in policy_rules(result, policy)
            .into_iter()
            .filter(|r| r.source.addr().is_ipv6() == ipv6)
        {
            if !rules.contains(&want) {
                out.push(format!("rule {want} is missing"));
            }
        }
    }
    Ok(out)
}
