//! Dynamic Resource Allocation (`resource.k8s.io/v1`): what Spinel's DRA driver publishes and
//! what claims, DeviceClasses and Multus read.
//!
//! The fabric agent publishes, per node, one pool named after the node, split into
//! ResourceSlices of at most [`MAX_DEVICES_PER_SLICE`] devices: one device per RoCE VF (class
//! [`VF_CLASS`]) and, for shared-RDMA setups, one per PF ([`PF_CLASS`]). Each device carries
//! the standard PCIe attributes, the NIC's place in the fabric (rail, leaf, tier domains) and
//! its hardware facts; a NIC the agent finds unhealthy taints its devices
//! ([`taint_key`]). Attribute names are `<domain>/<id>`; in CEL a claim reads
//! `device.attributes["roce.spinel.dev"].rail`.

/// The driver's name (`ResourceSlice.spec.driver`, the kubelet plugin's registration name).
pub const DRIVER: &str = "roce.spinel.dev";

/// DeviceClass of the VFs (exclusive use: one pod, one VF).
pub const VF_CLASS: &str = "vf.roce.spinel.dev";

/// DeviceClass of the PFs in shared-RDMA setups (several pods share a PF's RDMA device).
pub const PF_CLASS: &str = "pf.roce.spinel.dev";

/// Devices per ResourceSlice: the API's limit for slices whose devices may carry taints
/// (`ResourceSliceMaxDevicesWithAdvancedFeatures`; 128 without). Spinel's devices get taints
/// when a NIC turns unhealthy, so slices are cut at 64 from the start and a taint never
/// reshuffles devices between slices.
pub const MAX_DEVICES_PER_SLICE: usize = 64;

/// The API's limit on attributes plus capacities per device.
pub const MAX_ATTRIBUTES_PER_DEVICE: usize = 32;

/// The API's limit on a string attribute's length.
pub const MAX_ATTRIBUTE_VALUE_LEN: usize = 64;

/// Standard attribute: the PCIe root complex of the device (`pci0000:00`), as
/// `k8s.io/dynamic-resource-allocation/deviceattribute` derives it from sysfs. Two devices
/// with the same value share a root (match a GPU and its NIC with it).
pub const ATTR_PCIE_ROOT: &str = "resource.kubernetes.io/pcieRoot";

/// Standard attribute: the device's PCI address (`0000:3b:00.2`).
pub const ATTR_PCI_BUS_ID: &str = "resource.kubernetes.io/pciBusID";

/// Standard attribute (KEP-6072): the NUMA node of the device (int), when the platform says.
pub const ATTR_NUMA_NODE: &str = "resource.kubernetes.io/numaNode";

/// Multus reads a device's PCI address from this attribute (multus-cni `pkg/draclient`).
pub const ATTR_MULTUS_DEVICE_ID: &str = "k8s.cni.cncf.io/deviceID";

/// Multus maps a device to the NetworkAttachmentDefinitions whose
/// `k8s.v1.cni.cncf.io/resourceName` annotation equals this attribute.
pub const ATTR_MULTUS_RESOURCE_NAME: &str = "k8s.cni.cncf.io/resourceName";

/// `vf` or `pf` (string).
pub const ATTR_KIND: &str = "roce.spinel.dev/kind";
/// The rail the NIC serves (int, from the node's `rail-<k>` labels and the NIC's LLDP leaf).
pub const ATTR_RAIL: &str = "roce.spinel.dev/rail";
/// The id of the leaf switch the NIC is cabled to (the fabric model's switch id).
pub const ATTR_LEAF: &str = "roce.spinel.dev/leaf";
/// The PF's netdev (string).
pub const ATTR_PF_NAME: &str = "roce.spinel.dev/pfName";
/// The VF's index on its PF (int; VFs only).
pub const ATTR_VF_INDEX: &str = "roce.spinel.dev/vfIndex";
/// The function's PCI address (string).
pub const ATTR_PCI_ADDRESS: &str = "roce.spinel.dev/pciAddress";
/// The function's RDMA device (`mlx5_3`).
pub const ATTR_RDMA_DEVICE: &str = "roce.spinel.dev/rdmaDevice";
/// The PF's link speed in Mbit/s (int), when its driver reports one.
pub const ATTR_LINK_SPEED: &str = "roce.spinel.dev/linkSpeedMbps";
/// The PF's MTU (int).
pub const ATTR_MTU: &str = "roce.spinel.dev/mtu";

