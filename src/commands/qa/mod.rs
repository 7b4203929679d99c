//! `archiver qa`: every archived page replayed in headless Chromium, answered from the crawl's
//! own WARCs alone, and what it could not find listed with the reason crawl.log gives.
//!
//! - `plan`: the pages to replay and crawl.log's last word on every URL;
//! - `browse`: the replay, each request answered from a record (or refused, and why);
//! - `reasons`: why a URL is not in the archive (`not-discovered`, `out-of-scope`, `robots`,
//!   `failed`, `discarded`);
//! - `compare`: `--compare`, the same pages of two crawls, pixels and text;
//! - `report`: the JSON and the one-file HTML report;
//! - `missing`: the patch list `crawl --patch` reads.

mod browse;
mod compare;
pub mod missing;
mod plan;
mod reasons;
mod report;

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

pub use missing::{PatchError, PatchLine};
pub use plan::PlanError;
pub use reasons::Reason;
pub use report::QaJson;

use crate::browser::{self, Browser, LaunchError};

/// Pages replayed when neither `--pages` nor `--all` is given.
pub const DEFAULT_PAGES: usize = 200;

/// What `archiver qa` is asked to do.
#[derive(Debug, Clone)]
pub struct QaOptions {
    pub crawl: PathBuf,
    /// How many pages, spread over the sites; None: every archived page.
    pub pages: Option<usize>,
    /// The HTML report to write.
    pub report: Option<PathBuf>,
    pub json: Option<PathBuf>,
    /// Another crawl of the same sites to compare with.
    pub compare: Option<PathBuf>,
    /// The patch list to write.
    pub missing: Option<PathBuf>,
    /// The Chromium to run (default: found on PATH, as the crawl finds it).
    pub browser: Option<PathBuf>,
    /// Pages replayed at once, each in its own tab.
    pub tabs: usize,
    /// Longest time one page may take; then it is cut and reported.
    pub timeout: Duration,
}

/// What a check found, for the command line's summary.
#[derive(Debug)]
pub struct QaOutcome {
    pub json: QaJson,
    /// Lines written to the patch list.
    pub patch_lines: usize,
    pub elapsed: Duration,
}

/// Why the check could not run.
#[derive(Debug, thiserror::Error)]
pub enum QaError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("no Chromium found ({0}); give one with --browser PATH")]
    NoBrowser(String),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("{0}: no archived HTML page to replay")]
    NoPages(PathBuf),
    #[error(transparent)]
    Io(#[from] crate::commands::IoAt),
}

/// Runs the check; writes the report, the JSON and the patch list asked for.
pub async fn run(opts: &QaOptions) -> Result<QaOutcome, QaError> {
    let started = Instant::now();
    let this = plan::CrawlDir::open(&opts.crawl)?;
    let pages = plan::sample(&this.pages, opts.pages);
    if pages.is_empty() {
        return Err(QaError::NoPages(opts.crawl.clone()));
    }
    let other = match &opts.compare {
        Some(dir) => Some(plan::CrawlDir::open(dir)?),
        None => None,
    };
    let exe = browser::find_executable(opts.browser.as_deref()).ok_or_else(|| {
        QaError::NoBrowser(match &opts.browser {
            Some(p) => format!("{} is not there", p.display()),
            None => format!(
                "looked for {} on PATH",
                browser::process::CANDIDATES.join(", ")
            ),
        })
    })?;
    let browser = Browser::launch(&exe, opts.tabs).await?;
    let replayed = replay_both(&browser, (&this, other.as_ref()), &pages, opts).await;
    browser.close().await;
    let (mut mine, theirs) = replayed;
    let pairs = theirs.map(|t| compare::pair(&mine, &t));
    report::worst_first(&mut mine);
    let json = report::json(&opts.crawl.display().to_string(), &mine, pairs.as_deref());
    write_outputs(opts, &json, &mine, pairs.as_deref())?;
    let patch_lines = match &opts.missing {
        Some(path) => {
            let lines = missing::patch_lines(&mine);
            save(path, |out| missing::write(out, &lines))?;
            lines.len()
        }
        None => 0,
    };
    Ok(QaOutcome {
        json,
        patch_lines,
        elapsed: started.elapsed(),
    })
}

type Both = (Vec<browse::Replayed>, Option<Vec<browse::Replayed>>);

/// The pages replayed from this crawl and, with `--compare`, those of them the other crawl
/// archived too, under one progress bar.
async fn replay_both(
    browser: &Browser,
    (this, other): (&plan::CrawlDir, Option<&plan::CrawlDir>),
    pages: &[plan::PageRef],
    opts: &QaOptions,
) -> Both {
    let theirs: Vec<plan::PageRef> = match other {
        Some(o) => {
            let archived: std::collections::HashSet<&str> =
                o.pages.iter().map(|p| p.url.as_str()).collect();
            pages
                .iter()
                .filter(|p| archived.contains(p.url.as_str()))
                .cloned()
                .collect()
        }
        None => Vec::new(),
    };
    let bar = progress((pages.len() + theirs.len()) as u64);
    let tick = |r: &browse::Replayed| {
        if let Some(b) = &bar {
            b.set_message(r.url.clone());
            b.inc(1);
        }
    };
    let how = (opts.tabs, opts.timeout);
    let mine = browse::replay_all(browser, this, pages, how, &tick).await;
    let theirs = match other {
        Some(o) => Some(browse::replay_all(browser, o, &theirs, how, &tick).await),
        None => None,
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    (mine, theirs)
}

/// A bar of `total` pages on a terminal; none when standard error is not one.
fn progress(total: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:30} {pos}/{len} pages {elapsed_precise} {wide_msg}")
    {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(250));
    Some(bar)
}

fn write_outputs(
    opts: &QaOptions,
    json: &QaJson,
    pages: &[browse::Replayed],
    pairs: Option<&[compare::Pair]>,
) -> Result<(), QaError> {
    if let Some(path) = &opts.json {
        save(path, |out| {
            serde_json::to_writer_pretty(&mut *out, json).map_err(std::io::Error::other)?;
            out.write_all(b"\n")
        })?;
    }
    if let Some(path) = &opts.report {
        let html = report::html(json, pages, pairs);
        save(path, |out| out.write_all(html.as_bytes()))?;
    }
    Ok(())
}

fn save(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), QaError> {
    crate::warc::save_atomically(path, write).map_err(|e| crate::commands::io_at(path)(e))?;
    Ok(())
}
