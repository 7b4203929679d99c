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
        "budgets {} ({} leased now); rate {:.2} URLs/s (live workers, each over its run)",
        s.budgets, s.leases, s.rate_per_second
    );
    let _ = writeln!(
        out,
        "{:<32} {:>7} {:>9} {:>8} {:>7}  started",
        "worker", "state", "in flight", "done", "leases"
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
            "{:<32} {:>7} {:>9} {:>8} {:>7}  {}",
            w.name, state, w.in_flight, w.done, w.leases, w.started
        );
    }
    out
}
