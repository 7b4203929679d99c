//! What the operator sees: the status document (`GET /api/status`), the rates over the last
//! 10 s / 1 min / 10 min and the hour's chart, and the same figures in Prometheus' text format
//! (`GET /metrics`).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use crate::crawl::engine::Crawler;
use crate::crawl::locks::{Free, Key};
use crate::crawl::sched::steer::SiteRow;
use crate::logs::report::{host_key, Stats};

/// Samples kept: one a second for an hour.
const KEPT: usize = 3600;
/// crawl.log lines the status document ends with.
const RECENT_LINES: usize = 200;
/// Seconds between two points of the hour's chart (at most).
const CHART_STEP: usize = 10;

/// The crawl's counters at one instant.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    unix: f64,
    urls: u64,
    fetched: u64,
    bytes: u64,
    errors: u64,
}

/// The counters, once a second, for the rates and the chart.
#[derive(Debug, Default)]
pub(in crate::crawl) struct Sampler {
    samples: Mutex<VecDeque<Sample>>,
}

impl Sampler {
    /// Takes one sample of the crawl's counters now.
    pub(super) fn sample(&self, crawler: &Crawler, key: &mut Key<Free>) {
        let (urls, fetched, bytes, errors) = crawler.desks.with_journal(key, |j| {
            (
                j.stats.lines(),
                j.stats.fetched(),
                j.stats.bytes,
                j.stats.errors,
            )
        });
        let unix = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let mut s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        s.push_back(Sample {
            at: Instant::now(),
            unix,
            urls,
            fetched,
            bytes,
            errors,
        });
        while s.len() > KEPT {
            s.pop_front();
        }
    }

    /// Per second over the last `window`: URLs (crawl.log lines), fetched, bytes, errors.
    fn rates(&self, window: Duration) -> [f64; 4] {
        let s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let Some(last) = s.back() else {
            return [0.0; 4];
        };
        let from = s
            .iter()
            .find(|x| last.at.saturating_duration_since(x.at) <= window)
            .unwrap_or(last);
        per_second(from, last)
    }

    /// The hour's chart: `[unix time, URLs/s, bytes/s, errors/s]` every ten seconds.
    fn chart(&self) -> Vec<[f64; 4]> {
        let s = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        // A point every ten seconds; every second while the crawl is young.
        let step = (s.len() / 60).clamp(1, CHART_STEP);
        let picked: Vec<&Sample> = s.iter().rev().step_by(step).collect();
        picked
            .windows(2)
            .rev()
            .map(|w| {
                let r = per_second(w[1], w[0]);
                [w[0].unix.round(), r[0], r[2], r[3]]
            })
            .collect()
    }
}

fn per_second(from: &Sample, to: &Sample) -> [f64; 4] {
    let secs = to.at.saturating_duration_since(from.at).as_secs_f64();
    if secs <= 0.0 {
        return [0.0; 4];
    }
    let d = |a: u64, b: u64| b.saturating_sub(a) as f64 / secs;
    [
        d(from.urls, to.urls),
        d(from.fetched, to.fetched),
        d(from.bytes, to.bytes),
        d(from.errors, to.errors),
    ]
}

/// What the status document and the metrics are made of, read under each lock in turn.
struct Snapshot {
    stats: Stats,
    rows: Vec<SiteRow>,
    queued: usize,
    running: usize,
    paused: bool,
}

fn snapshot(crawler: &Crawler, key: &mut Key<Free>) -> Snapshot {
    let stats = crawler.desks.with_journal(key, |j| j.stats.clone());
    let (rows, queued) = crawler.desks.with_sched(key, |s| {
        (
            s.site_rows(Instant::now(), SystemTime::now()),
            s.total_queued(),
        )
    });
    Snapshot {
        stats,
        rows,
        queued,
        running: crawler.desks.running.load(Ordering::SeqCst),
        paused: crawler.operator.paused(),
    }
}

/// `GET /api/status`.
pub(super) fn status(crawler: &Crawler, key: &mut Key<Free>, sampler: &Sampler) -> Value {
    let snap = snapshot(crawler, key);
    let stats = &snap.stats;
    let sites: Vec<Value> = snap.rows.iter().map(|r| site_json(r, stats)).collect();
    let rate = |secs| {
        let [urls, fetched, bytes, errors] = sampler.rates(Duration::from_secs(secs));
        json!({ "urls": urls, "fetched": fetched, "bytes": bytes, "errors": errors })
    };
    json!({
        "crawl": crawler.profile.name,
        "paused": snap.paused,
        "totals": {
            "urls": stats.lines(),
            "fetched": stats.fetched(),
            "archived": stats.archived,
            "duplicates": stats.duplicates,
            "bytes": stats.bytes,
            "errors": stats.errors,
            "retries": stats.retries,
            "queued": snap.queued,
            "in_flight": snap.running,
            "not_fetched": stats.not_fetched,
        },
        "rates": { "10s": rate(10), "1m": rate(60), "10m": rate(600) },
        "chart": sampler.chart(),
        "sites": sites,
        "orders": crawler.operator.orders(),
        "worker": worker_label(),
        "workers": crawler.operator.workers().unwrap_or_else(|| {
            vec![json!({ "worker": worker_label(), "in_flight": snap.running })]
        }),
        "crawl_log": recent_lines(&crawler.profile.output_dir.join("crawl.log"), RECENT_LINES),
    })
}

