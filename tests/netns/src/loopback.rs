//! [`LoopbackBridge`]: the test's own `127.0.0.1:PORT`, reachable at `127.0.0.1:PORT` inside a
//! test namespace, so a component run there (Multus in a simulated node) reaches the harness's
//! API server at the address its kubeconfig and the server's certificate name. Connections are
//! accepted in the namespace and forwarded from the test's namespace; nothing else crosses.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use hostnet::netns::NetNs;

/// Forwards one port from inside a namespace to the test's loopback; stops on drop.
pub struct LoopbackBridge {
    listener: Arc<TcpListener>,
}

impl LoopbackBridge {
    /// Listens on `127.0.0.1:port` inside the namespace at `netns` (its loopback must be up).
    pub fn new(netns: &std::path::Path, port: u16) -> Self {
        Self::at(netns, SocketAddr::from(([127, 0, 0, 1], port)), port)
    }

    /// Listens on `listen` inside the namespace at `netns` (the address must be one of the
    /// namespace's) and forwards to the test's `127.0.0.1:port`: e.g. a node's
    /// `10.96.0.1:443`, the `kubernetes` Service's address that in-cluster clients dial, where
    /// kube-proxy would forward to the API server.
    pub fn at(netns: &std::path::Path, listen: SocketAddr, port: u16) -> Self {
        let ns = NetNs::open(netns).unwrap_or_else(|e| panic!("open {}: {e}", netns.display()));
        let listener = ns
            .run(|| TcpListener::bind(listen))
            .unwrap_or_else(|e| panic!("enter {}: {e}", netns.display()))
            .unwrap_or_else(|e| panic!("listen on {listen} in {}: {e}", netns.display()));
        let listener = Arc::new(listener);
        let accepting = Arc::clone(&listener);
        // The accepting thread is the test's, so its connects leave from the test's namespace.
        std::thread::spawn(move || {
            while let Ok((inside, _)) = accepting.accept() {
                std::thread::spawn(move || {
                    if let Ok(outside) = TcpStream::connect(("127.0.0.1", port)) {
                        splice(inside, outside);
                    }
                });
            }
        });
        Self { listener }
    }
}

/// Copies both ways until either side closes.
fn splice(a: TcpStream, b: TcpStream) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    let one = std::thread::spawn(move || pump(a, b2));
    pump(b, a2);
    let _ = one.join();
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

impl Drop for LoopbackBridge {
    fn drop(&mut self) {
        // Wakes the accepting thread (accept fails on a shut-down socket), which then drops
        // the listener and with it the last reference into the namespace.
        let _ =
            nix::sys::socket::shutdown(self.listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
    }
}
