//! `--self-signed`: the webhook makes its own CA and serving certificate,
//! keeps them in a Secret shared by every replica, puts the CA into the
//! ValidatingWebhookConfiguration's caBundle, renews the serving
//! certificate at two thirds of its life and rotates the CA with an overlap
//! in which both CAs are trusted. No cert-manager, no script.
//!
//! - [`plan`]: what is due when, from validity periods alone (pure)
//! - [`material`]: the Secret's certificates and keys; making them (no I/O)
//! - [`api`]: the Kubernetes calls (Secret get/update, configuration patch)
//! - [`controller`]: the loop that ties them together and swaps the served pair
//!
//! The modules are public so that their pieces can be read and tested on
//! their own; [`Controller`], [`Settings`] and [`Lifetimes`] are what the
//! process uses.

use std::time::Duration;

pub mod api;
pub mod controller;
pub mod material;
pub mod plan;

pub use controller::Controller;
pub use material::{Lifetimes, check_hosts};

/// What the self-signed mode looks after, from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The Secret's namespace.
    pub namespace: String,
    /// The Secret's name.
    pub secret: String,
    /// The ValidatingWebhookConfiguration's name.
    pub configuration: String,
    /// The DNS names and IP addresses of the serving certificate.
    pub hosts: Vec<String>,
    /// How long the certificates live.
    pub lifetimes: Lifetimes,
}

impl Settings {
    /// `namespace/name` of the Secret, for logs.
    pub fn secret_name(&self) -> String {
        format!("{}/{}", self.namespace, self.secret)
    }
}

/// The default serving lifetime: 90 days, renewed after 60.
pub const DEFAULT_SERVING_LIFETIME: Duration = Duration::from_secs(90 * 86_400);
/// The default CA lifetime: ten years (3650 days), rotated after about 6.7.
pub const DEFAULT_CA_LIFETIME: Duration = Duration::from_secs(3650 * 86_400);
