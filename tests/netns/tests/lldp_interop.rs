//! Spinel's LLDP agent against real lldpd, both directions, over a veth pair between a
//! "switch" namespace and a "host" namespace.
//!
//! lldpd 1.0.16 (Debian 12) decodes no DCBX: it shows the 802.1Qaz TLVs as `unknown-tlvs`, and
//! it can only send them as `custom-tlv`s. That is enough to check our encoder against the
//! octets lldpd receives and our decoder against the octets lldpd sends.

// Helpers here fail the test loudly, like the harness.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use spinel_netns_tests::Sandbox;
use spinel_netns_tests::lldpd::{self, Lldpd, json0_value, spinelctl, wait_until};
use spinel_wire::neighbor::{
    AppPriority, AppSelector, Capability, ChassisIdSubtype, EtsConfiguration, EtsRecommendation,
    ManagementAddress, NeighborTable, PfcConfiguration, PortIdSubtype, Role, SCHEMA, Tsa,
};

/// The worked example of research §2.6 as lldpd custom TLVs: RoCE on priority 3 (TC3, 50%
/// ETS), CNP on priority 6 (TC6, strict), PFC on 3, APP UDP 4791 -> 3, DSCP 26 -> 3,
/// DSCP 48 -> 6.
const ETS_INFO: &str = "00,00,03,00,60,32,00,00,32,00,00,00,00,02,00,00,02,00,00,00,00";
const PFC_INFO: &str = "08,08";
const APP_INFO: &str = "00,63,12,b7,65,00,1a,c5,00,30";

