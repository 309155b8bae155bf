//! What an admin token must be: one line of printable ASCII, long and
//! varied enough not to be guessed, and none that anyone can read in this
//! repository. The token's text never appears in a message.

/// The shortest token accepted: 32 characters, what `openssl rand -hex 16`
/// prints (128 random bits); `openssl rand -hex 32` gives 64.
pub const MIN_TOKEN_LEN: usize = 32;

/// The fewest distinct characters a token may have: a long run of one
/// character (or a short pattern repeated) is not a secret. Random hex of
/// 32 characters has about 14.
pub const MIN_TOKEN_DISTINCT: usize = 8;

/// The token `manifests/base` ships so that it applies as it is; a proxy
/// must never run with it (anyone who can read the repository knows it).
pub const PLACEHOLDER_TOKEN: &str = "change-me-in-your-overlay";

/// Why a file's content cannot be the admin token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Weak {
    /// Not one line of printable ASCII (or empty).
    NotAToken,
    /// The base manifests' placeholder.
    Placeholder,
    /// Fewer than [`MIN_TOKEN_LEN`] characters (how many it has).
    Short(usize),
    /// Fewer than [`MIN_TOKEN_DISTINCT`] distinct characters.
    Repetitive,
}

/// The token in a token file's bytes (trimmed), or why it cannot be one.
pub(crate) fn token(bytes: Vec<u8>) -> Result<String, Weak> {
    let token = String::from_utf8(bytes)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or(Weak::NotAToken)?;
    if token == PLACEHOLDER_TOKEN {
        return Err(Weak::Placeholder);
    }
    if token.len() < MIN_TOKEN_LEN {
        return Err(Weak::Short(token.len()));
    }
    let mut seen = [false; 128];
    for b in token.bytes() {
        seen[usize::from(b & 0x7f)] = true;
    }
    if seen.iter().filter(|s| **s).count() < MIN_TOKEN_DISTINCT {
        return Err(Weak::Repetitive);
    }
    Ok(token)
}

/// The message for a token file at `file` that holds no usable token.
pub(crate) fn message(file: &str, weak: Weak) -> String {
    const GENERATE: &str = "generate one with `openssl rand -hex 32`";
    match weak {
        Weak::NotAToken => format!("{file:?} must hold one line of printable ASCII, the token"),
        Weak::Placeholder => format!(
            "{file:?} holds the placeholder token of the base manifests (Secret \
             kafka-proxy/sluice-admin-token): anyone can read it, so the proxy refuses it; \
             generate one in your overlay (see docs/deploying.md)"
        ),
        Weak::Short(n) => format!(
            "{file:?} holds a token of {n} characters; at least {MIN_TOKEN_LEN} are required: {GENERATE}"
        ),
        Weak::Repetitive => format!(
            "{file:?} holds a token of fewer than {MIN_TOKEN_DISTINCT} distinct characters: {GENERATE}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_token_passes_and_weak_ones_do_not() {
        let hex16 = "9f86d081884c7d659a2feaa0c55ad015";
        assert_eq!(
            token(format!("{hex16}\n").into_bytes()),
            Ok(hex16.to_owned())
        );
        let cases: [(&str, Weak); 6] = [
            ("", Weak::NotAToken),
            ("two words", Weak::NotAToken),
            ("change-me-in-your-overlay\n", Weak::Placeholder),
            ("s", Weak::Short(1)),
            ("demo-token-change-me", Weak::Short(20)),
            ("abababababababababababababababab", Weak::Repetitive),
        ];
        for (text, weak) in cases {
            assert_eq!(token(text.as_bytes().to_vec()), Err(weak), "{text:?}");
        }
    }

    #[test]
    fn a_message_never_shows_the_token() {
        for weak in [Weak::Short(20), Weak::Repetitive, Weak::Placeholder] {
            let m = message("admin-token", weak);
            assert!(m.contains("\"admin-token\""), "{m}");
            assert!(!m.contains("demo-token-change-me"), "{m}");
        }
    }
}
