//! Metric names on both sides of a scrape: the names a PromQL expression
//! reads (from the shipped rules and dashboard), and the families and sample
//! names a program's `/metrics` text offers, so a test can hold the one to
//! the other.

use std::collections::{BTreeMap, BTreeSet};

/// Words that are PromQL syntax, not metric names. Aggregations are here
/// because they may be followed by `by (...)` rather than `(`.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "atan2",
    "inf",
    "nan",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "count",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
];

/// Modifiers whose parenthesised list holds label names.
const LABEL_LISTS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The index just past the string literal opening at `i`.
fn skip_string(s: &[char], i: usize) -> usize {
    let quote = s[i];
    let mut j = i + 1;
    while j < s.len() && s[j] != quote {
        j += if s[j] == '\\' && quote != '`' { 2 } else { 1 };
    }
    j + 1
}

/// The index just past the `close` that ends the group opening at `i`
/// (string literals inside are skipped whole).
fn skip_group(s: &[char], i: usize, close: char) -> usize {
    let mut j = i + 1;
    while j < s.len() && s[j] != close {
        j = match s[j] {
            '"' | '\'' | '`' => skip_string(s, j),
            _ => j + 1,
        };
    }
    j + 1
}

/// Every metric name `expr` selects: identifiers outside label matchers,
/// ranges, strings and label lists that are neither functions (followed by
/// `(`), keywords, numbers nor Grafana variables (`$name`).
pub fn metric_names(expr: &str) -> BTreeSet<String> {
    let s: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match c {
            '"' | '\'' | '`' => i = skip_string(&s, i),
            '{' => i = skip_group(&s, i, '}'),
            '[' => i = skip_group(&s, i, ']'),
            _ if c == '$' || c.is_ascii_digit() || c == '.' => {
                // A variable, a number or a duration: one token, not a name.
                i += 1;
                while i < s.len() && (is_ident(s[i]) || s[i] == '.') {
                    i += 1;
                }
            }
            _ if is_ident(c) => {
                let start = i;
                while i < s.len() && is_ident(s[i]) {
                    i += 1;
                }
                let word: String = s[start..i].iter().collect();
                let mut next = i;
                while next < s.len() && s[next].is_whitespace() {
                    next += 1;
                }
                let call = s.get(next) == Some(&'(');
                if LABEL_LISTS.contains(&word.as_str()) {
                    if call {
                        i = skip_group(&s, next, ')');
                    }
                } else if !call && !KEYWORDS.contains(&word.as_str()) {
                    names.insert(word);
                }
            }
            _ => i += 1,
        }
    }
    names
}

/// One metric family of a text exposition: its type and help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// `counter`, `gauge`, `histogram`, `info`, ...
    pub kind: String,
    /// The `# HELP` text.
    pub help: String,
}

/// Every family of an OpenMetrics (or Prometheus) text exposition, by name,
/// from its `# TYPE` and `# HELP` lines: a family is offered even when it has
/// no sample yet (a labelled family before its first event).
pub fn families(text: &str) -> BTreeMap<String, Family> {
    let mut out: BTreeMap<String, Family> = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.splitn(4, ' ');
        let (Some("#"), Some(what), Some(name)) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let rest = words.next().unwrap_or_default().to_owned();
        let family = out.entry(name.to_owned()).or_insert(Family {
            kind: String::new(),
            help: String::new(),
        });
        match what {
            "TYPE" => family.kind = rest,
            "HELP" => family.help = rest,
            _ => {}
        }
    }
    out
}

/// The sample names a family of this kind yields in a query: a counter's
/// `_total`, a histogram's `_bucket`, `_sum` and `_count`, an info's `_info`.
pub fn sample_names(name: &str, family: &Family) -> Vec<String> {
    let suffixes: &[&str] = match family.kind.as_str() {
        "counter" => &["_total"],
        "histogram" => &["_bucket", "_sum", "_count"],
        "summary" => &["", "_sum", "_count"],
        "info" => &["_info"],
        _ => &[""],
    };
    suffixes.iter().map(|s| format!("{name}{s}")).collect()
}

/// Every sample name offered by these expositions.
pub fn offered(texts: &[String]) -> BTreeSet<String> {
    texts
        .iter()
        .flat_map(|t| families(t))
        .flat_map(|(name, family)| sample_names(&name, &family))
        .collect()
}

/// An OpenMetrics exposition (what prometheus-client writes) in Prometheus's
/// text format 0.0.4 (what `promtool check metrics` parses): a counter's
/// `# HELP` and `# TYPE` name its `_total` samples, and `# EOF` and `# UNIT`
/// go.
pub fn as_prometheus_text(openmetrics: &str) -> String {
    let kinds = families(openmetrics);
    let mut out = String::new();
    for line in openmetrics.lines() {
        let mut words = line.splitn(4, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("#"), Some("EOF" | "UNIT"), _) => continue,
            (Some("#"), Some(what @ ("HELP" | "TYPE")), Some(name))
                if kinds.get(name).is_some_and(|f| f.kind == "counter") =>
            {
                let rest = words.next().unwrap_or_default();
                out.push_str(&format!("# {what} {name}_total {rest}"));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}
