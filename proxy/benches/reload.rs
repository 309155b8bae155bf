//! Reload time for 10, 100 and 1,000 virtual clusters, as a ratio to
//! validating the same configuration (the baseline, measured in the same
//! run): one cluster modified among N, and every cluster modified (a new
//! generation each, every listener handed over).
//!
//! Run: `cargo bench -p sluice-proxy --bench reload` (or `scripts/bench`,
//! which gathers the `BENCH` lines into its table). Listens on 127.0.0.3.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_proxy::config::{MemoryFiles, validate};
use sluice_proxy::engine::{Engine, ReloadOutcome};
use sluice_proxy::metrics::Metrics;

const RUNS: usize = 15;
const BASE_PORT: usize = 30_000;

/// N clusters on 127.0.0.3; `bump` changes cluster `which` (or all when None).
fn config(clusters: usize, which: Option<usize>, bump: u32) -> String {
    let mut out =
        String::from("admin: { listen: 127.0.0.1:1 }\ndrainTimeout: 1s\nvirtualClusters:\n");
    for i in 0..clusters {
        let port = BASE_PORT + 2 * i;
        let max = if which.is_none_or(|w| w == i) {
            1000 + bump
        } else {
            1000
        };
        out.push_str(&format!(
            "  - name: c{i}\n    upstream: {{ bootstrapServers: [127.0.0.1:9] }}\n    gateway: {{ listenHost: 127.0.0.3, advertisedHost: proxy.local, bootstrapPort: {port}, brokerPorts: {{ start: {}, count: 1 }} }}\n    limits: {{ maxConnections: {max} }}\n",
            port + 1
        ));
    }
    out
}

fn median(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() / 10], v[v.len() * 9 / 10])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = runtime.enter();
    let files = MemoryFiles::default();
    println!(
        "{:<48} {:>10} {:>21} {:>8}",
        "case", "median", "p10 – p90", "ratio"
    );
    for n in [10usize, 100, 1000] {
        let start = validate(config(n, Some(0), 0).as_bytes(), &files).expect("valid");
        let engine = Engine::start(
            start,
            Arc::new(Metrics::new()),
            Arc::new(MemoryFiles::default()),
        )
        .expect("start");
        let mut bump = 0;
        let mut run = |which: Option<usize>| {
            let mut times = Vec::new();
            for _ in 0..RUNS {
                bump += 1;
                let text = config(n, which, bump);
                let t = Instant::now();
                let outcome = engine.reload(text.as_bytes(), None);
                times.push(t.elapsed());
                assert!(
                    matches!(outcome, ReloadOutcome::Applied { .. }),
                    "{outcome:?}"
                );
            }
            median(times)
        };
        let one = run(Some(n / 2));
        let all = run(None);
        let baseline = median(
            (0..RUNS)
                .map(|_| {
                    let text = config(n, None, 1);
                    let t = Instant::now();
                    assert!(validate(text.as_bytes(), &files).is_ok());
                    t.elapsed()
                })
                .collect(),
        );
        for (name, (m, lo, hi), target) in [
            (
                format!("reload, 1 of {n} clusters modified"),
                one,
                n == 1000,
            ),
            (format!("reload, all {n} clusters modified"), all, false),
        ] {
            let ratio = m.as_secs_f64() / baseline.0.as_secs_f64();
            println!(
                "{name:<48} {:>7.2} ms  [{:>7.2} – {:>7.2}]  {ratio:>6.2}x validate ({:.2} ms)",
                ms(m),
                ms(lo),
                ms(hi),
                ms(baseline.0)
            );
            let mut record = serde_json::json!({
                "section": "reload (in-process engine)", "case": name, "unit": "ms",
                "median": ms(m), "lo": ms(lo), "hi": ms(hi), "spread": "p10-p90", "n": RUNS,
                "baseline": format!("validate {n} clusters"), "baseline_median": ms(baseline.0),
                "ratio": ratio,
            });
            if target {
                record["target"] =
                    serde_json::json!({"of": "median", "max": 100.0, "text": "<= 100 ms"});
            }
            println!("BENCH {record}");
        }
        runtime.block_on(engine.shutdown());
    }
}
