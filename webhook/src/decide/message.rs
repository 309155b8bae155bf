//! The denial message: a header, then one line per error exactly as
//! `sluice-proxy check` prints it (`proxy.yaml:14:7: path: message`), capped
//! so a configuration with hundreds of errors still gives a readable answer.

use sluice_config::ConfigProblem;

/// Longest error line kept whole; longer ones (a huge unknown key quoted back,
/// say) are cut with `…`.
pub const MAX_LINE_CHARS: usize = 1024;

/// The denial message for `errors` in the value under `key` of `what`
/// (`ConfigMap namespace/name`); `max_errors` 0 lists every error.
pub fn denial(what: &str, key: &str, errors: &[ConfigProblem], max_errors: usize) -> String {
    let n = errors.len();
    let plural = if n == 1 { "" } else { "s" };
    let mut out =
        format!("{key} in {what} is not a valid proxy configuration ({n} error{plural}):");
    let shown = if max_errors == 0 {
        n
    } else {
        n.min(max_errors)
    };
    for e in &errors[..shown] {
        out.push('\n');
        out.push_str(&cap(&e.in_file(key).to_string(), MAX_LINE_CHARS));
    }
    if shown < n {
        let rest = n - shown;
        let plural = if rest == 1 { "" } else { "s" };
        out.push_str(&format!("\nand {rest} more error{plural}"));
    }
    out
}

/// `text` cut to at most `max` characters, ending in `…` when cut.
pub(super) fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
