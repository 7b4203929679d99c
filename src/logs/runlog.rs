//! The crawl's own records besides crawl.log: `run.log` (what the crawler decided and why),
//! `refusals.log` (every refusal a site gave us) and `state/sites.json` (what must outlive the
//! process: which sites are suspended, until when, in which round; the pause a site asked for
//! with `Retry-After`).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context as _;
use chrono::{DateTime, Utc};

use crate::politeness::Refusals;
use crate::warc::save_atomically;

/// Seconds since the Unix epoch as an ISO date.
pub(crate) fn format_epoch(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| DateTime::<Utc>::from_timestamp(s, 0))
        .map_or_else(
            || secs.to_string(),
            |d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        )
}

fn append(path: &Path) -> anyhow::Result<BufWriter<File>> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    Ok(BufWriter::new(file))
}

/// `run.log`: one timestamped line per decision worth knowing later.
pub(crate) struct RunLog {
    out: Mutex<BufWriter<File>>,
}

impl RunLog {
    pub(crate) fn open(path: &Path) -> anyhow::Result<RunLog> {
        Ok(RunLog {
            out: Mutex::new(append(path)?),
        })
    }

    /// Writes a line (and the same on the tracing log). Failures are reported, not fatal: this
    /// log explains the crawl, it is not the crawl.
    pub(crate) fn line(&self, text: &str) {
        tracing::info!("{text}");
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let now = Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        if writeln!(out, "{now} {text}")
            .and_then(|_| out.flush())
            .is_err()
        {
            tracing::error!("cannot write run.log");
        }
    }
}

/// `refusals.log`: time, host, IP, URL, status, marker — tab-separated.
pub(crate) struct RefusalLog {
    out: BufWriter<File>,
}

impl RefusalLog {
    pub(crate) fn open(path: &Path) -> anyhow::Result<RefusalLog> {
        Ok(RefusalLog { out: append(path)? })
    }

    pub(crate) fn write(
        &mut self,
        host: &str,
        ip: IpAddr,
        url: &str,
        status: u16,
        marker: &str,
    ) -> io::Result<()> {
        let now = Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        writeln!(self.out, "{now}\t{host}\t{ip}\t{url}\t{status}\t{marker}")?;
        self.out.flush()
    }
}

/// What the book remembers of one site. The refusal fields stay at the top level of the JSON
/// (flattened), so books written before `retry_after` existed still load.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct SiteMemory {
    #[serde(flatten)]
    refusals: Refusals,
    /// Seconds: the largest `Retry-After` the site sent, its pause from then on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after: Option<f64>,
}

/// Per-site facts that outlive one run (suspensions, Retry-After floors), saved as JSON.
pub(crate) struct SiteBook {
    path: PathBuf,
    sites: BTreeMap<String, SiteMemory>,
    dirty: bool,
    /// Snapshots taken so far (see [`BookSave::seq`]).
    snapshots: u64,
}

impl SiteBook {
    /// Loads the book, or starts an empty one. A damaged file is an error: silently forgetting
    /// a suspension would send us straight back to a site that asked us to go away.
    pub(crate) fn load(path: &Path) -> anyhow::Result<SiteBook> {
        let sites = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is damaged; fix or remove it", path.display()))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", path.display()));
            }
        };
        Ok(SiteBook {
            path: path.to_path_buf(),
            sites,
            dirty: false,
            snapshots: 0,
        })
    }

    /// What is known of a site's refusals (nothing for a new site).
    pub(crate) fn refusals(&self, origin: &str) -> Refusals {
        self.sites
            .get(origin)
            .map(|m| m.refusals.clone())
            .unwrap_or_default()
    }

    /// The pause a site asked for with `Retry-After`, if it ever did.
    pub(crate) fn retry_after(&self, origin: &str) -> Option<std::time::Duration> {
        let secs = self.sites.get(origin)?.retry_after?;
        std::time::Duration::try_from_secs_f64(secs).ok()
    }

    /// Records a site's refusals; sites with nothing to remember are left out.
    pub(crate) fn set(&mut self, origin: &str, r: &Refusals) {
        let mut m = self.sites.get(origin).cloned().unwrap_or_default();
        m.refusals = r.clone();
        self.store(origin, m);
    }

    /// Records the site's `Retry-After` floor.
    pub(crate) fn set_retry_after(&mut self, origin: &str, pause: std::time::Duration) {
        let mut m = self.sites.get(origin).cloned().unwrap_or_default();
        m.retry_after = Some(pause.as_secs_f64());
        self.store(origin, m);
    }

    fn store(&mut self, origin: &str, m: SiteMemory) {
        let empty = m == SiteMemory::default();
        let changed = match self.sites.get(origin) {
            Some(old) => old != &m,
            None => !empty,
        };
        if !changed {
            return;
        }
        if empty {
            self.sites.remove(origin);
        } else {
            self.sites.insert(origin.to_string(), m);
        }
        self.dirty = true;
    }

    /// The book as it stands, to be written by [`BookSave::write`] (outside whatever lock
    /// holds the book: the write syncs and renames a file); None when nothing changed since
    /// the last snapshot.
    pub(crate) fn snapshot(&mut self) -> Option<BookSave> {
        if !self.dirty {
            return None;
        }
        self.dirty = false;
        self.snapshots += 1;
        Some(BookSave {
            seq: self.snapshots,
            path: self.path.clone(),
            // A map of strings and numbers always serialises.
            json: serde_json::to_vec_pretty(&self.sites).unwrap_or_default(),
        })
    }

    /// The next snapshot is taken even if nothing changed (the crawl's last save: an earlier
    /// write may have failed).
    pub(crate) fn touch(&mut self) {
        self.dirty = true;
    }

    /// Writes the book now, if it changed (the tests' shortcut for a snapshot and its write).
    #[cfg(test)]
    pub(crate) fn save(&mut self) -> anyhow::Result<()> {
        match self.snapshot() {
            Some(save) => save.write(),
            None => Ok(()),
        }
    }
}

