//! The command line. Every flag also reads an environment variable
//! (`SLUICE_…`), so a Deployment can set them either way.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use sluice_process::LogFormat;
use sluice_process::duration::{parse_flag, parse_positive_flag};

use crate::run::{FileCheck, Options};

/// Kubernetes validating admission webhook for Sluice proxy ConfigMaps.
///
/// Serves HTTPS only. `POST /validate` takes an admission.k8s.io/v1
/// AdmissionReview and denies a ConfigMap whose proxy configuration is
/// invalid, listing every error as `proxy.yaml:LINE:COLUMN: PATH: MESSAGE`.
/// `/healthz`, `/readyz` and `/metrics` serve probes and Prometheus. The
/// certificate is reloaded when its files change (a Secret volume's `..data`
/// swap); SIGTERM stops accepting and lets requests in flight finish.
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
    #[arg(long, env = "SLUICE_TLS_CERT", value_name = "FILE")]
    pub tls_cert: PathBuf,
    /// PEM private key of that certificate (PKCS#8, PKCS#1 or SEC1). Watched
    /// too; a new pair is used only once certificate and key match.
    #[arg(long, env = "SLUICE_TLS_KEY", value_name = "FILE")]
    pub tls_key: PathBuf,
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
    /// Read the files a configuration names (TLS material, the admin token)
    /// and report their problems too. Off by default: those files live in
    /// the proxy pods, not in the webhook's, so only their paths are checked.
    #[arg(long, env = "SLUICE_CHECK_FILES")]
    pub check_files: bool,
    /// With --check-files: the directory relative file paths are read from
    /// (absolute paths are read as they are). Default `/`.
    #[arg(
        long,
        env = "SLUICE_FILES_ROOT",
        value_name = "DIR",
        requires = "check_files"
    )]
    pub files_root: Option<PathBuf>,
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
    /// What [`crate::run::Webhook::start`] needs from the command line.
    pub fn options(&self) -> Options {
        let files = if self.check_files {
            FileCheck::Local {
                root: self
                    .files_root
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("/")),
            }
        } else {
            FileCheck::PathsOnly
        };
        Options {
            listen: self.listen,
            metrics_listen: self.metrics_listen,
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            config_key: self.config_key.clone(),
            files,
            max_errors: self.max_errors,
            read_timeout: self.read_timeout,
            shutdown_grace: self.shutdown_grace,
            watch: sluice_volume::watch::WatchOptions::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_check_paths_only() {
        let args = Args::try_parse_from(["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"])
            .expect("parses");
        let o = args.options();
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
        let o = Args::try_parse_from(with).expect("parses").options();
        assert!(
            matches!(o.files, FileCheck::Local { root } if root == std::path::Path::new("/etc"))
        );
        let only = base.iter().chain(&["--check-files"]);
        let o = Args::try_parse_from(only).expect("parses").options();
        assert!(matches!(o.files, FileCheck::Local { root } if root == std::path::Path::new("/")));
    }

    #[test]
    fn durations_use_the_shared_parser() {
        let base = ["sluice-webhook", "--tls-cert", "c", "--tls-key", "k"];
        let args = base
            .iter()
            .chain(&["--read-timeout", "500ms", "--shutdown-grace", "0"]);
        let o = Args::try_parse_from(args).expect("parses").options();
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
}
