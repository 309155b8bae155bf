//! `sluice-proxy check FILE...`

use std::io::Write;

use serde::Serialize;

use super::{CheckArgs, EXIT_INVALID, EXIT_USAGE, EXIT_VALID, Format, display, load};
use crate::config::ConfigProblem;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileReport {
    file: String,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    config_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    virtual_clusters: Option<Vec<String>>,
    errors: Vec<ConfigProblem>,
    /// Certificates close to expiry or past it, or not covering a
    /// cluster's SNI names: worth a look, not invalid (validation itself is
    /// free of the clock, and a client may not verify names).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    /// Set when the file could not be read at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    read_error: Option<String>,
}

pub(super) fn run(args: &CheckArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let mut code = EXIT_VALID;
    let mut reports = Vec::new();
    for path in &args.files {
        let file = display(path);
        let report = match load(path, args.paths_only, &args.roots) {
            Err(e) => {
                code = EXIT_USAGE;
                FileReport {
                    file,
                    valid: false,
                    config_version: None,
                    virtual_clusters: None,
                    errors: Vec::new(),
                    warnings: Vec::new(),
                    read_error: Some(format!("cannot read: {e}")),
                }
            }
            Ok(Ok(valid)) => FileReport {
                file,
                valid: true,
                config_version: Some(valid.version.to_string()),
                virtual_clusters: Some(
                    valid
                        .config
                        .virtual_clusters
                        .iter()
                        .map(|c| c.name.to_string())
                        .collect(),
                ),
                errors: Vec::new(),
                warnings: expiring(&valid.config.virtual_clusters)
                    .into_iter()
                    .chain(crate::config::warnings::warnings(&valid.config))
                    .collect(),
                read_error: None,
            },
            Ok(Err(errors)) => {
                if code == EXIT_VALID {
                    code = EXIT_INVALID;
                }
                FileReport {
                    file,
                    valid: false,
                    config_version: None,
                    virtual_clusters: None,
                    errors,
                    warnings: Vec::new(),
                    read_error: None,
                }
            }
        };
        reports.push(report);
    }
    let written = match args.format {
        Format::Text => reports.iter().try_for_each(|r| text(r, out, err)),
        Format::Json => {
            let all_valid = reports.iter().all(|r| r.valid);
            let doc = serde_json::json!({ "valid": all_valid, "files": reports });
            writeln!(out, "{doc:#}")
        }
    };
    if written.is_err() {
        return EXIT_USAGE;
    }
    code
}

fn text(r: &FileReport, out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<()> {
    if let Some(e) = &r.read_error {
        return writeln!(err, "sluice-proxy: {}: {e}", r.file);
    }
    for w in &r.warnings {
        writeln!(err, "{}: warning: {w}", r.file)?;
    }
    if r.valid {
        let clusters = r.virtual_clusters.as_ref().map_or(0, Vec::len);
        let noun = if clusters == 1 { "cluster" } else { "clusters" };
        let version = r.config_version.as_deref().unwrap_or_default();
        return writeln!(
            out,
            "{}: valid, {clusters} virtual {noun}, {version}",
            r.file
        );
    }
    for e in &r.errors {
        writeln!(out, "{}", e.in_file(&r.file))?;
    }
    let n = r.errors.len();
    writeln!(
        out,
        "{}: invalid, {n} error{}",
        r.file,
        if n == 1 { "" } else { "s" }
    )
}

/// A warning per certificate within two weeks of expiry, or past it.
fn expiring(clusters: &[crate::config::model::VirtualCluster]) -> Vec<String> {
    let now = std::time::SystemTime::now();
    clusters
        .iter()
        .flat_map(|c| {
            crate::certs::expiries(c)
                .into_iter()
                .filter_map(move |(role, not_after)| {
                    crate::certs::warning(not_after, now)
                        .map(|w| format!("virtual cluster {}: {} {w}", c.name, role.as_str()))
                })
        })
        .collect()
}
