//! Each prepared claim's `status.devices` (KEP-4817), from the CNI's records: once the
//! `spinel` CNI has attached a claim's VF to a pod, the claim shows the interface as the pod
//! sees it (`networkData`: name, addresses, MAC), what RDMA needs of it (`data`: RDMA device,
//! RoCE v2 GID and its index, the PF whose cable it uses) and a `Ready` condition; a prepared
//! VF not attached (yet, or any more) is `Ready=False`.
//!
//! The agent applies only its own entries (server-side apply, one field manager), so other
//! drivers' entries in the same claim are left alone; the API server itself lets it write
//! entries of `roce.spinel.dev` on claims allocated on its own node only. The CNI's records
//! are input, not trusted: an attachment that does not validate is not reported.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::resource::v1::{AllocatedDeviceStatus, NetworkDeviceData, ResourceClaim};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use spinel_api::dra;
use spinel_node::attachment_record::{Found, read_records};

use super::prepared::{Journal, PreparedClaim, PreparedDevice};

/// The field manager of the agent's entries in claims' `status.devices`.
pub const FIELD_MANAGER: &str = "spinel-agent-dra-status";
/// The condition every entry carries.
pub const READY: &str = "Ready";

/// The CNI attachment of prepared device `d`: the record whose validated attachment is the
/// device's VF.
fn attachment_of<'a>(d: &PreparedDevice, records: &'a [Found]) -> Option<&'a Found> {
    let pci = d.pci.as_deref()?;
    records.iter().find(|f| {
        f.record
            .attachment
            .as_ref()
            .is_some_and(|a| a.vf_pci.as_deref() == Some(pci) && a.validate().is_ok())
    })
}

/// The `status.devices` entries of `claim`, given the CNI's records; `now` for a condition
/// whose status changed since `before` (the entries last written), whose times are kept
/// otherwise.
pub fn device_statuses(
    claim: &PreparedClaim,
    records: &[Found],
    before: &[AllocatedDeviceStatus],
    now: &Time,
) -> Vec<AllocatedDeviceStatus> {
    claim
        .devices
        .iter()
        .map(|d| {
            let found = attachment_of(d, records);
            let attachment = found.and_then(|f| f.record.attachment.as_ref());
            let (status, reason, message) = match attachment {
                Some(a) => (
                    "True",
                    "Attached",
                    format!(
                        "attached by the spinel CNI as {} (container {})",
                        a.ifname,
                        found.map_or("", |f| f.container_id.as_str())
                    ),
                ),
                None => (
                    "False",
                    "NotAttached",
                    "prepared; the spinel CNI has not attached this VF to a pod".to_owned(),
                ),
            };
            let since = before
                .iter()
                .find(|b| b.device == d.device && b.pool == d.pool)
                .and_then(|b| b.conditions.as_ref()?.iter().find(|c| c.type_ == READY))
                .filter(|c| c.status == status)
                .map_or_else(|| now.clone(), |c| c.last_transition_time.clone());
            let roce = found.and_then(|f| f.record.roce.as_ref());
            AllocatedDeviceStatus {
                driver: dra::DRIVER.to_owned(),
                pool: d.pool.clone(),
                device: d.device.clone(),
                conditions: Some(vec![Condition {
                    type_: READY.to_owned(),
                    status: status.to_owned(),
                    reason: reason.to_owned(),
                    message,
                    last_transition_time: since,
                    observed_generation: None,
                }]),
                network_data: attachment.map(|a| NetworkDeviceData {
                    interface_name: Some(a.ifname.clone()),
                    ips: Some(a.addresses.iter().map(ToString::to_string).collect()),
                    hardware_address: Some(a.mac.to_string()),
                }),
                data: attachment.map(|a| {
                    RawExtension(json!({
                        "pf": a.pf,
                        "pciAddress": d.pci,
                        "rdmaDevice": roce.map(|r| r.rdma_device.clone()).or_else(|| d.rdma_device.clone()),
                        "gidIndex": roce.map(|r| r.gid_index),
                        "gid": roce.map(|r| r.gid.clone()),
                    }))
                }),
                share_id: None,
            }
        })
        .collect()
}

/// Applies `devices` as the agent's entries of claim `c`'s `status.devices`. The UID makes a
/// replaced claim (same name) refuse the write.
async fn apply(
    claims: Api<ResourceClaim>,
    c: &PreparedClaim,
    devices: &[AllocatedDeviceStatus],
) -> Result<(), kube::Error> {
    let body = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": c.name, "namespace": c.namespace, "uid": c.uid},
        "status": {"devices": devices},
    });
    claims
        .patch_status(
            &c.name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(body),
        )
        .await
        .map(|_| ())
}

