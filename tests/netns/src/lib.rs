//! Harness for Spinel's namespace test tier.
//!
//! Every test builds its world in a [`Sandbox`]: a private set of network namespaces with
//! unique paths, so tests run in parallel and never touch the machine's own network. Dropping
//! the sandbox (also while unwinding from a failed assertion) kills its processes and deletes
//! its namespaces; a new sandbox first sweeps what killed test runs left behind.

// A test harness fails loudly: panicking on setup errors is its contract.
#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod agent;
pub mod cluster;
pub mod cni;
pub mod fabric;
pub mod iproute2;
pub mod k8s;
pub mod live_fabric;
pub mod lldpd;
pub mod loopback;
pub mod multus;
pub mod node;
pub mod sandbox;
pub mod sched;

pub use node::SimNode;
pub use sandbox::Sandbox;

/// Fails the test loudly unless it runs as root: this tier needs real namespaces.
pub fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the netns test tier needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN); run ./scripts/test.sh as root"
    );
}

/// Fails the test loudly unless `tool` is on `PATH`; names the Debian package to install.
pub fn require_tool(tool: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "this test needs `{tool}`: apt-get install {package} (./scripts/install-deps.sh test does)"
    );
}
