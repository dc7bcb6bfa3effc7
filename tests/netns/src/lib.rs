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
pub mod dra;
pub mod iproute2;
pub mod k8s;
pub mod kube_node;
pub mod live_fabric;
pub mod lldp_fabric;
pub mod lldpd;
pub mod loopback;
pub mod multus;
pub mod node;
pub mod sandbox;
pub mod sched;

pub use node::SimNode;
pub use sandbox::Sandbox;

/// Median, p90 and max of `v` (sorted in place), in ms: the benchmarks' one summary line.
pub fn summary(v: &mut [std::time::Duration]) -> String {
    v.sort();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!(
        "median {:.2} ms, p90 {:.2} ms, max {:.2} ms (n={})",
        ms(at(0.5)),
        ms(at(0.9)),
        ms(v[v.len() - 1]),
        v.len()
    )
}

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

/// A free loopback port (released again: the caller binds it soon after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `GET path` on `127.0.0.1:port` (HTTP/1.1, plain): (status code, body); `None` when
/// nothing listens or the answer is not HTTP.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: spinel\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Some((code, body))
}
