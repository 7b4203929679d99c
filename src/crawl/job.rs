//! The job of one URL, as one straight road: fetch → read the page → decide → render or
//! follow → make durable → dispose → pace. Each step is a function of its own over small
//! values and the one port it needs: the network ([`Net`](super::fetch::Net)), the page rules
//! ([`page::read`], pure), [`decide`] (pure), the frontier's way in
//! ([`Links`](super::links::Links)), the desks ([`Desks`](super::desks::Desks): scheduler,
//! archive desk, journal) and the scheduler's site rules for the pause. Only this file knows
//! the order, and opens the crawler up into those ports. The stages beside the road are
//! types over ports of their own too — the robots.txt job ([`RobotsJob`](super::prereq::RobotsJob)),
//! a sitemap's locations ([`SitemapDesk`](super::sitemap_links::SitemapDesk)) — but for a render
//! (`render_job.rs`), whose spawned task keeps the crawler and opens it up the same way.

use std::panic::AssertUnwindSafe;
use std::time::Instant;

use futures_util::FutureExt as _;
use url::Url;

use super::decide::{self, Disposition};
use super::desks::Desks;
use super::disposition;
use super::engine::Crawler;
use super::fetch::{body_plan, pace_after, Net, Request};
use super::links::{Links, LINK_BATCH};
use super::locks::{Free, Key, Root};
use super::operator::rules::OPERATOR;
use super::operator::Steering;
use super::page::{self, Page, PageRules};
use super::sched::{Clock, Job, Pace};
use super::sitemaps::is_sitemap;
use crate::extract::Hop;
use crate::frontier::Candidate;
use crate::logs::runlog::panic_message;
use crate::net::fetch::{BodyPlan, FetchError, Fetched};
use crate::politeness::robots;
use crate::recrawl::EarlierCaptures;
use crate::scope::rules::ScopeRules;

/// A page body at least this big (or compressed, so of any size once decoded: a gzip bomb is
/// a few KB) is parsed, and a link list longer than [`LINK_BATCH`] queued, under
/// `block_in_place`, so the other sites' exchanges on this worker go on meanwhile. Smaller
/// ones (nearly all) are done where they are: they take microseconds, less than handing the
/// worker over, and each hand-over may start one more blocking thread.
const BIG_PAGE: usize = 256 * 1024;

