//! The host profile as commands: iproute2's `dcb` and `ip`, `sysctl`, and the RDMA stack's
//! files, in a script that can be run as is (each step says what it fixes).

use std::fmt::Write;

use crate::host::HostProfile;

/// A POSIX shell script that makes the host match `profile`: the same settings on every RoCE
/// NIC, in one loop.
pub fn script(profile: &HostProfile, header: &str) -> String {
    let mut out = String::from("#!/bin/sh\n");
    for line in header.lines() {
        let _ = writeln!(out, "# {line}");
    }
    out.push_str("set -eu\n");
    for n in &profile.nics {
        let _ = writeln!(out, "# {} -> {} {}", n.nic, n.switch, n.port);
    }
    let q = &profile.qos;
    let nics: Vec<&str> = profile.nics.iter().map(|n| n.nic.as_str()).collect();
    let _ = writeln!(out, "for nic in {}; do", nics.join(" "));
    let _ = writeln!(out, "  {}", mtu_command("$nic", q.mtu));
    let _ = writeln!(out, "  {}", pfc_command("$nic", &q.pfc));
    let _ = writeln!(out, "  {}", app_command("$nic", &q.dscp_priority));
    let _ = writeln!(out, "  {}", tos_command("$nic", q.roce_tos));
    for p in &q.ecn {
        let _ = writeln!(out, "  {}", ecn_command("$nic", *p));
    }
    out.push_str("done\n");
    if !profile.sysctl.is_empty() {
        out.push('\n');
        for (k, v) in &profile.sysctl {
            let _ = writeln!(out, "sysctl -qw {k}={v}");
        }
    }
    out.push_str("\n# NCCL jobs (pod environment):\n");
    for (k, v) in &profile.nccl_env {
        let _ = writeln!(out, "#   {k}={v}");
    }
    out
}

/// `ip link set dev NIC mtu N`.
pub fn mtu_command(nic: &str, mtu: u16) -> String {
    format!("ip link set dev {nic} mtu {mtu}")
}

/// `dcb pfc set dev NIC prio-pfc all:off P:on ...`.
pub fn pfc_command(nic: &str, pfc: &[u8]) -> String {
    let mut s = format!("dcb pfc set dev {nic} prio-pfc all:off");
    for p in pfc {
        let _ = write!(s, " {p}:on");
    }
    s
}

/// `dcb app add dev NIC dscp-prio D:P ...` (on mlx5 this also switches trust to DSCP).
pub fn app_command(nic: &str, entries: &[(u8, u8)]) -> String {
    let mut s = format!("dcb app add dev {nic} dscp-prio");
    for (d, p) in entries {
        let _ = write!(s, " {d}:{p}");
    }
    s
}

/// Sets rdma_cm's default ToS on the NIC's RDMA device (node-wide configfs); a NIC without an
/// RDMA device, or a host without configfs, is skipped rather than failing the script.
pub fn tos_command(nic: &str, tos: u8) -> String {
    format!(
        "for d in /sys/class/net/{nic}/device/infiniband/*; do [ -d \"$d\" ] || continue; \
         dev=${{d##*/}}; mkdir -p /sys/kernel/config/rdma_cm/$dev && \
         echo {tos} > /sys/kernel/config/rdma_cm/$dev/ports/1/default_roce_tos; done"
    )
}

/// Enables DCQCN's reaction and notification points on priority `p` (mlx5 sysfs).
pub fn ecn_command(nic: &str, p: u8) -> String {
    format!(
        "for role in roce_rp roce_np; do f=/sys/class/net/{nic}/ecn/$role/enable/{p}; \
         [ -e $f ] && echo 1 > $f; done; true"
    )
}
