//! Addresses and routes from the IPAM result, applied inside the pod and checked by CHECK.

use std::net::IpAddr;

use hostnet::netlink::{NetlinkError, Route, RouteSocket};
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
/// accepted so a retried step converges.
pub fn apply(pod: &mut RouteSocket, oif: u32, result: &CniResult) -> Result<(), NetlinkError> {
    for ip in &result.ips {
        match pod.add_address(oif, &ip.address) {
            Err(e) if !e.is(libc::EEXIST) => return Err(e),
            _ => {}
        }
    }
    for r in &result.routes {
        match pod.add_route(&kernel_route(r, result, oif)) {
            Err(e) if !e.is(libc::EEXIST) => return Err(e),
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
