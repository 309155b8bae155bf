//! The admin bearer token the watcher presents on validate and reload, from
//! `--token-file`, kept current through rotations without a restart.
//!
//! The proxy is the judge of which token is current: the watcher sends the
//! token the proxy last accepted (at first, the file's), and when the proxy
//! answers 401 it reads the file again and, if the file now holds another
//! token, retries once with it. Both orders of a rotation work: when the
//! watcher itself reloads the proxy onto a new token file (a Secret renewed
//! in place), it does so with the old token, and its next call gets a 401
//! and picks up the new one; when the proxy changed token first (a restart,
//! a reload by someone else), the first 401 does the same.
//!
//! The token is never logged; a change is logged by fingerprint.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// Where the token comes from, and the one in use.
#[derive(Debug)]
pub struct Token {
    /// `None`: a fixed token (tests, or a token given directly).
    path: Option<PathBuf>,
    in_use: Mutex<String>,
}

impl Token {
    /// A token that never changes.
    pub fn fixed(token: String) -> Token {
        Token {
            path: None,
            in_use: Mutex::new(token),
        }
    }

    /// The token in `path` (trimmed), read now: an unreadable file is an
    /// error at start.
    pub fn from_file(path: &Path) -> std::io::Result<Token> {
        let token = read(path)?;
        Ok(Token {
            path: Some(path.to_path_buf()),
            in_use: Mutex::new(token),
        })
    }

    /// The token to send.
    pub fn current(&self) -> String {
        self.lock().clone()
    }

    /// After a 401 to `sent`: the file's token if it is now another one
    /// (which is then the one in use), else `None` (the 401 stands).
    pub async fn after_refusal(&self, sent: &str) -> Option<String> {
        let path = self.path.as_ref()?;
        let path_for_read = path.clone();
        let fresh = match tokio::task::spawn_blocking(move || read(&path_for_read)).await {
            Ok(Ok(fresh)) => fresh,
            Ok(Err(e)) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read the token file again after a 401");
                return None;
            }
            Err(_) => return None,
        };
        if fresh == sent {
            return None;
        }
        tracing::info!(
            path = %path.display(),
            token = %fingerprint(&fresh),
            "the proxy refused the admin token; retrying with the token file's new one"
        );
        *self.lock() = fresh.clone();
        Some(fresh)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, String> {
        self.in_use
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn read(path: &Path) -> std::io::Result<String> {
    Ok(std::fs::read_to_string(path)?.trim().to_owned())
}

/// The proxy's fingerprint of a token (its audit log names callers so):
/// the first 12 hex digits of `sha256("sluice-admin-token:" + token)`.
pub fn fingerprint(token: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"sluice-admin-token:")
        .chain_update(token.as_bytes())
        .finalize();
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refusal_switches_to_the_files_new_token_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "old\n").unwrap();
        let token = Token::from_file(&path).unwrap();
        assert_eq!(token.current(), "old");
        // The file did not change: the 401 stands.
        assert_eq!(token.after_refusal("old").await, None);
        std::fs::write(&path, "new\n").unwrap();
        // Still the old one until the proxy refuses it.
        assert_eq!(token.current(), "old");
        assert_eq!(token.after_refusal("old").await, Some("new".to_owned()));
        assert_eq!(token.current(), "new");
        assert_eq!(token.after_refusal("new").await, None);
        assert_eq!(Token::fixed("t".into()).after_refusal("t").await, None);
    }

    #[test]
    fn the_fingerprint_is_the_proxys() {
        // sha256("sluice-admin-token:abc")[..6], as the proxy computes it.
        let expected: String = Sha256::digest(b"sluice-admin-token:abc")[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(fingerprint("abc"), expected);
    }
}