fn listen_json(sb: &Sandbox, ns: &str, iface: &str, extra: &[&str]) -> NeighborTable {
    let netns = sb.netns_path(ns);
    let out = Command::new(spinelctl())
        .args([
            "lldp",
            "listen",
            "--netns",
            netns.to_str().unwrap(),
            "--iface",
            iface,
        ])
        .args(["--json", "--node-name", "gpu-node-17"])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "spinelctl lldp listen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "listen output is not the neighbour-table schema ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn switch_and_host(name: &str) -> Sandbox {
    let sb = Sandbox::new(name);
    sb.netns("switch");
    sb.netns("host");
    lldpd::veth(&sb, "switch", "swp1", "host", "ens1f0");
    sb
}

#[test]
fn lldpd_switch_is_decoded_field_by_field() {
    lldpd::require_lldpd();
    let mut sb = switch_and_host("lldpd_switch_is_decoded");
    sb.run_in(
        "switch",
        "ip",
        &["addr", "add", "10.0.0.11/24", "dev", "swp1"],
    );
    let config = format!(
        "configure system hostname leaf01\n\
         configure system description \"NVIDIA Cumulus Linux 5.9 on SN5600\"\n\
         configure system capabilities enabled bridge,router\n\
         configure system ip management pattern 10.0.0.11\n\
         configure lldp tx-interval 1\n\
         configure ports swp1 lldp portidsubtype local Eth1/1 description \"gpu-node-17:ens1f0np0\"\n\
         configure lldp custom-tlv add oui 00,80,c2 subtype 9 oui-info {ETS_INFO}\n\
         configure lldp custom-tlv add oui 00,80,c2 subtype 10 oui-info {ETS_INFO}\n\
         configure lldp custom-tlv add oui 00,80,c2 subtype 11 oui-info {PFC_INFO}\n\
         configure lldp custom-tlv add oui 00,80,c2 subtype 12 oui-info {APP_INFO}\n\
         configure lldp custom-tlv add oui 00,1b,21 subtype 2 oui-info 01,02,03\n\
         configure lldp custom-tlv add oui 00,12,0f subtype 4 oui-info 23,f0\n"
    );
    let _switch = Lldpd::start(&mut sb, "switch", &["swp1"], &config, &[]);
    let switch_mac = lldpd::mac_of(&sb, "switch", "swp1");
    let switch_ifindex = lldpd::ifindex_of(&sb, "switch", "swp1");

    let table = listen_json(
        &sb,
        "host",
        "ens1f0",
        &["--for", "20", "--until-neighbors", "1"],
    );
    assert_eq!(table.schema, SCHEMA);
    assert_eq!(table.observer.name, "gpu-node-17");
    assert_eq!(table.observer.role, Some(Role::Host));
    assert_eq!(table.ports.len(), 1);
    let port = &table.ports[0];
    assert_eq!(port.port, "ens1f0");
    assert_eq!(port.neighbors.len(), 1, "{table:#?}");
    let n = &port.neighbors[0];

    // lldpd sends the MAC of its chassis-ID interface unless told otherwise.
    assert_eq!(n.chassis_id.subtype, ChassisIdSubtype::MacAddress);
    assert_eq!(n.chassis_id.value, switch_mac);
    assert_eq!(n.port_id.subtype, PortIdSubtype::Local);
    assert_eq!(n.port_id.value, "Eth1/1");
    // lldpd: TTL = interval x hold, without 802.1AB's +1.
    assert_eq!(n.ttl, 4);
    assert!(n.age_seconds.is_some_and(|a| a <= 2));
    assert_eq!(n.port_description.as_deref(), Some("gpu-node-17:ens1f0np0"));
    assert_eq!(n.system_name.as_deref(), Some("leaf01"));
    assert_eq!(
        n.system_description.as_deref(),
        Some("NVIDIA Cumulus Linux 5.9 on SN5600")
    );
    let caps = n.capabilities.as_ref().expect("System Capabilities TLV");
    assert_eq!(caps.enabled, [Capability::Bridge, Capability::Router]);
    assert!(caps.supported.contains(&Capability::Bridge));
    assert!(caps.supported.contains(&Capability::Router));
    assert_eq!(
        n.management_addresses,
        [ManagementAddress {
            family: 1,
            address: "10.0.0.11".into(),
            interface_numbering: 2,
            interface_number: switch_ifindex as u32,
            oid: None,
        }]
    );
    assert!(n.mac_phy.is_some(), "lldpd sends 802.3 MAC/PHY");
    // lldpd 1.0.16 sends no MFS on veth; the 9200 here comes from a custom TLV.
    assert_eq!(n.max_frame_size, Some(9200));
    assert!(
        n.link_aggregation.is_some(),
        "lldpd sends the legacy 802.3 link aggregation TLV"
    );

    let ets_tables = (
        [0, 0, 0, 3, 0, 0, 6, 0],
        [50, 0, 0, 50, 0, 0, 0, 0],
        [
            Tsa::Ets,
            Tsa::Strict,
            Tsa::Strict,
            Tsa::Ets,
            Tsa::Strict,
            Tsa::Strict,
            Tsa::Strict,
            Tsa::Strict,
        ],
    );
    assert_eq!(
        n.dcbx.ets_configuration,
        Some(EtsConfiguration {
            willing: false,
            cbs: false,
            max_tcs: 8,
            priority_tc: ets_tables.0,
            tc_bandwidth: ets_tables.1,
            tsa: ets_tables.2,
        })
    );
    assert_eq!(
        n.dcbx.ets_recommendation,
        Some(EtsRecommendation {
            priority_tc: ets_tables.0,
            tc_bandwidth: ets_tables.1,
            tsa: ets_tables.2,
        })
    );
    assert_eq!(
        n.dcbx.pfc,
        Some(PfcConfiguration {
            willing: false,
            mbc: false,
            capability: 8,
            enabled_priorities: vec![3],
        })
    );
    assert_eq!(
        n.dcbx.application_priority,
        Some(vec![
            AppPriority {
                priority: 3,
                selector: AppSelector::UdpPort,
                protocol: 4791
            },
            AppPriority {
                priority: 3,
                selector: AppSelector::Dscp,
                protocol: 26
            },
            AppPriority {
                priority: 6,
                selector: AppSelector::Dscp,
                protocol: 48
            },
        ])
    );
    // The CEE DCBX TLV is not decoded: kept raw.
    assert_eq!(n.unknown_tlvs.len(), 1, "{:?}", n.unknown_tlvs);
    assert_eq!(n.unknown_tlvs[0].oui.as_deref(), Some("00:1b:21"));
    assert_eq!(n.unknown_tlvs[0].subtype, Some(2));
    assert_eq!(n.unknown_tlvs[0].data, "010203");

    let c = port.counters.expect("counters");
    assert!(c.frames_in >= 1);
    assert_eq!(
        (c.frames_discarded, c.frames_in_errors, c.tlvs_discarded),
        (0, 0, 0)
    );
    assert_eq!(c.tlvs_unrecognized, c.frames_in, "one CEE TLV per frame");
    assert_eq!(c.inserts, 1);
}

fn log_file(sb: &Sandbox, name: &str) -> std::fs::File {
    std::fs::File::create(sb.dir().join(name)).unwrap()
}

/// Starts `spinelctl lldp send` in the background; the sandbox kills it on drop.
fn spawn_send(sb: &mut Sandbox, ns: &str, iface: &str, args: &[&str]) -> u32 {
    let netns = sb.netns_path(ns);
    let mut cmd = Command::new(spinelctl());
    cmd.args([
        "lldp",
        "send",
        "--netns",
        netns.to_str().unwrap(),
        "--iface",
        iface,
    ])
    .args(args)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(log_file(sb, &format!("spinelctl-send-{ns}-{iface}.log")));
    sb.spawn(cmd)
}

fn unknown_tlvs(n: &Value) -> Vec<(String, String, String)> {
    n["unknown-tlvs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|u| u["unknown-tlv"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            (
                t["oui"].as_str().unwrap().to_owned(),
                t["subtype"].as_str().unwrap().to_owned(),
                t["value"].as_str().unwrap().to_ascii_lowercase(),
            )
        })
        .collect()
}