/// A copy of the site book on its way to disk.
#[derive(Debug)]
pub(crate) struct BookSave {
    /// Snapshots are numbered: a writer that meets an older one after a newer skips it.
    pub(crate) seq: u64,
    path: PathBuf,
    json: Vec<u8>,
}

impl BookSave {
    /// Writes the book atomically ([`save_atomically`]), whole. Two snapshots may reach
    /// their writers in either order: the caller writes one only when it is newer (`seq`)
    /// than the last it wrote.
    pub(crate) fn write(self) -> anyhow::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        save_atomically(&self.path, |out| out.write_all(&self.json))
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

/// One run of a crawl's profile, as `state/runs.json` keeps it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Run {
    /// ISO time the run started.
    pub started: String,
    /// ISO time it ended; None while it runs, or when the process was killed.
    pub ended: Option<String>,
    /// `running`, `finished`, `interrupted`, `no seed fetched`, `stopped: …`, or `killed`
    /// (it never ended cleanly).
    pub outcome: String,
    /// crawl.log lines written by the run (URL outcomes, tries included).
    pub urls: u64,
    /// Seconds from start to end (0 for a killed run).
    #[serde(default)]
    pub elapsed_seconds: f64,
}

impl Run {
    pub fn seconds(&self) -> f64 {
        self.elapsed_seconds
    }
}

/// `state/runs.json`: every run of the crawl, so the reports can list them.
pub(crate) struct RunBook {
    path: PathBuf,
    pub runs: Vec<Run>,
    started: Option<std::time::Instant>,
}

