//! From the node's devices to the ResourceSlices of its pool, and what must be written to get
//! there from what the API server holds. Pure.
//!
//! The pool is named after the node and cut into slices of at most
//! [`dra::MAX_DEVICES_PER_SLICE`] devices, in device-name order, named
//! [`dra::slice_name`]. The generation follows the rule consumers rely on (and the one
//! `k8s.io/dynamic-resource-allocation/resourceslice` applies): a change that one update
//! carries keeps the pool's generation; anything more (a slice added, several changed, the
//! slice count changed) bumps it and rewrites every slice, so a consumer that sees slices of
//! the newest generation knows when it has seen them all. Slices of an older generation, or
//! beyond the pool's count, are deleted first.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{Device, ResourcePool, ResourceSlice, ResourceSliceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use spinel_api::dra;

/// One write.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Delete the slice of this name.
    Delete(String),
    /// Apply this slice (server-side apply: create or replace).
    Apply(Box<ResourceSlice>),
}

/// The Node the slices belong to (owner reference: they go when it goes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The node's name (also the pool's).
    pub node: String,
    /// Its UID.
    pub uid: String,
}

/// The devices cut into slices.
pub fn partition(devices: Vec<Device>) -> Vec<Vec<Device>> {
    let mut out: Vec<Vec<Device>> = Vec::new();
    for d in devices {
        match out.last_mut() {
            Some(last) if last.len() < dra::MAX_DEVICES_PER_SLICE => last.push(d),
            _ => out.push(vec![d]),
        }
    }
    out
}

/// `desired` with the `timeAdded` of each taint the API server already stamped (same device,
/// key and effect), so an unchanged taint compares equal and keeps its time.
fn keep_taint_times(desired: &mut [Device], current: &BTreeMap<&str, &Device>) {
    for d in desired {
        let Some(old) = current.get(d.name.as_str()).and_then(|o| o.taints.as_ref()) else {
            continue;
        };
        for t in d.taints.iter_mut().flatten() {
            if let Some(o) = old.iter().find(|o| o.key == t.key && o.effect == t.effect) {
                t.time_added.clone_from(&o.time_added);
            }
        }
    }
}

