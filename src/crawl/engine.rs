//! The `Crawler`: what one crawl holds while it runs, opened here and finished here.
//!
//! It is a set of ports, each handed on its own to the stages of the road (`job.rs`): the
//! network ([`Net`]), the desks ([`Desks`]: the scheduler, the archive desk and the journal
//! behind the engine's three locks, run.log, the wake-up), the frontier's way in for links
//! ([`Crawler::links`]), the page rules ([`Crawler::page_rules`]), what archiving reads
//! ([`Crawler::keeping`]), and the rendering, the sitemaps, an earlier crawl's captures and
//! the operator's orders. The engine opens them, lends them out, and at the end closes the
//! files and sums the crawl up.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use anyhow::Context as _;
use url::Url;

use super::archived::ArchivedBefore;
use super::desks::Desks;
use super::disposition::Keeping;
use super::fetch::Net;
use super::journal::{Journal, LineWatcher};
use super::links::Links;
use super::locks::{Free, Key, Root};
use super::operator::Operator;
use super::page::PageRules;
use super::render::{Earlier as RenderEarlier, Rendering};
use super::sched::{Gate, Limits, ResolveRequest, Sched};
use super::sitemaps::Sitemaps;
use super::writer::{Archive, ArchiveDesk};
use crate::config::Profile;
use crate::frontier::Frontier;
use crate::logs::crawllog::CrawlLog;
use crate::logs::report::{Progress, Stats};
use crate::logs::runlog::{RefusalLog, RunBook, RunLog, SiteBook};
use crate::net::dns::Resolver;
use crate::net::fetch::Fetcher;
use crate::recrawl::EarlierCaptures;
use crate::scope::rules::ScopeRules;
use crate::scope::traps::{ContentTraps, UrlTrapRules};
use crate::scope::Scope;
use crate::warc::{WarcSettings, WarcWriter};

/// A running crawl.
pub(super) struct Crawler {
    pub(super) profile: Profile,
    pub(super) net: Net,
    pub(super) scope: Scope,
    pub(super) rules: ScopeRules,
    /// The URL trap rules of the profile's `[traps]` table (None: all off).
    pub(super) url_traps: Option<UrlTrapRules>,
    /// The repeated-content trap rule is on (its detector lives in the scheduler).
    pub(super) content_traps_on: bool,
    /// The scheduler, the archive desk, the journal, run.log.
    pub(super) desks: Desks,
    pub(super) progress: Progress,
    /// Set by Ctrl-C or SIGTERM (not by errors): the run ends with exit code 130.
    pub(super) interrupted: AtomicBool,
    /// Pages empty without JavaScript, rendered in headless Chromium (see `super::render`).
    pub(super) rendering: Arc<Rendering>,
    /// Sitemaps looked for, and the `lastmod` of the URLs they list (see `super::sitemaps`).
    pub(super) sitemaps: Sitemaps,
    /// What `[recrawl] previous` archived with validators (empty without it).
    pub(super) earlier: EarlierCaptures,
    /// The operator's orders (`super::operator`), kept in `state/operator.json`.
    pub(super) operator: Operator,
}

