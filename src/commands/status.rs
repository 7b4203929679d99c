//! `archiver status --profile P`: a shared crawl as its database sees it, across workers.

use std::fmt::Write as _;

use crate::config::Profile;
use crate::frontier::postgres::{self, Status};

/// Why `status` printed nothing.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The profile's crawl keeps its frontier in SQLite: there is no shared state to read.
    #[error(
        "this profile's crawl keeps its frontier in SQLite ({0}); `status` reads a shared \
         frontier (set [frontier] database or ARCHIVER_DATABASE); a single-machine crawl's \
         figures are in its report.json"
    )]
    NotShared(String),
    #[error("{0}")]
    Frontier(#[from] crate::frontier::FrontierError),
}

/// Reads the shared crawl's state.
pub fn read(profile: &Profile) -> Result<Status, StatusError> {
    let Some(url) = profile.frontier.database_with_env() else {
        let state = profile.output_dir.join("state");
        return Err(StatusError::NotShared(state.display().to_string()));
    };
    Ok(postgres::status(&url, profile.frontier.lease)?)
}

/// The status as text: totals, then one line per worker.
pub fn render(s: &Status) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "crawl \"{}\"", s.crawl);
    let _ = writeln!(
        out,
        "queued {}, in flight {}, seen {}; sites {} ({} with work), suspended {}",
        s.queued, s.in_flight, s.seen, s.sites, s.sites_with_work, s.suspended_sites
    );
    let _ = writeln!(
        out,
        "budgets {} ({} leased now); rate {:.2} URLs/s over the last minute, {:.2} over the \
         live workers' runs",
        s.budgets, s.leases, s.rate_last_minute, s.rate_per_second
    );
    let _ = writeln!(
        out,
        "{:<32} {:>7} {:>9} {:>8} {:>7} {:>7}  {:<26} {:<20}  started",
        "worker", "state", "in flight", "done", "URLs/s", "leases", "last batch", "leased"
    );
    for w in &s.workers {
        let state = if w.ended {
            "ended"
        } else if w.alive {
            "alive"
        } else {
            "gone"
        };
        let _ = writeln!(
            out,
            "{:<32} {:>7} {:>9} {:>8} {:>7.2} {:>7}  {:<26} {:<20}  {}",
            w.name,
            state,
            w.in_flight,
            w.done,
            w.rate_last_minute,
            w.leases,
            last_batch(w),
            leased(w),
            w.started
        );
    }
    out
}

/// "3 done, 12 queued, 0.4 s ago", or "-" before the first.
fn last_batch(w: &crate::frontier::postgres::WorkerStatus) -> String {
    match w.last_batch_age_seconds {
        Some(age) => format!(
            "{} done, {} queued, {:.1} s ago",
            w.last_batch_done, w.last_batch_queued, age
        ),
        None => "-".to_string(),
    }
}

/// The budgets named, and how many more there are.
fn leased(w: &crate::frontier::postgres::WorkerStatus) -> String {
    if w.leased.is_empty() {
        return "-".to_string();
    }
    let more = w.leases - w.leased.len() as i64;
    let mut text = w.leased.join(" ");
    if more > 0 {
        let _ = write!(text, " +{more}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontier::postgres::WorkerStatus;

    fn worker(name: &str, leases: i64, leased: &[&str], batch: Option<f64>) -> WorkerStatus {
        WorkerStatus {
            name: name.into(),
            alive: true,
            ended: false,
            in_flight: 2,
            done: 40,
            leases,
            started: "2026-12-04T18:00:00Z".into(),
            heartbeat_age_seconds: 1.0,
            leased: leased.iter().map(|s| s.to_string()).collect(),
            rate_last_minute: 1.25,
            last_batch_age_seconds: batch,
            last_batch_done: 3,
            last_batch_queued: 12,
        }
    }

    #[test]
    fn each_worker_shows_its_rate_its_leases_and_its_last_batch() {
        let s = Status {
            crawl: "c".into(),
            queued: 5,
            in_flight: 2,
            seen: 47,
            sites: 4,
            sites_with_work: 2,
            suspended_sites: 0,
            workers: vec![
                worker(
                    "a~1",
                    5,
                    &["127.0.0.1", "127.0.0.2", "127.0.0.3"],
                    Some(0.44),
                ),
                worker("b~2", 0, &[], None),
            ],
            leases: 5,
            budgets: 9,
            rate_per_second: 0.8,
            rate_last_minute: 2.5,
        };
        let text = render(&s);
        assert!(
            text.contains("rate 2.50 URLs/s over the last minute, 0.80 over"),
            "{text}"
        );
        let a = text.lines().find(|l| l.starts_with("a~1")).unwrap();
        assert!(a.contains("3 done, 12 queued, 0.4 s ago"), "{a}");
        assert!(a.contains("127.0.0.1 127.0.0.2 127.0.0.3 +2"), "{a}");
        assert!(a.contains("1.25"), "{a}");
        let b = text.lines().find(|l| l.starts_with("b~2")).unwrap();
        assert_eq!(b.split_whitespace().filter(|w| *w == "-").count(), 2, "{b}");
    }
}
