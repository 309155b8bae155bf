//! The command line. Every flag also reads an environment variable
//! (`SLUICE_…`), so a Deployment can set them either way.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use sluice_config::FileRoots;
use sluice_process::LogFormat;
use sluice_process::duration::{parse_flag, parse_positive_flag};

use crate::run::{Certificate, FileCheck, Options};
use crate::selfsigned::{Lifetimes, Settings, check_hosts};

mod lifetime;

pub use lifetime::parse_lifetime;

/// Kubernetes validating admission webhook for Sluice proxy ConfigMaps.
///
/// Serves HTTPS only. `POST /validate` takes an admission.k8s.io/v1
/// AdmissionReview and denies a ConfigMap whose proxy configuration is
/// invalid, listing every error as `proxy.yaml:LINE:COLUMN: PATH: MESSAGE`.
/// `/healthz`, `/readyz` and `/metrics` serve probes and Prometheus. The
/// certificate is reloaded when its files change (a Secret volume's `..data`
/// swap), or, with --self-signed, made and renewed by the webhook itself
/// without cert-manager; SIGTERM stops accepting and lets requests in
/// flight finish.
#[derive(Debug, Parser)]
#[command(name = "sluice-webhook", version, about, max_term_width = 100)]
pub struct Args {
    /// Address to serve HTTPS on.
    #[arg(
        long,
        env = "SLUICE_LISTEN",
        value_name = "ADDR",
        default_value = "0.0.0.0:8443"
    )]
    pub listen: SocketAddr,
    /// PEM certificate chain served to the API server (leaf first). Watched:
    /// new TLS handshakes use a renewed certificate without a restart.
    /// Required unless --self-signed.
    #[arg(
        long,
        env = "SLUICE_TLS_CERT",
        value_name = "FILE",
        required_unless_present = "self_signed",
        conflicts_with = "self_signed"
    )]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of that certificate (PKCS#8, PKCS#1 or SEC1). Watched
    /// too; a new pair is used only once certificate and key match.
    #[arg(
        long,
        env = "SLUICE_TLS_KEY",
        value_name = "FILE",
        required_unless_present = "self_signed",
        conflicts_with = "self_signed"
    )]
    pub tls_key: Option<PathBuf>,
    /// Make and keep the certificates without cert-manager, instead of
    /// --tls-cert/--tls-key: a CA and a serving certificate kept in --secret
    /// (shared by every replica, written under optimistic concurrency), the
    /// CA published as caBundle of --webhook-configuration, the serving
    /// certificate renewed at 2/3 of --cert-lifetime and the CA rotated at
    /// 2/3 of --ca-lifetime with an overlap in which both CAs are trusted.
    /// Talks to the API server with the pod's service account (or the
    /// kubeconfig outside a cluster).
    #[arg(
        long,
        env = "SLUICE_SELF_SIGNED",
        requires_all = ["secret", "webhook_configuration", "cert_hosts"]
    )]
    pub self_signed: bool,
    /// With --self-signed: the Secret holding the CA and serving
    /// certificate, as NAMESPACE/NAME. Needs get and update on it (and
    /// create on Secrets if it does not exist yet).
    #[arg(
        long,
        env = "SLUICE_SECRET",
        value_name = "NAMESPACE/NAME",
        requires = "self_signed",
        value_parser = parse_secret
    )]
    pub secret: Option<(String, String)>,
    /// With --self-signed: the ValidatingWebhookConfiguration whose webhooks
    /// all get the CA bundle as caBundle. Needs get and patch on it.
    #[arg(
        long,
        env = "SLUICE_WEBHOOK_CONFIGURATION",
        value_name = "NAME",
        requires = "self_signed"
    )]
    pub webhook_configuration: Option<String>,
    /// With --self-signed: the DNS names (and IP addresses) of the serving
    /// certificate, comma-separated, e.g.
    /// `sluice-webhook.sluice-system.svc,sluice-webhook.sluice-system.svc.cluster.local`.
    #[arg(
        long,
        env = "SLUICE_CERT_HOSTS",
        value_name = "HOST,...",
        value_delimiter = ',',
        requires = "self_signed"
    )]
    pub cert_hosts: Vec<String>,
    /// With --self-signed: lifetime of each serving certificate, in days
    /// (`90d`) or as a duration (`10s`, `12h`); renewed at two thirds of it.
    #[arg(
        long,
        env = "SLUICE_CERT_LIFETIME",
        value_name = "LIFETIME",
        default_value = "90d",
        value_parser = parse_lifetime
    )]
    pub cert_lifetime: Duration,
    /// With --self-signed: lifetime of each CA (`3650d` is ten years); at two
    /// thirds of it a new CA joins the caBundle, signs from the next renewal
    /// on, and the old CA leaves once its last serving certificate expired.
    /// At least three times --cert-lifetime.
    #[arg(
        long,
        env = "SLUICE_CA_LIFETIME",
        value_name = "LIFETIME",
        default_value = "3650d",
        value_parser = parse_lifetime
    )]
    pub ca_lifetime: Duration,
    /// ConfigMap key that holds the proxy configuration, in `data` or
    /// `binaryData`; errors are reported against this name.
    #[arg(
        long,
        env = "SLUICE_CONFIG_KEY",
        value_name = "KEY",
        default_value = "proxy.yaml"
    )]
    pub config_key: String,
    /// Also serve `/metrics`, `/healthz` and `/readyz` over plain HTTP on this
    /// address, for scrapers without the webhook's CA. `/metrics` is always
    /// on the HTTPS port as well.
    #[arg(long, env = "SLUICE_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// Read the files a configuration names (TLS material, SASL
    /// credentials, the admin token) and report their problems too, by the
    /// proxy's rules. Off by default: those files live in the proxy pods,
    /// not in the webhook's, so only their paths are checked. Needs
    /// --files-root.
    #[arg(long, env = "SLUICE_CHECK_FILES", requires = "files_root")]
    pub check_files: bool,
    /// With --check-files: the directory relative file paths are read from,
    /// and the one directory files may lie beneath unless --file-root names
    /// others. A path that leaves the roots (absolute, with `..`, or
    /// through a symlink out) is denied as "outside the allowed file roots",
    /// whatever exists there.
    #[arg(
        long,
        env = "SLUICE_FILES_ROOT",
        value_name = "DIR",
        requires = "check_files"
    )]
    pub files_root: Option<PathBuf>,
    /// With --check-files: a directory files may lie beneath, as the
    /// proxy's own `--file-root` (repeatable, or comma-separated); give the
    /// proxy's. Default: --files-root.
    #[arg(
        long = "file-root",
        env = "SLUICE_FILE_ROOTS",
        value_name = "DIR",
        value_delimiter = ',',
        requires = "check_files"
    )]
    pub file_roots: Vec<PathBuf>,
    /// Most errors listed in a denial before "and N more errors"; 0 lists
    /// them all.
    #[arg(
        long,
        env = "SLUICE_MAX_ERRORS",
        value_name = "N",
        default_value_t = 20
    )]
    pub max_errors: usize,
    /// How long a client may take to send a request's headers, and then its
    /// body, and to finish the TLS handshake (e.g. `10s`, `500ms`; more than
    /// 0s, at most 24h).
    #[arg(
        long,
        env = "SLUICE_READ_TIMEOUT",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = parse_positive_flag
    )]
    pub read_timeout: Duration,
    /// After SIGTERM or SIGINT: how long requests in flight may take before
    /// the process exits anyway (e.g. `10s`; at most 24h).
    #[arg(
        long,
        env = "SLUICE_SHUTDOWN_GRACE",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = parse_flag
    )]
    pub shutdown_grace: Duration,
    /// Log format: `text` for people, `json` (one object per line) for log
    /// pipelines. The level comes from SLUICE_LOG (e.g. `info`,
    /// `sluice_webhook=debug`), else RUST_LOG, default `info`.
    #[arg(long, value_enum, env = "SLUICE_LOG_FORMAT", default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl Args {
    /// What [`crate::run::Webhook::start`] needs from the command line; an
    /// error (exit status 2) when the lifetimes do not go together.
    pub fn options(&self) -> Result<Options, clap::Error> {
        let files = match (&self.files_root, self.check_files) {
            (Some(root), true) => {
                let roots = if self.file_roots.is_empty() {
                    std::slice::from_ref(root)
                } else {
                    &self.file_roots[..]
                };
                let roots = FileRoots::new(roots)
                    .map_err(|e| invalid(format!("--files-root and --file-root: {e}")))?;
                FileCheck::Local {
                    root: root.clone(),
                    roots,
                }
            }
            _ => FileCheck::PathsOnly,
        };
        Ok(Options {
            listen: self.listen,
            metrics_listen: self.metrics_listen,
            certificate: self.certificate()?,
            config_key: self.config_key.clone(),
            files,
            max_errors: self.max_errors,
            read_timeout: self.read_timeout,
            shutdown_grace: self.shutdown_grace,
            watch: sluice_volume::watch::WatchOptions::default(),
        })
    }

    fn certificate(&self) -> Result<Certificate, clap::Error> {
        match (
            &self.tls_cert,
            &self.tls_key,
            &self.secret,
            &self.webhook_configuration,
        ) {
            (Some(cert), Some(key), ..) => Ok(Certificate::Files {
                cert: cert.clone(),
                key: key.clone(),
            }),
            (_, _, Some((namespace, secret)), Some(configuration)) if self.self_signed => {
                let lifetimes = Lifetimes::try_new(self.cert_lifetime, self.ca_lifetime)
                    .map_err(|e| invalid(format!("--cert-lifetime and --ca-lifetime: {e}")))?;
                check_hosts(&self.cert_hosts).map_err(|e| invalid(format!("--cert-hosts: {e}")))?;
                Ok(Certificate::SelfSigned(Settings {
                    namespace: namespace.clone(),
                    secret: secret.clone(),
                    configuration: configuration.clone(),
                    hosts: self.cert_hosts.clone(),
                    lifetimes,
                }))
            }
            _ => Err(invalid(
                "give --tls-cert and --tls-key, or --self-signed with --secret, \
                 --webhook-configuration and --cert-hosts"
                    .to_owned(),
            )),
        }
    }
}

/// A flag's value that parsed but cannot be used (exit status 2).
fn invalid(message: String) -> clap::Error {
    clap::Error::raw(clap::error::ErrorKind::ValueValidation, message + "\n")
}

/// `NAMESPACE/NAME`, both non-empty.
fn parse_secret(s: &str) -> Result<(String, String), String> {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_owned(), name.to_owned()))
        }
        _ => Err(format!(
            "{s:?} is not NAMESPACE/NAME (e.g. sluice-system/sluice-webhook-tls)"
        )),
    }
}

#[cfg(test)]
mod tests;
