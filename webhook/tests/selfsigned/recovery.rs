//! A Secret that cannot be used, or cannot be written: the webhook still
//! ends up serving a certificate its callers trust.

use std::time::Duration;

use super::apiserver::ApiServer;
use super::{Running, cas, eventually, published, reviewer, served, wait_for_bundle};

const FAILURES: &str = "sluice_webhook_self_signed_failures_total";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_cannot_write_serves_what_the_secret_holds() {
    let api = ApiServer::start().await;
    let first = Running::start(&api, &[], 3600, 36_000).await;
    let bundle = wait_for_bundle(&api).await;
    let written = served(first.addr, &bundle).await;
    first.shut_down().await;

    // A second replica wants another host name (so a renewal is due) and
    // may not write: it serves what the Secret holds, and says it failed.
    api.refuse_writes();
    let second = Running::start(&api, &["extra.sluice-system.svc"], 3600, 36_000).await;
    assert_eq!(served(second.addr, &bundle).await, written);
    eventually("a counted failure", Duration::from_secs(20), || {
        let (second, bundle) = (&second, bundle.clone());
        async move { second.metric(&bundle, FAILURES).await.filter(|n| *n >= 1) }
    })
    .await;
    reviewer::review(second.addr, &bundle)
        .await
        .expect("allowed");
    second.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_that_cannot_be_used_is_replaced() {
    let api = ApiServer::start().await;
    let first = Running::start(&api, &[], 3600, 36_000).await;
    let old = wait_for_bundle(&api).await;
    first.shut_down().await;

    // Someone pastes a key that is not the certificate's.
    api.set_secret_data(
        "tls.key",
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
    );
    let second = Running::start(&api, &[], 3600, 36_000).await;
    let new = eventually("a new caBundle", Duration::from_secs(20), || {
        let old = old.clone();
        let api = &api;
        async move { published(api).filter(|b| *b != old) }
    })
    .await;
    assert_eq!(cas(&new), 1);
    eventually(
        "the new certificate served",
        Duration::from_secs(20),
        || {
            let new = new.clone();
            async move { reviewer::review(second.addr, &new).await.ok() }
        },
    )
    .await;
    second.shut_down().await;
}
