//! Programs built on the namespace test harness (`spinel-netns-tests`): `spinel-demo`, the CNI
//! walk-through, and `cni-bench`, spinel against host-device and the kernel's floor.
