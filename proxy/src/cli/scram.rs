//! `sluice-proxy scram-credential`: a line of the SCRAM credentials file
//! (`authentication.sasl.credentialsFile`) for one user, from a password
//! read on standard input, never from the command line (which other users
//! of the host may read in `/proc`).

use std::io::{BufRead, Write};

use ring::rand::{SecureRandom, SystemRandom};

use super::{EXIT_USAGE, EXIT_VALID};
use crate::config::identity::scram_file::{self, MAX_ITERATIONS, MIN_ITERATIONS};
use crate::config::sasl::SaslMechanism;
use crate::dataplane::scram_server::{derive, hash_of};

/// Arguments of `scram-credential`.
#[derive(Debug, clap::Args)]
pub struct ScramArgs {
    /// The user name: the principal a client that logs in as it gets.
    #[arg(long, value_name = "NAME")]
    pub user: String,
    /// The mechanisms to write a line for (repeat the flag, or give a
    /// comma-separated list). Default: both SCRAM-SHA-512 and SCRAM-SHA-256.
    #[arg(long = "mechanism", value_name = "MECHANISM", value_delimiter = ',')]
    pub mechanisms: Vec<String>,
    /// PBKDF2 rounds: each login costs the proxy this many; more slows an
    /// offline attack on a stolen file. Between 4096 and 65536.
    #[arg(long, default_value_t = 8192)]
    pub iterations: u32,
}

/// Reads the password (the first line of `input`, without its line ending)
/// and prints a credentials line per mechanism to `out`.
pub(super) fn run(
    args: &ScramArgs,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    match lines(args, input) {
        Ok(lines) => {
            for line in lines {
                let _ = writeln!(out, "{line}");
            }
            EXIT_VALID
        }
        Err(why) => {
            let _ = writeln!(err, "sluice-proxy scram-credential: {why}");
            EXIT_USAGE
        }
    }
}

fn lines(args: &ScramArgs, input: &mut dyn BufRead) -> Result<Vec<String>, String> {
    if args.user.is_empty()
        || args
            .user
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("the user name must be non-empty, without spaces".into());
    }
    if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&args.iterations) {
        return Err(format!(
            "--iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}"
        ));
    }
    let mut mechanisms = Vec::new();
    for name in &args.mechanisms {
        match SaslMechanism::PASSWORDS.iter().find(|m| m.as_str() == name) {
            Some(m) if *m != SaslMechanism::Plain => mechanisms.push(*m),
            _ => return Err(format!("{name:?} is not SCRAM-SHA-256 or SCRAM-SHA-512")),
        }
    }
    if mechanisms.is_empty() {
        mechanisms = vec![SaslMechanism::ScramSha512, SaslMechanism::ScramSha256];
    }
    let mut password = String::new();
    input
        .read_line(&mut password)
        .map_err(|e| format!("reading the password from standard input: {e}"))?;
    let password = password.trim_end_matches(['\n', '\r']);
    if password.is_empty() {
        return Err("no password on standard input (give it as its first line)".into());
    }
    let rng = SystemRandom::new();
    let mut out = Vec::new();
    for mechanism in mechanisms {
        let mut salt = [0u8; 16];
        rng.fill(&mut salt)
            .map_err(|_| "no random bytes for the salt".to_owned())?;
        let hash = hash_of(mechanism).ok_or("not SCRAM")?;
        let keys = derive(hash, password.as_bytes(), &salt, args.iterations);
        out.push(scram_file::line(&args.user, mechanism, &keys));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::identity::ScramUsers;
    use crate::dataplane::scram_server::plain;

    fn args(mechanisms: &[&str]) -> ScramArgs {
        ScramArgs {
            user: "alice".into(),
            mechanisms: mechanisms.iter().map(|m| (*m).to_owned()).collect(),
            iterations: 4096,
        }
    }

    #[test]
    fn a_written_line_checks_the_password_it_was_made_from() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(&args(&[]), &mut &b"s3cret\n"[..], &mut out, &mut err);
        assert_eq!(code, EXIT_VALID);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains("s3cret"));
        let users = ScramUsers::parse(&text).unwrap();
        assert_eq!(plain(&users, b"\0alice\0s3cret", b"k").unwrap(), "alice");
        assert!(plain(&users, b"\0alice\0S3cret", b"k").is_err());

        for (a, input, why) in [
            (args(&["PLAIN"]), &b"x\n"[..], "is not SCRAM"),
            (args(&[]), b"\n", "no password"),
            (
                ScramArgs {
                    iterations: 10,
                    ..args(&[])
                },
                b"x\n",
                "--iterations",
            ),
            (
                ScramArgs {
                    user: "a b".into(),
                    ..args(&[])
                },
                b"x\n",
                "user name",
            ),
        ] {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            assert_eq!(run(&a, &mut &input[..], &mut out, &mut err), EXIT_USAGE);
            let err = String::from_utf8(err).unwrap();
            assert!(err.contains(why), "{err}");
            assert!(out.is_empty());
        }
    }
}
