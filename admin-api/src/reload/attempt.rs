//! Numbering a reload answer: the attempt it answers and the version it
//! was about, so a caller matches it with status and the proxy's log.

use crate::version::AttemptedVersion;

use super::ReloadAnswer;

impl ReloadAnswer {
    /// The answer to attempt number `attempt`, about `requested` (the
    /// version recorded in status for it). A 200 carries its version in
    /// `configVersion` already.
    pub fn numbered(mut self, attempt: u64, requested: Option<AttemptedVersion>) -> ReloadAnswer {
        match &mut self {
            ReloadAnswer::Applied(a) => a.attempt = attempt,
            ReloadAnswer::Rejected(r) => r.attempt = attempt,
            ReloadAnswer::Busy(b) => b.attempt = attempt,
            ReloadAnswer::PreconditionFailed(n)
            | ReloadAnswer::Failed(n)
            | ReloadAnswer::ShuttingDown(n) => {
                n.attempt = attempt;
                n.requested_version = requested;
            }
        }
        self
    }

    /// The attempt number the answer carries (0 from a proxy that does not
    /// number attempts).
    pub fn attempt(&self) -> u64 {
        match self {
            ReloadAnswer::Applied(a) => a.attempt,
            ReloadAnswer::Rejected(r) => r.attempt,
            ReloadAnswer::Busy(b) => b.attempt,
            ReloadAnswer::PreconditionFailed(n)
            | ReloadAnswer::Failed(n)
            | ReloadAnswer::ShuttingDown(n) => n.attempt,
        }
    }
}

/// Whether an attempt number is absent (0): such a field is not written, so
/// an answer or a status of a proxy that does not number reads back as sent.
pub(crate) fn unnumbered(attempt: &u64) -> bool {
    *attempt == 0
}
