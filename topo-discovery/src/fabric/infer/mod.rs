//! Inference, phase by phase: who is a switch, which cable goes where, which tier each switch
//! is in. Each phase is a function over the evidence the earlier ones produced (its inputs say
//! what it reads, its output struct what it adds). Grouping into domains and the miswiring
//! checks follow in `domains` and `report`.
//!
//! Interned string ids depend on the order tables were added, so they serve as keys and for
//! grouping only. Every order that reaches the output comes from string contents (natural
//! order), applied within small groups (a host's NICs, a switch pair's cables) so that 100k
//! hosts cost integer sorts, not string sorts.

mod hosts;
mod identity;
mod links;
mod management;
mod naming;
mod observe;
mod select;
mod stand_ins;
mod tiers;
mod trace;

pub(crate) mod live;

pub(crate) use stand_ins::resolve_stand_ins;
pub use stand_ins::{StandInError, StandInNote, UndecidedStandIn};

#[cfg(test)]
mod tests;

use crate::fabric::domains;
use crate::fabric::draft::Draft;
use crate::fabric::model::Fabric;
use crate::fabric::names::natural_cmp;
use crate::fabric::options::{FabricNics, InferOptions};
use crate::fabric::raw::RawTables;
use crate::fabric::report;

/// The whole inference: phases, then domains, then the report, findings sorted.
pub(crate) fn run(raw: RawTables, options: &InferOptions) -> Fabric {
    run_traced(raw, options, None)
}

/// The whole inference, leaving its intermediate facts in `trace` when asked.
pub(crate) fn run_traced(
    raw: RawTables,
    options: &InferOptions,
    trace: Option<&mut trace::Trace>,
) -> Fabric {
    let listed = options.hosts.clone();
    let draft = draft(raw, options, trace);
    let mut fabric = domains::build(draft);
    report::check(&mut fabric, &listed);
    sort_findings(&mut fabric.findings);
    fabric
}

/// The report's order (errors first, then by kind, host, NIC, switch, port, message), each
/// finding once.
pub(crate) fn sort_findings(findings: &mut Vec<crate::fabric::model::Finding>) {
    findings.sort_by(finding_order);
    findings.dedup();
}

/// The report's order of findings.
pub(crate) fn finding_order(
    a: &crate::fabric::model::Finding,
    b: &crate::fabric::model::Finding,
) -> std::cmp::Ordering {
    (a.severity, a.kind)
        .cmp(&(b.severity, b.kind))
        .then_with(|| natural_opt(&a.host, &b.host))
        .then_with(|| natural_opt(&a.nic, &b.nic))
        .then_with(|| natural_opt(&a.switch, &b.switch))
        .then_with(|| natural_opt(&a.port, &b.port))
        .then_with(|| a.message.cmp(&b.message))
}

/// The hosts a per-host NIC selection names.
fn per_host_names(options: &InferOptions) -> impl Iterator<Item = &String> {
    match &options.fabric_nics {
        FabricNics::PerHost(map) => Some(map.keys()),
        _ => None,
    }
    .into_iter()
    .flatten()
}

fn natural_opt(a: &Option<String>, b: &Option<String>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(a), Some(b)) => natural_cmp(a, b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

/// Phases 1-16, from interned tables to switches with tiers and hosts with links.
fn draft(raw: RawTables, options: &InferOptions, mut trace: Option<&mut trace::Trace>) -> Draft {
    let RawTables {
        mut strings,
        chassis_map: _,
        chassis,
        observers,
        neighbors,
        ports,
        advertised,
    } = raw;
    let mut findings = Vec::new();
    let listed: Vec<u32> = options
        .hosts
        .iter()
        .chain(per_host_names(options))
        .map(|h| strings.intern(h))
        .collect();
    let mut nics = select::NicFilter::new(&options.fabric_nics);

    // Who is who.
    let seen = identity::sightings(&neighbors, &observers, chassis.len(), &strings);
    let entities = identity::entities(&observers, &chassis, &seen, &strings, &mut findings);
    let hints = identity::CallerHints {
        listed: &listed,
        nics: &mut nics,
        ports: &ports,
    };
    let evidence = identity::evidence(
        &observers,
        &entities,
        hints,
        &seen,
        &chassis,
        &strings,
        &mut findings,
    );
    let is_switch = identity::classify(
        &evidence,
        &seen,
        &neighbors,
        &entities.of_observer,
        &strings,
    );
    let primary = identity::primary_names(&evidence, &seen, &chassis, &strings);
    let confirmed = |e: usize| evidence.is_observer[e] || seen.observers_of(e) >= 2;
    let mut switch_set =
        identity::switch_records(&is_switch, &primary, &chassis, confirmed, &strings);
    let host_name_of_entity =
        identity::host_names(&evidence, &seen, &is_switch, &primary, &strings);
    drop(seen);

    // What was observed where.
    let observed = observe::observers(
        &observers,
        &entities.of_observer,
        &is_switch,
        &switch_set.of_entity,
        &evidence,
        &strings,
    );
    if let Some(t) = trace.as_deref_mut() {
        let raw = (ports.as_slice(), advertised.as_slice(), &strings);
        let of = &entities.of_observer;
        let n = switch_set.switches.len();
        t.switches(n, &observers, &observed.is, of, &evidence, raw);
    }
    drop(evidence);
    let port_maps = observe::port_maps(&ports, &advertised, &observed.is);
    let mut host_names = observed.hosts;
    let obs = observe::observations(
        &observe::ObservationInputs {
            ports: &ports,
            neighbors: &neighbors,
            observer_is: &observed.is,
            switch_of_entity: &switch_set.of_entity,
            host_name_of_entity: &host_name_of_entity,
        },
        &mut host_names,
        &mut nics,
        &mut strings,
    );

    // Hosts, rails, links, tiers.
    let cx = hosts::LinkContext {
        neighbors: &neighbors,
        chassis: &chassis,
        ports: &port_maps,
        switches: &switch_set.switches,
        host_name_of_entity: &host_name_of_entity,
        strings: &strings,
    };
    let mut records = hosts::host_records(&obs, &host_names, &cx, &mut findings);
    if let Some(t) = trace.as_deref_mut() {
        t.hosts(&records.hosts, &records.used, &strings);
    }
    if !options.fabric_nics.is_explicit() {
        management::management_switches(&mut records, &mut switch_set.switches, &mut findings);
    }
    let rails = hosts::rails(
        &mut records.hosts,
        &mut records.nic_syms,
        &strings,
        options.rail_key,
        &mut findings,
    );
    let mut used = records.used;
    let links = links::switch_links(obs.sightings, &neighbors, &port_maps, &strings, &mut used);
    links::free_ports(
        &port_maps.listed,
        &obs.busy,
        used,
        &strings,
        &mut switch_set.switches,
    );
    if let Some(t) = trace {
        let n = switch_set.switches.len();
        t.ports_left(
            n,
            &port_maps.listed,
            &obs.busy,
            &links,
            &records.hosts,
            &strings,
        );
    }
    let depth = tiers::tiers(
        &mut switch_set.switches,
        &mut records.hosts,
        &links,
        &mut findings,
    );
    let links = tiers::orient(links, &switch_set.switches);

    Draft {
        rails,
        switches: switch_set.switches,
        salts: switch_set.salts,
        confirmed: switch_set.confirmed,
        hosts: records.hosts,
        links,
        findings,
        depth,
    }
}