/// `GET /metrics`: Prometheus' text format (version 0.0.4).
pub(super) fn metrics(crawler: &Crawler, key: &mut Key<Free>, sampler: &Sampler) -> String {
    let snap = snapshot(crawler, key);
    let st = &snap.stats;
    let mut out = String::new();
    let mut classes = std::collections::BTreeMap::new();
    for (code, n) in &st.by_status {
        let class = if *code >= 100 {
            format!("{}xx", code / 100)
        } else {
            "not_fetched".to_string()
        };
        *classes.entry(class).or_insert(0u64) += n;
    }
    family(
        &mut out,
        "archiver_urls_total",
        "counter",
        "crawl.log lines (URLs) by status class.",
    );
    for (class, n) in &classes {
        let _ = writeln!(out, "archiver_urls_total{{class=\"{class}\"}} {n}");
    }
    let counters = [
        (
            "archiver_fetched_total",
            "URLs answered by a server.",
            st.fetched(),
        ),
        (
            "archiver_archived_total",
            "Exchanges written to WARC files.",
            st.archived,
        ),
        (
            "archiver_bytes_total",
            "Content bytes of the responses archived in full.",
            st.bytes,
        ),
        (
            "archiver_errors_total",
            "Tries without an answer, and 5xx answers.",
            st.errors,
        ),
        ("archiver_retries_total", "Tries queued again.", st.retries),
    ];
    for (name, help, n) in counters {
        family(&mut out, name, "counter", help);
        let _ = writeln!(out, "{name} {n}");
    }
    let gauges = [
        ("archiver_queued", "URLs queued.", snap.queued as f64),
        (
            "archiver_in_flight",
            "Requests in flight.",
            snap.running as f64,
        ),
        (
            "archiver_paused",
            "1 while the operator has paused the crawl.",
            f64::from(u8::from(snap.paused)),
        ),
    ];
    for (name, help, v) in gauges {
        family(&mut out, name, "gauge", help);
        let _ = writeln!(out, "{name} {v}");
    }
    family(
        &mut out,
        "archiver_sites",
        "gauge",
        "Sites met in this run, by state.",
    );
    for (state, n) in site_states(&snap.rows) {
        let _ = writeln!(out, "archiver_sites{{state=\"{state}\"}} {n}");
    }
    family(
        &mut out,
        "archiver_politeness_waits",
        "gauge",
        "Sites with work waiting, by why.",
    );
    for why in ["delay", "backoff", "retry-after", "refusals", "held", "dns"] {
        let n = (snap.rows.iter())
            .filter(|r| r.queued > 0 && r.waits == why)
            .count();
        let _ = writeln!(out, "archiver_politeness_waits{{reason=\"{why}\"}} {n}");
    }
    family(
        &mut out,
        "archiver_urls_per_second",
        "gauge",
        "crawl.log lines per second.",
    );
    for (label, secs) in [("10s", 10), ("1m", 60), ("10m", 600)] {
        let r = sampler.rates(Duration::from_secs(secs))[0];
        let _ = writeln!(out, "archiver_urls_per_second{{window=\"{label}\"}} {r}");
    }
    out
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Sites by state: active (a request in flight), waiting (work, not yet due), suspended
/// (refusals), held, idle (nothing queued).
fn site_states(rows: &[SiteRow]) -> [(&'static str, usize); 5] {
    let count = |f: &dyn Fn(&SiteRow) -> bool| rows.iter().filter(|r| f(r)).count();
    [
        ("active", count(&|r| r.waits == "in-flight")),
        (
            "waiting",
            count(&|r| r.queued > 0 && !["in-flight", "held", "refusals"].contains(&r.waits)),
        ),
        ("suspended", count(&|r| r.waits == "refusals")),
        ("held", count(&|r| r.held)),
        ("idle", count(&|r| r.queued == 0 && r.waits != "in-flight")),
    ]
}

/// One row of the site table: the scheduler's view and crawl.log's counts for its host.
fn site_json(r: &SiteRow, stats: &Stats) -> Value {
    let host = stats.hosts.get(&host_key(&r.site));
    let (urls, bytes, fetched, errors) = host.map_or((0, 0, 0, 0), |h| {
        (
            h.urls,
            h.bytes,
            h.novel + h.duplicate + h.discarded,
            h.errors,
        )
    });
    let mut v = serde_json::to_value(r).unwrap_or_else(|_| json!({ "site": r.site }));
    if let Some(o) = v.as_object_mut() {
        o.insert("urls".into(), json!(urls));
        o.insert("fetched".into(), json!(fetched));
        o.insert("bytes".into(), json!(bytes));
        // Tries without an answer, and 5xx answers, as the totals count them.
        o.insert("errors".into(), json!(errors));
    }
    v
}

fn worker_label() -> String {
    let host = gethostname::gethostname()
        .to_string_lossy()
        .trim()
        .to_string();
    format!("{host}~{}", std::process::id())
}

/// The last `n` lines of a file (read from its last 512 KiB at most).
fn recent_lines(path: &Path, n: usize) -> Vec<String> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(512 * 1024);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut text = Vec::new();
    if file.read_to_end(&mut text).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&text);
    let mut lines: Vec<&str> = text.lines().collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0); // cut in the middle
    }
    let skip = lines.len().saturating_sub(n);
    lines[skip..].iter().map(|l| l.to_string()).collect()
}
