//! The Kubernetes API calls of the self-signed mode, and nothing else: read
//! the Secret, replace it under optimistic concurrency (its
//! `resourceVersion`; a 409 says another replica wrote first), and put the
//! caBundle into every webhook of the ValidatingWebhookConfiguration with a
//! merge patch, also guarded by `resourceVersion`. The configuration is
//! read as JSON, not as k8s-openapi's struct, so that fields newer than
//! that crate survive the patch (a merge patch replaces the whole list).
//!
//! RBAC needed: `get` and `update` on the one Secret, `get` and `patch` on
//! the one ValidatingWebhookConfiguration (both by `resourceNames`). When
//! the Secret does not exist it is created, which needs `create` on
//! Secrets in the namespace; the manifests create it empty instead.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::Value;

use super::material::{Material, MaterialError};

/// What a call to the API server can end in, besides success.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Someone wrote the object since it was read (HTTP 409).
    #[error("{0} was changed by someone else since it was read")]
    Conflict(String),
    /// Any other failure: unreachable, refused, forbidden, invalid.
    #[error("{what}: {source}")]
    Call {
        /// What was being done.
        what: String,
        /// What kube said.
        #[source]
        source: kube::Error,
    },
}

/// The Secret as last read.
#[derive(Debug)]
pub struct StoredSecret {
    /// The object, `resourceVersion` included: the base of the next write.
    secret: Secret,
    /// Its content: none yet (`Ok(None)`), usable, or broken.
    pub material: Result<Option<Material>, MaterialError>,
}

/// Whether the caBundle had to be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publication {
    /// Every webhook already had it.
    Unchanged,
    /// It was patched into this many webhooks.
    Patched(usize),
}

/// The Secret and the webhook configuration this replica looks after.
#[derive(Clone)]
pub struct Objects {
    secrets: Api<Secret>,
    configs: Api<DynamicObject>,
    secret: String,
    namespace: String,
    configuration: String,
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects")
            .field("secret", &self.secret)
            .field("namespace", &self.namespace)
            .field("configuration", &self.configuration)
            .finish_non_exhaustive()
    }
}

fn classify(what: String, source: kube::Error) -> ApiError {
    match &source {
        kube::Error::Api(status) if status.is_conflict() => ApiError::Conflict(what),
        _ => ApiError::Call { what, source },
    }
}

impl Objects {
    /// Secret `namespace/secret` and the cluster-scoped configuration
    /// `configuration`, through `client`.
    pub fn new(client: kube::Client, namespace: &str, secret: &str, configuration: &str) -> Self {
        Objects {
            secrets: Api::namespaced(client.clone(), namespace),
            configs: Api::all_with(
                client,
                &ApiResource::erase::<ValidatingWebhookConfiguration>(&()),
            ),
            secret: secret.to_owned(),
            namespace: namespace.to_owned(),
            configuration: configuration.to_owned(),
        }
    }

    fn secret_name(&self) -> String {
        format!("Secret {}/{}", self.namespace, self.secret)
    }

    fn configuration_name(&self) -> String {
        format!("ValidatingWebhookConfiguration {}", self.configuration)
    }

    /// Reads the Secret; creates it empty when it does not exist (a 409
    /// there means another replica just did, so it is read again).
    pub async fn read_secret(&self) -> Result<StoredSecret, ApiError> {
        let name = self.secret_name();
        let found = self
            .secrets
            .get_opt(&self.secret)
            .await
            .map_err(|e| classify(format!("reading {name}"), e))?;
        let secret = match found {
            Some(secret) => secret,
            None => self.create_empty().await?,
        };
        let material = Material::from_data(secret.data.as_ref().unwrap_or(&Default::default()));
        Ok(StoredSecret { secret, material })
    }

    async fn create_empty(&self) -> Result<Secret, ApiError> {
        let name = self.secret_name();
        let empty = Secret {
            metadata: ObjectMeta {
                name: Some(self.secret.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".to_owned()),
            ..Secret::default()
        };
        match self.secrets.create(&PostParams::default(), &empty).await {
            Ok(created) => {
                tracing::info!(secret = %name, "created the empty Secret");
                Ok(created)
            }
            Err(kube::Error::Api(status)) if status.is_already_exists() => self
                .secrets
                .get(&self.secret)
                .await
                .map_err(|e| classify(format!("reading {name}"), e)),
            Err(e) => Err(classify(format!("creating {name}"), e)),
        }
    }

    /// Replaces the Secret's data with `material`, only if nobody wrote it
    /// since `read` (else [`ApiError::Conflict`]).
    pub async fn write_secret(
        &self,
        read: &StoredSecret,
        material: &Material,
    ) -> Result<StoredSecret, ApiError> {
        let mut secret = read.secret.clone();
        secret.data = Some(material.to_data());
        secret.string_data = None;
        let written = self
            .secrets
            .replace(&self.secret, &PostParams::default(), &secret)
            .await
            .map_err(|e| classify(self.secret_name(), e))?;
        Ok(StoredSecret {
            secret: written,
            material: Ok(Some(material.clone())),
        })
    }

    /// Makes `bundle` the caBundle of every webhook in the configuration.
    pub async fn publish(&self, bundle: &str) -> Result<Publication, ApiError> {
        let name = self.configuration_name();
        let config = self
            .configs
            .get(&self.configuration)
            .await
            .map_err(|e| classify(format!("reading {name}"), e))?;
        let mut webhooks = match config.data.get("webhooks") {
            Some(Value::Array(list)) => list.clone(),
            _ => Vec::new(),
        };
        let wanted = Value::from(STANDARD.encode(bundle));
        let stale = webhooks
            .iter()
            .filter(|w| w.pointer("/clientConfig/caBundle") != Some(&wanted))
            .count();
        if stale == 0 {
            return Ok(Publication::Unchanged);
        }
        for webhook in &mut webhooks {
            // The API server requires clientConfig; one without it is left alone.
            if let Some(client) = webhook
                .get_mut("clientConfig")
                .and_then(Value::as_object_mut)
            {
                client.insert("caBundle".to_owned(), wanted.clone());
            }
        }
        // A merge patch replaces the whole list: it carries every webhook as
        // read, and the resourceVersion makes it fail if the list changed.
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": config.metadata.resource_version },
            "webhooks": webhooks,
        });
        self.configs
            .patch(
                &self.configuration,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|e| classify(name, e))?;
        Ok(Publication::Patched(webhooks.len()))
    }
}