/// Every `period`, the entries of every prepared claim brought in line with the CNI's
/// records under `records_dir`; a claim is written only when its entries changed (or the last
/// write failed). Runs until aborted.
pub async fn run(client: kube::Client, journal: Journal, records_dir: PathBuf, period: Duration) {
    let mut written: BTreeMap<String, Vec<AllocatedDeviceStatus>> = BTreeMap::new();
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let (records, refused) = read_records(&records_dir);
        for r in &refused {
            tracing::debug!("CNI record not used for claim status: {r}");
        }
        let prepared = match journal.list() {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("claim status: cannot list prepared claims: {e}");
                continue;
            }
        };
        written.retain(|uid, _| prepared.iter().any(|c| &c.uid == uid));
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        for c in &prepared {
            let before = written.get(&c.uid).map_or(&[][..], Vec::as_slice);
            let devices = device_statuses(c, &records, before, &now);
            if devices == before {
                continue;
            }
            let claims = Api::namespaced(client.clone(), &c.namespace);
            match apply(claims, c, &devices).await {
                Ok(()) => {
                    tracing::info!(claim = %format!("{}/{}", c.namespace, c.name), "claim device status written");
                    written.insert(c.uid.clone(), devices);
                }
                Err(e) => {
                    tracing::warn!(claim = %format!("{}/{}", c.namespace, c.name), "cannot write the claim's device status: {e}");
                    written.remove(&c.uid);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spinel_node::attachment_record::{PodAttachment, Record};

    fn prepared() -> PreparedClaim {
        PreparedClaim {
            schema: super::super::prepared::SCHEMA,
            namespace: "ns".into(),
            name: "c".into(),
            uid: "0b7c6b7e-1111-2222-3333-444455556666".into(),
            devices: vec![PreparedDevice {
                requests: vec!["nic".into()],
                pool: "n1".into(),
                device: "vf-0000-3b-10-2".into(),
                pci: Some("0000:3b:10.2".into()),
                rdma_device: Some("mlx5_2".into()),
                device_nodes: vec![],
                cdi_id: None,
            }],
        }
    }

    fn record(pci: &str, netns: &str) -> Found {
        let attachment: PodAttachment = serde_json::from_value(json!({
            "netns": netns, "netnsId": {"dev": 4, "ino": 4026532000u64, "cookie": 7},
            "ifname": "net1", "mac": "02:00:00:00:00:02", "addresses": ["10.56.1.5/24"],
            "pf": "pf1", "vfPci": pci,
        }))
        .unwrap();
        Found {
            container_id: "abc".into(),
            ifname: "net1".into(),
            record: Record {
                roce: None,
                attachment: Some(attachment),
            },
        }
    }

    fn ready(s: &AllocatedDeviceStatus) -> &Condition {
        &s.conditions.as_ref().unwrap()[0]
    }

    #[test]
    fn an_attached_vf_reports_its_interface_and_a_missing_or_bad_record_reports_not_ready() {
        let t0 = Time(k8s_openapi::jiff::Timestamp::from_second(1_000).unwrap());
        let t1 = Time(k8s_openapi::jiff::Timestamp::from_second(2_000).unwrap());
        let c = prepared();
        let none = device_statuses(&c, &[], &[], &t0);
        assert_eq!(none.len(), 1);
        assert_eq!(
            (none[0].driver.as_str(), none[0].pool.as_str()),
            (dra::DRIVER, "n1")
        );
        assert_eq!(ready(&none[0]).status, "False");
        assert!(none[0].network_data.is_none());
        // Another VF's record, and one whose namespace path is not absolute, are not this one.
        let others = [
            record("0000:3b:10.3", "/run/netns/p"),
            record("0000:3b:10.2", "p"),
        ];
        assert_eq!(device_statuses(&c, &others, &none, &t1), none);

        let attached = device_statuses(&c, &[record("0000:3b:10.2", "/run/netns/p")], &none, &t1);
        let data = attached[0].network_data.as_ref().unwrap();
        assert_eq!(data.interface_name.as_deref(), Some("net1"));
        assert_eq!(data.ips.as_deref(), Some(&["10.56.1.5/24".to_owned()][..]));
        assert_eq!(data.hardware_address.as_deref(), Some("02:00:00:00:00:02"));
        assert_eq!(attached[0].data.as_ref().unwrap().0["pf"], "pf1");
        assert_eq!(
            (
                ready(&attached[0]).status.as_str(),
                &ready(&attached[0]).last_transition_time
            ),
            ("True", &t1)
        );
        // Unchanged: the same entries, transition time kept.
        let t2 = Time(k8s_openapi::jiff::Timestamp::from_second(3_000).unwrap());
        let again = device_statuses(
            &c,
            &[record("0000:3b:10.2", "/run/netns/p")],
            &attached,
            &t2,
        );
        assert_eq!(again, attached);
    }
}
