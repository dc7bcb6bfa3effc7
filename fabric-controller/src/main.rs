//! `spinel-fabric-controller`: see the library's documentation. Wiring only: flags, the
//! runtime shell from `spinel-kube` (logging, client, signals, election, probes), the watches
//! and the loop. On SIGTERM or SIGINT writing stops first, then the Lease is released.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser as _;
use spinel_fabric_controller::config::{Config, Flags};
use spinel_fabric_controller::controller::{self, Controller, LoopTiming};
use spinel_fabric_controller::inputs::Inputs;
use spinel_fabric_controller::metrics::Metrics;
use spinel_fabric_controller::publish::Writer;
use spinel_fabric_controller::watch::{self, Sources};
use spinel_kube::lease::Election;
use spinel_kube::shutdown::Shutdown;
use spinel_kube::{client, logging, probes};
use tokio::sync::mpsc;

fn main() -> ExitCode {
    let flags = Flags::parse();
    logging::init(&flags.log);
    let config = match Config::from_flags(&flags) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("invalid configuration: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(flags, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(flags: Flags, config: Config) -> anyhow::Result<()> {
    // Handlers first: a SIGTERM arriving later must release the Lease, not kill us.
    let shutdown = Shutdown::register().context("cannot handle SIGTERM and SIGINT")?;
    let client = client::client(flags.kubeconfig.as_deref()).await?;
    tracing::info!(identity = %config.lease.identity, "starting");
    let metrics = Arc::new(Metrics::new());
    let server = match config.metrics_address {
        Some(address) => Some(
            probes::serve(address, probes::router(metrics.clone()), shutdown.clone())
                .await
                .with_context(|| format!("cannot serve probes on {address}"))?,
        ),
        None => None,
    };

    let election = Election::start(client.clone(), config.lease.clone());
    let (tx, rx) = mpsc::unbounded_channel();
    let sources = Sources {
        namespace: flags.namespace.clone(),
        config_map: config.config_map.clone(),
        dir: config.dir.clone(),
        topology: config.settings.topology_name.clone(),
        fabric: spinel_api::crd::FABRIC_NAME.to_owned(),
    };
    let watches = watch::spawn(&client, &sources, &tx);
    drop(tx);
    let ctrl = Controller::new(
        config.settings.clone(),
        spinel_api::crd::FABRIC_NAME.to_owned(),
        Inputs::new(config.rail_key),
        config.config_map.is_some(),
        config.dir.is_some(),
    );
    let writer = Writer::new(
        client,
        config.lease.identity.clone(),
        election.leadership(),
        flags.write_concurrency,
    );
    let timing = LoopTiming {
        resync: config.resync,
        max_backoff: Duration::from_secs(30),
    };
    let mut main_loop = tokio::spawn(controller::run(
        ctrl,
        rx,
        writer,
        election.leading(),
        shutdown.receiver(),
        timing,
        metrics,
    ));
    // The loop also watches the shutdown signal, so both may be ready at once: a loop that
    // ended is never polled again, and only an end without a signal is an error.
    let ended = tokio::select! {
        () = shutdown.wait() => false,
        _ = &mut main_loop => true,
    };
    if ended && !shutdown.is_stopping() {
        tracing::error!("the controller loop ended");
    }
    shutdown.trigger();
    // Writing ends before the Lease goes, so no write can follow the release.
    if !ended {
        main_loop.abort();
        let _ = main_loop.await;
    }
    for w in watches {
        w.abort();
    }
    election.stop().await;
    if let Some(server) = server {
        server.await.context("the probe server")??;
    }
    Ok(())
}