fn slice(owner: &Owner, index: usize, pool: ResourcePool, devices: Vec<Device>) -> ResourceSlice {
    ResourceSlice {
        metadata: ObjectMeta {
            name: Some(dra::slice_name(&owner.node, index)),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: owner.node.clone(),
                uid: owner.uid.clone(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        },
        spec: ResourceSliceSpec {
            driver: dra::DRIVER.to_owned(),
            node_name: Some(owner.node.clone()),
            pool,
            devices: Some(devices),
            ..ResourceSliceSpec::default()
        },
    }
}

/// The writes that turn `current` (the node's slices of this driver on the API server) into
/// the pool of `desired` devices.
pub fn plan(owner: &Owner, desired: Vec<Device>, current: &[ResourceSlice]) -> Vec<Write> {
    let generation = current
        .iter()
        .map(|s| s.spec.pool.generation)
        .max()
        .unwrap_or(0);
    let by_device: BTreeMap<&str, &Device> = current
        .iter()
        .flat_map(|s| s.spec.devices.iter().flatten())
        .map(|d| (d.name.as_str(), d))
        .collect();
    let mut desired = desired;
    keep_taint_times(&mut desired, &by_device);
    let parts = partition(desired);
    let names: Vec<String> = (0..parts.len())
        .map(|i| dra::slice_name(&owner.node, i))
        .collect();
    let mut writes = Vec::new();
    let mut matched: BTreeMap<usize, &ResourceSlice> = BTreeMap::new();
    for s in current {
        let name = s.metadata.name.clone().unwrap_or_default();
        match names.iter().position(|n| *n == name) {
            Some(i) if s.spec.pool.generation == generation && !matched.contains_key(&i) => {
                matched.insert(i, s);
            }
            _ => writes.push(Write::Delete(name)),
        }
    }
    let count = parts.len() as i64;
    let pool = |generation| ResourcePool {
        name: owner.node.clone(),
        generation,
        resource_slice_count: count,
    };
    let changed: Vec<usize> = (0..parts.len())
        .filter(|i| match matched.get(i) {
            Some(s) => {
                s.spec.pool != pool(generation)
                    || s.spec.devices.as_deref().unwrap_or_default() != parts[*i].as_slice()
                    || s.spec.node_name.as_deref() != Some(owner.node.as_str())
                    || s.metadata
                        .owner_references
                        .as_ref()
                        .is_none_or(|o| !o.iter().any(|r| r.uid == owner.uid && r.kind == "Node"))
            }
            None => false,
        })
        .collect();
    let added = parts.len() - matched.len();
    let bump = !(added == 0 && changed.len() <= 1);
    let generation = if bump { generation + 1 } else { generation };
    for (i, devices) in parts.into_iter().enumerate() {
        if bump || changed.contains(&i) {
            writes.push(Write::Apply(Box::new(slice(
                owner,
                i,
                pool(generation),
                devices,
            ))));
        }
    }
    writes
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::resource::v1::DeviceTaint;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn owner() -> Owner {
        Owner {
            node: "n1".into(),
            uid: "u1".into(),
        }
    }

    fn dev(i: usize) -> Device {
        Device {
            name: format!("vf-{i:04}"),
            ..Device::default()
        }
    }

    /// What the API server holds after `writes` on top of `current`.
    fn after(current: &[ResourceSlice], writes: &[Write]) -> Vec<ResourceSlice> {
        let mut held: BTreeMap<String, ResourceSlice> = current
            .iter()
            .map(|s| (s.metadata.name.clone().unwrap(), s.clone()))
            .collect();
        for w in writes {
            match w {
                Write::Delete(n) => {
                    held.remove(n);
                }
                Write::Apply(s) => {
                    let mut s = (**s).clone();
                    // The API server stamps taints.
                    for d in s.spec.devices.iter_mut().flatten() {
                        for t in d.taints.iter_mut().flatten() {
                            t.time_added
                                .get_or_insert(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
                        }
                    }
                    held.insert(s.metadata.name.clone().unwrap(), s);
                }
            }
        }
        held.into_values().collect()
    }

    #[test]
    fn a_pool_is_cut_at_the_limit_and_generations_follow_the_consumers_rule() {
        // 8 rails x 64 VFs: 8 slices of 64.
        let all: Vec<Device> = (0..512).map(dev).collect();
        let w = plan(&owner(), all.clone(), &[]);
        assert_eq!(w.len(), 8);
        let held = after(&[], &w);
        assert!(held.iter().all(|s| s.spec.pool.generation == 1
            && s.spec.pool.resource_slice_count == 8
            && s.spec.devices.as_ref().unwrap().len() == 64));
        assert!(
            plan(&owner(), all.clone(), &held).is_empty(),
            "nothing changed"
        );

        // One device tainted: one update, same generation.
        let mut tainted = all.clone();
        tainted[70].taints = Some(vec![DeviceTaint {
            key: "roce.spinel.dev/LinkDown".into(),
            effect: "NoSchedule".into(),
            value: None,
            time_added: None,
        }]);
        let w = plan(&owner(), tainted.clone(), &held);
        assert_eq!(w.len(), 1);
        let held = after(&held, &w);
        assert!(held.iter().all(|s| s.spec.pool.generation == 1));
        assert!(
            plan(&owner(), tainted.clone(), &held).is_empty(),
            "the stamped time counts as the same taint"
        );

        // A whole NIC tainted (two slices): the generation moves and every slice is rewritten.
        let taint = tainted[70].taints.clone();
        for d in &mut tainted[64..192] {
            d.taints.clone_from(&taint);
        }
        let w = plan(&owner(), tainted.clone(), &held);
        assert_eq!(w.len(), 8);
        let held = after(&held, &w);
        assert!(held.iter().all(|s| s.spec.pool.generation == 2));

        // VFs removed (sriov_numvfs lowered): the pool shrinks, the extra slice is deleted.
        let fewer: Vec<Device> = tainted[..100].to_vec();
        let w = plan(&owner(), fewer.clone(), &held);
        assert!(
            matches!(&w[0], Write::Delete(n) if n.ends_with("-2")),
            "{w:?}"
        );
        let held = after(&held, &w);
        assert_eq!(held.len(), 2);
        assert!(
            held.iter()
                .all(|s| s.spec.pool.generation == 3 && s.spec.pool.resource_slice_count == 2)
        );
        // No devices at all: the pool is withdrawn.
        let held = after(&held, &plan(&owner(), Vec::new(), &held));
        assert!(held.is_empty());
    }

    #[test]
    fn foreign_and_stale_slices_are_deleted_and_a_lost_owner_is_restored() {
        let held = after(&[], &plan(&owner(), (0..3).map(dev).collect(), &[]));
        let mut stale = held[0].clone();
        stale.metadata.name = Some("n1-roce.spinel.dev-7".into());
        let mut orphan = held[0].clone();
        orphan.metadata.owner_references = None;
        let w = plan(&owner(), (0..3).map(dev).collect(), &[orphan, stale]);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0], Write::Delete("n1-roce.spinel.dev-7".into()));
        assert!(matches!(&w[1], Write::Apply(s) if s.spec.pool.generation == 1));
    }
}
