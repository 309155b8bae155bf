//! What of a broker's words may be echoed: an error of the proxy's own
//! authentication reaches the reload answer, status (read without a token)
//! and the logs. The broker's text is scrubbed of the credentials, in clear
//! and in the encodings a broker may echo them in (base64 of the password,
//! of PLAIN's token, of SCRAM's first message; the quoted, escaped form),
//! then escaped and cut ([`sluice_admin_api::echoed`]). A refusal keeps the
//! Kafka error's name and code; the broker's prose goes to the log only.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use sluice_admin_api::{echoed, echoed_within};

use super::SaslError;
use super::scram::ScramError;
use crate::config::sasl::Credentials;

/// The most characters of a SCRAM `e=` value kept: the RFC's are short
/// names (`invalid-proof`, `other-error`).
const MAX_SCRAM_ERROR: usize = 64;

/// `e` with every text from the broker scrubbed, escaped and cut.
pub(super) fn sanitized(e: SaslError, credentials: &Credentials) -> SaslError {
    let clean = |text: String| echoed(&scrubbed(&text, credentials));
    match e {
        SaslError::Exchange { step, why } => SaslError::Exchange {
            step,
            why: clean(why),
        },
        SaslError::Unsupported { mechanism, offered } => SaslError::Unsupported {
            mechanism,
            offered: clean(offered),
        },
        SaslError::Refused { code, message } => {
            tracing::info!(
                code,
                message = %clean(message),
                "the broker refused the proxy's credentials"
            );
            SaslError::Refused {
                code,
                message: String::new(),
            }
        }
        SaslError::Scram(ScramError::Refused(text)) => SaslError::Scram(ScramError::Refused(
            echoed_within(&scrubbed(&text, credentials), MAX_SCRAM_ERROR),
        )),
        other => other,
    }
}

/// `text` with the username and the password, and the forms a broker may
/// echo them in, cut out.
pub(super) fn scrubbed(text: &str, credentials: &Credentials) -> String {
    let Credentials { username, password } = credentials;
    let mut secrets: Vec<(String, &str)> = Vec::new();
    for (secret, name) in [(password, "(password)"), (username, "(username)")] {
        if secret.is_empty() {
            continue;
        }
        let quoted = format!("{secret:?}");
        secrets.push((quoted[1..quoted.len() - 1].to_owned(), name));
        secrets.push((secret.clone(), name));
        secrets.push((STANDARD.encode(secret), name));
        secrets.push((STANDARD_NO_PAD.encode(secret), name));
    }
    if !password.is_empty() {
        let plain = format!("\0{username}\0{password}");
        secrets.push((STANDARD.encode(&plain), "(password)"));
        secrets.push((STANDARD_NO_PAD.encode(&plain), "(password)"));
    }
    // Longest first, so a form is cut whole before a part of it.
    secrets.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
    let mut text = text.to_owned();
    for (secret, name) in &secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), name);
        }
    }
    text
}

/// The name of Kafka error `code` (`SaslAuthenticationFailed`).
pub(super) fn code_name(code: i16) -> String {
    kafka_protocol::ResponseError::try_from_code(code)
        .map_or_else(|| "NONE".to_owned(), |e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credentials_are_cut_in_clear_and_encoded() {
        let credentials = Credentials {
            username: "proxy-user".into(),
            password: "hun\"ter2".into(),
        };
        let b64 = STANDARD.encode("hun\"ter2");
        let token = STANDARD.encode("\0proxy-user\0hun\"ter2");
        let text = format!(
            "bad password hun\"ter2 ({b64}, \"hun\\\"ter2\", {token}) for proxy-user ({})",
            STANDARD.encode("proxy-user")
        );
        assert_eq!(
            scrubbed(&text, &credentials),
            "bad password (password) ((password), \"(password)\", (password)) for (username) ((username))"
        );
    }

    #[test]
    fn refusals_keep_the_code_and_its_name() {
        assert_eq!(code_name(58), "SaslAuthenticationFailed");
        assert_eq!(code_name(-5), "Unknown error code: -5");
    }
}
