//! `sluice-watcher`: parse the command line, set up logging, run the loop and
//! the health/metrics server until SIGTERM or SIGINT.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use sluice_watcher::cli::{Args, LogFormat};
use sluice_watcher::client::ProxyClient;
use sluice_watcher::http::{HttpState, router};
use sluice_watcher::metrics::Metrics;
use sluice_watcher::run::{Heartbeat, Settings, run};
use sluice_watcher::schedule;
use sluice_watcher::volume::WatchOptions;

fn main() -> ExitCode {
    let args = Args::parse();
    init_tracing(args.log_format);
    // One crypto provider for the process (ring), installed before any TLS
    // client (kube's, or reqwest's when another crate enables its TLS) is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One thread is plenty for a sidecar that mostly sleeps.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(serve(args))
}

async fn serve(args: Args) -> ExitCode {
    let token = match &args.token_file {
        None => None,
        Some(path) => match std::fs::read_to_string(path) {
            Ok(t) => Some(t.trim().to_owned()),
            Err(e) => {
                tracing::error!(file = %path.display(), error = %e, "cannot read the token file");
                return ExitCode::from(2);
            }
        },
    };
    let client = match ProxyClient::new(&args.proxy, token) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the HTTP client");
            return ExitCode::from(2);
        }
    };
    let pod = std::env::var("POD_NAME").ok().or_else(|| {
        std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|h| h.trim().to_owned())
    });
    let slot = schedule::slot(args.slot, pod.as_deref(), args.slots);
    let settings = Settings {
        path: args.path.clone(),
        watch: WatchOptions {
            poll: args.poll,
            poll_interval: args.poll_interval,
            resync: args.resync,
            debounce: args.debounce,
        },
        slot,
        stagger: args.stagger,
        jitter: args.jitter,
        retry_deadline: args.retry_deadline,
    };
    let metrics = Arc::new(Metrics::new());
    let heartbeat = Arc::new(Heartbeat::default());
    let listener = match tokio::net::TcpListener::bind(args.metrics_listen).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(listen = %args.metrics_listen, error = %e, "cannot bind the metrics listener");
            return ExitCode::from(2);
        }
    };
    let state = HttpState {
        metrics: Arc::clone(&metrics),
        heartbeat: Arc::clone(&heartbeat),
        stall_after: 2 * args.resync.as_secs() + args.retry_deadline.as_secs() + 30,
    };
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router(state)).await {
            tracing::error!(error = %e, "metrics server failed");
        }
    });
    tracing::info!(
        path = %args.path.display(),
        proxy = %args.proxy,
        slot = slot.index,
        slot_source = ?slot.source,
        stagger_ms = args.stagger.as_millis() as u64,
        jitter_ms = args.jitter.as_millis() as u64,
        poll = args.poll,
        "sluice-watcher started"
    );
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut t), Ok(mut i)) => {
                tokio::select! {
                    _ = t.recv() => {},
                    _ = i.recv() => {},
                }
            }
            _ => std::future::pending().await,
        }
    };
    let events = if args.events {
        match sluice_watcher::events::PodEvents::in_cluster().await {
            Ok(e) => Some(e),
            Err(e) => {
                tracing::warn!(error = %e, "Kubernetes Events are off");
                None
            }
        }
    } else {
        None
    };
    tokio::select! {
        () = run(settings, client, metrics, heartbeat, events) => ExitCode::from(1),
        () = terminate => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
    }
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}