impl Crawler {
    /// Opens the output folder, the WARC writer and the logs. Also returns what the last run
    /// archived, as far as recovery and the closed WARCs' indexes tell (for `Sched::resume`).
    pub(super) fn open(
        profile: Profile,
        resolve_tx: tokio::sync::mpsc::UnboundedSender<ResolveRequest>,
    ) -> anyhow::Result<(Crawler, ArchivedBefore)> {
        let out = profile.output_dir.clone();
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create the output folder {}", out.display()))?;
        // The state first: another crawl's state folder must stop us before anything is written.
        let frontier = open_frontier(&profile)?;
        // A shared crawl's payload digests: a payload one worker archived is another's revisit.
        let shared_digests = frontier.shared_digests();
        let settings = warc_settings(&profile);
        let index_dir = settings.index_dir.clone();
        let recovered = crate::warc::recover_open_files(&settings)
            .with_context(|| format!("cannot close the unfinished WARCs in {}", out.display()))?;
        let warc = WarcWriter::new(settings)
            .with_context(|| format!("cannot write WARCs under {}", out.display()))?;
        let log_path = out.join("crawl.log");
        // The whole crawl's counts so far: every earlier run's lines are in crawl.log.
        let seeds: Vec<&str> = profile.seeds.iter().map(Url::as_str).collect();
        let mut stats = Stats::from_log(&log_path, &seeds)
            .with_context(|| format!("cannot read {}", log_path.display()))?;
        stats.run_started = Some(SystemTime::now());
        let log = CrawlLog::open(&log_path)
            .with_context(|| format!("cannot open {}", log_path.display()))?;
        let refusals = RefusalLog::open(&out.join("refusals.log"))?;
        let digests = load_digests(&profile)?;
        let runlog = RunLog::open(&out.join("run.log"))?;
        let book = SiteBook::load(&out.join("state").join("sites.json"))?;
        let runs = RunBook::load(&out.join("state").join("runs.json"), &runlog);
        let fetcher = Fetcher::new(profile.fetch.clone());
        say_start(&runlog, &profile, &stats, &log_path);
        let archived = recovered_urls(&recovered, &runlog);
        let resolver = Resolver::new(profile.dns.clone());
        let limits = limits(&profile, &resolver);
        let content_traps = content_traps(&profile.traps);
        let rendering = Rendering::new(
            profile.browser.clone(),
            profile.browser.tabs,
            profile.frontier.database.is_some(),
            RenderEarlier {
                crawl_log: &log_path,
                recovered: &archived,
                warc_dir: &profile.output_dir.join("warcs"),
            },
            &runlog,
        );
        let last_start = runs.runs.last().map(|r| r.started.as_str());
        let archive = Archive::new(warc, digests, profile.dedup.max_digests, shared_digests);
        let archive = ArchiveDesk::new(archive);
        let archived = ArchivedBefore::new(archived, &index_dir, last_start);
        let earlier = load_earlier(&profile, &runlog)?;
        let operator = Operator::load(&out.join("state"), &runlog, &profile);
        let content_traps_on = content_traps.is_some();
        let mut sched = Sched::new(frontier, book, content_traps, limits, Instant::now());
        sched.steer(operator.steering());
        let rendering = Arc::new(rendering);
        let journal = Journal::new(log, stats, refusals, runs);
        let watcher: Arc<dyn LineWatcher> = rendering.clone();
        let desks = Desks::new(sched, archive, journal, runlog, resolve_tx, watcher);
        let net = Net {
            fetcher,
            resolver,
            guard: profile.guard.clone(),
        };
        let crawler = Crawler {
            scope: Scope::new(profile.scope.clone(), &profile.seeds),
            rules: ScopeRules::new(&profile.rules, &profile.scope.include),
            url_traps: UrlTrapRules::from_settings(
                &profile.traps,
                chrono::Datelike::year(&chrono::Utc::now()),
            ),
            content_traps_on,
            net,
            desks,
            progress: Progress::new(),
            interrupted: AtomicBool::new(false),
            rendering,
            sitemaps: Sitemaps::new(&profile.discovery),
            earlier,
            operator,
            profile,
        };
        Ok((crawler, archived))
    }

