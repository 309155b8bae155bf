//! `sluice-proxy`: parse the command line, set up logging, run, map the
//! outcome to an exit code.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use sluice_proxy::cli::{Cli, Command, EXIT_INVALID, EXIT_USAGE, LogFormat, RunArgs};
use sluice_proxy::server::{self, RunError, RunOptions};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    match cli.command {
        Command::Check(args) => sluice_proxy::cli::check(&args, &mut out, &mut err),
        Command::Diff(args) => sluice_proxy::cli::diff(&args, &mut out, &mut err),
        Command::Run(args) => {
            drop((out, err));
            run(args)
        }
    }
}

fn run(args: RunArgs) -> ExitCode {
    init_tracing(args.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = runtime.block_on(server::run(RunOptions {
        config: args.config,
        persist: args.persist,
        admin_read_timeout: args.admin_read_timeout,
    }));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(RunError::Invalid { path, errors }) => {
            let mut err = std::io::stderr().lock();
            for e in &errors {
                let _ = writeln!(err, "{}", e.in_file(&path));
            }
            tracing::error!(config = %path, errors = errors.len(), "configuration is invalid; not starting");
            ExitCode::from(EXIT_INVALID)
        }
        Err(e @ RunError::Read { .. }) => {
            tracing::error!(error = %e, "not starting");
            ExitCode::from(EXIT_USAGE)
        }
        Err(e) => {
            tracing::error!(error = %e, "not starting");
            ExitCode::from(EXIT_INVALID)
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
