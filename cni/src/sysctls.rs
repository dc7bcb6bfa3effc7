//! Per-interface sysctls inside the pod (`/proc/sys/net/*/conf/<if>/...`), written from a
//! thread that has entered the pod's namespace, because `/proc/sys/net` follows the thread.

use hostnet::netns::NetNs;
use hostnet::sysctl::{self, SysctlError};

use crate::config::Sysctls;
use crate::spec::{CniError, ErrorCode};

/// Writes the configured sysctls for `ifname` in `pod`. IPv6 keys are skipped when the pod has
/// IPv6 disabled (its `conf` directory does not exist then).
pub fn apply(pod: &NetNs, ifname: &str, want: &Sysctls) -> Result<(), CniError> {
    let v4 = [
        ("arp_ignore", want.arp_ignore),
        ("arp_announce", want.arp_announce),
        ("rp_filter", want.rp_filter),
        ("arp_notify", want.arp_notify),
    ];
    let written = pod
        .run(|| -> Result<(), SysctlError> {
            for (key, value) in v4 {
                sysctl::write(&["net", "ipv4", "conf", ifname, key], &value.to_string())?;
            }
            match sysctl::write(
                &["net", "ipv6", "conf", ifname, "ndisc_notify"],
                &want.ndisc_notify.to_string(),
            ) {
                Err(SysctlError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    Ok(())
                }
                other => other,
            }
        })
        .map_err(|e| {
            CniError::caused(
                ErrorCode::Kernel,
                "cannot enter the pod namespace for sysctls",
                &e,
            )
        })?;
    written.map_err(|e| {
        CniError::caused(
            ErrorCode::Kernel,
            format!("cannot set sysctls of {ifname} in the pod"),
            &e,
        )
    })
}

/// The sysctls of `ifname` in `pod` that differ from `want`, one line each.
pub fn drift(pod: &NetNs, ifname: &str, want: &Sysctls) -> Vec<String> {
    let keys = [
        ("arp_ignore", want.arp_ignore),
        ("arp_announce", want.arp_announce),
        ("rp_filter", want.rp_filter),
        ("arp_notify", want.arp_notify),
    ];
    pod.run(|| {
        keys.iter()
            .filter_map(
                |(key, value)| match sysctl::read(&["net", "ipv4", "conf", ifname, key]) {
                    Ok(v) if v == value.to_string() => None,
                    Ok(v) => Some(format!(
                        "net.ipv4.conf.{ifname}.{key} is {v}, expected {value}"
                    )),
                    Err(e) => Some(e.to_string()),
                },
            )
            .collect()
    })
    .unwrap_or_else(|e| vec![e.to_string()])
}
