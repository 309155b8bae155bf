//! `sluice-webhook`: a Kubernetes validating admission webhook that rejects
//! a ConfigMap holding an invalid proxy configuration before it persists. It
//! judges with the proxy's own validator (`sluice-config`), never with
//! a copy of its rules, so `kubectl apply`, `sluice-proxy check` and the
//! proxy's admin API give the same verdict and the same messages.
//!
//! - [`decide`]: the pure verdict on one admission request
//! - [`review`]: AdmissionReview bodies in, AdmissionReview answers out
//! - [`http`]: the routes: `/validate`, `/healthz`, `/readyz`, `/metrics`
//! - [`metrics`]: the Prometheus registry
//! - [`tls`]: the serving certificate, swapped when its files rotate
//! - [`selfsigned`]: `--self-signed`: its own CA and certificate in a Secret
//! - [`serve`]: HTTPS connections with timeouts and graceful shutdown
//! - [`run`]: the process: load, bind, serve, rotate, stop on SIGTERM
//! - [`cli`]: the command line

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod decide;
pub mod http;
pub mod metrics;
pub mod review;
pub mod run;
pub mod selfsigned;
pub mod serve;
pub mod tls;