/// Runs `work` on this worker, or beside the async workers when it is `big`.
fn cpu_work<R>(big: bool, work: impl FnOnce() -> R) -> R {
    if big {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

/// Runs a job, catching a panic inside it (a bug, or input nobody foresaw): the URL is
/// logged `-5` with the panic message, it leaves the in-flight list, and the budget is
/// given back — the crawl goes on. Caught in the job's own task: a task more per job would
/// cost its memory and a hand-over between the two for every job.
pub(super) async fn run_caught(
    crawler: &Crawler,
    root: &mut Root,
    job: Job,
    thread: usize,
) -> Pace {
    let (origin, robots_of, candidate) = match &job {
        Job::Robots { origin } => (origin.clone(), Some(origin.clone()), None),
        Job::Fetch { origin, candidate } => (origin.clone(), None, Some((**candidate).clone())),
        Job::Chase { origin, chase } => (
            origin.clone(),
            Some(chase.owner.clone()),
            Some(chase.candidate.clone()),
        ),
    };
    // Every lock is released as the panic unwinds (each is lent to a closure), so the
    // task's root holds nothing again afterwards.
    let run = AssertUnwindSafe(run(crawler, root, job, thread))
        .catch_unwind()
        .await;
    match run {
        Ok(pace) => pace,
        Err(payload) => {
            let message = panic_message(&*payload);
            crawler
                .desks
                .runlog
                .line(&format!("{origin}: a job failed unexpectedly: {message}"));
            let (robots_of, origin) = (robots_of.as_deref(), origin.as_str());
            let lost = Lost {
                origin,
                robots_of,
                candidate,
                message: &message,
                thread,
            };
            root.with(|key| panicked(&crawler.desks, key, lost))
        }
    }
}

async fn run(crawler: &Crawler, root: &mut Root, job: Job, thread: usize) -> Pace {
    match job {
        Job::Robots { origin } => crawler.robots_job().run(root, &origin, thread).await,
        Job::Fetch { origin, candidate } => {
            run_fetch(crawler, root, &origin, *candidate, thread).await
        }
        Job::Chase { origin, chase } => {
            crawler
                .robots_job()
                .chain(root, &origin, *chase, thread)
                .await
        }
    }
}

/// A job that panicked: what is known of it.
struct Lost<'a> {
    origin: &'a str,
    /// The site whose robots.txt the job fetched, if it was a robots.txt job.
    robots_of: Option<&'a str>,
    candidate: Option<Candidate>,
    message: &'a str,
    thread: usize,
}

/// Logs the URL of a job that panicked and settles it, as a failure that is not retried
/// (a robots.txt job counts as one failed try of `robots_of`, so that site is given up in
/// the end).
fn panicked(desks: &Desks, key: &mut Key<Free>, lost: Lost<'_>) -> Pace {
    let Lost {
        origin,
        robots_of,
        candidate,
        message,
        thread,
    } = lost;
    let error = FetchError::Other(format!("panic: {message}"));
    let mut pace = desks.with_sched(key, |s| s.record_failure(origin, Instant::now()));
    let candidate = candidate.or_else(|| {
        let url = Url::parse(origin)
            .ok()
            .and_then(|u| robots::robots_url(&u))?;
        Some(Candidate {
            url,
            path: "P".to_string(),
            via: Url::parse(origin).ok(),
            attempts: 0,
        })
    });
    if let Some(c) = &candidate {
        desks.log_error(key, c, &error, thread, Vec::new());
    }
    match robots_of {
        Some(owner) => {
            desks.with_sched(key, |s| {
                s.settle_robots(owner, origin, None, &mut pace, Clock::now())
            });
        }
        None => {
            if let Some(c) = &candidate {
                desks.finished(key, &c.url);
            }
        }
    }
    desks.commit(key);
    pace
}

/// Fetches a URL, decides what it means, carries that out and queues its links.
pub(super) async fn run_fetch(
    crawler: &Crawler,
    root: &mut Root,
    origin: &str,
    mut candidate: Candidate,
    thread: usize,
) -> Pace {
    // An exclusion sent while the job was on its way: dropped, as if it had been queued.
    let steering = crawler.operator.steering();
    if root.with(|key| dropped_by_operator(&crawler.desks, &steering, key, &candidate)) {
        return Pace::idle();
    }
    candidate.attempts += 1;
    let retries_left = candidate.attempts <= crawler.profile.politeness.max_retries;
    let asking = Asking {
        send_referer: crawler.profile.send_referer,
        rules: &crawler.rules,
        earlier: &crawler.earlier,
    };
    let (net, desks) = (&crawler.net, &crawler.desks);
    let fetched = fetch(net, desks, &asking, root, origin, &candidate).await;
    let mut f = match fetched {
        Ok(f) => f,
        Err(e) => {
            let failed = Failed {
                origin,
                candidate,
                error: &e,
                retries_left,
                thread,
            };
            return root.with(|key| fetch_failed(&crawler.desks, key, failed));
        }
    };
    let reading = Reading {
        page: crawler.page_rules(),
        decide: decide::Rules {
            max_retries: crawler.profile.politeness.max_retries,
        },
    };
    let (pace, page, mut disposition) =
        root.with(|key| read_answer(desks, &reading, key, origin, &candidate, &f));
    if let (true, Disposition::Archive { notes }) = (is_sitemap(&candidate), &mut disposition) {
        // Queued before the record is written, as a page's links are (see `follow`).
        let note = root.with(|key| crawler.sitemap_desk().follow(key, &candidate, &f));
        notes.extend(note);
    }
    let disposition = match disposition {
        Disposition::Archive { notes } if crawler.rendering.wants(&candidate, &f, &page) => {
            // Rendered by a task of its own: this job gives its budget back now, so the
            // page's own requests can be fetched on that budget.
            let job = super::render::RenderJob {
                origin: origin.to_string(),
                candidate,
                fetched: f,
                page,
                notes,
                thread,
            };
            super::render_job::render_later(crawler, root, job).await;
            return pace;
        }
        other => other,
    };
    if !matches!(
        disposition,
        Disposition::Retry { .. } | Disposition::Refused { .. }
    ) {
        root.with(|key| follow(&crawler.links(), key, &candidate, &disposition, page));
    }
    // A record is written only once the frontier holds, committed, this URL's move to the
    // in-flight list and its page's outlinks; the commit is shared with the other jobs at
    // the same point (`commits.rs`). Nothing else needs to wait for it.
    if matches!(disposition, Disposition::Archive { .. }) {
        crawler.desks.durable(root).await;
    }
    let todo = disposition::Todo {
        origin,
        candidate,
        thread,
        disposition,
    };
    disposition::dispose(&crawler.desks, &crawler.keeping(), root, &mut f, todo).await;
    pace
}

/// True when an order now covers a URL taken up before it came: dropped with its line and
/// settled in the frontier (the job sends nothing).
fn dropped_by_operator(
    desks: &Desks,
    steering: &Steering,
    key: &mut Key<Free>,
    c: &Candidate,
) -> bool {
    let Some(rule) = steering.covers(&c.url) else {
        return false;
    };
    let extra = Some(serde_json::json!({ "operator": rule }));
    let status = crate::logs::crawllog::status::OUT_OF_SCOPE;
    desks.log_dropped(key, c, status, OPERATOR, extra);
    desks.finished(key, &c.url);
    true
}

/// The fetch step: the request as the profile has it (the Referer, an earlier crawl's
/// validators making it conditional) and the body plan (a sitemap is read whatever its type:
/// its locations are what it is fetched for).
async fn fetch(
    net: &Net,
    desks: &Desks,
    asking: &Asking<'_>,
    root: &mut Root,
    origin: &str,
    candidate: &Candidate,
) -> Result<Fetched, FetchError> {
    let hop = crate::scope::rules::mime_hop(&candidate.path);
    // Seeds have no via; a discovered URL names the page it was found on.
    let referer = candidate.via.as_ref().filter(|_| asking.send_referer);
    let sitemap = is_sitemap(candidate);
    let plan = |status: u16, headers: &hyper::HeaderMap| match sitemap {
        true => BodyPlan::Read { keep: true },
        false => body_plan(asking.rules, hop, status, headers),
    };
    // A sitemap's request is conditional too: on a 304 its earlier copy is read (see
    // `sitemap_links::follow`).
    let earlier = asking.earlier.get(&candidate.url);
    let conditions = earlier.map(crate::recrawl::Earlier::conditions);
    let conditions = conditions.unwrap_or_default();
    let request = Request {
        candidate,
        referer,
        conditions: &conditions,
    };
    net.get(desks, root, origin, request, plan).await
}

/// What the request of a URL is made of besides the URL: the profile's Referer rule, the
/// rules of which bodies are read, an earlier crawl's validators.
struct Asking<'a> {
    send_referer: bool,
    rules: &'a ScopeRules,
    earlier: &'a EarlierCaptures,
}

