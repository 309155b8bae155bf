//! `sluice-webhook`: parse the command line, set up logging, run the
//! webhook until SIGTERM or SIGINT, map the outcome to an exit code (0
//! stopped cleanly, 2 could not start).

use std::process::ExitCode;

use clap::Parser;
use sluice_process::exit::{self, Threads};
use sluice_webhook::cli::Args;
use sluice_webhook::run;

fn main() -> ExitCode {
    let args = Args::parse();
    let options = args.options().unwrap_or_else(|e| e.exit());
    // The workspace's one crypto provider, also for kube's client
    // (--self-signed), which asks rustls for the process's default.
    let _ = rustls::crypto::ring::default_provider().install_default();
    sluice_process::init_tracing(args.log_format, "info");
    exit::block_on(Threads::Many, async {
        exit::report(run::run(options).await)
    })
}