#[test]
fn spinel_transmitter_is_decoded_by_lldpd() {
    lldpd::require_lldpd();
    let mut sb = switch_and_host("spinel_transmitter_decoded");
    let switch = Lldpd::start(&mut sb, "switch", &["swp1"], "", &["-r"]);
    let host_mac = lldpd::mac_of(&sb, "host", "ens1f0");
    let host_ifindex = lldpd::ifindex_of(&sb, "host", "ens1f0");
    spawn_send(
        &mut sb,
        "host",
        "ens1f0",
        &[
            "--system-name",
            "gpu-node-17",
            "--system-description",
            "Debian 12 GPU node",
            "--port-description",
            "mlx5_0 port 1 ({iface})",
            "--capabilities",
            "station",
            "--mgmt-addr",
            "192.168.50.17",
            "--mfs",
            "9000",
            "--pvid",
            "100",
            "--vlan-name",
            "100:rail0",
            "--willing",
            "--pfc",
            "3",
            "--app",
            "3:udp:4791",
            "--app",
            "3:dscp:26",
            "--app",
            "6:dscp:48",
            "--ets-priority-tc",
            "0,0,0,3,0,0,6,0",
            "--ets-bandwidth",
            "50,0,0,50,0,0,0,0",
            "--tx-interval",
            "1",
        ],
    );
    let neighbors = switch.wait_for_neighbors(1, Duration::from_secs(10));
    assert_eq!(neighbors.len(), 1, "{neighbors:#?}");
    let n = &neighbors[0];
    assert_eq!(n["name"], "swp1");
    assert_eq!(n["via"], "LLDP");
    let chassis = &n["chassis"][0];
    assert_eq!(chassis["id"][0]["type"], "mac");
    assert_eq!(chassis["id"][0]["value"], host_mac.as_str());
    assert_eq!(json0_value(&chassis["name"]), Some("gpu-node-17"));
    assert_eq!(json0_value(&chassis["descr"]), Some("Debian 12 GPU node"));
    assert_eq!(json0_value(&chassis["mgmt-ip"]), Some("192.168.50.17"));
    assert_eq!(
        json0_value(&chassis["mgmt-iface"]),
        Some(host_ifindex.to_string().as_str())
    );
    assert_eq!(
        chassis["capability"],
        serde_json::json!([{"type": "Station", "enabled": true}])
    );
    let port = &n["port"][0];
    assert_eq!(port["id"][0]["type"], "ifname");
    assert_eq!(port["id"][0]["value"], "ens1f0");
    assert_eq!(json0_value(&port["descr"]), Some("mlx5_0 port 1 (ens1f0)"));
    // 802.1AB: TTL = min(65535, interval x hold + 1) = 1 x 4 + 1.
    assert_eq!(json0_value(&port["ttl"]), Some("5"));
    assert_eq!(json0_value(&port["mfs"]), Some("9000"));
    assert_eq!(
        n["vlan"],
        serde_json::json!([{"vlan-id": "100", "pvid": true, "value": "rail0"}])
    );
    // lldpd keeps the DCBX TLVs as octets: they must be exactly the 802.1Qaz layouts, with
    // the willing bit set (0x80) in ETS and PFC.
    assert_eq!(
        unknown_tlvs(n),
        [
            (
                "00,80,C2".into(),
                "9".into(),
                "80,00,03,00,60,32,00,00,32,00,00,00,00,02,00,00,02,00,00,00,00".into()
            ),
            ("00,80,C2".into(), "11".into(), "88,08".into()),
            (
                "00,80,C2".into(),
                "12".into(),
                "00,63,12,b7,65,00,1a,c5,00,30".into()
            ),
        ]
    );
    let stats = switch.stats("swp1");
    assert_eq!(stats.rx_discarded, 0, "{stats:?}");
    assert_eq!(stats.insert, 1, "{stats:?}");
}

