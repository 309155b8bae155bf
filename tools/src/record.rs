//! Results as `scripts/bench` collects them: one `BENCH {json}` line on
//! stdout per figure (median and spread over repetitions, and the ratio to a
//! baseline measured in the same run), with a readable line on stderr.

use serde_json::{Value, json};

/// The median, lowest and highest of some repetitions.
pub fn summary(values: &[f64]) -> (f64, f64, f64) {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    let median = if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    };
    (median, v[0], v[v.len() - 1])
}

/// A distribution-free 95% confidence interval for the median of
/// `values`: the narrowest pair of order statistics `(x_j, x_{n+1-j})` that
/// covers the median with probability at least 0.95 (the binomial tails of
/// `n` coin flips). `None` below 6 values, where no such pair exists.
pub fn median_ci95(values: &[f64]) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    // P(B <= i) for B ~ Binomial(n, 1/2), summed term by term.
    let mut term = 0.5f64.powi(i32::try_from(n).ok()?);
    let mut tail = 0.0;
    let mut j = 0;
    for i in 0..n {
        tail += term;
        if tail > 0.025 {
            break;
        }
        j = i + 1;
        term *= (n - i) as f64 / (i + 1) as f64;
    }
    (j > 0).then(|| (v[j - 1], v[n - j]))
}

/// What a figure must reach.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// The ratio to the baseline is at least this.
    RatioAtLeast(f64),
    /// The ratio to the baseline is at most this.
    RatioAtMost(f64),
    /// The median is at most this (in the figure's unit).
    AtMost(f64),
}

/// One figure: its repetitions, and optionally a baseline's.
#[derive(Debug)]
pub struct Row {
    section: &'static str,
    case: String,
    unit: &'static str,
    values: Vec<f64>,
    baseline: Option<(String, Vec<f64>)>,
    target: Option<(Target, String)>,
    note: Option<String>,
}

impl Row {
    /// A figure in `unit` with one value per repetition.
    pub fn new(
        section: &'static str,
        case: impl Into<String>,
        unit: &'static str,
        values: Vec<f64>,
    ) -> Row {
        Row {
            section,
            case: case.into(),
            unit,
            values,
            baseline: None,
            target: None,
            note: None,
        }
    }

    /// The baseline, one value per repetition, paired with this figure's
    /// (the ratio is the median of the per-repetition ratios).
    pub fn baseline(mut self, name: impl Into<String>, values: Vec<f64>) -> Row {
        self.baseline = Some((name.into(), values));
        self
    }

    /// The target, and how to say it.
    pub fn target(mut self, target: Target, text: impl Into<String>) -> Row {
        self.target = Some((target, text.into()));
        self
    }

    /// A remark printed with the figure.
    pub fn note(mut self, note: impl Into<String>) -> Row {
        self.note = Some(note.into());
        self
    }

    /// Prints the figure (JSON on stdout, text on stderr).
    pub fn emit(self) {
        let (median, lo, hi) = summary(&self.values);
        let mut record = json!({
            "section": self.section,
            "case": self.case,
            "unit": self.unit,
            "median": median,
            "lo": lo,
            "hi": hi,
            "spread": "min-max",
            "n": self.values.len(),
            "values": self.values,
        });
        let mut text = format!(
            "{:<52} {median:>10.3} {:<8} [{lo:.3} – {hi:.3}]",
            self.case, self.unit
        );
        if let Some((name, base)) = &self.baseline {
            let ratios: Vec<f64> = self.values.iter().zip(base).map(|(v, b)| v / b).collect();
            let (ratio, rlo, rhi) = summary(&ratios);
            let (bmed, ..) = summary(base);
            record["baseline"] = json!(name);
            record["baseline_median"] = json!(bmed);
            record["baseline_values"] = json!(base);
            record["ratio"] = json!(ratio);
            record["ratio_lo"] = json!(rlo);
            record["ratio_hi"] = json!(rhi);
            text.push_str(&format!("  {ratio:.3}x {name} ({bmed:.3})"));
            if let Some((clo, chi)) = median_ci95(&ratios) {
                record["ratio_ci95"] = json!([clo, chi]);
                text.push_str(&format!(" 95% CI {clo:.3}–{chi:.3}"));
            }
        }
        if let Some((target, words)) = &self.target {
            record["target"] = match target {
                Target::RatioAtLeast(x) => json!({"of": "ratio", "min": x, "text": words}),
                Target::RatioAtMost(x) => json!({"of": "ratio", "max": x, "text": words}),
                Target::AtMost(x) => json!({"of": "median", "max": x, "text": words}),
            };
            text.push_str(&format!("  target {words}"));
        }
        if let Some(note) = &self.note {
            record["note"] = Value::from(note.as_str());
        }
        eprintln!("{text}");
        println!("BENCH {record}");
    }
}

#[cfg(test)]
mod tests {
    use super::median_ci95;

    #[test]
    fn the_median_interval_is_the_binomial_order_statistics() {
        let v = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
        // n = 5 cannot reach 95% (both extremes cover 93.75%).
        assert_eq!(median_ci95(&v(5)), None);
        // n = 6: the extremes cover 96.9%.
        assert_eq!(median_ci95(&v(6)), Some((1.0, 6.0)));
        // n = 21: P(B <= 5) = 1.3%, P(B <= 6) = 3.9%: x6 and x16.
        assert_eq!(median_ci95(&v(21)), Some((6.0, 16.0)));
        // Unsorted input, non-finite values dropped.
        let mut w = v(21);
        w.reverse();
        w.push(f64::NAN);
        assert_eq!(median_ci95(&w), Some((6.0, 16.0)));
    }
}
