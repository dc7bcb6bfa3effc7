//! `spinel-fabric-controller`: see the library's documentation. This file wires flags,
//! logging, the API client, the election, the watches and the loop together, and stops on
//! SIGTERM or SIGINT: writing stops first, then the lease is released.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use spinel_fabric_controller::config::{Config, Flags, LogFormat};
use spinel_fabric_controller::controller::{self, Controller, LoopTiming};
use spinel_fabric_controller::inputs::Inputs;
use spinel_fabric_controller::lease::{self, Leadership};
use spinel_fabric_controller::publish::Writer;
use spinel_fabric_controller::watch::{self, Sources};
use tokio::sync::{mpsc, watch as channel};

fn main() -> ExitCode {
    let flags = Flags::parse();
    init_logging(&flags);
    let config = match Config::from_flags(&flags) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("invalid configuration: {e:#}");
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

fn init_logging(flags: &Flags) {
    let filter = tracing_subscriber::EnvFilter::try_new(&flags.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match flags.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.with_ansi(false).init(),
    }
}

async fn client(flags: &Flags) -> anyhow::Result<kube::Client> {
    let cfg = match &flags.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::incluster().context("not in a cluster: pass --kubeconfig")?,
    };
    Ok(kube::Client::try_from(cfg)?)
}

async fn run(flags: Flags, config: Config) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    // Handlers first: a SIGTERM arriving later must release the lease, not kill us.
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let client = client(&flags).await?;
    tracing::info!(identity = %config.identity, "starting");

    let (stop_tx, stop_rx) = channel::channel(false);
    let (leading_tx, leading_rx) = channel::channel(false);
    let leadership = Leadership::default();
    let elector = tokio::spawn(lease::run(
        Api::<Lease>::namespaced(client.clone(), &flags.namespace),
        flags.lease_name.clone(),
        config.identity.clone(),
        config.lease,
        leadership.clone(),
        leading_tx,
        stop_rx.clone(),
    ));
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
        config.identity.clone(),
        leadership.clone(),
        flags.write_concurrency,
    );
    let timing = LoopTiming {
        resync: config.resync,
        max_backoff: Duration::from_secs(30),
    };
    let mut main_loop = tokio::spawn(controller::run(
        ctrl, rx, writer, leading_rx, stop_rx, timing,
    ));
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
        _ = int.recv() => tracing::info!("SIGINT: stopping"),
        _ = &mut main_loop => tracing::error!("the controller loop ended"),
    }
    let _ = stop_tx.send(true);
    // Writing ends before the lease goes, so no write can follow the release.
    main_loop.abort();
    let _ = main_loop.await;
    for w in watches {
        w.abort();
    }
    let _ = elector.await;
    Ok(())
}