    /// The decide rules checked again when a queued URL is taken up.
    pub(super) fn gate(&self) -> Gate<'_> {
        Gate {
            optout: &self.profile.optout,
            rules: &self.rules,
        }
    }

    /// The frontier's way in for outlinks: the desks and the rules links are judged by (the
    /// scope widened by seeds the operator added, as profile seeds widen it).
    pub(super) fn links(&self) -> Links<'_> {
        Links {
            desks: &self.desks,
            scope: &self.scope,
            widened: self.operator.scope(),
            rules: &self.rules,
            optout: &self.profile.optout,
            url_traps: self.url_traps.as_ref(),
        }
    }

    /// The rules a page is read by.
    pub(super) fn page_rules(&self) -> PageRules<'_> {
        PageRules {
            robots_token: &self.profile.robots_token,
            max_outlinks: self.profile.max_outlinks,
            text_hash: self.content_traps_on,
        }
    }

    /// The sitemaps' port: what robots.txt names, what a sitemap lists.
    pub(super) fn sitemap_desk(&self) -> super::sitemap_links::SitemapDesk<'_> {
        super::sitemap_links::SitemapDesk {
            links: self.links(),
            sitemaps: &self.sitemaps,
            earlier: &self.earlier,
        }
    }

    /// The robots.txt job's ports: the network, the desks, the archiving of its answers, the
    /// product token its rules are read for, the sitemaps it names.
    pub(super) fn robots_job(&self) -> super::prereq::RobotsJob<'_> {
        super::prereq::RobotsJob {
            net: &self.net,
            desks: &self.desks,
            keeping: self.keeping(),
            robots_token: &self.profile.robots_token,
            sitemaps: self.sitemap_desk(),
        }
    }

    /// What the archiving of a record reads besides the answer.
    pub(super) fn keeping(&self) -> Keeping<'_> {
        Keeping {
            earlier: &self.earlier,
            sitemaps: &self.sitemaps,
        }
    }

    /// Queues the seeds not seen before; returns how many.
    pub(super) fn queue_seeds(&self, key: &mut Key<Free>) -> usize {
        let gate = self.gate();
        let mut queued = 0;
        for seed in &self.profile.seeds {
            let seed = crate::frontier::Candidate::seed(seed.clone());
            if self
                .desks
                .with_sched(key, |s| s.seed(seed, &gate, super::sched::Clock::now()))
            {
                queued += 1;
            }
        }
        queued
    }

    /// Closes the files and says how the crawl ended.
    pub(super) async fn finish(&self, root: &mut Root) -> anyhow::Result<Stats> {
        // Done-marks and retries wait for a later commit (`commits.rs`): the last ones are made
        // durable here, so a clean end leaves nothing in flight.
        root.with(|key| self.desks.commit(key));
        self.progress.finish();
        root.with(|key| self.leave_shared(key));
        root.with(|key| self.desks.archive.close(key))
            .context("cannot close the last WARC file")?;
        root.with(|key| self.sum_up(key))
    }

    /// The end of a run, its last WARC closed: the statistics, the run book, `report.json`, the
    /// site book and run.log's last line. (The WACZ, when the profile asks, is packed by the
    /// command once the crawl has ended: `commands::wacz::pack_crawl`.)
    fn sum_up(&self, key: &mut Key<Free>) -> anyhow::Result<Stats> {
        let mut stats = self.desks.with_journal(key, |j| j.stats.clone());
        let wall = SystemTime::now();
        let (left, suspended) = self.desks.with_sched(key, |s| {
            let left = s.total_queued() as u64;
            (left, s.suspended_with_work(wall))
        });
        stats.left_queued = left;
        stats.suspended = suspended;
        stats.suspended.sort();
        stats.interrupted = self.interrupted.load(Ordering::SeqCst);
        let outcome = match self.desks.with_journal(key, |j| j.fatal.clone()) {
            Some(why) => format!("stopped: {why}"),
            None if stats.interrupted => "interrupted".to_string(),
            None if stats.no_seed_answered() => "no seed fetched".to_string(),
            None => "finished".to_string(),
        };
        let saved = self.desks.with_journal(key, |j| {
            j.runs.update(stats.this_run().0, Some(&outcome));
            j.runs.save()
        });
        if let Err(e) = saved {
            self.desks
                .runlog
                .line(&format!("cannot record the run: {e:#}"));
        }
        self.write_report(key, &stats, true);
        stats.runs = self.desks.with_journal(key, |j| j.runs.runs.clone());
        let rewrite = self.desks.book_failed();
        self.desks.with_sched(key, |s| s.save_book_at_end(rewrite));
        self.desks.runlog.line(&format!(
            "end ({outcome}): {} URLs in this run; whole crawl: {} fetched, {} archived, {} \
             suspended sites, {} URLs left queued",
            stats.this_run().0,
            stats.fetched(),
            stats.archived,
            stats.suspended.len(),
            stats.left_queued
        ));
        if let Some(why) = self.desks.with_journal(key, |j| j.fatal.take()) {
            anyhow::bail!("the crawl stopped: {why}");
        }
        Ok(stats)
    }

    /// True when an earlier run left nothing to do: nothing queued or in flight, and no seed
    /// new to the frontier (a seed added to the profile makes the crawl go on).
    pub(super) fn already_complete(
        &self,
        key: &mut Key<Free>,
        in_flight: usize,
        new_seeds: usize,
    ) -> bool {
        let ran_before = self.desks.with_journal(key, |j| j.stats.run_base > 0);
        // A shared crawl is complete only when no worker has anything queued or in flight.
        let queued = self.desks.with_sched(key, Sched::left_anywhere);
        ran_before && queued == 0 && in_flight == 0 && new_seeds == 0 && !self.desks.stopped()
    }

    /// Ends a run that had nothing to do, touching no report: only run.log says it happened.
    pub(super) async fn leave_complete(&self, root: &mut Root) -> anyhow::Result<Stats> {
        root.with(|key| self.leave_shared(key));
        root.with(|key| self.desks.archive.close(key))
            .context("cannot close the WARC writer")?;
        let stats = root.with(|key| {
            self.desks.with_journal(key, |j| {
                let mut stats = j.stats.clone();
                stats.runs = j.runs.runs.clone();
                stats
            })
        });
        self.desks.runlog.line(
            "nothing to do: the crawl is already complete (reports left as they are); set \
             another [output] dir to crawl again",
        );
        Ok(stats)
    }

    /// This worker stops: with a shared frontier its leases go back at once.
    fn leave_shared(&self, key: &mut Key<Free>) {
        if let Err(e) = self.desks.with_sched(key, Sched::leave_shared) {
            self.desks
                .runlog
                .line(&format!("cannot sign off the shared frontier: {e}"));
        }
        let (calls, trips) = self.desks.with_sched(key, |s| s.database_counts());
        if calls > 0 {
            self.desks.runlog.line(&format!(
                "shared frontier: {calls} database calls in this run ({trips} round trips)"
            ));
        }
    }

    /// Brings the run book and `report.json` up to date while the crawl runs.
    pub(super) fn report_now(&self, key: &mut Key<Free>) {
        let (stats, saved) = self.desks.with_journal(key, |j| {
            j.runs.update(j.stats.this_run().0, None);
            (j.stats.clone(), j.runs.save())
        });
        if let Err(e) = saved {
            self.desks
                .runlog
                .line(&format!("cannot record the run: {e:#}"));
        }
        self.write_report(key, &stats, false);
    }

    /// Writes `report.json` (atomically: a temp file, then a rename).
    pub(super) fn write_report(&self, key: &mut Key<Free>, stats: &Stats, finished: bool) {
        let remaining = self.desks.with_sched(key, |s| {
            let mut per_host = std::collections::BTreeMap::new();
            for (origin, n) in s.queued_per_site() {
                let n = n as u64;
                *per_host
                    .entry(crate::logs::report::host_key(&origin))
                    .or_insert(0) += n;
            }
            per_host
        });
        let runs = self.desks.with_journal(key, |j| j.runs.runs.clone());
        let path = self.profile.output_dir.join("report.json");
        let name = &self.profile.name;
        let written = crate::warc::save_atomically(&path, |out| {
            stats.write_report_json(out, name, finished, &remaining, &runs)
        });
        if let Err(e) = written {
            self.desks
                .runlog
                .line(&format!("cannot write {}: {e}", path.display()));
        }
    }
}