/// The rules an answer is read and decided by.
struct Reading<'a> {
    page: PageRules<'a>,
    decide: decide::Rules,
}

/// What an answer means: the pause it calls for, what the page offers (its bad
/// `Location` logged, its refusal counted) and what `decide` makes of it.
fn read_answer(
    desks: &Desks,
    reading: &Reading<'_>,
    key: &mut Key<Free>,
    origin: &str,
    candidate: &Candidate,
    f: &Fetched,
) -> (Pace, Page, Disposition) {
    let pace = pace_after(desks, key, origin, f);
    let encoded = f
        .header("content-encoding")
        .is_some_and(|e| !e.trim().eq_ignore_ascii_case("identity"));
    let big = f.payload.len() >= BIG_PAGE || encoded;
    let (mut page, text_hash) = cpu_work(big, || page::read(f, &reading.page));
    if let Some(hash) = text_hash {
        page.trap = desks.with_sched(key, |s| s.observe_text(origin, &f.url, hash));
    }
    if let Some(text) = &page.bad_location {
        desks.log_bad_location(key, candidate, text);
    }
    let decision = decide::decide(f, &page, candidate.attempts, reading.decide);
    note_refusal(desks, key, origin, f, decision.refusal.as_deref());
    (pace, page, decision.disposition)
}

/// Counts a refusal (or a good answer, which resets the count; the scheduler suspends a
/// site that keeps refusing) and writes the refusal's refusals.log line.
fn note_refusal(
    desks: &Desks,
    key: &mut Key<Free>,
    origin: &str,
    f: &Fetched,
    marker: Option<&str>,
) {
    let host = desks.with_sched(key, |s| s.record_refusal(origin, marker, Clock::now()));
    if let (Some(host), Some(marker)) = (host, marker) {
        desks.with_journal(key, |j| j.refusal(&host, f, marker));
    }
}

/// Queues the links of a page the disposition follows (a trap page's embeds only). They are
/// made durable before the record is written (`run_fetch`'s barrier): after a crash between
/// the two, the page is fetched again (it was never archived) and its links are not lost;
/// after a crash once the record is written, recovery finds the record and the page counts
/// as done, its links already queued.
fn follow(
    links: &Links<'_>,
    key: &mut Key<Free>,
    candidate: &Candidate,
    disposition: &Disposition,
    page: Page,
) {
    let follow = disposition.follows_links(&page);
    let mut outlinks = page.links;
    if page.trap.is_some() {
        // A page that repeats itself under ever-new URLs: keep it, follow none of its
        // links but its embeds (replay needs those).
        outlinks.retain(|l| l.hop == Hop::Embed);
    }
    if follow {
        let many = outlinks.len() > LINK_BATCH;
        cpu_work(many, || links.queue(key, candidate, outlinks));
    }
}

/// A fetch that got no answer at all.
struct Failed<'a> {
    origin: &'a str,
    candidate: Candidate,
    error: &'a FetchError,
    retries_left: bool,
    thread: usize,
}

/// No answer at all: retry later while tries remain.
fn fetch_failed(desks: &Desks, key: &mut Key<Free>, failed: Failed<'_>) -> Pace {
    let Failed {
        origin,
        candidate,
        error,
        retries_left,
        thread,
    } = failed;
    let end = Instant::now();
    if retries_left && !matches!(error, FetchError::Other(_) | FetchError::Refused(_)) {
        let note = vec![format!("retry:{}", candidate.attempts)];
        desks.log_error(key, &candidate, error, thread, note);
        desks.retry_later(key, origin, candidate);
    } else {
        desks.log_error(key, &candidate, error, thread, Vec::new());
        desks.finished(key, &candidate.url);
    }
    desks.with_sched(key, |s| s.record_failure(origin, end))
}
