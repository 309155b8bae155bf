//! `sluice-webhook`: parse the command line, set up logging, run the
//! webhook until SIGTERM, map the outcome to an exit code (0 stopped
//! cleanly, 2 could not start).

use std::process::ExitCode;

use clap::Parser;
use sluice_webhook::cli::{Args, LogFormat};
use sluice_webhook::run;

const EXIT_STARTUP: u8 = 2;

fn main() -> ExitCode {
    let args = Args::parse();
    init_tracing(args.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::from(EXIT_STARTUP);
        }
    };
    match runtime.block_on(run::run(args.options(), run::signals())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "not starting");
            ExitCode::from(EXIT_STARTUP)
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
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .init(),
    }
}
