//! One problem found in a configuration, and how it is printed.

use std::fmt;

use serde::Serialize;

/// One problem with a configuration: where it is and what is wrong.
///
/// Printed as `line:column: path: message`; [`ConfigError::in_file`] adds the
/// file name in front, the way compilers do, so editors can jump to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, thiserror::Error)]
pub struct ConfigError {
    /// 1-based line, when the problem has a place in the text.
    pub line: Option<u32>,
    /// 1-based column, when the problem has a place in the text.
    pub column: Option<u32>,
    /// Where in the document, e.g. `virtualClusters[1].gateway.bootstrapPort`;
    /// empty for problems with the file as a whole.
    pub path: String,
    /// What is wrong, in lowercase without a trailing period.
    pub message: String,
}

impl ConfigError {
    /// An error about the document as a whole.
    pub(crate) fn whole(message: impl Into<String>) -> Self {
        ConfigError {
            line: None,
            column: None,
            path: String::new(),
            message: message.into(),
        }
    }

    /// Prints the error prefixed with a file name: `proxy.yaml:14:7: path: message`.
    pub fn in_file<'a>(&'a self, file: &'a str) -> impl fmt::Display + 'a {
        InFile { file, error: self }
    }
}

impl fmt::Display for ConfigError {
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

struct InFile<'a> {
    file: &'a str,
    error: &'a ConfigError,
}

impl fmt::Display for InFile<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sep = if self.error.line.is_some() { ":" } else { ": " };
        write!(f, "{}{sep}{}", self.file, self.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_a_compiler() {
        let e = ConfigError {
            line: Some(14),
            column: Some(7),
            path: "virtualClusters[1].gateway.bootstrapPort".into(),
            message: "port 19092 is already used by virtual cluster \"orders\"".into(),
        };
        assert_eq!(
            e.in_file("proxy.yaml").to_string(),
            "proxy.yaml:14:7: virtualClusters[1].gateway.bootstrapPort: port 19092 is already used by virtual cluster \"orders\""
        );
        let whole = ConfigError::whole("file is empty");
        assert_eq!(whole.in_file("p.yaml").to_string(), "p.yaml: file is empty");
        assert_eq!(whole.to_string(), "file is empty");
    }
}
