//! Who a cluster's clients are now: the `authentication` in force, and
//! whether a principal proved under an earlier one still holds.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rustls_pki_types::{CertificateDer, UnixTime};

use super::ClusterRuntime;
use crate::config::identity::Authentication;

impl ClusterRuntime {
    /// Where new connections' principals come from now.
    pub(crate) fn authentication(&self) -> Option<Arc<Authentication>> {
        self.tls
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .authentication
            .clone()
    }

    /// How many times `authentication` changed in place.
    pub(crate) fn auth_epoch(&self) -> u64 {
        self.auth_epoch.load(Ordering::Acquire)
    }

    /// Whether the certificate `chain` (the client's first), verified under
    /// an earlier `clientCaFile`, still is under the one in force (the
    /// caller maps it again by the rules in force).
    pub(crate) fn still_verifies(&self, chain: &[CertificateDer<'static>]) -> bool {
        let tls = self
            .tls
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (Some(verifier), Some((leaf, intermediates))) =
            (&tls.client_verifier, chain.split_first())
        else {
            return false;
        };
        verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .is_ok()
    }

    /// Whether `principal`, proved under an earlier `authentication`,
    /// still holds under the one in force: a user the credentials file no
    /// longer lists does not (revocation).
    pub(crate) fn still_knows(&self, principal: &str) -> bool {
        let auth = self.authentication();
        let users = auth.as_ref().and_then(|a| a.sasl.as_ref());
        let users = users.and_then(|s| s.users.0.as_ref().as_ref());
        users.is_none_or(|u| u.knows(principal))
    }
}
