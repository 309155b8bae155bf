//! `soak`: the proxy and the watcher under a long run of reloads with real
//! clients, reporting what was lost, what each reload did and how the
//! processes' memory and file descriptors moved. `scripts/soak` builds and
//! runs it; `--help` says how.
//!
//! - [`args`]: the command line
//! - [`plan`]: the changes published, and what each must lead to (pure)
//! - [`outcome`]: publishing one change and awaiting its outcome
//! - [`monitor`]: `/proc` sampling and the connection probe
//! - [`metrics`]: Prometheus text, summed by label
//! - [`run`]: the processes, the loop, the collection
//! - [`edges`]: SIGHUPs and concurrent reloads meanwhile, SIGTERM at the end
//! - [`checks`]: the verdict, check by check
//! - [`report`]: what was collected and the verdict, as JSON and a table
//! - [`context`]: the machine and the commit measured

use std::process::ExitCode;

mod args;
mod checks;
mod context;
mod edges;
mod excerpt;
mod metrics;
mod monitor;
mod outcome;
mod plan;
mod report;
mod run;

fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{}", args::HELP);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("soak: {e}\n\n{}", args::HELP);
            return ExitCode::from(2);
        }
    };
    // Every process started is owned by a guard inside `run`: they are all
    // ended, by PID, before it returns or while a panic unwinds.
    let collected = run::run(&args);
    let checks = checks::checks(&collected, &args);
    let json = report::json(&collected, &args, &checks);
    let path = args.out.join("report.json");
    let text = serde_json::to_string_pretty(&json).expect("report as JSON");
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("soak: cannot write {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    print!("{}", report::table(&json));
    println!("report: {}", path.display());
    if json["passed"] == true {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