/// Tiers published as attributes at most (`tier1` .. `tier8`): more than any fabric has.
pub const MAX_TIERS: u8 = 8;

/// Attribute naming the tier-`tier` fabric domain the NIC is in (string): `tier1` is the leaf
/// group (or leaf) as in the `fabric.spinel.dev/tier-1` node label, `tier2` the spine domain.
/// An attribute id is a C identifier, so the label's `tier-1` becomes `tier1`.
pub fn tier_attribute(tier: u8) -> String {
    format!("{DRIVER}/tier{tier}")
}

/// The taint key for an unhealthy NIC's devices: the health finding's reason under the
/// driver's domain (`roce.spinel.dev/LinkDown`), so a claim can tolerate one reason.
pub fn taint_key(reason: &str) -> String {
    format!("{DRIVER}/{reason}")
}

/// The Multus resource name of rail `rail`'s devices (`roce.spinel.dev/rail0`): a rail's
/// NetworkAttachmentDefinition names it in `k8s.v1.cni.cncf.io/resourceName`.
pub fn rail_resource_name(rail: u16) -> String {
    format!("{DRIVER}/rail{rail}")
}

/// The device name of the VF at PCI address `pci` (`vf-0000-3b-00-2`): stable across netdev
/// renames, a DNS label as the API requires.
pub fn vf_device_name(pci: &str) -> String {
    format!("vf-{}", pci.replace([':', '.'], "-"))
}

/// The device name of the PF at PCI address `pci` (`pf-0000-3b-00-0`).
pub fn pf_device_name(pci: &str) -> String {
    format!("pf-{}", pci.replace([':', '.'], "-"))
}

/// The name of slice `index` of `node`'s pool: `<node>-roce.spinel.dev-<index>`; a node name
/// too long for that is cut and followed by a hash of the whole name, so names stay unique,
/// valid DNS subdomains of at most 253 characters.
pub fn slice_name(node: &str, index: usize) -> String {
    let full = format!("{node}-{DRIVER}-{index}");
    if full.len() <= 253 {
        return full;
    }
    let hash = node.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let cut = node[..200.min(node.len())].trim_end_matches(['-', '.']);
    format!("{cut}-{hash:016x}-{DRIVER}-{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_the_api_accepts() {
        assert_eq!(vf_device_name("0000:3b:00.2"), "vf-0000-3b-00-2");
        assert_eq!(pf_device_name("0000:3b:00.0"), "pf-0000-3b-00-0");
        assert_eq!(tier_attribute(1), "roce.spinel.dev/tier1");
        assert_eq!(taint_key("LinkDown"), "roce.spinel.dev/LinkDown");
        assert_eq!(rail_resource_name(3), "roce.spinel.dev/rail3");
        assert_eq!(slice_name("gpu-01", 2), "gpu-01-roce.spinel.dev-2");
        let long = "a".repeat(250);
        let name = slice_name(&long, 0);
        assert!(name.len() <= 253, "{}", name.len());
        assert_ne!(name, slice_name(&format!("{}b", "a".repeat(249)), 0));
        // Every id under the driver's domain is a C identifier of at most 32 characters.
        for attr in [
            ATTR_KIND,
            ATTR_RAIL,
            ATTR_LEAF,
            ATTR_PF_NAME,
            ATTR_VF_INDEX,
            ATTR_PCI_ADDRESS,
            ATTR_RDMA_DEVICE,
            ATTR_LINK_SPEED,
            ATTR_MTU,
            &tier_attribute(MAX_TIERS),
        ] {
            let (domain, id) = attr.split_once('/').unwrap();
            assert_eq!(domain, DRIVER);
            assert!(id.len() <= 32 && id.bytes().all(|b| b.is_ascii_alphanumeric()));
        }
    }
}
