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
mod tests {
    use super::*;

    #[test]
    fn defaults_check_paths_only() {
        let args = Args::try_parse_from(["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"])
            .expect("parses");
        let o = args.options().expect("valid");
        assert_eq!(o.listen, "0.0.0.0:8443".parse().unwrap());
        assert_eq!(o.config_key, "proxy.yaml");
        assert_eq!(o.max_errors, 20);
        assert!(matches!(o.files, FileCheck::PathsOnly));
    }

    #[test]
    fn files_root_needs_check_files() {
        let base = ["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"];
        let without = base.iter().chain(&["--files-root", "/etc"]);
        assert!(Args::try_parse_from(without).is_err());
        let with = base
            .iter()
            .chain(&["--check-files", "--files-root", "/etc"]);
        let o = Args::try_parse_from(with)
            .expect("parses")
            .options()
            .expect("valid");
        let etc = FileRoots::new(["/etc"]).unwrap();
        assert_eq!(
            o.files,
            FileCheck::Local {
                root: "/etc".into(),
                roots: etc
            }
        );
        // No default root: reading files needs one named.
        let only = base.iter().chain(&["--check-files"]);
        assert!(Args::try_parse_from(only).is_err());
        let roots = base.iter().chain(&[
            "--check-files",
            "--files-root",
            "/etc/sluice",
            "--file-root",
            "/etc/sluice,/etc/sluice-tls",
        ]);
        let o = Args::try_parse_from(roots)
            .expect("parses")
            .options()
            .expect("valid");
        assert_eq!(
            o.files,
            FileCheck::Local {
                root: "/etc/sluice".into(),
                roots: FileRoots::new(["/etc/sluice", "/etc/sluice-tls"]).unwrap()
            }
        );
    }

    #[test]
    fn durations_use_the_shared_parser() {
        let base = ["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"];
        let args = base
            .iter()
            .chain(&["--read-timeout", "500ms", "--shutdown-grace", "0"]);
        let o = Args::try_parse_from(args)
            .expect("parses")
            .options()
            .expect("valid");
        assert_eq!(o.read_timeout, Duration::from_millis(500));
        assert_eq!(o.shutdown_grace, Duration::ZERO);
        for bad in [
            ["--read-timeout", "0s"],
            ["--read-timeout", "99999999999h"],
            ["--shutdown-grace", "1m30s"],
        ] {
            let e = Args::try_parse_from(base.iter().chain(&bad)).expect_err(bad[1]);
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }

    const SELF_SIGNED: [&str; 6] = [
        "sluice-webhook",
        "--self-signed",
        "--secret=sluice-system/sluice-webhook-tls",
        "--webhook-configuration=sluice-webhook",
        "--cert-hosts=a.svc,127.0.0.1",
        "--cert-lifetime=10s",
    ];

    #[test]
    fn self_signed_names_its_objects_and_lifetimes() {
        let o = Args::try_parse_from(SELF_SIGNED).expect("parses").options();
        let Certificate::SelfSigned(s) = o.expect("valid").certificate else {
            panic!("not self-signed");
        };
        assert_eq!(s.secret_name(), "sluice-system/sluice-webhook-tls");
        assert_eq!(s.configuration, "sluice-webhook");
        assert_eq!(s.hosts, ["a.svc", "127.0.0.1"]);
        assert_eq!(s.lifetimes.serving(), Duration::from_secs(10));
        assert_eq!(s.lifetimes.ca(), Duration::from_secs(3650 * 86_400));
        let defaults = Args::try_parse_from(&SELF_SIGNED[..5]).expect("parses");
        assert_eq!(defaults.cert_lifetime, Duration::from_secs(90 * 86_400));
    }

    #[test]
    fn self_signed_refuses_what_does_not_go_together() {
        let parse = |extra: &[&str]| Args::try_parse_from(SELF_SIGNED.iter().chain(extra));
        // Files and --self-signed exclude each other.
        assert!(parse(&["--tls-cert", "c"]).is_err());
        // Neither files nor --self-signed.
        assert!(Args::try_parse_from(["sluice-webhook"]).is_err());
        // --self-signed without the objects it looks after.
        assert!(Args::try_parse_from(&SELF_SIGNED[..3]).is_err());
        let e = Args::try_parse_from(["sluice-webhook", "--self-signed", "--secret=no-namespace"])
            .expect_err("not NAMESPACE/NAME");
        assert!(e.to_string().contains("is not NAMESPACE/NAME"), "{e}");
        // Valid lifetimes that do not go together: exit status 2, a clear message.
        let e = parse(&["--ca-lifetime=20s"])
            .expect("parses")
            .options()
            .expect_err("CA too short");
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .contains("the CA's lifetime must be at least three times"),
            "{e}"
        );
        assert!(parse(&["--cert-lifetime=48h"]).is_err());
        let e = parse(&["--cert-hosts=a.svc,"]).expect("parses").options();
        assert!(
            e.expect_err("an empty host")
                .to_string()
                .contains("--cert-hosts")
        );
        // The self-signed flags need --self-signed.
        let files = ["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"];
        assert!(Args::try_parse_from(files.iter().chain(&["--secret=a/b"])).is_err());
    }
}
