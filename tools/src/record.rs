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
