//! The exit-status convention every Sluice binary follows, and the one
//! place a program's result becomes a [`std::process::ExitCode`]:
//!
//! - 0: done (stopped on SIGTERM, or everything checked is valid)
//! - 1: a configuration is invalid, or the program failed
//! - 2: bad usage or I/O: a file that cannot be read, a port that cannot be
//!   bound, no async runtime (clap's own usage errors are 2 as well)

use std::fmt::Display;
use std::process::ExitCode;

/// An exit status of the convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done, or valid.
    Ok,
    /// 1: invalid, or failed.
    Invalid,
    /// 2: bad usage, or I/O.
    Usage,
}

impl Exit {
    /// The number the process exits with.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Invalid => 1,
            Exit::Usage => 2,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// A program's error knows which status it stands for.
pub trait ExitStatus: Display {
    /// The status to exit with.
    fn exit(&self) -> Exit;
}

/// Ends a program: `Ok` is 0; an error is logged (its message as the
/// `error` field) and exits with its own status.
pub fn report<E: ExitStatus>(result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => Exit::Ok.into(),
        Err(e) => {
            tracing::error!(error = %e, "exiting");
            e.exit().into()
        }
    }
}

/// Builds the async runtime a binary runs on and runs `main` on it; a
/// runtime that cannot start is an I/O failure (2).
pub fn block_on<F>(threads: Threads, main: F) -> ExitCode
where
    F: Future<Output = ExitCode>,
{
    let mut builder = match threads {
        Threads::One => tokio::runtime::Builder::new_current_thread(),
        Threads::Many => tokio::runtime::Builder::new_multi_thread(),
    };
    match builder.enable_all().build() {
        Ok(runtime) => runtime.block_on(main),
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            Exit::Usage.into()
        }
    }
}

/// Which runtime [`block_on`] builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// The current-thread runtime.
    One,
    /// The multi-threaded runtime, one worker per core.
    Many,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Unreadable;

    impl Display for Unreadable {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("cannot read")
        }
    }

    impl ExitStatus for Unreadable {
        fn exit(&self) -> Exit {
            Exit::Usage
        }
    }

    #[test]
    fn the_codes_are_the_convention() {
        assert_eq!(
            [Exit::Ok, Exit::Invalid, Exit::Usage].map(Exit::code),
            [0, 1, 2]
        );
        assert_eq!(report::<Unreadable>(Ok(())), ExitCode::SUCCESS);
        assert_eq!(report(Err(Unreadable)), ExitCode::from(2));
    }

    #[test]
    fn block_on_runs_the_program_on_either_runtime() {
        for threads in [Threads::One, Threads::Many] {
            let code = block_on(threads, async {
                tokio::task::yield_now().await;
                Exit::Invalid.into()
            });
            assert_eq!(code, ExitCode::from(1));
        }
    }
}
