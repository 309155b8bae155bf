//! One problem with a configuration, the one type the validator returns,
//! the admin API reports, the webhook denies with and the CLI prints, and
//! the one way it is printed.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One problem with a configuration: where it is and what is wrong. The
/// proxy's validator finds it; the watcher prints it (in its log, its
/// metrics and its Kubernetes Events); an operator reads it.
///
/// Printed as `line:column: path: message` (the parts that are known), the
/// line `sluice-proxy check` prints after the file name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigProblem {
    /// 1-based line, so an editor can jump to it; `null` when the problem
    /// has no place in the text (the file is empty, say).
    pub line: Option<u32>,
    /// 1-based column, with `line`.
    pub column: Option<u32>,
    /// Where in the document, e.g. `virtualClusters[1].gateway.bootstrapPort`:
    /// the place even when lines moved; empty for the file as a whole.
    pub path: String,
    /// What is wrong, in lowercase without a trailing period.
    pub message: String,
}

impl ConfigProblem {
    /// A problem with the document as a whole (no place in the text).
    pub fn whole(message: impl Into<String>) -> Self {
        ConfigProblem {
            line: None,
            column: None,
            path: String::new(),
            message: message.into(),
        }
    }

    /// Prints the problem prefixed with a file name, the way compilers do,
    /// so editors can jump to it: `proxy.yaml:14:7: path: message`.
    pub fn in_file<'a>(&'a self, file: &'a str) -> impl fmt::Display + 'a {
        InFile {
            file,
            problem: self,
        }
    }
}

impl std::error::Error for ConfigProblem {}

struct InFile<'a> {
    file: &'a str,
    problem: &'a ConfigProblem,
}

impl fmt::Display for InFile<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sep = if self.problem.line.is_some() {
            ":"
        } else {
            ": "
        };
        write!(f, "{}{sep}{}", self.file, self.problem)
    }
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "{line}:")?;
            if let Some(column) = self.column {
                write!(f, "{column}:")?;
            }
            f.write_str(" ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roundtrip::roundtrip;

    #[test]
    fn roundtrips_and_prints_like_a_compiler() {
        let e: ConfigProblem = roundtrip(
            r#"{"line": 14, "column": 7, "path": "virtualClusters[1].gateway.bootstrapPort",
                "message": "port 19092 is already used by virtual cluster \"orders\""}"#,
        );
        assert_eq!(
            e.to_string(),
            "14:7: virtualClusters[1].gateway.bootstrapPort: port 19092 is already used by virtual cluster \"orders\""
        );
        let whole: ConfigProblem =
            roundtrip(r#"{"line": null, "column": null, "path": "", "message": "file is empty"}"#);
        assert_eq!(whole.to_string(), "file is empty");
        assert_eq!(
            e.in_file("proxy.yaml").to_string(),
            "proxy.yaml:14:7: virtualClusters[1].gateway.bootstrapPort: port 19092 is already used by virtual cluster \"orders\""
        );
        assert_eq!(whole.in_file("p.yaml").to_string(), "p.yaml: file is empty");
        assert_eq!(ConfigProblem::whole("file is empty"), whole);
        let no_column = ConfigProblem { column: None, ..e };
        assert!(no_column.to_string().starts_with("14: virtualClusters[1]"));
    }
}
