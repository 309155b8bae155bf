//! Principals as label values, bounded: a cluster gives the first
//! [`MAX_PRINCIPAL_LABELS`] principals it sees a label of their own, and
//! every later one `other`, so that no number of clients (or of
//! certificates a CA signs) can grow `/metrics` without bound. A request
//! without a principal is labelled `""`.

use std::collections::HashSet;
use std::sync::Mutex;

/// Principals a cluster labels by name; later ones share `other`.
pub(crate) const MAX_PRINCIPAL_LABELS: usize = 100;
/// The label of every principal past [`MAX_PRINCIPAL_LABELS`].
pub(crate) const OTHER: &str = "other";

/// The principals a cluster has labelled, shared by its generations.
#[derive(Debug, Default)]
pub(crate) struct PrincipalLabels(Mutex<HashSet<String>>);

impl PrincipalLabels {
    /// The label for `principal` (`None`: a request without one).
    pub(crate) fn label(&self, principal: Option<&str>) -> String {
        let Some(p) = principal else {
            return String::new();
        };
        let mut seen = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.contains(p) {
            return p.to_owned();
        }
        if seen.len() >= MAX_PRINCIPAL_LABELS {
            return OTHER.to_owned();
        }
        seen.insert(p.to_owned());
        p.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_bound_principals_share_other() {
        let labels = PrincipalLabels::default();
        assert_eq!(labels.label(None), "");
        for i in 0..MAX_PRINCIPAL_LABELS {
            assert_eq!(labels.label(Some(&format!("p{i}"))), format!("p{i}"));
        }
        assert_eq!(labels.label(Some("late")), OTHER);
        assert_eq!(labels.label(Some("p7")), "p7", "a known one keeps its own");
        assert_eq!(labels.0.lock().unwrap().len(), MAX_PRINCIPAL_LABELS);
    }
}
