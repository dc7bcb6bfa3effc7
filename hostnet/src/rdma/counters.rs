//! An RDMA port's state and counters from sysfs (`class/infiniband/<dev>/ports/<n>/`): the
//! standard `counters/` (InfiniBand PMA: port_xmit_data, ...) and the driver's `hw_counters/`
//! (RoCE: out_of_sequence, np_cnp_sent, rp_cnp_handled, local_ack_timeout_err, ...), which is
//! what a Prometheus exporter reads on each scrape.

use std::fs;
use std::path::Path;

use super::gid::{GidError, RdmaSysfs};

/// One port: its state and every counter that reads as a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortCounters {
    /// The RDMA device.
    pub device: String,
    /// The port number.
    pub port: u32,
    /// `state` as a number (`4: ACTIVE` → 4), when readable.
    pub state: Option<u32>,
    /// `phys_state` as a number (`5: LinkUp` → 5), when readable.
    pub phys_state: Option<u32>,
    /// `link_layer` (`Ethernet` for RoCE, `InfiniBand`).
    pub link_layer: Option<String>,
    /// The port's netdev in this namespace (`gid_attrs/ndevs/0`), when it has one.
    pub netdev: Option<String>,
    /// `counters/*`, by name.
    pub counters: Vec<(String, u64)>,
    /// `hw_counters/*`, by name.
    pub hw_counters: Vec<(String, u64)>,
}

/// The file in `hw_counters/` that is not a counter: how long (ms) the core caches the
/// driver's values, numeric on every driver (rdma_rxe shows 12, mlx5 10), so it would read as
/// a counter that never moves.
const HW_COUNTERS_SETTING: &str = "lifespan";

/// `"4: ACTIVE\n"` → 4.
fn leading_number(text: &str) -> Option<u32> {
    text.split(':').next()?.trim().parse().ok()
}

/// Every file of `dir` whose name is a plain word and whose content is a number. Counters the
/// driver cannot read right now (EINVAL, EOPNOTSUPP) are left out, not zero.
fn numeric_files(dir: &Path) -> Vec<(String, u64)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, u64)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return None;
            }
            let value = fs::read_to_string(e.path()).ok()?.trim().parse().ok()?;
            Some((name, value))
        })
        .collect();
    out.sort();
    out
}

impl RdmaSysfs {
    /// Every port of every RDMA device, with its state and counters.
    pub fn port_counters(&self) -> Result<Vec<PortCounters>, GidError> {
        let mut out = Vec::new();
        for device in self.devices()? {
            for port in self.ports(&device)? {
                let dir = self.port_dir(&device, port)?;
                let text = |name: &str| fs::read_to_string(dir.join(name)).ok();
                out.push(PortCounters {
                    state: text("state").as_deref().and_then(leading_number),
                    phys_state: text("phys_state").as_deref().and_then(leading_number),
                    link_layer: text("link_layer").map(|t| t.trim().to_owned()),
                    netdev: text("gid_attrs/ndevs/0")
                        .map(|t| t.trim().to_owned())
                        .filter(|n| !n.is_empty()),
                    counters: numeric_files(&dir.join("counters")),
                    hw_counters: numeric_files(&dir.join("hw_counters"))
                        .into_iter()
                        .filter(|(name, _)| name != HW_COUNTERS_SETTING)
                        .collect(),
                    device: device.clone(),
                    port,
                });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn ports_read_with_their_counters_and_unreadable_ones_are_left_out() {
        let root = tempfile::tempdir().unwrap();
        let port = root.path().join("class/infiniband/rxe0/ports/1");
        fs::create_dir_all(port.join("hw_counters")).unwrap();
        fs::create_dir_all(port.join("counters")).unwrap();
        fs::create_dir_all(port.join("gid_attrs/ndevs")).unwrap();
        fs::write(port.join("state"), "4: ACTIVE\n").unwrap();
        fs::write(port.join("phys_state"), "5: LinkUp\n").unwrap();
        fs::write(port.join("link_layer"), "Ethernet\n").unwrap();
        fs::write(port.join("gid_attrs/ndevs/0"), "eth0\n").unwrap();
        fs::write(port.join("hw_counters/out_of_sequence"), "7\n").unwrap();
        fs::write(port.join("hw_counters/rcvd_pkts"), "1234\n").unwrap();
        // As rdma_rxe shows it: a number, but a setting.
        fs::write(port.join("hw_counters/lifespan"), "12\n").unwrap();
        fs::write(port.join("hw_counters/not_now"), "N/A\n").unwrap();
        fs::create_dir(port.join("hw_counters/unreadable")).unwrap();
        fs::write(port.join("counters/port_xmit_data"), "99\n").unwrap();
        let got = RdmaSysfs::new(root.path()).port_counters().unwrap();
        assert_eq!(
            got,
            vec![PortCounters {
                device: "rxe0".into(),
                port: 1,
                state: Some(4),
                phys_state: Some(5),
                link_layer: Some("Ethernet".into()),
                netdev: Some("eth0".into()),
                counters: vec![("port_xmit_data".into(), 99)],
                hw_counters: vec![("out_of_sequence".into(), 7), ("rcvd_pkts".into(), 1234)],
            }]
        );
    }
}
