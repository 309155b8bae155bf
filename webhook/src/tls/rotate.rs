//! Certificate rotation. Both files are watched with the watcher crate's
//! volume watching (a Secret volume's `..data` swap, or files rewritten in
//! place); on any change both are read again and, when they form a valid
//! pair, swapped in. A broken pair (unreadable, not PEM, or a key that does
//! not match, as when one file is renewed before the other) leaves the pair
//! in use alone, and is logged and counted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_volume::watch::{VolumeWatcher, WatchError, WatchOptions};
use tokio_util::sync::CancellationToken;

use super::{CertError, CertResolver, parse};
use crate::metrics::Metrics;

/// What one look at the files did.
#[derive(Debug)]
pub enum Rotation {
    /// A new pair is in use.
    Applied {
        /// Its serial number, hex.
        serial: String,
        /// Its notAfter, Unix seconds.
        not_after: i64,
    },
    /// The files hold the pair already in use, or the pair last rejected.
    Unchanged,
    /// The files do not form a valid pair; the old one stays in use.
    Rejected {
        /// Why.
        error: CertError,
    },
}

/// The pair in use and the files it comes from.
#[derive(Debug)]
pub struct Rotator {
    cert: PathBuf,
    key: PathBuf,
    resolver: Arc<CertResolver>,
    metrics: Arc<Metrics>,
    /// The bytes last looked at, so a resync of the same files does nothing
    /// and a rejected pair is reported once.
    last: (Vec<u8>, Vec<u8>),
}

fn read(path: &Path) -> Result<Vec<u8>, CertError> {
    std::fs::read(path).map_err(|source| CertError::Read {
        path: path.to_path_buf(),
        source,
    })
}

impl Rotator {
    /// Loads the first pair; at startup a broken pair is fatal.
    pub fn load(cert: PathBuf, key: PathBuf, metrics: Arc<Metrics>) -> Result<Self, CertError> {
        let pair = (read(&cert)?, read(&key)?);
        let loaded = parse(&cert, &pair.0, &key, &pair.1)?;
        metrics.certificate_in_use(loaded.not_after);
        tracing::info!(
            cert = %cert.display(),
            serial = %loaded.serial,
            not_after = loaded.not_after,
            "certificate loaded"
        );
        Ok(Rotator {
            cert,
            key,
            resolver: Arc::new(CertResolver::new(loaded.key)),
            metrics,
            last: pair,
        })
    }

    /// What rustls asks for the pair in use.
    pub fn resolver(&self) -> Arc<CertResolver> {
        Arc::clone(&self.resolver)
    }

    /// Reads both files and swaps in their pair if it is new and valid;
    /// logs and counts the outcome.
    pub fn reload(&mut self) -> Rotation {
        let outcome = self.try_reload();
        self.record(&outcome);
        outcome
    }

    fn try_reload(&mut self) -> Rotation {
        let pair = match (read(&self.cert), read(&self.key)) {
            (Ok(c), Ok(k)) => (c, k),
            (Err(error), _) | (_, Err(error)) => return Rotation::Rejected { error },
        };
        if self.last == pair {
            return Rotation::Unchanged;
        }
        let parsed = parse(&self.cert, &pair.0, &self.key, &pair.1);
        self.last = pair;
        match parsed {
            Ok(loaded) => {
                self.resolver.swap(loaded.key);
                self.metrics.certificate_in_use(loaded.not_after);
                Rotation::Applied {
                    serial: loaded.serial,
                    not_after: loaded.not_after,
                }
            }
            Err(error) => Rotation::Rejected { error },
        }
    }

    fn record(&self, outcome: &Rotation) {
        match outcome {
            Rotation::Applied { serial, not_after } => {
                self.metrics.certificate_reload("applied");
                tracing::info!(
                    cert = %self.cert.display(),
                    %serial,
                    not_after,
                    "certificate reloaded"
                );
            }
            Rotation::Unchanged => {}
            Rotation::Rejected { error } => {
                self.metrics.certificate_reload("rejected");
                tracing::warn!(%error, "new certificate files rejected; serving the previous pair");
            }
        }
    }
}

/// A running watch of both files.
#[derive(Debug)]
pub struct CertWatch {
    rotator: Rotator,
    certs: VolumeWatcher,
    keys: VolumeWatcher,
}

impl CertWatch {
    /// Starts watching the rotator's files (needs a Tokio runtime).
    pub fn start(mut rotator: Rotator, options: &WatchOptions) -> Result<Self, WatchError> {
        let certs = VolumeWatcher::start(&rotator.cert, options.clone())?;
        let keys = VolumeWatcher::start(&rotator.key, options.clone())?;
        // The files may have changed between loading and watching.
        rotator.reload();
        Ok(CertWatch {
            rotator,
            certs,
            keys,
        })
    }

    /// Reloads on every change until `shutdown`.
    pub async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let seen = tokio::select! {
                c = self.certs.changed() => c,
                k = self.keys.changed() => k,
                () = shutdown.cancelled() => return,
            };
            if seen.is_none() {
                tracing::warn!("certificate watch ended; the certificate will not rotate");
                return;
            }
            self.rotator.reload();
        }
    }
}
