//! Reading typed values out of the YAML tree while collecting every error.
//!
//! Each reader returns `Option<T>`: `None` means the error is already recorded
//! in the [`Cx`], so callers keep going and the user sees every problem at once.

use std::fmt::Display;

use super::ConfigProblem;
use super::claims::{Claim, SniClaim};
use super::files::FileSource;
use super::yaml::{Entry, Mark, Node, Value};

/// Everything a build step needs: where errors go, where files come from,
/// and the listeners and SNI names claimed so far (checked for conflicts at
/// the end).
pub(crate) struct Cx<'a> {
    pub(crate) errors: Vec<ConfigProblem>,
    pub(crate) files: &'a dyn FileSource,
    pub(crate) claims: Vec<Claim>,
    pub(crate) sni: Vec<SniClaim>,
}

impl<'a> Cx<'a> {
    pub(crate) fn new(files: &'a dyn FileSource) -> Self {
        Cx {
            errors: Vec::new(),
            files,
            claims: Vec::new(),
            sni: Vec::new(),
        }
    }

    /// Records an error at a path and position.
    pub(crate) fn error(&mut self, path: &str, mark: Mark, message: impl Display) {
        self.errors.push(ConfigProblem {
            line: Some(mark.line),
            column: Some(mark.column),
            path: path.to_owned(),
            message: message.to_string(),
        });
    }

    /// The value, or `None` with the error recorded.
    pub(crate) fn ok<T, E: Display>(
        &mut self,
        path: &str,
        mark: Mark,
        r: Result<T, E>,
    ) -> Option<T> {
        r.map_err(|e| self.error(path, mark, e)).ok()
    }

    /// Records an error and gives `None`, for readers that fail.
    pub(crate) fn fail<T>(&mut self, path: &str, mark: Mark, message: impl Display) -> Option<T> {
        self.error(path, mark, message);
        None
    }
}

/// `parent.key`, or `key` at the top. Every field read builds its path, so
/// this is on validation's hot path: plain appends, not `format!`.
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        return key.to_owned();
    }
    let mut path = String::with_capacity(parent.len() + 1 + key.len());
    path.push_str(parent);
    path.push('.');
    path.push_str(key);
    path
}

/// `parent[index]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    use std::fmt::Write as _;
    let mut path = String::with_capacity(parent.len() + 8);
    path.push_str(parent);
    let _ = write!(path, "[{i}]");
    path
}

/// The fields of one mapping, checked against the keys its schema knows.
pub(crate) struct Fields<'n> {
    path: String,
    mark: Mark,
    entries: &'n [Entry],
}

impl<'n> Fields<'n> {
    /// Opens a mapping, reporting unknown keys at once (with a suggestion when
    /// one of the known keys is close).
    pub(crate) fn of(cx: &mut Cx<'_>, node: &'n Node, path: &str, known: &[&str]) -> Option<Self> {
        let Value::Map(entries) = &node.value else {
            let found = node.value.describe();
            return cx.fail(
                path,
                node.mark,
                format_args!("expected a mapping, found {found}"),
            );
        };
        for entry in entries {
            if !known.contains(&entry.key.as_str()) {
                let message = match suggest(&entry.key, known) {
                    None if known.is_empty() => {
                        format!("unknown field {:?}: this mapping takes no keys", entry.key)
                    }
                    Some(close) => {
                        format!("unknown field {:?}, did you mean {close:?}?", entry.key)
                    }
                    None => format!(
                        "unknown field {:?}, expected one of: {}",
                        entry.key,
                        known.join(", ")
                    ),
                };
                cx.error(&join(path, &entry.key), entry.key_mark, message);
            }
        }
        Some(Fields {
            path: path.to_owned(),
            mark: node.mark,
            entries,
        })
    }

    /// The value of `key`, unless it is absent or null.
    fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|e| e.key == key)
            .map(|e| &e.value)
            .filter(|n| n.value != Value::Null)
    }

    /// Reads a field that must be present.
    pub(crate) fn required<T>(
        &self,
        cx: &mut Cx<'_>,
        key: &str,
        read: impl FnOnce(&mut Cx<'_>, &'n Node, &str) -> Option<T>,
    ) -> Option<T> {
        let path = join(&self.path, key);
        if let Some(node) = self.get(key) {
            return read(cx, node, &path);
        }
        match self.entries.iter().find(|e| e.key == key) {
            Some(entry) => cx.fail(&path, entry.key_mark, "required field has no value"),
            None => cx.fail(&path, self.mark, "required field is missing"),
        }
    }

    /// Reads a field that may be absent (or null). `None` when absent or invalid.
    pub(crate) fn optional<T>(
        &self,
        cx: &mut Cx<'_>,
        key: &str,
        read: impl FnOnce(&mut Cx<'_>, &'n Node, &str) -> Option<T>,
    ) -> Option<T> {
        let node = self.get(key)?;
        read(cx, node, &join(&self.path, key))
    }

    /// Whether `key` is present with a non-null value.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Where the mapping starts.
    pub(crate) fn mark(&self) -> Mark {
        self.mark
    }

    /// The mapping's path.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }
}

/// A scalar's text; numbers and booleans are accepted as their text.
pub(crate) fn string<'n>(cx: &mut Cx<'_>, node: &'n Node, path: &str) -> Option<&'n str> {
    match &node.value {
        Value::Scalar { text, .. } => Some(text),
        other => {
            let found = other.describe();
            cx.fail(
                path,
                node.mark,
                format_args!("expected a string, found {found}"),
            )
        }
    }
}

/// A whole number written without quotes, within `min..=max`.
pub(crate) fn integer(cx: &mut Cx<'_>, node: &Node, path: &str, min: i64, max: i64) -> Option<i64> {
    let parsed = match &node.value {
        Value::Scalar { text, plain: true } => text.parse::<i64>().ok(),
        _ => None,
    };
    let Some(n) = parsed else {
        let found = node.value.describe();
        return cx.fail(
            path,
            node.mark,
            format_args!("expected a whole number, found {found}"),
        );
    };
    if !(min..=max).contains(&n) {
        return cx.fail(
            path,
            node.mark,
            format_args!("{n} is out of range {min}-{max}"),
        );
    }
    Some(n)
}

/// `true` or `false`, written without quotes.
pub(crate) fn boolean(cx: &mut Cx<'_>, node: &Node, path: &str) -> Option<bool> {
    match &node.value {
        Value::Scalar { text, plain: true } if text == "true" => Some(true),
        Value::Scalar { text, plain: true } if text == "false" => Some(false),
        other => {
            let found = other.describe();
            cx.fail(
                path,
                node.mark,
                format_args!("expected true or false, found {found}"),
            )
        }
    }
}

/// The items of a sequence.
pub(crate) fn list<'n>(cx: &mut Cx<'_>, node: &'n Node, path: &str) -> Option<&'n [Node]> {
    match &node.value {
        Value::Seq(items) => Some(items),
        other => {
            let found = other.describe();
            cx.fail(
                path,
                node.mark,
                format_args!("expected a list, found {found}"),
            )
        }
    }
}

/// The known word closest to `word`, if it is close enough to be a typo.
pub(crate) fn suggest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    let limit = (word.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (edit_distance(&word.to_lowercase(), &k.to_lowercase()), *k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_only() {
        let known = ["name", "upstream", "gateway", "limits", "filters"];
        assert_eq!(suggest("gatway", &known), Some("gateway"));
        assert_eq!(suggest("Upstream", &known), Some("upstream"));
        assert_eq!(suggest("tls", &known), None);
    }
}
