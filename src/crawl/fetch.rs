//! The job of one URL: fetch it at its site's address, read what the page offers, `decide`,
//! carry the disposition out, and judge and queue its outlinks.

use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

use url::Url;

use super::admission::remote;
use super::candidates;
use super::decide::{self, Disposition};
use super::engine::Crawler;
use super::locks::{Free, Key, Root};
use super::page::Page;
use super::page::{is_css, is_html};
use super::sched::{Clock, Heard, Pace};
use crate::extract::{Hop, Outlink};
use crate::frontier::Candidate;
use crate::net::fetch::{BodyPlan, FetchError, Fetched};
use crate::politeness;
use crate::scope::origin_of;

/// Outlinks seen-checked and queued per turn of the scheduler lock, so that other sites' jobs
/// get the lock between two turns.
const LINK_BATCH: usize = 256;

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

impl Crawler {
    /// Fetches a URL of a resolved site. Every job's URL is of its own site (a robots.txt
    /// redirect to another one is handed to that site); should a URL of another origin come
    /// here all the same, it is resolved as its own URL and connected at its own address, so
    /// the record never shows one server's answer under another's name. The guard checks the
    /// address actually connected, whatever resolved it.
    pub(super) async fn fetch_on(
        &self,
        root: &mut Root,
        origin: &str,
        candidate: &Candidate,
        referer: Option<&Url>,
        conditions: &[(&'static str, String)],
        plan: impl Fn(u16, &hyper::HeaderMap) -> BodyPlan,
    ) -> Result<Fetched, FetchError> {
        let url = &candidate.url;
        let addr = if origin_of(url) == origin {
            root.with(|key| self.with_sched(key, |s| s.target(origin, url)))
                .ok_or_else(|| FetchError::Dns("the site's address is not known".into()))?
        } else {
            let host = url
                .host_str()
                .ok_or_else(|| FetchError::Other("URL has no host".into()))?;
            let ip = remote(self.resolver.resolve(host))
                .await
                .map_err(FetchError::Dns)?;
            let port = url
                .port_or_known_default()
                .ok_or_else(|| FetchError::Other("no port for this scheme".into()))?;
            SocketAddr::new(ip, port)
        };
        self.profile
            .guard
            .check(addr.ip())
            .map_err(FetchError::Refused)?;
        // Connecting, sending, waiting for the answer: the job waits for a server, which does
        // not count against the dispatcher's limit of jobs held up inside the crawler.
        let get = self.fetcher.get_if(url, addr, referer, conditions, plan);
        remote(get).await
    }

    /// What to do with a URL's body once its headers are in: a successful answer of a type
    /// `keep_mime` drops is not read at all (the connection is closed), HTML and CSS are kept
    /// in memory for their links, everything else streams to the record.
    fn body_plan(&self, hop: Hop, status: u16, headers: &hyper::HeaderMap) -> BodyPlan {
        let mime = headers.get("content-type").and_then(|v| v.to_str().ok());
        if (200..300).contains(&status) && !self.rules.mime_kept(mime, hop) {
            return BodyPlan::Skip;
        }
        BodyPlan::Read {
            keep: is_html(headers) || is_css(headers),
        }
    }

    /// Fetches a URL, decides what it means, carries that out and queues its links.
    pub(super) async fn run_fetch(
        &self,
        root: &mut Root,
        origin: &str,
        mut candidate: Candidate,
        thread: usize,
    ) -> Pace {
        // An exclusion sent while the job was on its way: dropped, as if it had been queued.
        if root.with(|key| self.dropped_by_operator(key, &candidate)) {
            return Pace::idle();
        }
        candidate.attempts += 1;
        let retries_left = candidate.attempts <= self.profile.politeness.max_retries;
        let hop = crate::scope::rules::mime_hop(&candidate.path);
        // Seeds have no via; a discovered URL names the page it was found on.
        let referer = candidate.via.as_ref().filter(|_| self.profile.send_referer);
        // A sitemap is read whatever its type: its locations are what it is fetched for.
        let sitemap = super::sitemaps::is_sitemap(&candidate);
        let plan = |status: u16, headers: &hyper::HeaderMap| match sitemap {
            true => BodyPlan::Read { keep: true },
            false => self.body_plan(hop, status, headers),
        };
        // An earlier crawl's validators make the request conditional (a sitemap's too: on a
        // 304 its earlier copy is read, see `follow_sitemap`).
        let earlier = self.earlier.get(&candidate.url);
        let conditions = earlier.map(crate::recrawl::Earlier::conditions);
        let conditions = conditions.unwrap_or_default();
        let fetched = self
            .fetch_on(root, origin, &candidate, referer, &conditions, plan)
            .await;
        let mut f = match fetched {
            Ok(f) => f,
            Err(e) => {
                return root.with(|key| {
                    self.fetch_failed(key, origin, candidate, &e, retries_left, thread)
                })
            }
        };
        let (pace, page, mut disposition) =
            root.with(|key| self.read_answer(key, origin, &candidate, &f));
        if let (true, Disposition::Archive { notes }) = (sitemap, &mut disposition) {
            // Queued before the record is written, as a page's links are (see `follow`).
            let note = root.with(|key| self.follow_sitemap(key, &candidate, &f));
            notes.extend(note);
        }
        let disposition = match disposition {
            Disposition::Archive { notes } if self.rendering.wants(&candidate, &f, &page) => {
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
                self.render_later(root, job).await;
                return pace;
            }
            other => other,
        };
        if !matches!(
            disposition,
            Disposition::Retry { .. } | Disposition::Refused { .. }
        ) {
            root.with(|key| self.follow(key, &candidate, &disposition, page));
        }
        // A record is written only once the frontier holds, committed, this URL's move to the
        // in-flight list and its page's outlinks; the commit is shared with the other jobs at
        // the same point (`commits.rs`). Nothing else needs to wait for it.
        if matches!(disposition, Disposition::Archive { .. }) {
            self.durable(root).await;
        }
        self.dispose(root, origin, candidate, &mut f, thread, disposition)
            .await;
        pace
    }

    /// What an answer means: the pause it calls for, what the page offers (its bad
    /// `Location` logged, its refusal counted) and what `decide` makes of it.
    fn read_answer(
        &self,
        key: &mut Key<Free>,
        origin: &str,
        candidate: &Candidate,
        f: &Fetched,
    ) -> (Pace, Page, Disposition) {
        let pace = self.pace_after(key, origin, f);
        let encoded = f
            .header("content-encoding")
            .is_some_and(|e| !e.trim().eq_ignore_ascii_case("identity"));
        let big = f.payload.len() >= BIG_PAGE || encoded;
        let page = cpu_work(big, || self.links_and_directives(key, origin, f));
        if let Some(text) = &page.bad_location {
            self.log_bad_location(key, candidate, text);
        }
        let rules = decide::Rules {
            max_retries: self.profile.politeness.max_retries,
        };
        let decision = decide::decide(f, &page, candidate.attempts, rules);
        self.note_refusal(key, origin, f, decision.refusal.as_deref());
        (pace, page, decision.disposition)
    }

    /// Queues the links of a page the disposition follows (a trap page's embeds only). They are
    /// made durable before the record is written (`run_fetch`'s barrier): after a crash between
    /// the two, the page is fetched again (it was never archived) and its links are not lost;
    /// after a crash once the record is written, recovery finds the record and the page counts
    /// as done, its links already queued.
    fn follow(
        &self,
        key: &mut Key<Free>,
        candidate: &Candidate,
        disposition: &Disposition,
        page: Page,
    ) {
        let follow = disposition.follows_links(&page);
        let mut links = page.links;
        if page.trap.is_some() {
            // A page that repeats itself under ever-new URLs: keep it, follow none of its
            // links but its embeds (replay needs those).
            links.retain(|l| l.hop == Hop::Embed);
        }
        if follow {
            let many = links.len() > LINK_BATCH;
            cpu_work(many, || self.queue_links(key, candidate, links));
        }
    }

    /// The pause an answer calls for; a `Retry-After` also becomes the site's floor.
    pub(super) fn pace_after(&self, key: &mut Key<Free>, origin: &str, f: &Fetched) -> Pace {
        let heard = heard(f);
        self.with_sched(key, |s| s.record_answer(origin, &heard))
    }

    /// No answer at all: retry later while tries remain.
    fn fetch_failed(
        &self,
        key: &mut Key<Free>,
        origin: &str,
        candidate: Candidate,
        e: &FetchError,
        retries_left: bool,
        thread: usize,
    ) -> Pace {
        let end = Instant::now();
        if retries_left && !matches!(e, FetchError::Other(_) | FetchError::Refused(_)) {
            let note = vec![format!("retry:{}", candidate.attempts)];
            self.log_error(key, &candidate, e, thread, note);
            self.retry_later(key, origin, candidate);
        } else {
            self.log_error(key, &candidate, e, thread, Vec::new());
            self.finished(key, &candidate.url);
        }
        self.with_sched(key, |s| s.record_failure(origin, end))
    }

    /// Counts a refusal (or a good answer, which resets the count; the scheduler suspends a
    /// site that keeps refusing) and writes the refusal's refusals.log line.
    fn note_refusal(&self, key: &mut Key<Free>, origin: &str, f: &Fetched, marker: Option<&str>) {
        let host = self.with_sched(key, |s| s.record_refusal(origin, marker, Clock::now()));
        if let (Some(host), Some(marker)) = (host, marker) {
            self.with_journal(key, |j| j.refusal(&host, f, marker));
        }
    }

    /// A URL tried again later.
    pub(super) fn retry_later(&self, key: &mut Key<Free>, origin: &str, candidate: Candidate) {
        self.with_sched(key, |s| s.retry_later(origin, candidate, Clock::now()));
    }

    /// Scope-checks and queues the outlinks of a page, a batch at a time: the seen-check and
    /// the queueing hold the state lock briefly; judging (scope, opt-out, traps) and logging
    /// what is dropped happen without it, so other sites' jobs are never held up by one page.
    pub(super) fn queue_links(&self, key: &mut Key<Free>, parent: &Candidate, links: Vec<Outlink>) {
        self.queue_links_as(key, parent, links, None);
    }

    /// [`Self::queue_links`], each link's path letter `letter` when given (else its hop's).
    pub(super) fn queue_links_as(
        &self,
        key: &mut Key<Free>,
        parent: &Candidate,
        links: Vec<Outlink>,
        letter: Option<char>,
    ) {
        let mut links = links.into_iter().peekable();
        while links.peek().is_some() {
            let batch: Vec<Outlink> = links.by_ref().take(LINK_BATCH).collect();
            // One seen-check for the whole batch (one round trip with a shared frontier).
            let seen = self.with_sched(key, |s| {
                let urls: Vec<&url::Url> = batch.iter().map(|l| &l.url).collect();
                let new = s.mark_seen_all(&urls)?;
                let fresh: Vec<Outlink> = batch
                    .into_iter()
                    .zip(new)
                    .filter_map(|(link, new)| new.then_some(link))
                    .collect();
                Ok::<_, crate::frontier::FrontierError>(fresh)
            });
            let fresh = match seen {
                Ok(fresh) => fresh,
                Err(e) => return self.fail(key, e),
            };
            let accepted: Vec<Candidate> = fresh
                .into_iter()
                .filter_map(|link| self.judge(key, parent, link, letter))
                .collect();
            if accepted.is_empty() {
                continue;
            }
            self.with_sched(key, |s| {
                let clock = Clock::now();
                for candidate in accepted {
                    s.enqueue(candidate, clock);
                }
            });
        }
    }

    /// Decides one new outlink (see [`candidates::judge`]): the candidate to queue, or None,
    /// logged with the reason. `letter` replaces the hop's letter on the discovery path.
    pub(super) fn judge(
        &self,
        key: &mut Key<Free>,
        parent: &Candidate,
        link: Outlink,
        letter: Option<char>,
    ) -> Option<Candidate> {
        // Seeds the operator added widen the scope as profile seeds do.
        let widened = self.operator.scope();
        let rules = candidates::Rules {
            scope: widened.as_deref().unwrap_or(&self.scope),
            rules: &self.rules,
            optout: &self.profile.optout,
            url_traps: self.url_traps.as_ref(),
        };
        let letter = letter.unwrap_or(link.hop.letter());
        let robots_named_sitemap = letter == super::sitemaps::SITEMAP && parent.path == "P";
        match candidates::judge_as(&rules, parent, link, letter) {
            candidates::Verdict::Queue(candidate) => Some(candidate),
            // robots.txt may name a sitemap on another host (sitemaps.org, "Sitemaps &
            // Cross Submits"): that one is fetched; what it lists is judged as usual.
            candidates::Verdict::Drop(d) if robots_named_sitemap && d.why == "scope:off-site" => {
                Some(d.candidate)
            }
            candidates::Verdict::Drop(dropped) => {
                self.log_drop(key, dropped);
                None
            }
        }
    }
}

/// What an answer tells the scheduler of its site.
pub(super) fn heard(f: &Fetched) -> Heard {
    Heard {
        end: f.finished_at,
        took: f.duration(),
        status: f.status,
        from_loopback: f.ip.is_loopback(),
        retry_after: f
            .header("retry-after")
            .and_then(|v| politeness::parse_retry_after(v, SystemTime::now())),
    }
}
