use std::fs;

use hostnet::netns::NsId;
use serde_json::json;

use super::*;
use crate::spec::Version;

fn record(cid: &str, ifname: &str) -> AttachmentRecord {
    AttachmentRecord {
        schema: SCHEMA,
        key: AttachmentKey {
            container_id: cid.into(),
            ifname: ifname.into(),
        },
        network: "rail0".into(),
        netns: Some("/var/run/netns/p".into()),
        netns_id: Some(NsId {
            dev: 4,
            ino: 4026532000,
            cookie: Some(7),
        }),
        netns_nsid: Some(3),
        cni_args: Some("K8S_POD_NAME=p".into()),
        phase: Phase::Prepared,
        config: json!({"cniVersion": "1.0.0", "ipam": {"type": "host-local"}}),
        cni_version: Version::V1_0_0,
        ipam: Some("host-local".into()),
        routing_table: Some(101),
        device: DeviceRecord::Vf(VfRecord {
            pci: "0000:3b:00.2".parse().unwrap(),
            pf: "ens1f0".into(),
            index: 0,
            host_name: "ens1f0v0".into(),
            host_mac: Some("02:00:00:00:00:01".parse().unwrap()),
            host_mtu: 1500,
            host_alias: None,
            host_up: false,
            pf_before: None,
            pf_wanted: None,
            rdma_devices: Vec::new(),
            rdma_exclusive: false,
        }),
        result: None,
    }
}

#[test]
fn records_and_claims_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path()).unwrap();
    let r = record("abc", "net1");
    j.save(&r).unwrap();
    assert_eq!(j.load(&r.key).unwrap(), Some(r.clone()));
    assert_eq!(j.records().unwrap(), vec![r.clone()]);
    let pci: PciAddress = "0000:3b:00.2".parse().unwrap();
    j.set_claim(&pci, &r.key).unwrap();
    assert_eq!(j.claim(&pci).unwrap(), Some(r.key.clone()));
    let other = AttachmentKey {
        container_id: "zzz".into(),
        ifname: "net1".into(),
    };
    j.release_claim(&pci, &other).unwrap();
    assert!(j.claim(&pci).unwrap().is_some(), "only the holder releases");
    j.release_claim(&pci, &r.key).unwrap();
    assert!(j.claim(&pci).unwrap().is_none());
    j.remove(&r.key).unwrap();
    j.remove(&r.key).unwrap();
    assert!(j.load(&r.key).unwrap().is_none());
    assert_eq!(
        fs::read_dir(dir.path().join("attachments"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn file_names_do_not_depend_on_the_container_id_length() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path()).unwrap();
    let long = "a".repeat(256);
    let r = record(&long, "net1");
    j.save(&r).unwrap();
    assert_eq!(j.load(&r.key).unwrap(), Some(r.clone()));
    let names: Vec<String> = fs::read_dir(dir.path().join("attachments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1);
    assert_eq!(names[0].len(), 32 + ".json".len(), "{names:?}");
    let lock = j
        .lock_attachment(&r.key, Duration::from_millis(10))
        .unwrap();
    drop(lock);
}

#[test]
fn version_1_records_are_read_and_moved_on_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path()).unwrap();
    let r = record("abc", "net2");
    let mut v1 = serde_json::to_value(&r).unwrap();
    v1["schema"] = json!(1);
    for k in ["cniVersion", "ipam", "routingTable", "netnsNsid"] {
        v1.as_object_mut().unwrap().remove(k);
    }
    let legacy = dir.path().join("attachments/abc/net2.json");
    fs::create_dir_all(legacy.parent().unwrap()).unwrap();
    fs::write(&legacy, serde_json::to_vec(&v1).unwrap()).unwrap();
    let loaded = j.load(&r.key).unwrap().unwrap();
    assert_eq!(loaded.ipam.as_deref(), Some("host-local"));
    assert_eq!(loaded.routing_table, Some(102));
    assert_eq!(j.records().unwrap().len(), 1);
    j.save(&loaded).unwrap();
    assert!(!legacy.exists(), "the version 1 file is retired");
    assert!(!dir.path().join("attachments/abc").exists());
    assert_eq!(j.load(&r.key).unwrap(), Some(loaded));
}

#[test]
fn unknown_schema_is_refused_not_guessed() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path()).unwrap();
    let r = record("abc", "net1");
    j.save(&r).unwrap();
    let path = j.record_path(&r.key);
    let text = fs::read_to_string(&path)
        .unwrap()
        .replace("\"schema\": 2", "\"schema\": 3");
    fs::write(&path, text).unwrap();
    assert!(matches!(j.load(&r.key), Err(JournalError::Corrupt { .. })));
    fs::write(&path, "{ not json").unwrap();
    assert!(matches!(j.load(&r.key), Err(JournalError::Corrupt { .. })));
}

#[test]
fn lock_times_out_then_frees_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path()).unwrap();
    let pci: PciAddress = "0000:3b:00.2".parse().unwrap();
    let held = j.lock_vf(&pci, Duration::from_millis(10)).unwrap();
    let err = j.lock_vf(&pci, Duration::from_millis(30)).unwrap_err();
    assert!(matches!(err, JournalError::LockTimeout { .. }), "{err}");
    drop(held);
    j.lock_vf(&pci, Duration::from_millis(10)).unwrap();
}

#[test]
fn deferred_releases_back_off_and_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path()).unwrap();
    let r = record("abc", "net1");
    let p = j.defer_release(&r, "host-local: bad CNI_ARGS").unwrap();
    assert_eq!(j.pending_release(&r.key).unwrap(), Some(p.clone()));
    assert_eq!(j.pending_releases().unwrap(), vec![p.clone()]);
    j.release_retry_failed(&p, "again").unwrap();
    let again = j.pending_release(&r.key).unwrap().unwrap();
    assert_eq!(again.attempts, 2);
    assert!(again.next_attempt >= p.next_attempt + 3, "backs off");
    assert!(!again.is_due());
    j.release_recovered(&r.key).unwrap();
    assert!(j.pending_releases().unwrap().is_empty());
    let c = j.counters().unwrap();
    assert_eq!(
        (
            c.ipam_releases_deferred,
            c.ipam_release_retries_failed,
            c.ipam_releases_recovered
        ),
        (1, 1, 1)
    );
}
