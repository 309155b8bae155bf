//! What the self-signed certificates need next, decided from their validity
//! periods and the clock alone: no keys, no I/O. The controller reads the
//! Secret, summarises it as a [`View`], asks [`plan`] for the one [`Step`]
//! due now and [`next_check`] for when to look again.
//!
//! A certificate is renewed at two thirds of its lifetime. The CA rotates
//! with an overlap, so that a client trusting the caBundle of the moment
//! never meets a serving certificate it cannot verify:
//!
//! 1. [`Step::AnnounceCa`]: a new CA joins the bundle; the old one still signs.
//! 2. [`Step::PromoteCa`]: at the next serving renewal, and only once the
//!    bundle with the new CA is in the webhook configuration, the new CA
//!    signs the serving certificate; the old CA stays in the bundle.
//! 3. [`Step::RetirePrevious`]: once the last serving certificate the old
//!    CA signed has expired, the old CA leaves the bundle.

use std::time::Duration;

/// When a certificate starts and stops being valid, in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// notBefore.
    pub not_before: i64,
    /// notAfter.
    pub not_after: i64,
}

impl Validity {
    /// Two thirds into the validity period: when a renewal is due.
    pub fn renew_at(&self) -> i64 {
        let span = self.not_after.saturating_sub(self.not_before).max(0);
        self.not_before
            .saturating_add(span / 3 * 2 + span % 3 * 2 / 3)
    }

    /// Whether the certificate is past its notAfter at `now`.
    pub fn expired(&self, now: i64) -> bool {
        now >= self.not_after
    }
}

/// What the Secret holds, as far as planning cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The CA that signs serving certificates.
    pub ca: Validity,
    /// The serving certificate.
    pub serving: Validity,
    /// Whether the serving certificate was signed by that CA and names the
    /// hosts asked for; otherwise it is replaced at once.
    pub serving_fits: bool,
    /// A CA already in the bundle that will sign from the next renewal on.
    pub next_ca: Option<Validity>,
    /// The notAfter of the last serving certificate the previous CA signed,
    /// while that CA is still in the bundle.
    pub previous_until: Option<i64>,
}

/// The one change due now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing usable: a new CA and serving certificate, a bundle of one.
    Create,
    /// A new serving certificate from the same CA.
    RenewServing,
    /// A new CA joins the bundle (it signs nothing yet).
    AnnounceCa,
    /// The announced CA signs a new serving certificate and becomes the
    /// signing CA; the old CA stays in the bundle as the previous one.
    PromoteCa,
    /// The previous CA leaves the bundle.
    RetirePrevious,
}

/// The step due at `now`, if any. `published` tells whether the webhook
/// configuration's caBundle already holds every CA of the Secret's bundle:
/// until it does, no serving certificate is signed by the announced CA.
pub fn plan(view: Option<&View>, now: i64, published: bool) -> Option<Step> {
    let Some(v) = view else {
        return Some(Step::Create);
    };
    if v.ca.expired(now) {
        return Some(Step::Create);
    }
    if v.previous_until.is_some_and(|until| now >= until) {
        return Some(Step::RetirePrevious);
    }
    let serving_due = !v.serving_fits || now >= v.serving.renew_at();
    if serving_due {
        let promote = published && v.previous_until.is_none() && v.next_ca.is_some();
        return Some(if promote {
            Step::PromoteCa
        } else {
            Step::RenewServing
        });
    }
    if v.next_ca.is_none() && v.previous_until.is_none() && now >= v.ca.renew_at() {
        return Some(Step::AnnounceCa);
    }
    None
}

/// When to look again after `now`, given what the Secret holds: at the
/// next renewal, announcement or retirement, at least a second from now
/// and at most `resync` (other replicas and people change things too).
pub fn next_check(view: &View, now: i64, resync: Duration) -> Duration {
    let mut at = [Some(view.serving.renew_at()), view.previous_until]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(i64::MAX);
    if view.next_ca.is_none() && view.previous_until.is_none() {
        at = at.min(view.ca.renew_at());
    }
    let wait = u64::try_from(at.saturating_sub(now)).unwrap_or(0);
    Duration::from_secs(wait).clamp(Duration::from_secs(1), resync.max(Duration::from_secs(1)))
}

/// The caBundle: the signing CA first, then the announced one, then the
/// previous one, each once (PEM blocks, concatenated).
pub fn bundle<'a>(signing: &'a str, next: Option<&'a str>, previous: Option<&'a str>) -> String {
    let mut out = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for pem in [Some(signing), next, previous].into_iter().flatten() {
        let pem = pem.trim();
        if pem.is_empty() || seen.contains(&pem) {
            continue;
        }
        seen.push(pem);
        out.push_str(pem);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