impl RunBook {
    /// Loads the runs so far. A run still marked running was killed (it never ended). A
    /// damaged file is kept aside as `runs.json.damaged` and a new list begins: the list only
    /// describes the crawl, and the crawl itself (frontier, crawl.log) is intact.
    pub(crate) fn load(path: &Path, runlog: &RunLog) -> RunBook {
        let mut runs: Vec<Run> = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                let aside = path.with_extension("json.damaged");
                let _ = std::fs::rename(path, &aside);
                runlog.line(&format!(
                    "{} is damaged ({e}); kept as {}, starting a new list of runs",
                    path.display(),
                    aside.display()
                ));
                Vec::new()
            }),
            Err(_) => Vec::new(),
        };
        for r in &mut runs {
            if r.ended.is_none() {
                r.outcome = "killed".to_string();
            }
        }
        RunBook {
            path: path.to_path_buf(),
            runs,
            started: None,
        }
    }

    /// Records the start of a run.
    pub(crate) fn start(&mut self) -> anyhow::Result<()> {
        self.started = Some(std::time::Instant::now());
        self.runs.push(Run {
            started: Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            ended: None,
            outcome: "running".to_string(),
            urls: 0,
            elapsed_seconds: 0.0,
        });
        self.save()
    }

    /// Updates the current run (its URLs so far, and how it ended when `outcome` is final).
    pub(crate) fn update(&mut self, urls: u64, outcome: Option<&str>) {
        let elapsed = self.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        if let (Some(run), Some(_)) = (self.runs.last_mut(), self.started) {
            run.urls = urls;
            run.elapsed_seconds = (elapsed * 1000.0).round() / 1000.0;
            if let Some(o) = outcome {
                run.outcome = o.to_string();
                run.ended = Some(Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
            }
        }
    }

    /// Writes the list atomically ([`save_atomically`]).
    pub(crate) fn save(&self) -> anyhow::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let json = serde_json::to_vec_pretty(&self.runs)?;
        save_atomically(&self.path, |out| out.write_all(&json))
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

/// The message a caught panic carries (a job's, the WARC writer's), for its log line.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_book_round_trips_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join("sites.json");
        let mut book = SiteBook::load(&path).unwrap();
        let r = Refusals {
            consecutive: 0,
            round: 1,
            until: Some(2_000_000_000),
        };
        book.set("http://a.test", &r);
        book.save().unwrap();
        let mut book = SiteBook::load(&path).unwrap();
        assert_eq!(book.refusals("http://a.test"), r);
        assert_eq!(book.refusals("http://b.test"), Refusals::default());
        assert_eq!(book.retry_after("http://a.test"), None);
        // A Retry-After floor is kept beside the refusals, and an old book (no floor) loads.
        book.set_retry_after("http://b.test", std::time::Duration::from_millis(2500));
        book.save().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"retry_after\": 2.5"), "{text}");
        let book = SiteBook::load(&path).unwrap();
        assert_eq!(
            book.retry_after("http://b.test"),
            Some(std::time::Duration::from_millis(2500))
        );
        assert_eq!(book.refusals("http://a.test"), r);
        std::fs::write(&path, b"{not json").unwrap();
        let e = SiteBook::load(&path).err().unwrap();
        assert!(format!("{e:#}").contains("damaged"));
    }

    #[test]
    fn snapshots_are_numbered_and_taken_only_after_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sites.json");
        let mut book = SiteBook::load(&path).unwrap();
        assert!(book.snapshot().is_none(), "nothing changed yet");
        book.set_retry_after("http://a.test", std::time::Duration::from_secs(3));
        let first = book.snapshot().unwrap();
        assert!(book.snapshot().is_none(), "taken once per change");
        book.set_retry_after("http://a.test", std::time::Duration::from_secs(9));
        let second = book.snapshot().unwrap();
        assert!(second.seq > first.seq);
        // Written out of order, the newer is the one a writer keeps (it skips older ones).
        second.write().unwrap();
        let kept = SiteBook::load(&path).unwrap();
        assert_eq!(
            kept.retry_after("http://a.test"),
            Some(std::time::Duration::from_secs(9))
        );
        book.touch();
        assert!(
            book.snapshot().is_some(),
            "the last save is taken whatever changed"
        );
    }

    #[test]
    fn runs_survive_and_a_killed_run_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::open(&dir.path().join("run.log")).unwrap();
        let path = dir.path().join("state").join("runs.json");
        let mut book = RunBook::load(&path, &log);
        book.start().unwrap();
        book.update(12, Some("interrupted"));
        book.save().unwrap();
        let mut book = RunBook::load(&path, &log);
        book.start().unwrap(); // then "killed": never updated
        let book = RunBook::load(&path, &log);
        let outcomes: Vec<&str> = book.runs.iter().map(|r| r.outcome.as_str()).collect();
        assert_eq!(outcomes, ["interrupted", "killed"]);
        assert_eq!(book.runs[0].urls, 12);
        std::fs::write(&path, b"[{oops").unwrap();
        let book = RunBook::load(&path, &log);
        assert!(book.runs.is_empty());
        assert!(path.with_extension("json.damaged").exists());
    }

    async fn caught(f: impl std::future::Future<Output = ()>) -> Box<dyn std::any::Any + Send> {
        use futures_util::FutureExt as _;
        std::panic::AssertUnwindSafe(f)
            .catch_unwind()
            .await
            .unwrap_err()
    }

    #[tokio::test]
    async fn a_caught_panic_gives_its_message() {
        assert_eq!(
            panic_message(&*caught(async { panic!("boom") }).await),
            "boom"
        );
        let n = 7;
        let string_panic = caught(async move {
            if n == 7 {
                panic!("bad value {n}");
            }
        })
        .await;
        assert_eq!(panic_message(&*string_panic), "bad value 7");
        let other = caught(async { std::panic::panic_any(7u8) }).await;
        assert_eq!(panic_message(&*other), "a panic without a message");
    }

    #[test]
    fn epoch_formats_as_iso() {
        assert_eq!(format_epoch(0), "1970-01-01T00:00:00Z");
    }
}
