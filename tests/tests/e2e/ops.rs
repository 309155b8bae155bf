//! The operations kit (`manifests/monitoring`, `docs/operations.md`)
//! evaluated by a real Prometheus (Debian's 2.42):
//!
//! - [`rules`]: `promtool check rules` and `promtool test rules`, a firing
//!   and a quiet case for every alert, the PrometheusRule generated from the
//!   plain rules file, the runbook sections, the monitoring kustomization
//! - [`names`]: every metric the rules and the dashboard read is in the
//!   real `/metrics` of the proxy, the watcher or the webhook
//! - [`conventions`]: every exported name follows Prometheus's conventions
//! - [`alerts`]: a Prometheus scraping a three-pod fleet and a webhook sees
//!   a halted rollout and a certificate near expiry fire, and the halt
//!   resolve after a newer version rolls out

mod alerts;
mod conventions;
mod names;
mod rules;