/// run.log's first lines of a run: crawl.log lines the reports could not read back, the crawl
/// and its identity, and whether robots.txt is obeyed.
fn say_start(runlog: &RunLog, profile: &Profile, stats: &Stats, log_path: &std::path::Path) {
    if stats.unreadable_lines > 0 {
        runlog.line(&format!(
            "{} lines of {} could not be read back (torn by a crash?); the reports leave \
             them out",
            stats.unreadable_lines,
            log_path.display()
        ));
    }
    runlog.line(&format!(
        "start crawl {:?} with profile {} as {:?}",
        profile.name,
        profile.path.display(),
        profile.user_agent
    ));
    if !profile.obey_robots {
        runlog.line(&format!(
            "robots.txt is NOT obeyed in this run (unrestricted); reason: {}",
            profile.unrestricted_reason
        ));
    }
}

/// The URLs archived in the WARCs recovered at start, each recovery said in run.log.
fn recovered_urls(recovered: &[crate::warc::Recovered], runlog: &RunLog) -> HashSet<String> {
    let mut archived = HashSet::new();
    for r in recovered {
        runlog.line(&format!(
            "recovered {}: {} whole records kept, {} bytes of a torn record cut{}",
            r.path.display(),
            r.records_kept,
            r.bytes_cut,
            if r.removed {
                " (nothing left: removed)"
            } else {
                ""
            }
        ));
        archived.extend(r.captured_uris().map(str::to_string));
    }
    archived
}

/// The earlier crawls' captures, said in run.log; empty without `[recrawl] previous`.
fn load_earlier(p: &Profile, runlog: &RunLog) -> anyhow::Result<EarlierCaptures> {
    if p.recrawl.previous.is_empty() {
        return Ok(EarlierCaptures::default());
    }
    let earlier = EarlierCaptures::load(&p.recrawl)
        .context("cannot read the earlier crawls named in [recrawl] previous")?;
    let s = &earlier.stats;
    runlog.line(&format!(
        "recrawl: {} earlier captures from {} CDXJ files, {} with a validator ({} unreadable, \
         {} past the limit of {})",
        s.captures,
        s.files,
        s.with_validator,
        s.unreadable,
        s.left_out,
        crate::recrawl::MAX_CAPTURES
    ));
    Ok(earlier)
}

