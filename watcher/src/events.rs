//! Kubernetes Events on the watcher's own pod, one per applied, rejected or
//! failed version, so `kubectl describe pod` tells what happened to a
//! configuration on that pod. Best effort: a refused Event (RBAC, API
//! server down) is logged and never stops the watcher.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};

/// Whether an Event reports something normal or a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

/// Writes Events about one pod.
#[derive(Clone)]
pub struct PodEvents {
    api: Api<Event>,
    namespace: String,
    pod: String,
}

impl std::fmt::Debug for PodEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodEvents")
            .field("namespace", &self.namespace)
            .field("pod", &self.pod)
            .finish_non_exhaustive()
    }
}

impl PodEvents {
    /// Events about `pod` in `namespace`, through `client`.
    pub fn new(client: kube::Client, namespace: &str, pod: &str) -> PodEvents {
        PodEvents {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            pod: pod.to_owned(),
        }
    }

    /// In a pod: the in-cluster client, the pod's name from `POD_NAME` and its
    /// namespace from `POD_NAMESPACE` (the Downward API) or the service account.
    pub async fn in_cluster() -> Result<PodEvents, String> {
        let pod = std::env::var("POD_NAME")
            .map_err(|_| "POD_NAME is not set (use the Downward API)".to_owned())?;
        let namespace = std::env::var("POD_NAMESPACE")
            .ok()
            .or_else(|| {
                std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                    .ok()
                    .map(|n| n.trim().to_owned())
            })
            .ok_or("POD_NAMESPACE is not set and no service account namespace is mounted")?;
        let config =
            kube::Config::incluster().map_err(|e| format!("in-cluster configuration: {e}"))?;
        let client =
            kube::Client::try_from(config).map_err(|e| format!("kubernetes client: {e}"))?;
        Ok(PodEvents::new(client, &namespace, &pod))
    }

    /// Records one Event; failures are logged.
    pub async fn report(&self, kind: Kind, reason: &str, message: &str) {
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let event = Event {
            metadata: ObjectMeta {
                generate_name: Some(format!("{}.", self.pod)),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("Pod".to_owned()),
                name: Some(self.pod.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectReference::default()
            },
            reason: Some(reason.to_owned()),
            message: Some(truncate(message, 1024)),
            type_: Some(
                match kind {
                    Kind::Normal => "Normal",
                    Kind::Warning => "Warning",
                }
                .to_owned(),
            ),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            count: Some(1),
            source: Some(EventSource {
                component: Some("sluice-watcher".to_owned()),
                host: None,
            }),
            reporting_component: Some("sluice-watcher".to_owned()),
            reporting_instance: Some(self.pod.clone()),
            ..Event::default()
        };
        if let Err(e) = self.api.create(&PostParams::default(), &event).await {
            tracing::warn!(reason, error = %e, "could not record a Kubernetes Event");
        }
    }
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Records an Event in the background, when Events are on.
pub(crate) fn record(
    events: Option<&PodEvents>,
    kind: Kind,
    reason: &'static str,
    message: String,
) {
    if let Some(events) = events.cloned() {
        tokio::spawn(async move { events.report(kind, reason, &message).await });
    }
}
