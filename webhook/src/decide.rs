//! The verdict on one admission request, as a pure function: the request and
//! a [`Policy`] in, a [`Decision`] out. The configuration is judged by
//! `sluice_config::validate` and nothing else; the only I/O is through
//! the policy's [`FileSource`], which the caller chooses.
//!
//! - `configmap`: the configuration's bytes from a ConfigMap object
//! - `message`: the denial text, one line per error
//! - `warnings`: SNI names a certificate misses (files checked), and what an
//!   UPDATE will do to each virtual cluster

use std::fmt;
use std::sync::Arc;

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, Operation};
use sluice_config::{FileSource, ValidConfig, diff, validate};

mod configmap;
mod message;
mod recent;
mod warnings;

pub use configmap::ConfigMapError;
pub use message::{MAX_LINE_CHARS, denial};
pub use recent::Recent;
pub use warnings::{MAX_WARNING_CHARS, MAX_WARNINGS, admission_warnings, warnings};

/// What the webhook is told to check, fixed at startup.
#[derive(Clone)]
pub struct Policy {
    /// The ConfigMap key holding the proxy configuration (`proxy.yaml`); also
    /// the file name in every error line, so editors can jump to it.
    pub config_key: String,
    /// Most errors listed in a denial before "and N more errors"; 0 lists all.
    pub max_errors: usize,
    /// Where files named by the configuration come from: by default
    /// `PathsOnly`, because the proxy's Secrets are not mounted here.
    pub files: Arc<dyn FileSource>,
    /// Configurations admitted lately, so that an UPDATE does not validate
    /// its old object again (unused when `files` reads files).
    pub recent: Arc<Recent>,
}

impl Policy {
    /// A policy with nothing admitted yet.
    pub fn new(
        config_key: impl Into<String>,
        max_errors: usize,
        files: Arc<dyn FileSource>,
    ) -> Self {
        Policy {
            config_key: config_key.into(),
            max_errors,
            files,
            recent: Arc::default(),
        }
    }

    /// Whether a verdict depends on the bytes alone.
    fn pure(&self) -> bool {
        !self.files.loads()
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("config_key", &self.config_key)
            .field("max_errors", &self.max_errors)
            .field("loads_files", &self.files.loads())
            .field("recent", &self.recent.len())
            .finish()
    }
}

/// Why a request was let through without looking at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not a ConfigMap: the webhook judges nothing else.
    OtherKind,
    /// DELETE or CONNECT: removing a configuration cannot make it invalid.
    Operation,
}

/// The verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed without checks (see [`Skip`]).
    Skipped(Skip),
    /// A valid configuration. On UPDATE, `warnings` say which clusters a
    /// reload will add, remove or drain and restart.
    Allowed {
        /// Shown by kubectl as `Warning: …`; at most [`MAX_WARNINGS`].
        warnings: Vec<String>,
    },
    /// Denied; `message` is what kubectl prints after "denied the request:".
    Denied {
        /// Every error as `proxy.yaml:line:column: path: message`, capped.
        message: String,
    },
}

impl Decision {
    /// The `result` label of the admissions metric.
    pub fn result(&self) -> &'static str {
        match self {
            Decision::Skipped(_) => "skipped",
            Decision::Allowed { .. } => "allowed",
            Decision::Denied { .. } => "denied",
        }
    }

    fn denied(message: impl Into<String>) -> Self {
        Decision::Denied {
            message: message.into(),
        }
    }
}

/// Judges one admission request. `dryRun` requests are judged the same: the
/// webhook has no side effects to skip.
pub fn decide(req: &AdmissionRequest<DynamicObject>, policy: &Policy) -> Decision {
    if !(req.kind.group.is_empty() && req.kind.kind == "ConfigMap") {
        return Decision::Skipped(Skip::OtherKind);
    }
    match req.operation {
        Operation::Delete | Operation::Connect => return Decision::Skipped(Skip::Operation),
        Operation::Create | Operation::Update => {}
    }
    let what = describe(req);
    let key = policy.config_key.as_str();
    let Some(object) = &req.object else {
        return Decision::denied(format!("the request for {what} carries no object"));
    };
    let new = match configmap::config_bytes(object, key, &what) {
        Ok(bytes) => match validate(&bytes, policy.files.as_ref()) {
            Ok(valid) => {
                if policy.pure() {
                    policy.recent.put(&valid);
                }
                valid
            }
            Err(errors) => {
                return Decision::denied(denial(&what, key, &errors, policy.max_errors));
            }
        },
        Err(e) => return Decision::denied(e.to_string()),
    };
    let changes = match req.operation {
        Operation::Update => {
            old_config(req, policy, &new).map(|old| diff(&old.config, &new.config))
        }
        _ => None,
    };
    Decision::Allowed {
        warnings: admission_warnings(changes.as_ref(), &new.config),
    }
}

/// The configuration being replaced, when there is a valid one: warnings
/// compare two valid configurations or say nothing. The same bytes as the
/// new one, or bytes admitted lately, are not validated again.
fn old_config(
    req: &AdmissionRequest<DynamicObject>,
    policy: &Policy,
    new: &ValidConfig,
) -> Option<ValidConfig> {
    let old = req.old_object.as_ref()?;
    let bytes = configmap::config_bytes(old, &policy.config_key, "").ok()?;
    if policy.pure() {
        if *bytes == *new.bytes {
            return Some(new.clone());
        }
        if let Some(known) = policy.recent.get(&sluice_config::config_version(&bytes)) {
            return Some(known);
        }
    }
    validate(&bytes, policy.files.as_ref()).ok()
}

/// `ConfigMap namespace/name`, as the user knows it.
fn describe(req: &AdmissionRequest<DynamicObject>) -> String {
    let name = if req.name.is_empty() {
        req.object
            .as_ref()
            .and_then(|o| o.metadata.generate_name.as_deref())
            .map_or_else(|| "(unnamed)".to_owned(), |g| format!("{g}…"))
    } else {
        req.name.clone()
    };
    match req.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("ConfigMap {ns}/{name}"),
        _ => format!("ConfigMap {name}"),
    }
}

#[cfg(test)]
mod tests;
