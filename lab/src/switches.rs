//! The switches' side of LLDP: each switch advertises itself with DCBX as a RoCE leaf or spine
//! does (PFC on priority 3, RoCEv2 on UDP 4791 at priority 3, not willing), and each switch's
//! neighbour table is captured once the hosts advertise, as `lldpcli show neighbors` on the
//! switch would give it, into the directory the fabric controller reads.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use spinel_wire::neighbor::NeighborTable;
use tokio::process::Command;

use crate::layout::{Plan, Role, Switch};
use crate::procs::Spec;

/// The RoCE priority every switch advertises PFC and the RoCEv2 application on.
pub const ROCE_PRIORITY: u8 = 3;

/// LLDP transmit interval in the lab: short, so a change shows within seconds.
pub const TX_INTERVAL_SECONDS: u16 = 5;

/// The longest a switch table capture waits for all of its neighbours.
const CAPTURE_TIMEOUT: Duration = Duration::from_secs(90);

/// The supervised process that advertises `switch` on every port it has.
pub fn sender(plan: &Plan, switch: &Switch, netns: &Path, spinelctl: &Path) -> Spec {
    let ports = plan.ports_of(&switch.name).join(",");
    let description = match switch.role {
        Role::Spine => "spine, Spinel lab".to_owned(),
        Role::Leaf => format!(
            "leaf of rail {} in rail group {}, Spinel lab",
            switch.rail.unwrap_or_default(),
            switch.group.unwrap_or_default() + 1
        ),
    };
    Spec::new(
        &format!("lldp-{}", switch.name),
        spinelctl,
        [
            "lldp".to_owned(),
            "send".to_owned(),
            "--netns".to_owned(),
            netns.display().to_string(),
            "--iface".to_owned(),
            ports,
            "--system-name".to_owned(),
            switch.name.clone(),
            "--system-description".to_owned(),
            description,
            "--capabilities".to_owned(),
            "bridge,router".to_owned(),
            "--pfc".to_owned(),
            ROCE_PRIORITY.to_string(),
            "--app".to_owned(),
            format!("{ROCE_PRIORITY}:udp:4791"),
            "--tx-interval".to_owned(),
            TX_INTERVAL_SECONDS.to_string(),
        ],
    )
}

/// Captures `switch`'s neighbour table (JSON, schema spinel.dev/neighbors/v1) once a
/// neighbour is known on every port, and writes it to `dir/<switch>.json`.
pub async fn capture_table(
    plan: &Plan,
    switch: &Switch,
    netns: &Path,
    spinelctl: &Path,
    dir: &Path,
) -> anyhow::Result<()> {
    let ports = plan.ports_of(&switch.name);
    let out = Command::new(spinelctl)
        .args(["lldp", "listen", "--json", "--role", "switch", "--netns"])
        .arg(netns)
        .args(["--iface", &ports.join(",")])
        .args(["--node-name", &switch.name])
        .args(["--until-neighbors", &ports.len().to_string()])
        .args(["--for", &CAPTURE_TIMEOUT.as_secs().to_string()])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("capture {}'s LLDP table", switch.name))?;
    if !out.status.success() {
        bail!(
            "capturing {}'s LLDP table failed ({}): {}",
            switch.name,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let table: NeighborTable = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{}'s LLDP table is not a neighbour table", switch.name))?;
    let seen = table
        .ports
        .iter()
        .filter(|p| !p.neighbors.is_empty())
        .count();
    if seen < ports.len() {
        bail!(
            "{} saw LLDP neighbours on {seen} of its {} ports within {} s",
            switch.name,
            ports.len(),
            CAPTURE_TIMEOUT.as_secs()
        );
    }
    crate::state::write_atomically(
        &dir.join(format!("{}.json", switch.name)),
        &serde_json::to_vec_pretty(&table)?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::LabSize;

    #[test]
    fn a_leaf_advertises_roce_dcbx_on_every_port() {
        let plan = Plan::new(LabSize::default()).unwrap();
        let leaf = plan.switch("leaf1-r0").unwrap();
        let spec = sender(
            &plan,
            leaf,
            Path::new("/x/netns/leaf1-r0"),
            Path::new("/bin/spinelctl"),
        );
        let args: Vec<String> = spec
            .args
            .iter()
            .map(|a| a.to_string_lossy().into())
            .collect();
        let ports = &args[args.iter().position(|a| a == "--iface").unwrap() + 1];
        assert_eq!(ports.split(',').count(), plan.ports_of("leaf1-r0").len());
        assert!(args.windows(2).any(|w| w[0] == "--pfc" && w[1] == "3"));
        assert!(
            args.windows(2)
                .any(|w| w[0] == "--app" && w[1] == "3:udp:4791")
        );
        assert_eq!(spec.name, "lldp-leaf1-r0");
    }
}
