//! The proxy's data-plane audit lines, as the tests read them.

use sluice_testkit::proxy::Proxy;

/// Every `data plane` audit line the proxy wrote (its logs are JSON in the
/// tests), in order.
pub fn audit_lines(proxy: &Proxy) -> Vec<serde_json::Value> {
    (proxy.logs().iter())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["message"] == "data plane")
        .collect()
}
