//! SIGTERM and SIGINT. Handlers are registered by [`Shutdown::register`] before a daemon
//! starts anything, so a signal that arrives early still stops it cleanly (an agent's shutdown
//! LLDPDU, a leader's Lease release) instead of killing it.

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// Turns true once a stop is asked for, by a signal or by [`Shutdown::trigger`].
#[derive(Clone, Debug)]
pub struct Shutdown {
    tx: std::sync::Arc<watch::Sender<bool>>,
    rx: watch::Receiver<bool>,
}

impl Shutdown {
    /// Registers the handlers (inside a Tokio runtime) and starts waiting for them.
    pub fn register() -> std::io::Result<Self> {
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let shutdown = Self::manual();
        let tx = std::sync::Arc::clone(&shutdown.tx);
        tokio::spawn(async move {
            let which = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            tracing::info!("{which}: stopping");
            let _ = tx.send(true);
        });
        Ok(shutdown)
    }

    /// A shutdown that only [`Shutdown::trigger`] sets off (tests, embedded use).
    pub fn manual() -> Self {
        let (tx, rx) = watch::channel(false);
        Self {
            tx: std::sync::Arc::new(tx),
            rx,
        }
    }

    /// Asks everything waiting on this to stop.
    pub fn trigger(&self) {
        let _ = self.tx.send(true);
    }

    /// Whether a stop was asked for.
    pub fn is_stopping(&self) -> bool {
        *self.rx.borrow()
    }

    /// Completes once a stop is asked for.
    pub async fn wait(&self) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|stop| *stop).await;
    }

    /// A receiver that turns true on stop, for loops that select on it.
    pub fn receiver(&self) -> watch::Receiver<bool> {
        self.rx.clone()
    }
}
