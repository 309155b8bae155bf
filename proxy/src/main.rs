//! `sluice-proxy`: parse the command line; `check`, `diff` and
//! `scram-credential` print and exit; `run` sets up logging and runs the proxy until SIGTERM or SIGINT.
//! The exit status follows `sluice_process::exit`.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use sluice_process::exit::{self, Exit, Threads};
use sluice_proxy::cli::{self, Cli, Command, RunArgs};
use sluice_proxy::server::{self, RunError};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => cli::check(
            &args,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        ),
        Command::Diff(args) => cli::diff(
            &args,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        ),
        Command::ScramCredential(args) => cli::scram_credential(
            &args,
            &mut std::io::stdin().lock(),
            &mut std::io::stdout().lock(),
            &mut std::io::stderr().lock(),
        ),
        Command::Run(args) => {
            sluice_process::init_tracing(args.log_format, "info");
            args.splice.choose();
            if let Err(e) = args.start_connection_threads() {
                tracing::error!(error = %e, "cannot start the connection threads");
                return Exit::Usage.into();
            }
            exit::block_on(Threads::Many, run(args))
        }
    }
}

async fn run(args: RunArgs) -> ExitCode {
    match server::run(args.options()).await {
        Err(RunError::Invalid { path, errors }) => {
            // Each error as `check` prints it, then one log line.
            let mut err = std::io::stderr().lock();
            for e in &errors {
                let _ = writeln!(err, "{}", e.in_file(&path));
            }
            tracing::error!(config = %path, errors = errors.len(), "configuration is invalid; not starting");
            Exit::Invalid.into()
        }
        result => exit::report(result),
    }
}
