//! A Prometheus text exposition, parsed just enough to sum series by label.

use std::collections::BTreeMap;

use sluice_testkit::http;

/// One series and its value.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// Every series of one scrape.
#[derive(Debug, Clone, Default)]
pub(crate) struct Exposition(Vec<Sample>);

impl Exposition {
    /// Scrapes `/metrics` at `addr`; `None` when it does not answer.
    pub(crate) fn scrape(addr: &str) -> Option<Exposition> {
        let r = http::request(addr, "GET", "/metrics", &[], b"").ok()?;
        (r.status == 200).then(|| Exposition::parse(&r.body))
    }

    /// Parses the text format (comments skipped, unparsable lines ignored).
    pub(crate) fn parse(text: &str) -> Exposition {
        Exposition(
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(sample)
                .collect(),
        )
    }

    /// The sum of the series called `name` whose labels include `filter`.
    pub(crate) fn sum(&self, name: &str, filter: &[(&str, &str)]) -> f64 {
        self.0
            .iter()
            .filter(|s| s.name == name && matches(s, filter))
            // A fold from +0: `sum` of nothing is -0, printed "-0".
            .fold(0.0, |total, s| total + s.value)
    }

    /// How many series are called `name`.
    pub(crate) fn count(&self, name: &str) -> usize {
        self.0.iter().filter(|s| s.name == name).count()
    }

    /// The series called `name` (matching `filter`) summed per value of `label`.
    pub(crate) fn by(
        &self,
        name: &str,
        label: &str,
        filter: &[(&str, &str)],
    ) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self
            .0
            .iter()
            .filter(|s| s.name == name && matches(s, filter))
        {
            if let Some((_, v)) = s.labels.iter().find(|(k, _)| k == label) {
                *out.entry(v.clone()).or_insert(0.0) += s.value;
            }
        }
        out
    }
}

fn matches(s: &Sample, filter: &[(&str, &str)]) -> bool {
    filter
        .iter()
        .all(|(k, v)| s.labels.iter().any(|(sk, sv)| sk == k && sv == v))
}

fn sample(line: &str) -> Option<Sample> {
    let (series, value) = line.rsplit_once(' ')?;
    let value = value.parse().ok()?;
    let Some((name, rest)) = series.split_once('{') else {
        return Some(Sample {
            name: series.to_owned(),
            labels: Vec::new(),
            value,
        });
    };
    let mut labels = Vec::new();
    let mut rest = rest.strip_suffix('}')?;
    while let Some((key, after)) = rest.split_once("=\"") {
        let (value, after) = quoted(after)?;
        labels.push((key.trim_start_matches(',').to_owned(), value));
        rest = after;
    }
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// A label value up to its closing quote (escapes resolved), and what follows.
fn quoted(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &text[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_summed_by_label() {
        let e = Exposition::parse(
            "# HELP x\nsluice_drained_connections_total{cluster=\"a\",result=\"clean\"} 3\n\
             sluice_drained_connections_total{cluster=\"b\",result=\"clean\"} 2\n\
             sluice_drained_connections_total{cluster=\"b\",result=\"forced\"} 1\n\
             sluice_watcher_swaps_total 7\nweird{v=\"a \\\"q\\\", b\"} 1\n",
        );
        let by = e.by("sluice_drained_connections_total", "result", &[]);
        assert_eq!(by["clean"], 5.0);
        assert_eq!(by["forced"], 1.0);
        assert_eq!(
            e.sum("sluice_drained_connections_total", &[("cluster", "b")]),
            3.0
        );
        assert_eq!(e.sum("sluice_watcher_swaps_total", &[]), 7.0);
        assert_eq!(e.count("sluice_drained_connections_total"), 3);
        assert_eq!(e.by("weird", "v", &[])["a \"q\", b"], 1.0);
    }
}
