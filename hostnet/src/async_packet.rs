//! Packet sockets for tokio daemons: readiness comes from the reactor, I/O from
//! [`PacketSocket`]. The socket is opened as usual (inside its namespace, from a plain
//! thread), then handed to the runtime; no namespace is ever entered on a worker thread.

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use crate::packet::{PacketError, PacketSocket, Received};

/// A [`PacketSocket`] whose receives can be awaited.
#[derive(Debug)]
pub struct AsyncPacketSocket {
    inner: AsyncFd<PacketSocket>,
}

impl AsyncPacketSocket {
    /// Registers `socket` with the current tokio runtime (call from inside it).
    pub fn new(socket: PacketSocket) -> Result<Self, PacketError> {
        let ifname = socket.ifname().to_owned();
        #[allow(unsafe_code)]
        // SAFETY: a PacketSocket owns its descriptor (an OwnedFd it never replaces) for its
        // whole life, and as_raw_fd always returns that descriptor; the AsyncFd owns the
        // socket, so the descriptor outlives the registration.
        let registered = unsafe { AsyncFd::register_with_interest(socket, Interest::READABLE) };
        registered
            .map(|inner| Self { inner })
            .map_err(|e| PacketError::Io {
                operation: "register with the runtime",
                ifname,
                source: std::io::Error::from(e),
            })
    }

    /// The socket itself (its interface name, index and MAC).
    pub fn get_ref(&self) -> &PacketSocket {
        self.inner.get_ref()
    }

    /// Waits for a frame and reads it into `buf`.
    pub async fn recv(&self, buf: &mut [u8]) -> Result<Received, PacketError> {
        loop {
            let mut guard = self
                .inner
                .readable()
                .await
                .map_err(|source| PacketError::Io {
                    operation: "wait for a frame",
                    ifname: self.get_ref().ifname().to_owned(),
                    source,
                })?;
            match self.get_ref().try_recv(buf)? {
                Some(received) => return Ok(received),
                None => guard.clear_ready(),
            }
        }
    }

    /// Sends one complete Ethernet frame.
    pub fn send(&self, frame: &[u8]) -> Result<(), PacketError> {
        self.get_ref().send(frame)
    }
}
