//! `deny-apis`: answers the listed Kafka APIs from the proxy with
//! POLICY_VIOLATION, so e.g. `DeleteTopics` cannot reach the cluster while
//! the rest of the connection keeps working. Which APIs may be listed is
//! validated in `sluice-config`; the answers are made in `sluice_kafka::deny`.

use std::collections::BTreeSet;

use sluice_kafka::deny::POLICY_VIOLATION;

use super::{Filter, RequestHead, Verdict};

/// Denies every request whose API key is in the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DenyApis {
    apis: BTreeSet<i16>,
}

impl DenyApis {
    pub(crate) fn new(apis: BTreeSet<i16>) -> Self {
        DenyApis { apis }
    }
}

impl Filter for DenyApis {
    fn on_request(&self, request: &RequestHead) -> Verdict {
        if self.apis.contains(&request.api_key) {
            Verdict::Deny {
                error_code: POLICY_VIOLATION,
            }
        } else {
            Verdict::Forward
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denies_only_listed_apis() {
        let f = DenyApis::new([20].into());
        let head = |api_key| RequestHead {
            api_key,
            api_version: 4,
        };
        assert_eq!(
            f.on_request(&head(20)),
            Verdict::Deny {
                error_code: POLICY_VIOLATION
            }
        );
        assert_eq!(f.on_request(&head(0)), Verdict::Forward);
    }
}
