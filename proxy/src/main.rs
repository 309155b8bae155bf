//! `sluice-proxy`: parse the command line, run it, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = sluice_proxy::cli::Cli::parse();
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    sluice_proxy::cli::run(cli, &mut out, &mut err)
}