#[test]
fn sigterm_sends_a_shutdown_lldpdu_that_lldpd_honours_at_once() {
    lldpd::require_lldpd();
    let mut sb = switch_and_host("sigterm_shutdown");
    let switch = Lldpd::start(&mut sb, "switch", &["swp1"], "", &["-r"]);
    let netns = sb.netns_path("host");
    // TTL 401 s: only a shutdown LLDPDU can make lldpd forget us within the test.
    let mut child = Command::new(spinelctl())
        .args([
            "lldp",
            "send",
            "--netns",
            netns.to_str().unwrap(),
            "--iface",
            "ens1f0",
        ])
        .args([
            "--system-name",
            "gpu-node-17",
            "--tx-interval",
            "4",
            "--tx-hold",
            "100",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let neighbors = switch.wait_for_neighbors(1, Duration::from_secs(10));
    assert_eq!(json0_value(&neighbors[0]["port"][0]["ttl"]), Some("401"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "spinelctl send must exit cleanly on SIGTERM: {status}"
    );
    let stopped = Instant::now();
    wait_until(
        Duration::from_secs(3),
        "lldpd to drop the neighbour",
        || switch.neighbors().is_empty(),
    );
    assert!(stopped.elapsed() < Duration::from_secs(3));
    let stats = switch.stats("swp1");
    assert_eq!(
        (stats.insert, stats.delete, stats.ageout),
        (1, 1, 0),
        "{stats:?}"
    );
}

#[test]
fn a_listened_switch_can_be_replayed_to_another_lldpd() {
    lldpd::require_lldpd();
    // leaf01 (lldpd) -> spinel listen -> JSON -> spinel send --describe -> lldpd on a spine.
    let mut sb = switch_and_host("replayed_switch");
    sb.netns("spine");
    lldpd::veth(&sb, "host", "ens2f0", "spine", "swp9");
    let config = format!(
        "configure system hostname leaf01\n\
         configure system chassisid leaf01-chassis\n\
         configure system capabilities enabled bridge,router\n\
         configure lldp tx-interval 1\n\
         configure ports swp1 lldp portidsubtype local Ethernet0 description uplink\n\
         configure lldp custom-tlv add oui 00,80,c2 subtype 11 oui-info {PFC_INFO}\n\
         configure lldp custom-tlv add oui 00,80,c2 subtype 12 oui-info {APP_INFO}\n"
    );
    let _leaf = Lldpd::start(&mut sb, "switch", &["swp1"], &config, &[]);
    let spine = Lldpd::start(&mut sb, "spine", &["swp9"], "", &["-r"]);
    let table = listen_json(
        &sb,
        "host",
        "ens1f0",
        &["--for", "20", "--until-neighbors", "1"],
    );
    let heard = &table.ports[0].neighbors[0];
    assert_eq!(heard.chassis_id.subtype, ChassisIdSubtype::Local);
    assert_eq!(heard.chassis_id.value, "leaf01-chassis");
    let describe = sb.dir().join("leaf01.json");
    std::fs::write(&describe, serde_json::to_vec_pretty(heard).unwrap()).unwrap();
    let netns = sb.netns_path("host");
    let out = Command::new(spinelctl())
        .args([
            "lldp",
            "send",
            "--netns",
            netns.to_str().unwrap(),
            "--iface",
            "ens2f0",
        ])
        .args([
            "--describe",
            describe.to_str().unwrap(),
            "--tx-interval",
            "1",
            "--for",
            "2",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // A Neighbor JSON carries "ttl" and "age_seconds", which a description does not have.
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown field `ttl`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut description: Value = serde_json::to_value(heard).unwrap();
    let obj = description.as_object_mut().unwrap();
    obj.remove("ttl");
    obj.remove("age_seconds");
    std::fs::write(&describe, serde_json::to_vec_pretty(&description).unwrap()).unwrap();
    spawn_send(
        &mut sb,
        "host",
        "ens2f0",
        &[
            "--describe",
            describe.to_str().unwrap(),
            "--tx-interval",
            "1",
        ],
    );
    let n = &spine.wait_for_neighbors(1, Duration::from_secs(10))[0];
    let chassis = &n["chassis"][0];
    assert_eq!(chassis["id"][0]["type"], "local");
    assert_eq!(chassis["id"][0]["value"], "leaf01-chassis");
    assert_eq!(json0_value(&chassis["name"]), Some("leaf01"));
    assert_eq!(n["port"][0]["id"][0]["type"], "local");
    assert_eq!(n["port"][0]["id"][0]["value"], "Ethernet0");
    assert_eq!(json0_value(&n["port"][0]["descr"]), Some("uplink"));
    let enabled: Vec<&str> = chassis["capability"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["enabled"] == true)
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(enabled, ["Bridge", "Router"]);
    // leaf01's lldpd sent the deprecated 802.3 link aggregation TLV; we replay it as the
    // 802.1 one (subtype 7), which lldpd 1.0.16 does not decode and shows raw.
    assert_eq!(heard.link_aggregation.map(|l| l.capable), Some(true));
    assert_eq!(
        unknown_tlvs(n),
        [
            ("00,80,C2".into(), "7".into(), "01,00,00,00,00".into()),
            ("00,80,C2".into(), "11".into(), PFC_INFO.into()),
            ("00,80,C2".into(), "12".into(), APP_INFO.into()),
        ]
    );
}
