//! Certificate lifetimes on the command line: the project's durations
//! (`sluice_process::duration`, `500ms` to `24h`), or whole days (`90d`),
//! since certificates live for weeks and years.

use std::time::Duration;

use sluice_process::duration::{DurationError, parse_positive_flag};

/// The longest lifetime accepted: 100 years.
const MAX_DAYS: u64 = 36_500;

/// Parses `90d`, `3650d`, or any positive duration flag (`10s`, `12h`).
pub fn parse_lifetime(s: &str) -> Result<Duration, String> {
    if let Some(days) = s.strip_suffix('d') {
        let n: u64 = days
            .parse()
            .ok()
            .filter(|_| days.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                format!(
                    "{s:?} is not a lifetime: write whole days (e.g. 90d) or a duration (e.g. 12h)"
                )
            })?;
        return match n {
            0 => Err(DurationError::Zero(s.to_owned()).to_string()),
            1..=MAX_DAYS => Ok(Duration::from_secs(n * 86_400)),
            _ => Err(format!("{s:?} is longer than the maximum of {MAX_DAYS}d")),
        };
    }
    parse_positive_flag(s).map_err(|e| match e {
        DurationError::TooLong(_) => format!("{e}; write longer lifetimes in days (e.g. 90d)"),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_durations_parse() {
        assert_eq!(parse_lifetime("90d"), Ok(Duration::from_secs(90 * 86_400)));
        assert_eq!(parse_lifetime("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_lifetime("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(
            parse_lifetime("36500d"),
            Ok(Duration::from_secs(36_500 * 86_400))
        );
    }

    #[test]
    fn bad_lifetimes_say_how_to_write_them() {
        assert_eq!(
            parse_lifetime("48h").unwrap_err(),
            "\"48h\" is longer than the maximum of 24h; write longer lifetimes in days (e.g. 90d)"
        );
        assert_eq!(
            parse_lifetime("0d").unwrap_err(),
            "\"0d\" is zero: it must be longer than 0s"
        );
        assert_eq!(
            parse_lifetime("0s").unwrap_err(),
            "\"0s\" is zero: it must be longer than 0s"
        );
        assert_eq!(
            parse_lifetime("36501d").unwrap_err(),
            "\"36501d\" is longer than the maximum of 36500d"
        );
        for bad in [
            "d",
            "-1d",
            "+1d",
            "1.5d",
            "99999999999999999999999d",
            "ninety",
        ] {
            assert!(parse_lifetime(bad).is_err(), "{bad}");
        }
        assert!(parse_lifetime("+1d").unwrap_err().contains("whole days"));
    }
}
