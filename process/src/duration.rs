//! Durations as people write them, in the configuration and on every
//! command line: a whole number and one unit, `500ms`, `30s`, `2m`, `1h`.
//!
//! One parser and one formatter for the whole project, pure and without
//! dependencies (`sluice-config` uses it with the crate's `runtime` feature
//! off). Arithmetic is checked: a value too large for any clock is an
//! error, never a panic or a wrap-around.

use std::fmt;
use std::time::Duration;

/// Longest duration accepted anywhere, configuration or flag: a day. Every
/// wait in Sluice is seconds or minutes; a longer one is a typo, and
/// bounding it keeps `slot × stagger` and deadline sums far from overflow.
pub const MAX: Duration = Duration::from_secs(24 * 3600);

/// Why a text is not an acceptable duration. The messages are the
/// configuration's, which tests assert word for word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// Not a whole number followed by `ms`, `s`, `m` or `h`.
    Malformed(String),
    /// Longer than [`MAX`], including numbers too large to represent.
    TooLong(String),
    /// Zero where the wait must be positive (an interval, a timeout).
    Zero(String),
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Malformed(s) => write!(
                f,
                "{s:?} is not a duration: write a whole number and a unit, ms, s, m or h (e.g. 30s)"
            ),
            DurationError::TooLong(s) => {
                write!(f, "{s:?} is longer than the maximum of {}", format(MAX))
            }
            DurationError::Zero(s) => write!(f, "{s:?} is zero: it must be longer than 0s"),
        }
    }
}

impl std::error::Error for DurationError {}

/// Parses a whole number and one unit (`ms`, `s`, `m`, `h`), at most
/// [`MAX`]. Zero is accepted when written with a unit (`0s`); a bare `0`
/// is not (see [`parse_flag`]).
pub fn parse(s: &str) -> Result<Duration, DurationError> {
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| DurationError::Malformed(s.to_owned()))?;
    let (digits, unit) = s.split_at(split);
    let per_unit: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(DurationError::Malformed(s.to_owned())),
    };
    if digits.is_empty() {
        return Err(DurationError::Malformed(s.to_owned()));
    }
    // Only digits remain: a failed parse means more than u64 holds.
    let too_long = || DurationError::TooLong(s.to_owned());
    let n: u64 = digits.parse().map_err(|_| too_long())?;
    let millis = n.checked_mul(per_unit).ok_or_else(too_long)?;
    let d = Duration::from_millis(millis);
    if d > MAX {
        return Err(too_long());
    }
    Ok(d)
}

/// [`parse`] for a command-line flag (a clap `value_parser`): a bare `0`
/// also means zero, as the flags have always accepted.
pub fn parse_flag(s: &str) -> Result<Duration, DurationError> {
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    parse(s)
}

/// [`parse_flag`] for a flag where zero makes no sense (an interval that
/// would spin, a timeout that would fire at once): zero is refused.
pub fn parse_positive_flag(s: &str) -> Result<Duration, DurationError> {
    match parse_flag(s)? {
        d if d.is_zero() => Err(DurationError::Zero(s.to_owned())),
        d => Ok(d),
    }
}

/// Writes a duration the way it would be written in the configuration, in
/// the largest unit that divides it (`90s` is `90s`, `120s` is `2m`); whole
/// milliseconds only, anything finer is dropped.
pub fn format(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0 => "0s".to_owned(),
        _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
        _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
        _ if ms.is_multiple_of(1_000) => format!("{}s", ms / 1_000),
        _ => format!("{ms}ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unit_parses_and_formats_back() {
        for (text, ms) in [
            ("500ms", 500),
            ("30s", 30_000),
            ("2m", 120_000),
            ("1h", 3_600_000),
            ("24h", 86_400_000),
            ("1500ms", 1_500),
            ("90s", 90_000),
        ] {
            let d = parse(text).unwrap();
            assert_eq!(d, Duration::from_millis(ms), "{text}");
            assert_eq!(format(d), text);
        }
    }

    #[test]
    fn format_then_parse_is_the_identity_up_to_the_maximum() {
        let mut ms: u64 = 0;
        while ms <= 86_400_000 {
            let d = Duration::from_millis(ms);
            assert_eq!(parse(&format(d)), Ok(d), "{ms}ms");
            ms = ms * 3 + 7;
        }
        for ms in [
            1, 999, 1_000, 59_999, 60_000, 3_599_999, 3_600_000, 86_400_000,
        ] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse(&format(d)), Ok(d), "{ms}ms");
        }
    }

    #[test]
    fn larger_units_are_preferred_when_they_divide() {
        assert_eq!(format(Duration::from_millis(120_000)), "2m");
        assert_eq!(format(Duration::from_millis(7_200_000)), "2h");
        assert_eq!(format(Duration::from_millis(61_000)), "61s");
        assert_eq!(format(Duration::from_micros(1_500)), "1ms");
    }

    #[test]
    fn huge_values_are_errors_never_a_panic_or_a_wrap() {
        for text in [
            "25h",
            "1441m",
            "86400001ms",
            "99999999999h",
            "5124095576030431h",
            "18446744073709551615ms",
            "18446744073709551616ms",
            "99999999999999999999999999h",
        ] {
            assert_eq!(
                parse(text),
                Err(DurationError::TooLong(text.to_owned())),
                "{text}"
            );
            assert!(parse_flag(text).is_err(), "{text}");
        }
        assert_eq!(
            parse("48h").unwrap_err().to_string(),
            "\"48h\" is longer than the maximum of 24h"
        );
    }

    #[test]
    fn malformed_text_names_the_format() {
        for text in [
            "",
            "30",
            "s",
            "ms",
            "30 s",
            "1.5s",
            "-1s",
            "+1s",
            "30sec",
            "30S",
            "1h30m",
            " 30s",
            "30s ",
            "99999999999999999999x",
        ] {
            assert_eq!(
                parse(text),
                Err(DurationError::Malformed(text.to_owned())),
                "{text:?}"
            );
        }
        assert_eq!(
            parse("30 s").unwrap_err().to_string(),
            "\"30 s\" is not a duration: write a whole number and a unit, ms, s, m or h (e.g. 30s)"
        );
    }

    #[test]
    fn zero_needs_a_unit_in_the_configuration_and_not_on_flags() {
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(parse("0ms"), Ok(Duration::ZERO));
        assert_eq!(parse("0h"), Ok(Duration::ZERO));
        assert!(parse("0").is_err());
        assert_eq!(parse_flag("0"), Ok(Duration::ZERO));
        assert_eq!(parse_flag("0s"), Ok(Duration::ZERO));
        assert_eq!(format(Duration::ZERO), "0s");
    }

    #[test]
    fn positive_flags_refuse_zero_in_any_spelling() {
        for text in ["0", "0s", "0ms", "000m"] {
            assert_eq!(
                parse_positive_flag(text),
                Err(DurationError::Zero(text.to_owned())),
                "{text}"
            );
        }
        assert_eq!(parse_positive_flag("1ms"), Ok(Duration::from_millis(1)));
        assert!(matches!(
            parse_positive_flag("25h"),
            Err(DurationError::TooLong(_))
        ));
    }
}
