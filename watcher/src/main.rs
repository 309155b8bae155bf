//! `sluice-watcher`: parse the command line, set up logging, run the loop and
//! the health/metrics server until SIGTERM or SIGINT. Exit status: 0
//! stopped, 1 the watch loop ended, 2 could not start. `sluice-watcher
//! fleet` prints every pod's rollout state (exit 1 when a rollout is halted).

use std::process::ExitCode;

use clap::Parser;
use sluice_process::exit::{self, Threads};
use sluice_watcher::cli::{Args, Command, Format};
use sluice_watcher::{app, fleet};

fn main() -> ExitCode {
    let args = Args::parse();
    sluice_process::init_tracing(args.log_format, "info");
    // One crypto provider for the process (ring), installed before any TLS
    // client (kube's, or reqwest's when another crate enables its TLS) is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One thread is plenty for a sidecar that mostly sleeps.
    exit::block_on(Threads::One, async {
        match &args.command {
            Some(Command::Fleet(f)) => exit::report(
                fleet::view::run(
                    f.peers.source(),
                    f.proxy_ca.as_deref(),
                    f.timeout,
                    f.format == Format::Json,
                )
                .await,
            ),
            None => exit::report(app::run(args.options()).await),
        }
    })
}
