//! End-to-end tests of the `sluice-webhook` binary over real HTTPS: real
//! processes, real certificates (rcgen), real TLS clients (reqwest and raw
//! tokio-rustls), real AdmissionReview JSON from `tests/fixtures/admission`.
//! There is no kube-apiserver: the tests send what it sends, as it sends it
//! (`POST /validate`, `application/json`, over TLS to a CA it trusts).
//!
//! - `harness`: certificates, the webhook process, clients
//! - `admission`: one fixture per scenario, probes, metrics, shutdown
//! - `files`: `--check-files` beneath the allowed roots only
//! - `parity`: the invalid-config corpus through webhook and CLI
//! - `rotation`: a kubelet-style certificate swap under load
//! - `hostile`: stalled headers and bodies, oversized headers

mod admission;
mod crowd;
mod files;
mod harness;
mod hostile;
mod parity;
mod rotation;
