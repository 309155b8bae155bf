//! Text from the network or from a file, made fit to echo: in status, in
//! answers and in log fields. A broker's error message, a SCRAM `e=`, a
//! file's content quoted in a problem are data, never layout: control
//! characters (a newline would forge a log line in the text format, an ANSI
//! escape would rewrite a terminal) and the Unicode marks that reorder text
//! are written as escapes, and the whole is cut to a length fit to read.

use std::fmt::Write as _;

/// The most characters of echoed text kept ([`echoed`]).
pub const MAX_ECHO_CHARS: usize = 512;

/// `text` with every control or reordering character escaped (`\n`, `\r`,
/// `\t`, else `\u{…}`) and, past [`MAX_ECHO_CHARS`], cut, saying how many
/// bytes were left out.
pub fn echoed(text: &str) -> String {
    echoed_within(text, MAX_ECHO_CHARS)
}

/// [`echoed`], keeping at most `max` characters.
pub fn echoed_within(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max) + 16);
    let mut kept = 0;
    for (at, c) in text.char_indices() {
        let before = out.len();
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
        kept += out[before..].chars().count();
        if kept > max {
            out.truncate(before);
            let _ = write!(out, "… ({} more bytes)", text.len() - at);
            break;
        }
    }
    out
}

/// A character that must not reach a log or a terminal as itself: C0 and
/// C1 controls, DEL, bidirectional overrides and isolates, line and
/// paragraph separators, zero-width marks and the byte-order mark.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_reordering_marks_are_escaped() {
        assert_eq!(
            echoed("bad\nINFO forged line\r\x1b[31mred\x1b[0m\u{202e}\u{7f}\t."),
            "bad\\nINFO forged line\\r\\u{1b}[31mred\\u{1b}[0m\\u{202e}\\u{7f}\\t."
        );
        assert_eq!(echoed("plain text, ünïcode"), "plain text, ünïcode");
    }

    #[test]
    fn long_text_is_cut_and_says_how_much() {
        let long = "x".repeat(100 * 1024);
        let cut = echoed(&long);
        assert_eq!(
            cut,
            format!(
                "{}… ({} more bytes)",
                "x".repeat(MAX_ECHO_CHARS),
                100 * 1024 - MAX_ECHO_CHARS
            )
        );
        // An escape is not split in the middle.
        let cut = echoed_within("ab\ncd", 3);
        assert_eq!(cut, "ab… (3 more bytes)");
        // Echoing again changes nothing that is short enough.
        let once = echoed("a\nb\x1b");
        assert_eq!(echoed(&once), once);
    }
}