/// The scheduler's limits, from the profile.
fn limits(profile: &Profile, resolver: &Resolver) -> Limits {
    Limits {
        max_pages_per_site: profile.scope.max_pages_per_site,
        dns_ttl: resolver.ttl(),
        obey_robots: profile.obey_robots,
        max_retries: profile.politeness.max_retries,
        max_crawl_delay: profile.politeness.max_crawl_delay,
        budget: profile.politeness.budget,
        guard: profile.guard.clone(),
        busy_retry: super::sched::shared::busy_retry(profile.politeness.min_delay),
        robots_token: profile.robots_token.clone(),
        politeness: profile.politeness.clone(),
    }
}

/// The crawl's frontier: an SQLite database in `OUT/state/`, so a crawl survives a crash and a
/// later run of the same profile picks it up; or, with `[frontier] database` (or
/// `ARCHIVER_DATABASE`), a PostgreSQL database that every worker of the crawl shares. Either
/// refuses another profile's crawl.
fn open_frontier(p: &Profile) -> anyhow::Result<Box<dyn Frontier>> {
    let identity = crate::frontier::sqlite::CrawlIdentity {
        name: p.name.clone(),
        seeds: p.seeds.iter().map(|u| u.to_string()).collect(),
    };
    if let Some(url) = p.frontier.database_with_env() {
        let settings = crate::frontier::postgres::PostgresSettings {
            url,
            worker: worker_name(),
            lease: p.frontier.lease,
        };
        let store = crate::frontier::postgres::PostgresFrontier::open(&settings, &identity)
            .context("cannot use the shared frontier")?;
        return Ok(Box::new(store));
    }
    let state = p.output_dir.join("state");
    let store = crate::frontier::sqlite::SqliteFrontier::open(&state, &identity)
        .with_context(|| format!("cannot use the crawl state in {}", state.display()))?;
    Ok(Box::new(store))
}

/// This worker's name in a shared frontier: `host~pid`, as in its WARC file names.
fn worker_name() -> String {
    let host = gethostname::gethostname()
        .to_string_lossy()
        .trim()
        .to_string();
    format!("{host}~{}", std::process::id())
}

/// The payload digests already archived: earlier crawls' CDXJ named by the profile, and this
/// crawl's own indexes (so a resumed crawl keeps writing revisits for what it already has).
fn load_digests(p: &Profile) -> anyhow::Result<crate::dedup::DigestIndex> {
    let mut index = crate::dedup::DigestIndex::new();
    let own = p.output_dir.join("indexes");
    let mut paths = p.dedup.previous.clone();
    // This crawl's own folder holds no index yet on its first run: nothing to load then.
    if crate::cdx::locate::crawl_indexes(&own).is_ok() {
        paths.push(own);
    }
    if !paths.is_empty() {
        index
            .load_cdxj(&paths)
            .context("cannot read the CDXJ named in [dedup] previous")?;
    }
    Ok(index)
}

/// The repeated-content detector a `[traps]` table asks for: `repeated_content` identical
/// pages under one path prefix before further ones are traps; None when the rule is off.
fn content_traps(t: &crate::scope::traps::TrapSettings) -> Option<ContentTraps> {
    (t.enabled && t.repeated_content > 0).then(|| ContentTraps::new(t.repeated_content, 1024, 1024))
}

fn warc_settings(p: &Profile) -> WarcSettings {
    let robots = if p.obey_robots {
        "obey".to_string()
    } else {
        format!("ignore (unrestricted run: {})", p.unrestricted_reason)
    };
    let mut info = vec![
        ("isPartOf".to_string(), p.name.clone()),
        ("http-header-user-agent".to_string(), p.user_agent.clone()),
        ("robots".to_string(), robots),
        ("profile".to_string(), p.path.display().to_string()),
        (
            "profile-digest".to_string(),
            crate::spool::sha1_of(p.source.as_bytes()),
        ),
    ];
    if !p.operator.is_empty() {
        info.insert(0, ("operator".to_string(), p.operator.clone()));
    }
    WarcSettings {
        warc_dir: p.output_dir.join("warcs"),
        index_dir: p.output_dir.join("indexes"),
        prefix: p.prefix.clone(),
        max_bytes: p.warc_max_bytes,
        version: p.warc_version,
        info,
    }
}
