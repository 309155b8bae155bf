//! `sluice-proxy diff OLD NEW`

use std::io::Write;

use super::{DiffArgs, EXIT_INVALID, EXIT_USAGE, EXIT_VALID, Format, display, load};
use crate::config::{Changes, ValidConfig, diff};

pub(super) fn run(args: &DiffArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let mut configs: Vec<ValidConfig> = Vec::new();
    let mut code = EXIT_VALID;
    for path in [&args.old, &args.new] {
        let file = display(path);
        match load(path, false, &args.roots) {
            Err(e) => {
                let _ = writeln!(err, "sluice-proxy: {file}: cannot read: {e}");
                return EXIT_USAGE;
            }
            Ok(Ok(valid)) => configs.push(valid),
            Ok(Err(errors)) => {
                for e in &errors {
                    let _ = writeln!(err, "{}", e.in_file(&file));
                }
                let _ = writeln!(err, "{file}: invalid, nothing to compare");
                code = EXIT_INVALID;
            }
        }
    }
    let [old, new] = match <[ValidConfig; 2]>::try_from(configs) {
        Ok(pair) => pair,
        Err(_) => return code,
    };
    let changes = diff(&old.config, &new.config);
    let written = match args.format {
        Format::Json => {
            let doc = serde_json::json!({
                "oldVersion": old.version,
                "newVersion": new.version,
                "changed": !changes.is_empty(),
                "changes": changes,
            });
            writeln!(out, "{doc:#}")
        }
        // Same bytes and same referenced files: a reload would be a no-op.
        Format::Text => text(
            &changes,
            old.referenced.effective_version == new.referenced.effective_version,
            out,
        ),
    };
    if written.is_err() {
        return EXIT_USAGE;
    }
    code
}

fn text(d: &Changes, same_bytes: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if same_bytes {
        return writeln!(out, "identical: a reload would do nothing");
    }
    if d.is_empty() {
        writeln!(out, "no effective change: a reload would touch no cluster")?;
    }
    for name in &d.added {
        writeln!(out, "+ {name}: added, will start")?;
    }
    for name in &d.removed {
        writeln!(out, "- {name}: removed, will drain and stop")?;
    }
    for m in &d.modified {
        writeln!(
            out,
            "~ {}: modified, new generation, old one drains",
            m.name
        )?;
        for reason in &m.reasons {
            writeln!(out, "    {reason}")?;
        }
    }
    for m in &d.rotated {
        writeln!(
            out,
            "^ {}: applies in place (TLS material, credentials, limits, filters), connections stay",
            m.name
        )?;
        for reason in &m.reasons {
            writeln!(out, "    {reason}")?;
        }
    }
    for name in &d.unchanged {
        writeln!(out, "= {name}: unchanged, not touched")?;
    }
    for reason in &d.global {
        writeln!(out, "* {reason}")?;
    }
    Ok(())
}
